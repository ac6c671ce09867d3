"""The type of gt.Tensor: its methods that GT runs by name, looked up on the class.

torch's `torch.Tensor.add` is a function of a tensor and the call's arguments, which
code passes around (`functools.reduce(torch.Tensor.add, xs)`, `map(torch.Tensor.flip,
...)`, `hasattr(torch.Tensor, 'inverse')`). GT's instances find such methods through
`__getattr__` (gt/fallback.py), which a lookup on the class never reaches; this type's
`__getattr__` answers for the class with a function that looks the method up on its
first argument.
"""

from typing import Any


class TensorClass(type):
    def __getattr__(cls, name: str) -> Any:
        from gt import fallback  # it imports gt.tensor, whose class this type makes

        if not fallback.is_method(name):
            raise AttributeError(f"type object '{cls.__name__}' has no attribute '{name}'")

        def unbound(tensor: Any, *args: Any, **kwargs: Any) -> Any:
            return getattr(tensor, name)(*args, **kwargs)
        unbound.__name__ = unbound.__qualname__ = name
        return unbound
