"""`gt.jit`: the torch.jit that model code carries without needing it. TorchScript
compiles Python into torch's own IR; GT already records a script's ops into its own and
compiles hot programs (`gt.compile`), so `script` and `trace` return what they are given,
the guards say GT is neither scripting nor tracing, and the decorators are the identity.
Saving or loading a TorchScript archive needs torch's IR: refused, naming why."""

from typing import Any, Callable, Final  # noqa: F401 (torch.jit.Final is typing's)


def script(obj: Any, *args: Any, **kwargs: Any) -> Any:
    return obj


def trace(func: Any, example_inputs: Any = None, *args: Any, **kwargs: Any) -> Any:
    return func


def is_scripting() -> bool:
    return False


def is_tracing() -> bool:
    return False


def _identity(function: Callable) -> Callable:
    return function


ignore = unused = export = script_if_tracing = _identity


def annotate(the_type: Any, the_value: Any) -> Any:
    return the_value


def save(*args: Any, **kwargs: Any) -> None:
    raise RuntimeError('gt.jit.save: a TorchScript archive holds torch\'s IR, which GT does '
                       'not build; save the weights (gt.save(model.state_dict(), path))')


def load(*args: Any, **kwargs: Any) -> None:
    raise RuntimeError('gt.jit.load: a TorchScript archive runs in torch\'s interpreter, not '
                       'on GT; load the weights into a GT model instead')
