"""`gt.special.erf(x)` and the rest of torch.special, run by name (gt/fallback.py)."""

from gt.fallback import namespace

__getattr__ = namespace('torch.special', globals())
