"""Module hooks as torch.nn has them: forward pre-hooks, forward hooks, full backward
hooks and their pre-hooks, for feature extraction, activation statistics and gradient
inspection.

A module without hooks pays one check per call (Module.__call__). Backward hooks are
built on tensor hooks: each output's gradient is caught as it arrives, and the input's
gradient on a stand-in (`input * 1`, exact) whose hook sees the module's whole
contribution. The caller gets stand-ins of the outputs too, so that its own hooks on
them change the gradient the module's hooks see, as in torch. A module called with
several tensors that require grad has their stand-ins made by one node
(`_InputsArrive`), whose backward has all their gradients at once, as torch's
BackwardHookFunction does. Hooks on every module (torch.nn.modules.module's
`register_module_forward_hook` and the rest, as profilers and activation recorders use
them) live in this module's GLOBAL_* registries and run before each module's own.
"""

import warnings
from collections import OrderedDict
from typing import Any, Callable

from torch.utils.hooks import RemovableHandle

from gt import autograd
from gt.autograd_function import Function
from gt.creation import zeros_like
from gt.runtime.locations import user_call
from gt.tensor import Tensor

# torch's registries, each an OrderedDict on every Module (scripts read and clear them).
REGISTRIES = ('_forward_pre_hooks', '_forward_pre_hooks_with_kwargs', '_forward_hooks',
              '_forward_hooks_with_kwargs', '_forward_hooks_always_called', '_backward_hooks',
              '_backward_pre_hooks', '_state_dict_pre_hooks', '_state_dict_hooks',
              '_load_state_dict_pre_hooks', '_load_state_dict_post_hooks')
# Hooks on every module (torch.nn.modules.module's register_module_*_hook), run before
# each module's own, as torch runs them.
GLOBAL_FORWARD_PRE: OrderedDict = OrderedDict()
GLOBAL_FORWARD: OrderedDict = OrderedDict()
GLOBAL_FORWARD_WITH_KWARGS: OrderedDict = OrderedDict()
GLOBAL_FORWARD_ALWAYS_CALLED: OrderedDict = OrderedDict()
GLOBAL_BACKWARD: OrderedDict = OrderedDict()
GLOBAL_BACKWARD_PRE: OrderedDict = OrderedDict()
NO_INPUT_GRADIENTS = ('Full backward hook is firing when gradients are computed with respect '
                      'to module outputs since no inputs require gradients. See '
                      'https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html'
                      '#torch.nn.Module.register_full_backward_hook for more details.')


def add_hook(module: Any, registry: str, hook: Any, prepend: bool = False,
             flags: tuple[str, ...] = ()) -> RemovableHandle:
    """Register `hook` as torch does: in the module's OrderedDict `registry` under its
    handle's id (scripts read `module._forward_pre_hooks.values()`), and in the dicts
    named by `flags` (`_forward_pre_hooks_with_kwargs`) as True."""
    hooks = _registry(module, registry)
    marks = [_registry(module, name) for name in flags]
    handle = RemovableHandle(hooks, extra_dict=marks)
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    for mark in marks:
        mark[handle.id] = True
    return handle


def _registry(module: Any, name: str) -> OrderedDict:
    entries = module.__dict__.get(name)
    if entries is None:  # Module.__init__ did not run
        raise AttributeError(f'cannot register a hook on {type(module).__name__} before '
                             'Module.__init__() is called (call super().__init__() first)')
    return entries


def take_forward_pre_hook(module: Any, kind: type, matches: Callable) -> Any:
    """The forward pre-hook of class `kind` that `matches` (weight norm's, spectral
    norm's, pruning's, for one tensor), taken off the module; None if there is none."""
    hooks = module._forward_pre_hooks
    for key, hook in hooks.items():
        if isinstance(hook, kind) and matches(hook):
            del hooks[key]
            return hook
    return None


def register_global(registry: OrderedDict, hook: Any, marks: tuple = ()) -> RemovableHandle:
    """A hook on every module: torch's `register_module_forward_hook` and the rest."""
    handle = RemovableHandle(registry, extra_dict=list(marks))
    registry[handle.id] = hook
    for mark in marks:
        mark[handle.id] = True
    return handle


def register_module_forward_pre_hook(hook: Any) -> RemovableHandle:
    """`hook(module, args)` before every module's forward (and its own pre-hooks)."""
    return register_global(GLOBAL_FORWARD_PRE, hook)


