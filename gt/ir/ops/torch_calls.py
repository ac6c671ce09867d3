"""The fallback rows: any allowed torch function, run by name (see gt.ir.torch_functions).

`torch_call` is a pure call; `torch_random` one that draws from the session's generator;
`torch_factory` one with no tensor inputs that makes a tensor (`linspace`, `eye`) on
the worker's device. Their attrs are the function's name and its arguments as wire data
(gt.ir.torch_arguments). Output types come from running the call on meta tensors,
memoized; a call whose result shape depends on the data (`nonzero`, `x[mask]`) has
them from `sizes`, which `torch_sizes` measured on the worker first.

A `torch_call`'s gradient is a `torch_vjp` of the same call (gt/ir/ops/
torch_call_gradients.py). Sharding: calls whose batch rows are independent
(convolutions, poolings, torch's recurrent kernels) keep a batch sharded
(gt.ir.by_name_sharding); other calls have no rule, so their inputs are gathered (the
safe default) until an op earns a row.
"""

import contextlib
import logging
import math
import warnings
from typing import Any, Callable, NamedTuple

import numpy as np
import torch

from gt.ir import borrowed_generator, by_name_sharding, data_dependent, torch_functions
from gt.ir.dtypes import DTYPE_NAMES, FLOATING, TORCH_DTYPES
from gt.ir.graph import TensorType
from gt.ir.invalid_op import InvalidOpError
from gt.ir.ops.opdef import OpDef
from gt.ir.torch_arguments import (
    check_wire,
    decode_call,
    flatten,
    frozen,
    is_tensor_input,
    takes_host_indices,
)


class NeedsData(Exception):
    """The call's result is not a tensor whose structure meta tensors can tell
    (`torch.equal`, `allclose`): only running it on the values can."""


class Signature(NamedTuple):
    types: tuple[TensorType, ...] | None  # None: sizes depend on the data
    ndims: tuple[int, ...]  # per output, for a data-dependent call's sizes
    dtypes: tuple[str, ...]
    skeleton: Any  # the result on meta or fake tensors: how the client rebuilds it


# What fake tensors say when only the values can tell.
NEEDS_VALUES = ('data-dependent', 'data dependent', 'data is not allocated yet')
_signatures: dict[tuple, Signature] = {}
SIGNATURES_KEPT = 16384
# Inputs up to this many elements in all are run for real to word an error as torch does.
WORDING_ELEMENTS = 1 << 20
# Warnings torch's Python raised while a call's types were worked out (its meta kernel
# runs the call), `(category name, text)`: a client warns of them at the user's line
# (`warn_at_call`, which gt.runtime.client sets) and not of a worker's copy again
# (gt.runtime.worker_warnings); a dispatcher, working the types out again, drops them.
WARNED_AT_THE_CALL: set[tuple[str, str]] = set()
warn_at_call: Callable[[warnings.WarningMessage], None] | None = None
# The kinds of error a worker's call reports as they are (`_named_errors`).
KEPT_KINDS = (IndexError, ValueError, TypeError, torch.linalg.LinAlgError)


def call(fn: str, tensors: list, args: list, kwargs: dict) -> Any:
    """Run the call; an in-place function runs on a copy of its target, which it returns."""
    function = torch_functions.resolve(fn)
    if torch_functions.in_place(fn):
        target = args[0][1]
        tensors = list(tensors)
        tensors[target] = tensors[target].clone()
        positional, keywords = decode_call(args, kwargs, tensors)
        function(*positional, **keywords)
        return tensors[target]
    positional, keywords = decode_call(args, kwargs, tensors)
    return function(*positional, **keywords)


def signature(fn: str, types: tuple, args: list, kwargs: dict, factory: bool = False
              ) -> Signature:
    # A factory's or an integer input's result takes the default dtype (`torch.linspace`).
    key = (fn, types, frozen(args), frozen(kwargs), factory, torch.get_default_dtype())
    found = _signatures.get(key)
    if found is None:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')  # the script's filters apply as they are told
            found = _infer(fn, types, args, kwargs, factory)
        if warn_at_call is not None:
            for warning in caught:
                WARNED_AT_THE_CALL.add((warning.category.__name__, str(warning.message)))
                warn_at_call(warning)
        if len(_signatures) >= SIGNATURES_KEPT:
            _signatures.clear()
        _signatures[key] = found
    return found


