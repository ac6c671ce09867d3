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
