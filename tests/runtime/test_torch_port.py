"""examples/train_torch_port.py is a PyTorch training script ported by changing its
imports: with torch's imports put back, it runs on plain PyTorch and must print the
same numbers (losses, gradient norms, learning rates, metrics, a restored checkpoint)."""

from pathlib import Path

import pytest
from gt_test_support import run_script

EXAMPLE = Path(__file__).parents[2] / 'examples' / 'train_torch_port.py'
PORT = {
    'import gt as torch\n': 'import torch\n',
    'import gt.nn as nn\n': 'import torch.nn as nn\n',
    'import gt.nn.functional as F\n': 'import torch.nn.functional as F\n',
    'import gt.optim as optim\n': 'import torch.optim as optim\n',
}


@pytest.mark.time_limit(240)
def test_the_ported_script_prints_what_torch_prints():
    source = EXAMPLE.read_text()
    original = source
    for ported, torch_import in PORT.items():
        assert source.count(ported) == 1, f'the example lost its import {ported!r}'
        original = original.replace(ported, torch_import)
    code = original.split('"""', 2)[2]
    assert 'import gt' not in code and 'gt.' not in code  # the imports were the port
    on_gt, on_torch = run_script(source, timeout=180), run_script(original, timeout=180)
    assert on_gt.returncode == 0, on_gt.explain()
    assert on_torch.returncode == 0, on_torch.explain()
    assert on_gt.stdout == on_torch.stdout
    assert 'restored accuracy' in on_gt.stdout
