"""torch.utils.data over GT tensors: `DataLoader(TensorDataset(x, y), batch_size=64)`.

torch's default collate knows torch tensors, numpy arrays and numbers; a dataset of GT
tensors gives it GT tensors, which it rejects. Registering GT's Tensor in torch's
collate table (the extension point torch's collate keeps for types it does not know)
makes a batch `gt.stack` of its samples, recorded lazily like any op. The loader's
sampler and shuffling stay torch's, seeded by torch's generator in this process, which
GT's random ops (drawn on the workers) do not advance as torch's would: a shuffle after
them is torch's only with the loader's own `generator=`.
"""

from typing import Any

from torch.utils.data._utils.collate import default_collate_fn_map

from gt.functional import stack
from gt.tensor import Tensor


def collate_tensors(batch: list, *, collate_fn_map: Any = None) -> Tensor:
    return stack(batch, 0)


def register_collate() -> None:
    """Called once by `import gt`."""
    default_collate_fn_map[Tensor] = collate_tensors