def _checked(fn: str, types: tuple, args: list, kwargs: dict) -> None:
    torch_functions.resolve(fn)
    if not isinstance(args, (list, tuple)) or not isinstance(kwargs, dict):
        raise ValueError(f'{fn}: malformed torch_call arguments')
    for item in args:
        check_wire(item, len(types))
    check_wire(kwargs, len(types))
    if torch_functions.in_place(fn) and not (args and is_tensor_input(args[0])):
        raise ValueError(f'{fn}: an in-place call must update a tensor input')
    written = torch_functions.side_effects(fn, args, kwargs, is_tensor_input)
    if written:
        raise ValueError(f'{fn} would write into {" and ".join(written)} in place on the worker, '
                         'where GT values are immutable (and may be shared); GT records the '
                         'update itself in gt.nn.functional.batch_norm and for inplace=True')


def _ctc_loss_result(log_probs: torch.Tensor, targets: Any, input_lengths: Any,
                     target_lengths: Any, blank: int = 0, reduction: str = 'mean',
                     zero_infinity: bool = False) -> torch.Tensor:
    """A loss per sequence of the batch (a 0-d one unbatched), or their mean or sum."""
    batched = log_probs.dim() == 3
    shape = (log_probs.shape[1],) if batched and reduction == 'none' else ()
    return torch.empty(shape, dtype=log_probs.dtype, device='meta')


# Functions torch has no meta kernel for, whose result shapes do not depend on the values:
# their results on meta tensors, so that they record (and differentiate) like the rest
# instead of running in the client. A genuine error in the arguments then shows on the
# worker, named, at the next materialization.
def _like_first(first: torch.Tensor, *rest: Any) -> torch.Tensor:
    return torch.empty_like(first, device='meta')


def _recurrent_result(input: torch.Tensor, *rest: Any) -> tuple:
    """torch's recurrent kernels (`torch.lstm`, `torch.gru`, `torch.rnn_tanh/relu`), over
    a padded batch `(input, hx, params, ..., bidirectional, batch_first)` or a packed one
    `(data, batch_sizes, hx, params, ..., bidirectional)`. Their meta forms run the
    recurrence step by step: 0.06-0.7 s to type a GRU over 50-200 steps, paid again at
    every new length (sampling over a growing prefix). The shapes follow from the hidden
    state's: the output's features are its size per direction."""
    packed = isinstance(rest[0], torch.Tensor) and not rest[0].is_floating_point()
    hx, bidirectional = (rest[1], rest[7]) if packed else (rest[0], rest[6])
    states = list(hx) if isinstance(hx, (list, tuple)) else [hx]
    features = (2 if bidirectional else 1) * states[0].shape[-1]
    output = torch.empty((*input.shape[:-1], features), dtype=input.dtype, device='meta')
    return (output, *(torch.empty_like(state, device='meta') for state in states))


RECURRENT_KERNELS = ('torch.lstm', 'torch.gru', 'torch.rnn_tanh', 'torch.rnn_relu')
# Kernels whose forward gives other bits with autograd on than off, even with no input
# requiring grad: a stacked unidirectional LSTM on the CPU takes oneDNN's layer-by-layer
# training path in grad mode and its fused inference path otherwise (412 of 896 outputs
# differed in the last bit for a 2-layer LSTM). A call recorded in grad mode carries
# `grad_enabled` and runs so on the worker, whose programs run in inference mode.
GRAD_MODE_KERNELS = frozenset({'torch.lstm'})
META_RESULTS = {**{name: _recurrent_result for name in RECURRENT_KERNELS},
                'torch.nn.functional.ctc_loss': _ctc_loss_result,
                'torch._sample_dirichlet': _like_first,
                'torch._standard_gamma_grad': _like_first,
                'torch._dirichlet_grad': _like_first}


def _infer(fn: str, types: tuple, args: list, kwargs: dict, factory: bool) -> Signature:
    _checked(fn, types, args, kwargs)
    device = {'device': 'meta'} if factory else {}
    tensors = [torch.empty(t.shape, dtype=TORCH_DTYPES[t.dtype], device='meta') for t in types]
    if fn in META_RESULTS:
        positional, keywords = decode_call(args, kwargs, tensors)
        return _described(fn, META_RESULTS[fn](*positional, **keywords), dynamic=False)
    try:
        result = call(fn, tensors, args, dict(kwargs, **device))
    except Exception as meta_error:
        if isinstance(meta_error, NotImplementedError) or 'meta' in str(meta_error):
            # No meta kernel, or one that needs the values.
            found = data_dependent.known(fn, types, args, kwargs)
            if found is not None:
                return Signature(None, *found)
            return _infer_fake(fn, types, args, kwargs, device)
        raise _error_kind(meta_error)(
            f'{fn}: {_in_torchs_words(fn, types, args, kwargs, meta_error)}') from None
    return _described(fn, result, dynamic=False)


