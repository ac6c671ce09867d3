"""`tensor.register_post_accumulate_grad_hook(hook)`: `hook(tensor)` runs once backward
has accumulated the leaf's gradient into `.grad` (an optimizer stepping each parameter as
its gradient is ready). Kept here by the tensor's id, weakly, since a tensor is slots
only; a tape whose leaves have such hooks runs its rules (no replay), as tensor hooks."""

import weakref
from typing import Any, Callable

_hooks: dict[int, tuple[weakref.ref, list]] = {}


def register(tensor: Any, hook: Callable) -> Any:
    from gt.autograd import RemovableHandle

    if not tensor.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if tensor.grad_fn is not None:
        raise RuntimeError('post accumulate grad hooks cannot be registered on non-leaf '
                           'tensors')
    key = id(tensor)
    entry = _hooks.get(key)
    if entry is None or entry[0]() is not tensor:
        # The dict itself, not the global: callbacks may run as the interpreter ends.
        entry = _hooks[key] = (weakref.ref(tensor, lambda _, hooks=_hooks: hooks.pop(key, None)),
                               [])
    entry[1].append(hook)
    return RemovableHandle(entry[1], hook)


def has_hooks(tensor: Any) -> bool:
    entry = _hooks.get(id(tensor)) if _hooks else None
    return entry is not None and entry[0]() is tensor and bool(entry[1])


def run(tensor: Any) -> None:
    """After `tensor.grad` took this backward's gradient."""
    if has_hooks(tensor):
        for hook in list(_hooks[id(tensor)][1]):
            hook(tensor)
