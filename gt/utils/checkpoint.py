"""`torch.utils.checkpoint`: activation checkpointing, as GT runs it.

A checkpointed function keeps none of its intermediate values for backward; backward
runs it again from its saved inputs, trading compute for worker memory, as torch's does.
GT runs the function once with grad mode on, walks the tape it recorded to find the
tensors from outside it that its outputs depend on (its inputs, and parameters it reads
from a module or closure), and then drops that tape: one `gt.autograd.Function` node from
those tensors to the outputs stands for the call, so the intermediates are released with
the next message. Its backward restores the session's random state of the first run
(the workers' generator and this process's, lazily, with no round trip), reruns the
function and differentiates the rerun with `gt.autograd.grad`. So parameters get their
gradients whether or not an input requires grad (torch's `use_reentrant=False`); with
`use_reentrant=True` and no input requiring grad, torch's warning and no gradients, as
torch.
"""

import contextlib
import warnings
from typing import Any, Callable, Iterable

import torch
from torch.utils._pytree import tree_flatten, tree_unflatten

from gt import autograd
from gt.autograd_function import Function, FunctionCtx, _alias
from gt.grad_mode import enable_grad, grad_mode, no_grad
from gt.tensor import Tensor, apply, creation

UNSAID_REENTRANT = (
    'torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. '
    'Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an '
    'exception. use_reentrant=False is recommended, but if you need to preserve the current '
    'default behavior, you can pass use_reentrant=True. Refer to docs for more details on '
    'the differences between the two variants.')


UNSAID_REENTRANT_SEQUENTIAL = (
    'torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be '
    'passed explicitly. In version 2.9 we will raise an exception if use_reentrant is not '
    'passed. use_reentrant=False is recommended, but if you need to preserve the current '
    'default behavior, you can pass use_reentrant=True. Refer to docs for more details on '
    'the differences between the two variants.')


def noop_context_fn() -> tuple:
    """torch's default `context_fn`: no context around the forward or the recompute."""
    return contextlib.nullcontext(), contextlib.nullcontext()


def checkpoint(function: Callable, *args: Any, use_reentrant: bool | None = None,
               context_fn: Callable[[], tuple] = noop_context_fn,
               determinism_check: str = 'default', debug: bool = False,
               preserve_rng_state: bool = True, **kwargs: Any) -> Any:
    """`function(*args, **kwargs)`, keeping none of its intermediates for backward."""
    if use_reentrant is None:
        warnings.warn(UNSAID_REENTRANT, UserWarning, stacklevel=2)
        use_reentrant = True  # torch 2.x's default when the caller does not say
    if use_reentrant and kwargs:
        raise ValueError('Unexpected keyword arguments: ' + ','.join(kwargs))
    if use_reentrant and (context_fn is not noop_context_fn or debug):
        raise ValueError('Passing `context_fn` or `debug` is only supported when '
                         'use_reentrant=False.')
    if determinism_check not in ('default', 'none'):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got "
                         f'{determinism_check}')
    if not grad_mode.enabled:
        return function(*args, **kwargs)
    if use_reentrant and not any(isinstance(a, Tensor) and a.requires_grad for a in args):
        warnings.warn('None of the inputs have requires_grad=True. Gradients will be None',
                      stacklevel=2)
        with no_grad():
            return function(*args, **kwargs)
    forward_context, recompute_context = context_fn()
    saved_random = _RandomState() if preserve_rng_state else None
    start = autograd.next_sequence()
    with forward_context:
        outputs = function(*args, **kwargs)
    leaves, structure = tree_flatten(outputs)
    positions = [index for index, leaf in enumerate(leaves) if isinstance(leaf, Tensor)]
    results = [leaves[index] for index in positions]
    sources = _sources(results, start)
    if not sources:
        return outputs  # nothing it made requires grad, so it left no tape to drop
    call = _Call(function, args, kwargs, saved_random, recompute_context,
                 determinism_check == 'default', sources, results)
    taped = _Recompute.apply(call, *sources)
    for index, tensor in zip(positions, taped):
        leaves[index] = tensor
    return tree_unflatten(leaves, structure)


def checkpoint_sequential(functions: Any, segments: int, input: Any,
                          use_reentrant: bool | None = None, **kwargs: Any) -> Any:
    """The modules of `functions` (a Sequential, or a list of them) applied in turn, cut
    into `segments` runs of equal length: each but the last is checkpointed."""
    preserve = kwargs.pop('preserve_rng_state', True)
    if kwargs:
        raise ValueError('Unexpected keyword arguments: ' + ','.join(kwargs))
    if use_reentrant is None:
        warnings.warn(UNSAID_REENTRANT_SEQUENTIAL, UserWarning, stacklevel=2)
        use_reentrant = True
    modules: list = list(functions.children() if hasattr(functions, 'children') else functions)
    length = len(modules) // segments
    done = 0
    for _ in range(segments - 1):
        input = checkpoint(_run_in_turn(modules[done:done + length]), input,
                           use_reentrant=use_reentrant, preserve_rng_state=preserve)
        done += length
    return _run_in_turn(modules[done:])(input)


