"""torch's `_foreach_*` functions (`torch._foreach_lerp_(ema, params, 1 - decay)` in
timm's and diffusers' moving averages, `_foreach_norm` in clipping code): the same call
on each tensor of a list, each argument given as a list taken item by item and anything
else given to every call. GT records each call lazily, so a list of updates still goes
to the workers as one message; the in-place forms update each tensor as its own
in-place method does and return the list of them, as torch's do."""

from typing import Any, Callable

PREFIX = '_foreach_'


def function(name: str) -> Callable:
    """The `_foreach_` function `name` (torch's spelling), or AttributeError."""
    import gt

    op = name[len(PREFIX):]
    in_place = op.endswith('_')
    if op == 'norm':
        def each(tensor, ord=2, dtype=None):
            return gt.linalg.vector_norm(tensor, ord, dtype=dtype)
    elif in_place:
        def each(tensor, *args, **kwargs):
            return getattr(tensor, op)(*args, **kwargs)
    else:
        each = getattr(gt, op)

    def call(*args: Any, **kwargs: Any) -> list:
        lists = [a for a in (*args, *kwargs.values()) if isinstance(a, (list, tuple))]
        if not lists:
            raise TypeError(f'{name}: expects a list of tensors')
        count = len(lists[0])
        if any(len(items) != count for items in lists):
            raise RuntimeError(f'{name}: the tensor lists must have the same length, got '
                               f'{[len(items) for items in lists]}')
        return [each(*[_item(a, index) for a in args],
                     **{key: _item(value, index) for key, value in kwargs.items()})
                for index in range(count)]

    call.__name__ = name
    return call


def _item(argument: Any, index: int) -> Any:
    return argument[index] if isinstance(argument, (list, tuple)) else argument