def register_module_forward_hook(hook: Any, *, with_kwargs: bool = False,
                                 always_call: bool = False) -> RemovableHandle:
    """`hook(module, args, output)` after every module's forward (`with_kwargs`:
    `hook(module, args, kwargs, output)`)."""
    return register_global(GLOBAL_FORWARD, hook, (
        (GLOBAL_FORWARD_WITH_KWARGS,) if with_kwargs else ()) + (
        (GLOBAL_FORWARD_ALWAYS_CALLED,) if always_call else ()))


def register_module_full_backward_pre_hook(hook: Any) -> RemovableHandle:
    """`hook(module, grad_output)` for every module, before its own backward pre-hooks."""
    return register_global(GLOBAL_BACKWARD_PRE, hook)


def register_module_full_backward_hook(hook: Any) -> RemovableHandle:
    """`hook(module, grad_input, grad_output)` for every module, before its own."""
    return register_global(GLOBAL_BACKWARD, hook)


def call_with_hooks(module: Any, args: tuple, kwargs: dict) -> Any:
    """The module's forward with every hook, in torch's order. If anything raises, the
    forward hooks registered with `always_call` that have not run yet run (with output
    None; an error of theirs only warns), as torch's do, and the error goes on."""
    called: set = set()
    try:
        return _call_with_hooks(module, args, kwargs, called)
    except Exception:
        for registry, with_kwargs, always in (
                (GLOBAL_FORWARD, GLOBAL_FORWARD_WITH_KWARGS, GLOBAL_FORWARD_ALWAYS_CALLED),
                (module._forward_hooks, module._forward_hooks_with_kwargs,
                 module._forward_hooks_always_called)):
            for key, hook in list(registry.items()):
                if key in always and (id(registry), key) not in called:
                    try:
                        hook(module, args, kwargs, None) if key in with_kwargs else \
                            hook(module, args, None)
                    except Exception as error:
                        warnings.warn('module forward hook with ``always_call=True`` raised '
                                      'an exception that was silenced as another error was '
                                      f'raised in forward: {error}')
        raise


