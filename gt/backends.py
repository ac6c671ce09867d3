"""`gt.backends`: the flags ported scripts set on torch.backends (`cudnn.benchmark = True`,
`cudnn.deterministic = True`, `cuda.matmul.allow_tf32 = True`). They are accepted and
kept, and change nothing: kernels are chosen by each worker's torch, and a GT client has
no CUDA (gt/cuda.py)."""

import contextlib
import sys
from types import SimpleNamespace
from typing import Iterator

cudnn = SimpleNamespace(benchmark=False, deterministic=False, enabled=True, allow_tf32=True,
                        is_available=lambda: False)

# Which scaled-dot-product-attention kernels a CUDA torch may pick; kept and answered
# back, as the other flags are (a worker's torch picks for its own device).
_sdp = {'flash': True, 'mem_efficient': True, 'math': True, 'cudnn': True}


@contextlib.contextmanager
def _sdp_kernel(enable_flash: bool = True, enable_math: bool = True,
                enable_mem_efficient: bool = True, enable_cudnn: bool = True) -> Iterator[None]:
    before = dict(_sdp)
    _sdp.update(flash=enable_flash, math=enable_math, mem_efficient=enable_mem_efficient,
                cudnn=enable_cudnn)
    try:
        yield
    finally:
        _sdp.update(before)


def _switches(kind: str) -> dict:
    return {f'enable_{kind}_sdp': lambda enabled: _sdp.__setitem__(kind, bool(enabled)),
            f'{kind}_sdp_enabled': lambda: _sdp[kind]}


cuda = SimpleNamespace(matmul=SimpleNamespace(allow_tf32=False), is_built=lambda: False,
                       sdp_kernel=_sdp_kernel,
                       **{name: function for kind in _sdp
                          for name, function in _switches(kind).items()})
mps = SimpleNamespace(is_available=lambda: False, is_built=lambda: False)

# `import torch.backends.cudnn as cudnn` (dcgan, many others) looks in sys.modules.
for _name in ('cudnn', 'cuda', 'mps'):
    sys.modules[f'{__name__}.{_name}'] = globals()[_name]
