"""Reductions over all, one or several dims, with `dim`/`keepdim` as torch has them,
plus softmax and log_softmax, which normalize along one dim, and their gradients as
torch's own kernels (`softmax_backward`, `log_softmax_backward`)."""

import math

import numpy as np
import torch

from gt.ir.dtypes import DEFAULT_INT, INTEGRAL
from gt.ir.graph import TensorType
from gt.ir.ops import arrays
from gt.ir.ops.gradients import expanded, kept_dims, reduced_count, zeros_of
from gt.ir.ops.opdef import OpDef
from gt.ir.sharding import along, reduction
from gt.ir.type_rules import (
    forbid_bool,
    normalize_dim,
    normalize_dims,
    numel,
    reduced_shape,
    require_floating,
)


def _reduction(name: str, dtype_rule=None, nonempty: bool = False):
    """The type rule of `name(x, dim, keepdim)`; `dtype_rule` checks the input and gives
    the output dtype. Max-like ops have no identity, so torch refuses empty reductions."""
    def infer(types, dim, keepdim):
        (x,) = types
        dims = normalize_dims(name, dim, len(x.shape))
        if nonempty and any(x.shape[axis] == 0 for axis in dims):
            raise ValueError(f'{name}: cannot reduce over a dimension of size 0 '
                             f'(shape {list(x.shape)}, dim {dim})')
        dtype = dtype_rule(x) if dtype_rule else x.dtype
        return (TensorType(reduced_shape(x.shape, dims, keepdim), dtype),)
    return infer


def _sum_dtype(x):
    return DEFAULT_INT if x.dtype in INTEGRAL or x.dtype == 'bool' else x.dtype


def _floating_dtype(name: str):
    def rule(x):
        require_floating(name, x)
        return x.dtype
    return rule


def _variance_type(name: str):
    reduce = _reduction(name, _floating_dtype(name))

    def infer(types, dim, correction, keepdim):
        if correction is not None and not isinstance(correction, (int, float)):
            raise ValueError(f'{name}: correction must be a number or None, got {correction!r}')
        return reduce(types, dim, keepdim)
    return infer


def _one_dim(name: str):
    """max_dim/min_dim: one int dim, values and int64 indices."""
    reduce = _reduction(name, nonempty=True)

    def infer(types, dim, keepdim):
        if not isinstance(dim, int) or isinstance(dim, bool):
            raise ValueError(f'{name}: dim must be an int, got {dim!r}')
        (values,) = reduce(types, dim, keepdim)
        return (values, TensorType(values.shape, 'int64'))
    return infer


def _arg_type(name: str):
    """argmax/argmin: dim None reduces the flattened tensor (keepdim keeps every dim as 1)."""
    def infer(types, dim, keepdim):
        (x,) = types
        forbid_bool(name, x)
        if dim is None:
            if numel(x.shape) == 0:
                raise ValueError(f'{name}: cannot reduce an empty tensor (shape '
                                 f'{list(x.shape)}) without a dim')
            shape = (1,) * len(x.shape) if keepdim else ()
            return (TensorType(shape, 'int64'),)
        if not isinstance(dim, int) or isinstance(dim, bool):
            raise ValueError(f'{name}: dim must be None or an int, got {dim!r}')
        (out,) = _reduction(name, nonempty=True)(types, dim, keepdim)
        return (TensorType(out.shape, 'int64'),)
    return infer


def _normalize_type(name: str):
    def infer(types, dim):
        (x,) = types
        require_floating(name, x)
        normalize_dim(name, dim, len(x.shape))
        return (x,)
    return infer


def _amax(x, dim, keepdim):
    return torch.amax(x, dim=() if dim is None else dim, keepdim=keepdim)


def _amin(x, dim, keepdim):
    return torch.amin(x, dim=() if dim is None else dim, keepdim=keepdim)


