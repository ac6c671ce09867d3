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


class DistributedDataParallel(Module):
    """Importable, as scripts import it at their top; refused when made, naming why: it
    joins a process group (one process a GPU, launched by torchrun), and a GT script is one
    process that spreads work over the workers itself."""

    def __init__(self, module: Module, *args: Any, **kwargs: Any) -> None:
        from gt.distributed import refusal

        raise RuntimeError(refusal('DistributedDataParallel'))
