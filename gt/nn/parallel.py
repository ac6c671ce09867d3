"""`nn.DataParallel` as torch has it on a machine without CUDA: the wrapped module runs
as it is. A ported script's `model = nn.DataParallel(model)` keeps working, with torch's
`module.` prefix in its state dict; GT spreads work over its workers itself, by signals
and sharding configs (README, "Sharding across workers"), not by replicating modules."""

from typing import Any

from gt.nn.module import Module


class DataParallel(Module):
    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None,
                 dim: int = 0) -> None:
        super().__init__()
        self.module = module
        self.device_ids: list = []  # torch's answer where it finds no GPU to replicate on

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        return self.module(*inputs, **kwargs)