def _np_reduce(fn):
    @arrays.quiet
    def run(x, dim, keepdim, **attrs):
        out = fn(arrays.wide(x), axis=arrays.axis(x, dim), keepdims=keepdim, **attrs)
        return np.asarray(out).astype(x.dtype)
    return run


def _mean_type(types, dim, keepdim, count=None):
    """`count`, set only by the sharding rule, is how many elements the whole mean spans
    when this worker reduces only its shard of them."""
    if count is not None and (not isinstance(count, int) or isinstance(count, bool)
                              or count < 1):
        raise ValueError(f'mean: count must be a positive int, got {count!r}')
    return _reduction('mean', _floating_dtype('mean'))(types, dim, keepdim)


def _mean(x, dim, keepdim, count=None):
    if count is None:
        return torch.mean(x, dim=dim, keepdim=keepdim)
    return torch.sum(x, dim=dim, keepdim=keepdim) / count


def _np_mean(x, dim, keepdim, count=None):
    if count is None:
        return _np_reduce(np.mean)(x, dim, keepdim)
    return (_np_reduce(np.sum)(x, dim, keepdim) / count).astype(x.dtype)


def _np_sum(x, dim, keepdim):
    dtype = np.int64 if x.dtype.kind in 'biu' else arrays.wide(x).dtype
    out = np.sum(x, axis=arrays.axis(x, dim), keepdims=keepdim, dtype=dtype)
    return np.asarray(out).astype(np.int64 if x.dtype.kind in 'biu' else x.dtype)


def _np_variance(fn):
    reduce = _np_reduce(fn)

    def run(x, dim, correction, keepdim):
        return reduce(x, dim, keepdim, ddof=1 if correction is None else correction)
    return run


def _np_extreme(values, indices):
    """max_dim/min_dim: numpy's reductions take no axis on 0-d arrays, torch's take 0."""
    def run(x, dim, keepdim):
        if x.ndim == 0:
            return x.copy(), np.zeros((), np.int64)
        return (np.asarray(values(x, axis=dim, keepdims=keepdim)),
                np.asarray(indices(x, axis=dim, keepdims=keepdim)).astype(np.int64))
    return run


def _np_arg(fn):
    def run(x, dim, keepdim):
        if dim is None or x.ndim == 0:
            shape = (1,) * x.ndim if keepdim else ()
            return np.asarray(fn(x)).astype(np.int64).reshape(shape)
        return np.asarray(fn(x, axis=dim, keepdims=keepdim)).astype(np.int64)
    return run


@arrays.quiet
def _np_log_softmax(x, dim):
    wide = arrays.wide(x).reshape(x.shape or (1,))
    shifted = wide - np.max(wide, axis=dim, keepdims=True, initial=-np.inf)
    out = shifted - np.log(np.sum(np.exp(shifted), axis=dim, keepdims=True))
    return out.reshape(x.shape).astype(x.dtype)


@arrays.quiet
def _np_softmax(x, dim):
    return np.asarray(np.exp(_np_log_softmax(arrays.wide(x), dim))).astype(x.dtype)


# ---- gradients: torch's formulas (derivatives.yaml), as ops ----------------------------------
def _sum_grad(emit, inputs, grads, dim, keepdim):
    (x,), (g,) = inputs, grads
    return [expanded(emit, g, x.shape, dim, keepdim)]


def _mean_grad(emit, inputs, grads, dim, keepdim):
    (x,), (g,) = inputs, grads
    return [emit('div', expanded(emit, g, x.shape, dim, keepdim), reduced_count(x.shape, dim))]


def _shared_by_ties(emit, op, x, g, dim, keepdim):
    """amax/amin: every element equal to the extreme gets an even share, as in torch."""
    # Recomputed as the forward computed it, so that the dispatcher's CSE finds it.
    extreme = kept_dims(emit, emit(op, x, dim=dim, keepdim=keepdim), x.shape, dim, keepdim)
    ties = emit('eq', x, extreme)
    count = emit('sum', ties, dim=dim, keepdim=True)
    return [emit('mul', emit('div', kept_dims(emit, g, x.shape, dim, keepdim), count), ties)]


