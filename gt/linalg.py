"""`gt.linalg.norm(x)` and the rest of torch.linalg, run by name (gt/fallback.py)."""

from gt.fallback import namespace

__getattr__ = namespace('torch.linalg', globals())
