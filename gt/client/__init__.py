"""The original GT docs' path to the neural network module: `from gt.client import nn`
and `import gt.client.nn` give `gt.nn` itself (the same module, so the same classes),
and their examples run unchanged."""

import sys

from gt import nn

# `import gt.client.nn` looks in sys.modules before it looks for a file.
sys.modules[f'{__name__}.nn'] = nn
