"""torch.nn's distance modules: `CosineSimilarity` and `PairwiseDistance`, each torch's
function run by name (gt/fallback.py), so values and gradients are torch's kernels'."""

from gt.nn import functional as F
from gt.nn.module import Module
from gt.tensor import Tensor


class CosineSimilarity(Module):
    """x1 . x2 / max(||x1|| ||x2||, eps) along `dim`."""

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """||x1 - x2 + eps||_p over the last dimension (`norm` is torch's name for p)."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)
