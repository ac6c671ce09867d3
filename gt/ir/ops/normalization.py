"""Layer normalization as torch's kernels: `layer_norm` (torch's native_layer_norm: the
output, and each row's mean and reciprocal standard deviation) and `layer_norm_backward`
(native_layer_norm_backward). The same arithmetic from separate ops is an ulp off, and
Adam turns an ulp in a nearly-zero gradient into a visible step.

The weight and bias are optional inputs, after the input, present as the `weight` and
`bias` attrs say; shards of the axes not normalized stay shards.
"""

import numpy as np
import torch

from gt.ir.graph import TensorType
from gt.ir.invalid_op import InvalidOpError
from gt.ir.ops import arrays
from gt.ir.ops.gradients import wanted
from gt.ir.ops.opdef import OpDef
from gt.ir.type_rules import check_shape, numel, require_floating


def _normalized(name: str, x: TensorType, normalized_shape) -> tuple[int, ...]:
    """The normalized shape, checked against the input's last dims."""
    if not isinstance(normalized_shape, (list, tuple)):
        raise ValueError(f'{name}: normalized_shape must be a list of sizes, got '
                         f'{normalized_shape!r}')
    shape = check_shape(name, normalized_shape)
    if not shape:
        raise ValueError(f'{name}: normalized_shape must name at least one dimension')
    if len(shape) > len(x.shape) or tuple(x.shape[len(x.shape) - len(shape):]) != shape:
        raise ValueError(f'{name}: normalized_shape {list(shape)} does not match the last '
                         f'dims of an input of shape {list(x.shape)}')
    return shape


def _statistics(x: TensorType, shape: tuple[int, ...]) -> TensorType:
    """The type of the mean and rstd: one per row, the normalized dims kept as 1s."""
    return TensorType(tuple(x.shape[:len(x.shape) - len(shape)]) + (1,) * len(shape), x.dtype)


def _check_parameters(name: str, x: TensorType, shape: tuple[int, ...], given: dict) -> None:
    for role, value in given.items():
        if value.shape != shape:
            raise ValueError(f'{name}: the {role} of shape {list(value.shape)} must have the '
                             f'normalized shape {list(shape)}')
        if value.dtype != x.dtype:
            raise InvalidOpError(f'{name}: the {role} has dtype {value.dtype}; the input has '
                            f'{x.dtype}, and they must match')


def _flags(name: str, **flags) -> None:
    for flag, value in flags.items():
        if not isinstance(value, bool):
            raise ValueError(f'{name}: {flag} must be True or False, got {value!r}')


def _layer_norm_type(types, normalized_shape, eps, weight, bias):
    _flags('layer_norm', weight=weight, bias=bias)
    if len(types) != 1 + weight + bias:
        raise ValueError(f'layer_norm: expected {1 + weight + bias} inputs (the input'
                         f'{", the weight" if weight else ""}{", the bias" if bias else ""}), '
                         f'got {len(types)}')
    if not isinstance(eps, (int, float)) or isinstance(eps, bool):
        raise ValueError(f'layer_norm: eps must be a number, got {eps!r}')
    x = types[0]
    require_floating('layer_norm', x)
    shape = _normalized('layer_norm', x, normalized_shape)
    roles = ['weight'] * weight + ['bias'] * bias
    _check_parameters('layer_norm', x, shape, dict(zip(roles, types[1:])))
    stats = _statistics(x, shape)
    return (x, stats, stats)


def _layer_norm_backward_type(types, normalized_shape, weight, output_mask):
    _flags('layer_norm_backward', weight=weight)
    if len(types) != 4 + weight:
        raise ValueError(f'layer_norm_backward: expected {4 + weight} inputs (the gradient, '
                         f'input, mean, rstd{" and weight" if weight else ""}), got {len(types)}')
    if (not isinstance(output_mask, (list, tuple)) or len(output_mask) != 3
            or not all(isinstance(flag, bool) for flag in output_mask) or not any(output_mask)):
        raise ValueError('layer_norm_backward: output_mask must be 3 bools (input, weight, '
                         f'bias), at least one True, got {output_mask!r}')
    if output_mask[1] and not weight:
        raise ValueError("layer_norm_backward: the weight's gradient needs the weight")
    gradient, x, mean, rstd = types[:4]
    require_floating('layer_norm_backward', x)
    shape = _normalized('layer_norm_backward', x, normalized_shape)
    if gradient != x:
        raise ValueError(f'layer_norm_backward: the gradient {gradient} and the input {x} must '
                         'have one shape and dtype')
    stats = _statistics(x, shape)
    for role, value in (('mean', mean), ('rstd', rstd)):
        if value != stats:
            raise ValueError(f'layer_norm_backward: the {role} must be {stats}, got {value}')
    _check_parameters('layer_norm_backward', x, shape, dict(zip(['weight'] * weight, types[4:])))
    parameter = TensorType(shape, x.dtype)
    return tuple(kind for kind, flag in zip((x, parameter, parameter), output_mask) if flag)


