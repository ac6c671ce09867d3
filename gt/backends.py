"""`gt.backends`: the flags ported scripts set on torch.backends (`cudnn.benchmark = True`,
`cudnn.deterministic = True`, `cuda.matmul.allow_tf32 = True`). They are accepted and
kept, and change nothing: kernels are chosen by each worker's torch, and a GT client has
no CUDA (gt/cuda.py)."""

import sys
from types import SimpleNamespace

cudnn = SimpleNamespace(benchmark=False, deterministic=False, enabled=True, allow_tf32=True,
                        is_available=lambda: False)
cuda = SimpleNamespace(matmul=SimpleNamespace(allow_tf32=False), is_built=lambda: False)
mps = SimpleNamespace(is_available=lambda: False, is_built=lambda: False)

# `import torch.backends.cudnn as cudnn` (dcgan, many others) looks in sys.modules.
for _name in ('cudnn', 'cuda', 'mps'):
    sys.modules[f'{__name__}.{_name}'] = globals()[_name]
