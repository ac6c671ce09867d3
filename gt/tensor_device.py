"""Where a GT tensor is: `x.device`, the string 'gt' with torch.device's `type` and
`index`.

A GT tensor lives on the cluster, on the workers the dispatcher places it on, not on a
device of this process. So `x.device.type` is 'gt' (a script's `device.type == 'cuda'`
branch is not taken), and `x.device` goes back wherever GT takes a device
(`gt.zeros(2, device=x.device)`, `model.to(x.device)`), as in torch. Why not a real
`torch.device('gt')`: that needs renaming torch's one out-of-tree backend slot
(PrivateUse1) process-wide, after which every `torch.manual_seed` in the script warns
that the 'gt' backend has no seeding module.
"""

from typing import Any

import torch


class Device(str):
    @property
    def type(self) -> str:
        return str(self)

    @property
    def index(self) -> None:
        return None

    def __repr__(self) -> str:
        return f"device(type='{self}')"

    def __enter__(self) -> 'Device':
        """`with torch.device(x.device):` makes factories default to that device; GT's
        make their tensors on the cluster anyway, so nothing changes."""
        return self

    def __exit__(self, *exc: Any) -> None:
        pass


GT_DEVICE = Device('gt')


class _DeviceKind(type):
    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, (torch.device, Device))


class device(metaclass=_DeviceKind):
    """`gt.device`: torch.device, which also takes GT's own ('gt', or `x.device`) and
    gives it back, as `torch.device(x.device)` gives a torch tensor's device."""

    def __new__(cls, kind: Any, index: int | None = None) -> Any:
        if isinstance(kind, Device) or kind == 'gt':
            return GT_DEVICE
        return torch.device(kind) if index is None else torch.device(kind, index)


class _GeneratorKind(type):
    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, torch.Generator)


class Generator(metaclass=_GeneratorKind):
    """`gt.Generator`: torch's, in this process, for draws that name it (`randperm(n,
    generator=g)`, a DataLoader's shuffle); `Generator(device=x.device)` of a GT tensor
    is a CPU one, where GT takes such a generator's draws from."""

    def __new__(cls, device: Any = 'cpu') -> torch.Generator:
        return torch.Generator('cpu' if isinstance(device, Device) or device == 'gt'
                               else device)


# torch's flags for where a tensor is and how it is stored; a GT tensor is dense, on
# the cluster, so each is False (`input.is_cuda or input.is_xpu` in a ported forward).
STORAGE_FLAGS = ('is_cuda', 'is_cpu', 'is_xpu', 'is_mps', 'is_meta', 'is_xla', 'is_ipu',
                 'is_hpu', 'is_maia', 'is_mtia', 'is_vulkan', 'is_sparse', 'is_sparse_csr',
                 'is_quantized', 'is_mkldnn', 'is_nested')


class DeviceMethods:
    """Where a Tensor is, as torch asks it: a mixin of `gt.tensor.Tensor`."""

    __slots__ = ()

    @property
    def device(self) -> Device:
        return GT_DEVICE

    def get_device(self) -> int:
        return -1  # torch's answer for a tensor not on a CUDA device

    def cuda(self, device: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
        """The tensor itself: GT places values on the workers' GPUs by itself."""
        return self

    def pin_memory(self, device: Any = None) -> Any:
        """The tensor itself: its value is on a worker, not in this process's memory to
        pin (torch's DataLoader calls this with `pin_memory=True` where CUDA is)."""
        return self

    def is_pinned(self, device: Any = None) -> bool:
        return False  # see pin_memory

    @property
    def layout(self) -> torch.layout:
        return torch.strided  # GT holds strided tensors only

    def to_dense(self, dtype: Any = None, *, masked_grad: Any = None) -> Any:
        """torch's, on a strided tensor: the tensor itself (in `dtype`, if given)."""
        return self if dtype is None else self.to(dtype)

    def to_sparse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError('Tensor.to_sparse: its result is a torch.sparse_coo tensor; GT holds '
                        'strided tensors only')


for _flag in STORAGE_FLAGS:
    setattr(DeviceMethods, _flag, property(lambda self: False, doc=f'torch\'s {_flag}: False'))