def _layer_norm(x, *parameters, normalized_shape, eps, weight, bias):
    return torch.native_layer_norm(x, normalized_shape, parameters[0] if weight else None,
                                   parameters[-1] if bias else None, eps)


def _layer_norm_backward(gradient, x, mean, rstd, *parameters, normalized_shape, weight,
                         output_mask):
    # The kernel reads only the bias's shape (to make its gradient), never its values.
    bias = x.new_empty(normalized_shape) if output_mask[2] else None
    results = torch.ops.aten.native_layer_norm_backward(
        gradient, x, normalized_shape, mean, rstd, parameters[0] if weight else None, bias,
        list(output_mask))
    wanted_results = tuple(result for result, flag in zip(results, output_mask) if flag)
    return wanted_results[0] if len(wanted_results) == 1 else wanted_results


def _axes(x: np.ndarray, normalized_shape) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(the batch axes, the normalized axes)."""
    first = x.ndim - len(normalized_shape)
    return tuple(range(first)), tuple(range(first, x.ndim))


def _row_mean(value: np.ndarray, axes: tuple[int, ...], count: int) -> np.ndarray:
    """The mean over `axes`; 0 over nothing, as torch's kernels take it (numpy warns)."""
    return value.sum(axis=axes, keepdims=True) / max(count, 1)


@arrays.quiet
def _np_layer_norm(x, *parameters, normalized_shape, eps, weight, bias):
    _, normalized = _axes(x, normalized_shape)
    count = numel(normalized_shape)
    wide = arrays.wide(x)
    mean = _row_mean(wide, normalized, count)
    centered = wide - mean
    rstd = 1 / np.sqrt(_row_mean(centered * centered, normalized, count) + eps)
    if not count:
        rstd = np.full_like(rstd, np.nan)  # torch's variance of nothing is NaN
    out = centered * rstd
    if weight:
        out = out * parameters[0]
    if bias:
        out = out + parameters[-1]
    return tuple(np.asarray(value).astype(x.dtype) for value in (out, mean, rstd))


@arrays.quiet
def _np_layer_norm_backward(gradient, x, mean, rstd, *parameters, normalized_shape, weight,
                            output_mask):
    batch, normalized = _axes(x, normalized_shape)
    count = numel(normalized_shape)
    gradient, x = arrays.wide(gradient), arrays.wide(x)
    normal = (x - mean) * rstd
    scaled = gradient * parameters[0] if weight else gradient
    results = []
    if output_mask[0]:
        results.append(rstd * (scaled - _row_mean(scaled, normalized, count)
                               - normal * _row_mean(scaled * normal, normalized, count)))
    if output_mask[1]:
        results.append((gradient * normal).sum(axis=batch))
    if output_mask[2]:
        results.append(gradient.sum(axis=batch))
    results = tuple(np.asarray(value).astype(mean.dtype) for value in results)
    return results[0] if len(results) == 1 else results


# ---- gradients ---------------------------------------------------------------------------------
def _listed(result) -> list:
    return list(result) if isinstance(result, (list, tuple)) else [result]


def _layer_norm_grad(emit, inputs, grads, normalized_shape, eps, weight, bias):
    """torch's native_layer_norm_backward for the output's gradient; the mean's and rstd's
    (which gt.nn never hands out) from their formulas."""
    x = inputs[0]
    grad_output, grad_mean, grad_rstd = grads
    _, mean, rstd = emit('layer_norm', *inputs, normalized_shape=normalized_shape, eps=eps,
                         weight=weight, bias=bias)  # as the forward did: CSE finds it
    parameters = inputs[1:1 + weight]
    mask = [wanted(x), weight and wanted(inputs[1]), bias and wanted(inputs[-1])]
    results: list = [None] * len(inputs)
    if grad_output is not None and any(mask):
        computed = iter(_listed(emit('layer_norm_backward', grad_output, x, mean, rstd,
                                     *parameters, normalized_shape=normalized_shape,
                                     weight=weight, output_mask=mask)))
        present = [True, weight, bias]  # the gradients of the inputs there are, in order
        results = [next(computed) if flag else None
                   for flag, there in zip(mask, present) if there]
    count = numel(normalized_shape)
    if wanted(x) and count and (grad_mean is not None or grad_rstd is not None):
        extra = []
        if grad_mean is not None:  # d mean / dx = 1 / count
            extra.append(emit('div', grad_mean, count))
        if grad_rstd is not None:  # d rstd / dx = -rstd^3 (x - mean) / count
            cube = emit('mul', emit('mul', rstd, rstd), rstd)
            extra.append(emit('mul', emit('mul', grad_rstd, cube),
                              emit('div', emit('sub', x, mean), -count)))
        for term in extra:
            results[0] = term if results[0] is None else emit('add', results[0], term)
        if tuple(results[0].shape) != tuple(x.shape):
            results[0] = emit('expand', results[0], shape=list(x.shape))
    return results


