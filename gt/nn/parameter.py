"""`Parameter` and `Buffer`: the tensors a Module registers when they are assigned to it,
as its weights (leaves that require grad) or as its other state, as in torch.nn."""

from typing import Any, Iterable, Iterator

import torch

from gt import views
from gt.autograd import set_requires_grad
from gt.tensor import Tensor, wrap


class Parameter(Tensor):
    """A leaf tensor that requires grad and that a Module registers when assigned to it.
    `data` may be a gt Tensor (whose values it shares, as torch's shares storage), a
    torch tensor or a numpy array (copied)."""

    __slots__ = ()
    _copies_grad = False  # torch's Parameter.__deepcopy__ leaves .grad behind
    _kept_to_go_back = True  # a failed first step goes back to its first value (Tensor._take)

    def __init__(self, data: Any = None, requires_grad: bool = True):
        _take_value(self, data)
        set_requires_grad(self, requires_grad)

    def __reduce_ex__(self, protocol: Any) -> Any:
        """Pickled as a torch.nn.Parameter holding the value (see Tensor.__reduce_ex__)."""
        return torch.nn.Parameter(self._value(), self.requires_grad).__reduce_ex__(protocol)

    def __repr__(self) -> str:
        return f'Parameter containing:\n{Tensor.__repr__(self)}'


class Buffer(Tensor):
    """A tensor that a Module registers as a buffer when assigned to it (torch.nn.Buffer):
    state that is not a parameter; `persistent=False` keeps it out of `state_dict`. It
    requires grad when `data` does, as in torch."""

    __slots__ = ('persistent',)

    def __init__(self, data: Any = None, *, persistent: bool = True):
        _take_value(self, data)
        self.persistent = persistent
        if isinstance(data, (Tensor, torch.Tensor)) and data.requires_grad:
            set_requires_grad(self, True)


def _take_value(target: Tensor, data: Any) -> None:
    """Give `target` `data`'s values, with no history (a gt Tensor's shared, as its
    `detach()` shares them; a torch tensor's or an array's copied; None: empty)."""
    from gt.creation import tensor, zeros

    target._id = None  # until the value exists: a failed construction releases nothing
    if data is None:
        source = zeros(0)
    elif isinstance(data, Tensor):
        source = data.detach()
    else:
        source = tensor(data)
    wrap(source._id, source._type, source._client, target)
    views.adopt(target, source)  # a detach() is a view: the target is it, in its place
    source._id = None


class Parameters:
    """What `Module.parameters()` returns: an iterator, as torch's generator is, that two
    of also add up to a list, as the seeds' modules wrote `fc1.parameters() +
    fc2.parameters()` (their parameters() returned lists)."""

    def __init__(self, items: Iterator) -> None:
        self.items = items

    def __iter__(self) -> 'Parameters':
        return self

    def __next__(self) -> Any:
        return next(self.items)

    def __add__(self, other: Iterable) -> list:
        return [*self, *other]

    def __radd__(self, other: Iterable) -> list:
        return [*other, *self]