def _amax_grad(emit, inputs, grads, dim, keepdim):
    return _shared_by_ties(emit, 'amax', inputs[0], grads[0], dim, keepdim)


def _amin_grad(emit, inputs, grads, dim, keepdim):
    return _shared_by_ties(emit, 'amin', inputs[0], grads[0], dim, keepdim)


def _to_index(emit, op, x, g, dim, keepdim):
    """max_dim/min_dim: the whole gradient goes to the position the index output names."""
    if g is None:
        return [None]
    if x.ndim == 0:
        return [g]
    _, index = emit(op, x, dim=dim, keepdim=keepdim)  # as the forward did: CSE finds it
    index, g = (kept_dims(emit, t, x.shape, dim, keepdim) for t in (index, g))
    return [emit('scatter_add', zeros_of(emit, x.shape, g), index, g, dim=dim)]


def _max_dim_grad(emit, inputs, grads, dim, keepdim):
    return _to_index(emit, 'max_dim', inputs[0], grads[0], dim, keepdim)


def _min_dim_grad(emit, inputs, grads, dim, keepdim):
    return _to_index(emit, 'min_dim', inputs[0], grads[0], dim, keepdim)


def _variance_input_grad(emit, x, g, dim, correction, keepdim):
    """torch's var_backward: 2 / (n - correction) * g * (x - mean)."""
    correction = 1 if correction is None else correction
    centered = emit('sub', x, emit('mean', x, dim=dim, keepdim=True))
    freedom = reduced_count(x.shape, dim) - correction
    if freedom <= 0 and (dim is None or x.ndim == 0):
        # torch: NaN where x equals the mean (infinity times 0), infinity elsewhere.
        return emit('mul', g, emit('where', emit('eq', centered, 0), math.nan, math.inf))
    scale = 2.0 / freedom if freedom else math.inf
    return emit('mul', emit('mul', scale, kept_dims(emit, g, x.shape, dim, keepdim)), centered)


def _var_grad(emit, inputs, grads, dim, correction, keepdim):
    return [_variance_input_grad(emit, inputs[0], grads[0], dim, correction, keepdim)]


def _std_grad(emit, inputs, grads, dim, correction, keepdim):
    (x,), (g,) = inputs, grads
    std = emit('std', x, dim=dim, correction=correction, keepdim=keepdim)
    g = emit('where', emit('eq', std, 0), 0.0, emit('div', g, emit('mul', std, 2)))
    return [_variance_input_grad(emit, x, g, dim, correction, keepdim)]


def _softmax_grad(emit, inputs, grads, dim):
    """torch's own kernel: the same formula from separate ops sums in another order."""
    (x,), (g,) = inputs, grads
    return [emit('softmax_backward', g, emit('softmax', x, dim=dim), dim=dim)]


def _log_softmax_grad(emit, inputs, grads, dim):
    (x,), (g,) = inputs, grads
    return [emit('log_softmax_backward', g, emit('log_softmax', x, dim=dim), dim=dim)]


def _backward_type(name: str):
    """softmax_backward/log_softmax_backward: a gradient and the forward's output."""
    def infer(types, dim):
        gradient, output = types
        if gradient != output:
            raise ValueError(f'{name}: the gradient {gradient} and the output {output} must '
                             'have one shape and dtype')
        return _normalize_type(name)((output,), dim)
    return infer


def _softmax_backward(gradient, output, dim):
    return torch.ops.aten._softmax_backward_data(gradient, output, dim, output.dtype)


def _log_softmax_backward(gradient, output, dim):
    return torch.ops.aten._log_softmax_backward_data(gradient, output, dim, output.dtype)