def _batch_sum(emit, value, batch: int):
    """`value` summed over its first `batch` axes (a weight's gradient), if it has any."""
    return emit('sum', value, dim=list(range(batch)), keepdim=False) if batch else value


def _layer_norm_backward_grad(emit, inputs, grads, normalized_shape, weight, output_mask):
    """Second derivatives. With xhat = (x - mean) * rstd, the kernel's input gradient is
    J(g * w) for J, the (symmetric) Jacobian of xhat, so the kernel with another gradient
    and weight applies J again; the rest is J's own derivative in x:
    -(rstd / n) (xhat sum(v dx) + sum(v xhat) dx + sum(g w xhat) J(v)) for the cotangent v of dx."""
    gradient, x, mean, rstd = inputs[:4]
    parameter = inputs[4] if weight else None
    given = iter(grads)
    cotangents = [next(given) if flag else None for flag in output_mask]
    grad_dx, grad_dweight, grad_dbias = cotangents
    count = numel(normalized_shape)
    batch = x.ndim - len(normalized_shape)
    normalized = list(range(batch, x.ndim))

    def jacobian(vector, scale=None):  # J(vector * scale), by the kernel
        extra = [] if scale is None else [scale]
        return emit('layer_norm_backward', vector, x, mean, rstd, *extra,
                    normalized_shape=normalized_shape, weight=scale is not None,
                    output_mask=[True, False, False])

    def row_sum(value):
        return emit('sum', value, dim=normalized, keepdim=True)

    normal = emit('mul', emit('sub', x, mean), rstd)
    scaled = gradient if parameter is None else emit('mul', gradient, parameter)
    terms_gradient, terms_x, grad_parameter = [], [], None
    if grad_dx is not None:
        applied = jacobian(grad_dx)
        terms_gradient.append(applied if parameter is None else emit('mul', parameter, applied))
        if parameter is not None and wanted(parameter):
            grad_parameter = _batch_sum(emit, emit('mul', gradient, applied), batch)
        if wanted(x) and count:
            dx = _listed(emit('layer_norm_backward', *inputs, normalized_shape=normalized_shape,
                              weight=weight, output_mask=output_mask))[0]  # the forward's: CSE
            bend = emit('add', emit('add', emit('mul', normal, row_sum(emit('mul', grad_dx, dx))),
                                    emit('mul', row_sum(emit('mul', grad_dx, normal)), dx)),
                        emit('mul', row_sum(emit('mul', scaled, normal)), applied))
            terms_x.append(emit('mul', bend, emit('div', rstd, -count)))
    if grad_dweight is not None:
        terms_gradient.append(emit('mul', grad_dweight, normal))
        if wanted(x):
            terms_x.append(jacobian(gradient, grad_dweight))
    if grad_dbias is not None:
        terms_gradient.append(grad_dbias)
    results = [_total(emit, terms_gradient, gradient) if wanted(gradient) else None,
               _total(emit, terms_x, x), None, None]
    return results + [grad_parameter] * weight


def _total(emit, terms: list, like):
    """The sum of `terms`, spread over `like`'s shape; None for none."""
    if not terms:
        return None
    total = terms[0]
    for term in terms[1:]:
        total = emit('add', total, term)
    if tuple(total.shape) != tuple(like.shape):
        total = emit('expand', total, shape=list(like.shape))
    return total


# ---- sharding: rows of the axes not normalized are independent -----------------------------
def _batch_axis(kinds, value: TensorType, normalized_shape) -> int | None:
    batch = len(value.shape) - len(normalized_shape)
    return next((kind for kind in kinds if isinstance(kind, int) and kind < batch), None)


def _layer_norm_shard(kinds, inputs, outputs, normalized_shape, **attrs):
    """Shards of the batch axes stay; the weight and bias come whole."""
    axis = _batch_axis(kinds[:1], inputs[0], normalized_shape)
    if axis is None:
        return None
    return (axis,) + ('R',) * (len(inputs) - 1), (axis,) * len(outputs)


def _layer_norm_backward_shard(kinds, inputs, outputs, normalized_shape, weight, output_mask):
    """Each worker's rows give their part of the input's gradient and partial sums of the
    weight's and bias's (sums over the rows, as matmul's contraction leaves)."""
    axis = _batch_axis(kinds[:4], inputs[1], normalized_shape)
    if axis is None:
        return None
    made = [kind for kind, flag in zip((axis, 'P', 'P'), output_mask) if flag]
    return (axis,) * 4 + ('R',) * weight, tuple(made)


ROWS = [
    OpDef('layer_norm', _layer_norm_type, _layer_norm, _np_layer_norm, grad=_layer_norm_grad,
          shard=_layer_norm_shard),
    OpDef('layer_norm_backward', _layer_norm_backward_type, _layer_norm_backward,
          _np_layer_norm_backward, grad=_layer_norm_backward_grad,
          shard=_layer_norm_backward_shard),
]