def _in_torchs_words(fn: str, types: tuple, args: list, kwargs: dict,
                     meta_error: Exception) -> Exception:
    """torch's error for the call on real tensors of these shapes, where they are small:
    a meta kernel's words are often terser (a convolution's 'Invalid channel dimensions'
    against torch's 'expected input[1, 4, 8, 8] to have 3 channels, but got 4')."""
    if sum(math.prod(t.shape) for t in types) > WORDING_ELEMENTS:
        return meta_error
    tensors = [torch.zeros(t.shape, dtype=TORCH_DTYPES[t.dtype]) for t in types]
    try:
        call(fn, tensors, args, kwargs)
    except Exception as error:
        return error if type(error) is type(meta_error) else meta_error
    return meta_error


def _error_kind(error: Exception) -> type:
    """What the user's line raises for torch's `error`: torch's own TypeError or IndexError,
    else InvalidOpError (a RuntimeError like torch's)."""
    if 'tensors used as indices' in str(error):
        return IndexError  # what torch raises on real tensors; meta ones raise RuntimeError
    return type(error) if type(error) in (TypeError, IndexError) else InvalidOpError


def _infer_fake(fn, types, args, kwargs, device) -> Signature:
    """Fake tensors with a shape environment run ops whose sizes depend on the data,
    giving them unbacked sizes, and report a genuine error in their words (a mask of
    the wrong shape: torch's IndexError, where the meta attempt only said it has no
    kernel). gt.ir.data_dependent spares the commonest calls this."""
    # Imported here, not at the top: symbolic shapes bring in sympy, most of a second of
    # every GT process's start (client, dispatcher and workers alike).
    from torch._subclasses.fake_tensor import (
        DataDependentOutputException,
        DynamicOutputShapeException,
        FakeTensorMode,
        UnsupportedOperatorException,
    )
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    mode = FakeTensorMode(shape_env=ShapeEnv())
    try:
        with mode, _quiet_fake_tensors():
            tensors = [torch.empty(t.shape, dtype=TORCH_DTYPES[t.dtype]) for t in types]
            result = call(fn, tensors, args, dict(kwargs, **({'device': 'cpu'} if device
                                                             else {})))
    except (DataDependentOutputException, DynamicOutputShapeException,
            UnsupportedOperatorException, NotImplementedError) as error:
        raise NeedsData(f'{fn}: {error}') from error
    except Exception as error:
        if any(sign in str(error) for sign in NEEDS_VALUES):
            raise NeedsData(f'{fn}: {error}') from error
        raise _error_kind(error)(f'{fn}: {error}') from error
    return _described(fn, result, dynamic=True)


@contextlib.contextmanager
def _quiet_fake_tensors():
    """Fake tensors log every failure at ERROR; here a failure is an answer."""
    logger = logging.getLogger('torch._subclasses.fake_tensor')
    disabled, logger.disabled = logger.disabled, True
    try:
        yield
    finally:
        logger.disabled = disabled


def _described(fn: str, result: Any, dynamic: bool) -> Signature:
    outputs = flatten(result)
    if not outputs and result is not None and not isinstance(result, (list, tuple)):
        if dynamic or not isinstance(result, (bool, int, float, str, torch.Size, torch.dtype)):
            raise NeedsData(f'{fn} returns a {type(result).__name__}, not tensors')
    for tensor in outputs:
        if tensor.dtype not in DTYPE_NAMES:
            raise TypeError(f'{fn}: its result has dtype {tensor.dtype}, which GT has not '
                            f'(GT has {", ".join(TORCH_DTYPES)})')
        if tensor.layout != torch.strided:
            raise TypeError(f'{fn}: its result is a {tensor.layout} tensor; GT holds strided '
                            'tensors only')
    ndims = tuple(tensor.dim() for tensor in outputs)
    dtypes = tuple(DTYPE_NAMES[tensor.dtype] for tensor in outputs)
    static = all(isinstance(size, int) for tensor in outputs for size in tensor.shape)
    types = (tuple(TensorType(tuple(t.shape), d) for t, d in zip(outputs, dtypes))
             if static else None)
    return Signature(types, ndims, dtypes, result)