def _run_in_turn(modules: Iterable) -> Callable:
    def run(value: Any) -> Any:
        for module in modules:
            value = module(value)
        return value
    return run


def _sources(results: list, start: int) -> list:
    """The tensors requiring grad that `results` were computed from and that the call did
    not make: the leaves its tape reaches, and the values from before the call (tape nodes
    numbered below `start`) at which the walk stops. Each once, in the order met."""
    found: dict[int, Tensor] = {}
    walked: set[int] = set()
    stack: list = []

    def meet(tensors: list) -> None:
        for tensor in tensors:
            if not tensor.requires_grad:
                continue
            if tensor.grad_fn is None or tensor.grad_fn.sequence < start:
                found.setdefault(id(tensor), tensor)
            else:
                stack.append(tensor.grad_fn)

    meet(results)
    while stack:
        node = stack.pop()
        if id(node) not in walked:
            walked.add(id(node))
            meet(node.inputs)
    return list(found.values())


class _RandomState:
    """Where the session's draws were: the workers' generator (a lazy `rng_state` op)
    and this process's torch generator (which GT's client-side shuffles draw from)."""

    def __init__(self) -> None:
        self.workers = apply('rng_state', [creation('zeros', (0,), 'uint8')])
        self.client = torch.get_rng_state()

    def restore(self) -> None:
        apply('set_rng_state', [self.workers])
        torch.set_rng_state(self.client)


class _Call:
    """What backward needs to run the function again. The first run's results are held
    only until the node has taken their values."""

    def __init__(self, function: Callable, args: tuple, kwargs: dict,
                 random: _RandomState | None, recompute_context: Any, check: bool,
                 sources: list, results: list) -> None:
        self.function, self.args, self.kwargs = function, args, kwargs
        self.random, self.recompute_context, self.check = random, recompute_context, check
        self.sources = len(sources)
        self.results: list | None = results
        self.types = [tensor._type for tensor in results]


class _Recompute(Function):
    @staticmethod
    def forward(ctx: FunctionCtx, call: _Call, *sources: Tensor) -> tuple:
        results, call.results = call.results, None
        ctx.call = call
        ctx.set_materialize_grads(False)
        ctx.mark_non_differentiable(*[tensor for tensor in results if not tensor.requires_grad])
        tensors = [value for value in (*call.args, *call.kwargs.values())
                   if isinstance(value, Tensor)]
        ctx.save_for_backward(*sources, *tensors)
        return tuple(results)

    @staticmethod
    def backward(ctx: FunctionCtx, *grads: Any) -> tuple:
        call = ctx.call
        # The saved tensors, not the caller's: those may have taken new values since.
        saved = ctx.saved_tensors
        sources, tensors = saved[:call.sources], iter(saved[call.sources:])
        # The rerun must end at the call's inputs: aliases of those that require grad (so
        # the walk stops there) stand in for them; parameters are read as they are.
        stand_ins = {id(tensor): _fresh_leaf(tensor) for tensor in saved
                     if tensor.requires_grad and tensor.grad_fn is not None}

        def argument(value: Any) -> Any:
            if not isinstance(value, Tensor):
                return value
            value = next(tensors)
            return stand_ins.get(id(value), value)

        args = [argument(value) for value in call.args]
        kwargs = {key: argument(value) for key, value in call.kwargs.items()}
        with _random_state_of(call.random), enable_grad(), call.recompute_context:
            outputs = call.function(*args, **kwargs)
        results = [leaf for leaf in tree_flatten(outputs)[0] if isinstance(leaf, Tensor)]
        if call.check:
            _check_same_types(call.types, results)
        pairs = [(result, grad) for result, grad in zip(results, grads)
                 if grad is not None and result.requires_grad]
        targets = [stand_ins.get(id(tensor), tensor) for tensor in sources]
        if not pairs:
            return (None,) * (1 + len(sources))
        found = autograd.grad([result for result, _ in pairs], targets,
                              [grad for _, grad in pairs], retain_graph=True,
                              create_graph=grad_mode.enabled, allow_unused=True)
        return (None, *found)


def _fresh_leaf(tensor: Tensor) -> Tensor:
    """The same value with no history, requiring grad: where the rerun's walk ends."""
    with no_grad():
        leaf = _alias(tensor)
    leaf.requires_grad = True
    return leaf


@contextlib.contextmanager
def _random_state_of(saved: _RandomState | None) -> Any:
    """The first run's random state inside, the session's own again after."""
    if saved is None:
        yield
        return
    current = _RandomState()
    saved.restore()
    try:
        yield
    finally:
        current.restore()


def _check_same_types(expected: list, results: list) -> None:
    if len(expected) != len(results) or any(a != b._type for a, b in zip(expected, results)):
        first = [f'{list(t.shape)} {t.dtype}' for t in expected]
        again = [f'{list(r._type.shape)} {r._type.dtype}' for r in results]
        raise RuntimeError(
            'torch.utils.checkpoint: Recomputed values have different metadata than during '
            f'the forward pass: the function returned {first} then, {again} now. Pass '
            "determinism_check='none' to skip this check.")
