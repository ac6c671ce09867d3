"""`gt.backends`: the flags ported scripts set on torch.backends (`cudnn.benchmark = True`,
`cudnn.deterministic = True`, `cuda.matmul.allow_tf32 = True`). They are accepted and
kept, and change nothing: kernels are chosen by each worker's torch, and a GT client has
no CUDA (gt/cuda.py)."""

import contextlib
import sys
from types import SimpleNamespace
from typing import Iterator

import torch

cudnn = SimpleNamespace(benchmark=False, deterministic=False, enabled=True, allow_tf32=True,
                        is_available=lambda: False, version=lambda: None)


@contextlib.contextmanager
def _cudnn_flags(enabled: bool = False, benchmark: bool = False, deterministic: bool = False,
                 allow_tf32: bool = True, **others: bool) -> Iterator[None]:
    """`with torch.backends.cudnn.flags(enabled=False):` (CTC losses in wav2vec2, ESPnet):
    the flags, kept for the block, as torch's context sets them."""
    before = vars(cudnn).copy()
    cudnn.enabled, cudnn.benchmark = enabled, benchmark
    cudnn.deterministic, cudnn.allow_tf32 = deterministic, allow_tf32
    try:
        yield
    finally:
        vars(cudnn).update(before)


cudnn.flags = _cudnn_flags
_fastpath = [True]
# nn.MultiheadAttention's fast path switch, kept and answered back (GT's MHA is composed).
mha = SimpleNamespace(get_fastpath_enabled=lambda: _fastpath[0],
                      set_fastpath_enabled=lambda value: _fastpath.__setitem__(0, bool(value)))
mkldnn, cpu = torch.backends.mkldnn, torch.backends.cpu  # this machine's answers

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
for _name in ('cudnn', 'cuda', 'mps', 'mha', 'mkldnn', 'cpu'):
    sys.modules[f'{__name__}.{_name}'] = globals()[_name]
