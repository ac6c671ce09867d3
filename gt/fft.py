"""`gt.fft.rfft(x)` and the rest of torch.fft, run by name (gt/fallback.py); results must
have a GT dtype, so transforms that return complex tensors are refused with that reason."""

from gt.fallback import namespace

__getattr__ = namespace('torch.fft', globals())
