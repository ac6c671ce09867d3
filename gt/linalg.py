"""`gt.linalg.norm(x)` and the rest of torch.linalg, run by name (gt/fallback.py); its
error class is torch's, which a failure on a worker also is where it is fetched."""

import torch

from gt.fallback import namespace

LinAlgError = torch.linalg.LinAlgError
__getattr__ = namespace('torch.linalg', globals())