def output_types(fn: str, types: tuple, args: list, kwargs: dict, sizes: list | None,
                 factory: bool = False) -> tuple[TensorType, ...]:
    try:
        found = signature(fn, types, args, kwargs, factory)
    except NeedsData as error:
        raise ValueError(f'{error} (GT computes it only where the values are)') from None
    if sizes is None:
        if found.types is None:
            raise ValueError(f'{fn}: the result shape depends on the values; record it with '
                             'the sizes torch_sizes measured')
        return found.types
    if (not isinstance(sizes, (list, tuple)) or len(sizes) != sum(found.ndims)
            or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0
                       for s in sizes)):
        raise ValueError(f'{fn}: sizes {sizes!r} do not fit outputs of ranks '
                         f'{list(found.ndims)}')
    shapes, start = [], 0
    for ndim in found.ndims:
        shapes.append(tuple(sizes[start:start + ndim]))
        start += ndim
    return tuple(TensorType(shape, dtype) for shape, dtype in zip(shapes, found.dtypes))


# ---- torch_call ------------------------------------------------------------------------
def _call_type(types, fn, args, kwargs, sizes=None, grad_enabled=False):
    return output_types(fn, types, args, kwargs, sizes)


def _outputs(result: Any, sizes: list | None) -> Any:
    outputs = flatten(result)
    if sizes is not None:
        measured = [size for tensor in outputs for size in tensor.shape]
        if measured != list(sizes):
            raise RuntimeError(f'the result has sizes {measured}, not the {list(sizes)} '
                               'measured before (is the function deterministic?)')
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


def _torch_call(*tensors, fn, args, kwargs, sizes=None, grad_enabled=False):
    with _grad_mode_as_recorded(grad_enabled):
        return _outputs(_named_errors(fn, list(tensors), args, kwargs), sizes)


def _grad_mode_as_recorded(grad_enabled: bool) -> Any:
    """Autograd on for a GRAD_MODE_KERNELS call recorded in grad mode. Nothing requires
    grad, so inference tensors may go in and no graph is kept. A compiled region traces
    the call plainly (its kernels give Inductor's bits anyway)."""
    if not grad_enabled or torch.compiler.is_compiling():
        return contextlib.nullcontext()
    stack = contextlib.ExitStack()
    stack.enter_context(torch.inference_mode(False))
    stack.enter_context(torch.enable_grad())
    return stack


def _named_errors(fn: str, tensors: list, args: list, kwargs: dict) -> Any:
    """`call`, with the function's name in any error, so a worker's report names it. The
    kinds a script catches keep theirs, which the client raises them as: an index out of
    range (IndexError), a ValueError or TypeError, and a linear-algebra failure (a matrix
    not positive-definite, or singular: torch.linalg.LinAlgError)."""
    try:
        return call(fn, tensors, args, kwargs)
    except Exception as error:
        kind = next((kept for kept in KEPT_KINDS if isinstance(error, kept)), RuntimeError)
        raise kind(f'{fn}: {error}') from error


def numpy_row(torch_row):
    """A numpy row that runs the torch row on the arrays (through torch, zero-copy)."""
    def run(*arrays, **attrs):
        # reshape: ascontiguousarray makes a 0-d number 1-d, and a 1-d float32 number beside
        # half tensors would make torch compute in float32 (a 0-d one does not promote).
        tensors = [torch.from_numpy(np.ascontiguousarray(a).reshape(a.shape))
                   if isinstance(a, np.ndarray) else a for a in arrays]
        result = torch_row(*tensors, **attrs)
        if isinstance(result, torch.Tensor):
            return result.numpy()
        return tuple(tensor.numpy() for tensor in result) if isinstance(result, tuple) \
            else result
    return run


# ---- torch_random and torch_factory --------------------------------------------------------
def _torch_generator(generator: Any) -> torch.Generator:
    """The session's generator; the numpy engine's lends a torch generator its draw."""
    if isinstance(generator, np.random.Generator):
        return torch.Generator().manual_seed(int(generator.integers(2 ** 62)))
    return generator


def _random_type(types, fn, args, kwargs):
    if fn not in torch_functions.RANDOM:
        raise ValueError(f'torch_random: {fn} draws no random numbers; it is a torch_call')
    return output_types(fn, types, args, kwargs, None, factory=not types)


