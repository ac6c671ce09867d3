"""GT's distribution classes: torch's own, subclassed so that their code records GT ops.

`gt_class(torch.distributions.Normal)` is a subclass of torch's Normal (so `isinstance`,
`kl_divergence`'s table and `register_kl` treat it as torch's) whose public methods and
properties run under `recording.recorded`. Three things differ from running torch's
class on GT tensors as it is: factories on the 'gt' device are GT's (recording.py),
`sample()` records under `gt.no_grad()` (torch's own `torch.no_grad()` in it does not
reach GT's tape), and a GT value passes the sample check in `log_prob`, `cdf` and `icdf`.
"""

import functools
import inspect
import types
import warnings
from typing import Any

import torch
import torch.distributions
from torch.distributions.utils import lazy_property

from gt.autograd import enable_grad, no_grad
from gt.distributions.recording import checks_deferred, recorded
from gt.runtime.session_errors import WorkerError
from gt.tensor import Tensor

# torch's sample() methods say `with torch.no_grad()`, which GT's tape does not see.
WITHOUT_GRAD = frozenset({'sample', 'sample_n'})


def _wrapped(name: str, member: Any) -> Any:
    """`member` of a torch distribution class, recorded; None for what needs nothing
    (class constants, constraints, static methods)."""
    if isinstance(member, lazy_property):
        # torch computes a lazy property under torch.enable_grad(), so that the cached
        # value carries gradients even when first read under no_grad: GT's tape alike.
        return lazy_property(recorded(_under(enable_grad, member.wrapped)))
    if type(member) is property:
        return property(recorded(member.fget), member.fset, member.fdel, member.__doc__)
    if name == '__init__':
        return recorded(_initializer(member))
    if isinstance(member, types.FunctionType):
        return recorded(_under(no_grad, member) if name in WITHOUT_GRAD else member)
    return None


def _initializer(init: Any) -> Any:
    """torch's `__init__`, with its argument checks fetched in one round trip rather than
    one each (`validate_args`). If one fails, `__init__` runs again checking as it goes,
    to raise torch's own ValueError naming the parameter.

    torch's classes also make parts of their own (OneHotCategorical a Categorical,
    LogNormal its base Normal, Beta a Dirichlet) as torch's classes, whose sample checks
    would refuse GT values: the parts become GT's classes, which add no state."""
    @functools.wraps(init)
    def run(self: Any, *args: Any, **kwargs: Any) -> None:
        with checks_deferred() as checks:
            init(self, *args, **kwargs)
        failure = None
        try:
            passed = checks.passed()
        except WorkerError as error:
            # An op recorded after the checks failed (the Cholesky factor of a matrix
            # that is not positive definite), where torch would have stopped at a check.
            passed, failure = False, error
        if not passed:
            init(self, *args, **kwargs)
        if failure is not None:
            raise failure  # the arguments pass: the failure is the op's own
        _adopt(self)
    return run


def _adopt(distribution: Any) -> None:
    for part in vars(distribution).values():
        if isinstance(part, torch.distributions.Distribution) \
                and not isinstance(part, Distribution):
            part.__class__ = gt_class(type(part))
            _adopt(part)


def _under(context: Any, function: Any) -> Any:
    def run(*args: Any, **kwargs: Any) -> Any:
        with context():
            return function(*args, **kwargs)
    run.__name__, run.__qualname__, run.__doc__ = \
        function.__name__, function.__qualname__, function.__doc__
    run.__wrapped__ = function
    return run


def _public(name: str) -> bool:
    return not name.startswith('_') or name == '__init__'


def _record_members(cls: type) -> None:
    """Record each public method and property `cls` has, its own or inherited from torch,
    in `cls` itself; those a GT class recorded already are left as they are."""
    members: dict[str, Any] = {}
    for owner in cls.__mro__:  # as attribute lookup finds them, without running descriptors
        for name, member in vars(owner).items():
            members.setdefault(name, member)
    for name, member in members.items():
        if not _public(name) or getattr(member, '_gt_recorded', False):
            continue
        wrapped = _wrapped(name, member)
        if wrapped is not None:
            (wrapped.fget if isinstance(wrapped, property) else wrapped)._gt_recorded = True
            setattr(cls, name, wrapped)


class Distribution(torch.distributions.Distribution):
    """torch's Distribution for GT tensors. Every subclass, gt.distributions' own and a
    script's custom one alike, has its methods recorded when it is made."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _record_members(cls)

    def _validate_sample(self, value: Any) -> None:
        """torch's checks, for GT values too: torch's own refuses whatever is not a
        torch.Tensor, and GT's Tensor is not one (it has no storage in this process)."""
        if not isinstance(value, Tensor):
            return super()._validate_sample(value)
        shape, event_shape = torch.Size(value.shape), self._event_shape
        if shape[len(shape) - len(event_shape):] != event_shape:
            raise ValueError('The right-most size of value must match event_shape: '
                             f'{shape} vs {event_shape}.')
        expected = self._batch_shape + event_shape
        try:
            torch.broadcast_shapes(shape, expected)
        except RuntimeError:
            raise ValueError('Value is not broadcastable with batch_shape+event_shape: '
                             f'{shape} vs {expected}.') from None
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f'{type(self).__name__} defines no support, so its samples are not '
                          'checked; validate_args=False turns the checks off', stacklevel=3)
            return None
        if not bool(support.check(value).all()):
            raise ValueError(f'Expected value argument (Tensor of shape {tuple(shape)}) to be '
                             f'within the support ({support!r}) of the distribution {self!r}, '
                             f'but found invalid values:\n{value}')
        return None

    def _get_checked_instance(self, cls: type, _instance: Any = None) -> Any:
        """torch's `expand` refuses a subclass with an `__init__` of its own, whose fields
        it could not know; a GT class's `__init__` is torch's, recorded."""
        if _instance is None and inspect.unwrap(type(self).__init__) is cls.__init__:
            return self.__new__(type(self))
        return super()._get_checked_instance(cls, _instance)


_classes: dict[type, type] = {}


def gt_class(torch_class: type) -> type:
    """torch's distribution class `torch_class`, for GT tensors (one class for each)."""
    made = _classes.get(torch_class)
    if made is None:
        made = _classes[torch_class] = type(
            torch_class.__name__, (Distribution, torch_class),
            {'__module__': 'gt.distributions', '__doc__': torch_class.__doc__})
    return made