@arrays.quiet
def _np_softmax_backward(gradient, output, dim):
    g, y = (arrays.wide(a).reshape(a.shape or (1,)) for a in (gradient, output))
    out = y * (g - np.sum(g * y, axis=dim, keepdims=True))
    return out.reshape(output.shape).astype(output.dtype)


@arrays.quiet
def _np_log_softmax_backward(gradient, output, dim):
    g, y = (arrays.wide(a).reshape(a.shape or (1,)) for a in (gradient, output))
    out = g - np.exp(y) * np.sum(g, axis=dim, keepdims=True)
    return out.reshape(output.shape).astype(output.dtype)


def _softmax_backward_grad(emit, inputs, grads, dim):
    """y (g - sum(g y)) is linear in g (the kernel again); in y its derivative against the
    cotangent v is v (g - sum(g y)) - g sum(v y)."""
    (gradient, output), (v,) = inputs, grads
    total = emit('sum', emit('mul', gradient, output), dim=dim, keepdim=True)
    spread = emit('sum', emit('mul', v, output), dim=dim, keepdim=True)
    return [emit('softmax_backward', v, output, dim=dim),
            emit('sub', emit('mul', v, emit('sub', gradient, total)),
                 emit('mul', gradient, spread))]


def _log_softmax_backward_grad(emit, inputs, grads, dim):
    """g - exp(y) sum(g): against the cotangent v, v - sum(v exp(y)) for g and
    -v exp(y) sum(g) for y."""
    (gradient, output), (v,) = inputs, grads
    probabilities = emit('exp', output)
    return [emit('sub', v, emit('sum', emit('mul', v, probabilities), dim=dim, keepdim=True)),
            emit('neg', emit('mul', emit('mul', v, probabilities),
                             emit('sum', gradient, dim=dim, keepdim=True)))]


ROWS = [
    OpDef('sum', _reduction('sum', _sum_dtype),
          lambda x, dim, keepdim: torch.sum(x, dim=dim, keepdim=keepdim), _np_sum,
          grad=_sum_grad, shard=reduction(sums=True, linear=True)),
    OpDef('mean', _mean_type, _mean, _np_mean, grad=_mean_grad,
          shard=reduction(linear=True, averages=True)),
    OpDef('amax', _reduction('amax', nonempty=True), _amax, _np_reduce(np.amax),
          grad=_amax_grad, shard=reduction()),
    OpDef('amin', _reduction('amin', nonempty=True), _amin, _np_reduce(np.amin),
          grad=_amin_grad, shard=reduction()),
    OpDef('max_dim', _one_dim('max_dim'), torch.max, _np_extreme(np.max, np.argmax),
          grad=_max_dim_grad, shard=reduction()),
    OpDef('min_dim', _one_dim('min_dim'), torch.min, _np_extreme(np.min, np.argmin),
          grad=_min_dim_grad, shard=reduction()),
    OpDef('argmax', _arg_type('argmax'), torch.argmax, _np_arg(np.argmax), shard=reduction()),
    OpDef('argmin', _arg_type('argmin'), torch.argmin, _np_arg(np.argmin), shard=reduction()),
    OpDef('var', _variance_type('var'), torch.var, _np_variance(np.var), grad=_var_grad,
          shard=reduction()),
    OpDef('std', _variance_type('std'), torch.std, _np_variance(np.std), grad=_std_grad,
          shard=reduction()),
    OpDef('softmax', _normalize_type('softmax'), torch.softmax, _np_softmax,
          grad=_softmax_grad, shard=along()),
    OpDef('log_softmax', _normalize_type('log_softmax'), torch.log_softmax, _np_log_softmax,
          grad=_log_softmax_grad, shard=along()),
    OpDef('softmax_backward', _backward_type('softmax_backward'), _softmax_backward,
          _np_softmax_backward, grad=_softmax_backward_grad, shard=along()),
    OpDef('log_softmax_backward', _backward_type('log_softmax_backward'), _log_softmax_backward,
          _np_log_softmax_backward, grad=_log_softmax_backward_grad, shard=along()),
]