def _torch_random(ctx, *tensors, fn, args, kwargs):
    device = {} if tensors else {'device': ctx.device or 'cpu'}
    if fn in torch_functions.TAKES_GENERATOR:
        given = dict(kwargs, **device, generator=_torch_generator(ctx.generator))
        return _outputs(_named_errors(fn, list(tensors), args, given), None)
    with borrowed_generator.lent_to(_torch_generator(ctx.generator)):
        return _outputs(_named_errors(fn, list(tensors), args, dict(kwargs, **device)), None)


def _numpy_random(ctx, *arrays, **attrs):
    return numpy_row(lambda *tensors, **a: _torch_random(ctx, *tensors, **a))(*arrays, **attrs)


def _factory_type(types, fn, args, kwargs):
    if types or fn in torch_functions.RANDOM:
        raise ValueError(f'torch_factory: {fn} must take no tensors and draw nothing')
    found = output_types(fn, types, args, kwargs, None, factory=True)
    if len(found) != 1:
        raise ValueError(f'torch_factory: {fn} must make one tensor')
    return found


def _torch_factory(ctx, fn, args, kwargs):
    return _named_errors(fn, [], args, dict(kwargs, device=ctx.device or 'cpu'))


def _numpy_factory(ctx, fn, args, kwargs):
    return call(fn, [], args, dict(kwargs, device='cpu')).numpy()


# ---- torch_sizes: the probe of a data-dependent call ------------------------------------
def _sizes_type(types, fn, args, kwargs):
    try:
        found = signature(fn, types, args, kwargs)
    except NeedsData as error:
        raise ValueError(str(error)) from None
    return (TensorType((sum(found.ndims),), 'int64'),)


def _torch_sizes(*tensors, fn, args, kwargs):
    outputs = flatten(call(fn, list(tensors), args, kwargs))
    sizes = [size for tensor in outputs for size in tensor.shape]
    device = tensors[0].device if tensors else None
    return torch.tensor(sizes, dtype=torch.int64, device=device)


def _numpy_sizes(*arrays, **attrs):
    return numpy_row(_torch_sizes)(*arrays, **attrs)


def _traced(fn, args, kwargs, **attrs):
    """A call joins compiled regions unless it reads host indices (see HostIndices)."""
    return not takes_host_indices(args, kwargs)


# ---- the gradient: torch_vjp (gt/ir/ops/torch_call_gradients.py) -----------------------
def _call_grad(emit, inputs, grads, fn, args, kwargs, sizes=None, grad_enabled=False):
    """Gradients by `torch_vjp` of the same call, for floating inputs that want them."""
    wants = [i for i, tensor in enumerate(inputs)
             if getattr(tensor, 'requires_grad', True) and tensor._type.dtype in FLOATING]
    if not wants:
        return [None] * len(inputs)
    types = tuple(tensor._type for tensor in inputs)
    outputs = output_types(fn, types, args, kwargs, sizes)
    differentiable = [i for i, t in enumerate(outputs) if t.dtype in FLOATING]
    cotangents = [grads[i] if grads[i] is not None else
                  emit('zeros', shape=list(outputs[i].shape), dtype=outputs[i].dtype)
                  for i in differentiable]
    attrs = dict(fn=fn, args=args, kwargs=kwargs, n_inputs=len(inputs), wants=wants,
                 differentiable=differentiable)
    return scattered(emit('torch_vjp', *inputs, *cotangents, **attrs, **sized(sizes)),
                     wants, len(inputs))


def sized(sizes: list | None) -> dict:
    """The `sizes` attr of a call whose result shape was measured; none otherwise."""
    return {} if sizes is None else {'sizes': sizes}


def scattered(result, positions: list, count: int) -> list:
    """A gradient op's results at `positions` of `count` gradients, None elsewhere."""
    result = result if isinstance(result, list) else [result]
    gradients: list = [None] * count
    for index, gradient in zip(positions, result):
        gradients[index] = gradient
    return gradients


ROWS = [
    OpDef('torch_call', _call_type, _torch_call, numpy_row(_torch_call), grad=_call_grad,
          shard=by_name_sharding.call_rule, traced=_traced),
    OpDef('torch_random', _random_type, _torch_random, _numpy_random, random=True,
          context=True),
    OpDef('torch_factory', _factory_type, _torch_factory, _numpy_factory, source=True),
    OpDef('torch_sizes', _sizes_type, _torch_sizes, _numpy_sizes),
]