def _call_with_hooks(module: Any, args: tuple, kwargs: dict, called: set) -> Any:
    for hook in list(GLOBAL_FORWARD_PRE.values()):
        result = hook(module, args)
        if result is not None:
            args = result if isinstance(result, tuple) else (result,)
    with_kwargs = module._forward_pre_hooks_with_kwargs
    for key, hook in list(module._forward_pre_hooks.items()):
        if key in with_kwargs:
            result = hook(module, args, kwargs)
            if result is not None:
                args, kwargs = result
        else:
            result = hook(module, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
    watch = _BackwardWatch(module, args) if module._backward_hooks or GLOBAL_BACKWARD \
        else None
    if watch is not None:
        args = watch.inputs
    output = module.forward(*args, **kwargs)
    for registry, with_kwargs in ((GLOBAL_FORWARD, GLOBAL_FORWARD_WITH_KWARGS),
                                  (module._forward_hooks, module._forward_hooks_with_kwargs)):
        for key, hook in list(registry.items()):
            called.add((id(registry), key))
            result = hook(module, args, kwargs, output) if key in with_kwargs else \
                hook(module, args, output)
            if result is not None:
                output = result
    if module._backward_pre_hooks or GLOBAL_BACKWARD_PRE or watch is not None:
        # The caller gets stand-ins, as torch's gets its BackwardHook's outputs: hooks the
        # caller puts on them run before the module's, which watch the module's own.
        inner, output = output, _stand_ins(output)
        if module._backward_pre_hooks or GLOBAL_BACKWARD_PRE:  # first: the full backward
            _before_backward(module, inner)                   # hooks see its result
        if watch is not None:
            watch.watch_outputs(inner)
    return output


def _stand_ins(output: Any) -> Any:
    """`output` with each tensor that requires grad as `tensor * 1` (exact)."""
    def stand_in(value: Any) -> Any:
        return value * 1 if isinstance(value, Tensor) and value.requires_grad else value
    if isinstance(output, tuple) and hasattr(output, '_fields'):
        return type(output)(*map(stand_in, output))
    if isinstance(output, (tuple, list)):
        return type(output)(map(stand_in, output))
    return stand_in(output)


def _before_backward(module: Any, output: Any) -> None:
    """Full backward pre-hooks: `hook(module, grad_output)` when the output's gradient
    is known, before the module's backward; a result not None replaces it."""
    outputs = output if isinstance(output, (tuple, list)) else (output,)
    wanting = [i for i, out in enumerate(outputs)
               if isinstance(out, Tensor) and out.requires_grad]
    if len(wanting) > 1:
        raise NotImplementedError(
            f'{type(module).__name__}: GT calls full backward pre-hooks for a module whose '
            f'output has at most one tensor that requires grad; this call has {len(wanting)}')
    if not wanting:
        return
    index, count = wanting[0], len(outputs)

    def arrived(grad: Tensor) -> Tensor | None:
        grad_output = tuple(grad if i == index else None for i in range(count))
        for hook in [*GLOBAL_BACKWARD_PRE.values(), *module._backward_pre_hooks.values()]:
            replaced = hook(module, grad_output)
            if replaced is not None:
                grad_output = tuple(replaced)
        return grad_output[index]

    # Before the hooks already on the tensor: an inner module's, when this one returns
    # that module's output (torch runs the outer module's pre-hook first).
    autograd.register_hook(outputs[index], arrived, prepend=True)


class _BackwardWatch:
    """One call's gradients, gathered for the module's full backward hooks."""

    def __init__(self, module: Any, args: tuple):
        self.module = module
        self.args = args
        # The positions of the arguments that require grad: one stand-in's tensor hook,
        # or for several one node whose backward has all their gradients at once.
        self.wanting = tuple(i for i, a in enumerate(args)
                             if isinstance(a, Tensor) and a.requires_grad)
        stand_ins = dict(zip(self.wanting, _InputsArrive.apply(
            self, *(args[i] for i in self.wanting)) if len(self.wanting) > 1 else
            [args[i] * 1 for i in self.wanting]))
        self.inputs = tuple(stand_ins.get(i, a) for i, a in enumerate(args))
        if len(self.wanting) == 1:
            stand_ins[self.wanting[0]].register_hook(self._input_arrived)
        self.grad_outputs: list = []
        self.waiting = 0

    def watch_outputs(self, output: Any) -> None:
        outputs = output if isinstance(output, (tuple, list)) else (output,)
        self.grad_outputs = [None] * len(outputs)
        for index, tensor in enumerate(outputs):
            if isinstance(tensor, Tensor) and tensor.requires_grad:
                self.waiting += 1
                tensor.register_hook(self._output_arrived(index))

    def _output_arrived(self, index: int) -> Callable:
        def caught(grad: Tensor) -> None:
            self.grad_outputs[index] = grad
            self.waiting -= 1
            if self.waiting == 0 and not self.wanting:  # no input gradient will come
                warnings.warn(NO_INPUT_GRADIENTS, UserWarning, stacklevel=user_call()[0])
                self._call((None,) * len(self.args))
        return caught

    def _input_arrived(self, grad: Tensor) -> Tensor | None:
        replaced = self.inputs_arrived((grad,))
        return None if replaced is None else replaced[0]

    def inputs_arrived(self, grads: tuple) -> tuple | None:
        """grad_input has an entry per argument, as torch's: zeros for another tensor,
        which does not require grad, and None for what is not a tensor. The wanted
        inputs' gradients as the hooks replaced them, or None."""
        arrived = dict(zip(self.wanting, grads))
        replaced = self._call(tuple(
            arrived[i] if i in arrived else zeros_like(a) if isinstance(a, Tensor) else None
            for i, a in enumerate(self.args)))
        return None if replaced is None else tuple(replaced[i] for i in self.wanting)

    def _call(self, grad_input: tuple) -> tuple | None:
        result = None
        for hook in [*GLOBAL_BACKWARD.values(), *self.module._backward_hooks.values()]:
            replaced = hook(self.module, grad_input, tuple(self.grad_outputs))
            if replaced is not None:
                replaced = tuple(replaced)
                if len(replaced) != len(grad_input):
                    raise RuntimeError(f'Backward hook returned an invalid number of '
                                       f'grad_input, got {len(replaced)}, but expected '
                                       f'{len(grad_input)}')
                grad_input = result = replaced
        return result


class _InputsArrive(Function):
    """Several inputs' stand-ins as one node, as torch's BackwardHookFunction: its
    backward has all their gradients at once, for the module's full backward hooks."""

    @staticmethod
    def forward(ctx: Any, watch: _BackwardWatch, *tensors: Tensor) -> tuple:
        ctx.watch = watch
        return tuple(tensor * 1 for tensor in tensors)

    @staticmethod
    def backward(ctx: Any, *grads: Tensor) -> tuple:
        replaced = ctx.watch.inputs_arrived(grads)
        return (None, *(grads if replaced is None else replaced))
