"""torch.nn.functional for GT tensors (`import gt.nn.functional as F`): activations,
`linear`, `dropout`, `layer_norm`, `batch_norm`, `embedding` and the losses, all built
from op-table ops (`layer_norm` and the activations of gt/ir/ops/activations.py are
torch's kernels), so their gradients come from the ops' rules and they run where their
inputs live.
Max pooling runs by name, its gradient from the forward's indices (gt/nn/max_pool.py).
Every other torch.nn.functional function (`pad`, `one_hot`, `conv2d`, ...) runs by name
(gt/fallback.py).
"""

import math
import warnings
from typing import Sequence

import torch

from gt.autograd import is_grad_enabled, no_grad
from gt.creation import empty_laid_out_like, full, ones, zeros
from gt.fallback import call, gt_operands, namespace
from gt.functional import cat
from gt.ir.invalid_op import InvalidOpError
from gt.nn.batch_norm import batch_norm
from gt.nn.dropout import (
    alpha_dropout,
    dropout1d,
    dropout2d,
    dropout3d,
    feature_alpha_dropout,
)
from gt.nn.fractional_max_pool import (
    fractional_max_pool2d,
    fractional_max_pool2d_with_indices,
    fractional_max_pool3d,
    fractional_max_pool3d_with_indices,
)
from gt.nn.loss_modules import gaussian_nll_loss
from gt.nn.losses import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cross_entropy,
    l1_loss,
    mse_loss,
    nll_loss,
)
from gt.nn.max_pool import max_pool1d, max_pool2d, max_pool3d
from gt.nn.normalization import instance_norm
from gt.nn.sequence_and_ranking_losses import triplet_margin_with_distance_loss
from gt.tensor import Tensor, emit


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """With `inplace`, `input` is rebound to the result (GT values are immutable), so
    the caller's tensor changes as in torch."""
    return input._assign(input.relu()) if inplace else input.relu()


def sigmoid(input: Tensor) -> Tensor:
    return input.sigmoid()


def tanh(input: Tensor) -> Tensor:
    return input.tanh()


def gelu(input: Tensor, approximate: str = 'none') -> Tensor:
    (input,) = gt_operands(input)
    return input.gelu(approximate=approximate)


def _activation(name: str, input: Tensor, inplace: bool, torch_args: tuple = (),
                row: str | None = None, **params: float) -> Tensor:
    """The activation's row (`row`, else `name`: gt/ir/ops/activations.py) for a floating
    GT tensor; anything else runs torch's function `name` by name, so an integer input
    gets torch's result or error. `inplace` rebinds `input` to the result, as `relu`
    does."""
    if not isinstance(input, Tensor) or not input.dtype.is_floating_point:
        return call(f'torch.nn.functional.{name}', (input, *torch_args),
                    {'inplace': inplace} if inplace else {})
    result = emit(row or name, input, **params)
    return input._assign(result) if inplace else result


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    return _activation('silu', input, inplace)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    return _activation('mish', input, inplace)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    return _activation('hardswish', input, inplace)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    return _activation('hardsigmoid', input, inplace)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    return _activation('leaky_relu', input, inplace, (negative_slope,),
                       negative_slope=negative_slope)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    return _activation('elu', input, inplace, (alpha,), alpha=alpha, scale=1.0,
                       input_scale=1.0)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
          training: bool = False, inplace: bool = False) -> Tensor:
    """Randomized leaky ReLU. In training the slopes are torch's draws (its kernel run by
    name, under no_grad: it draws only for the elements at or below 0, which a draw of
    GT's own could not repeat), and the gradient is each element's slope, read back
    from the result; in evaluation it is leaky_relu with the slopes' mean, as in torch."""
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    with no_grad():
        drawn = call('torch.nn.functional.rrelu', (input, lower, upper, True, False), {})
        slope = ((drawn / input).where(input != 0, (lower + upper) / 2)
                 if input.requires_grad else None)
    if slope is None:
        return input.copy_(drawn) if inplace else drawn
    # the drawn values, bit for bit, with the gradient of input * slope
    result = drawn + (input - input.detach()) * slope
    return input.copy_(result) if inplace else result


SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """torch's selu is its elu kernel with these constants."""
    return _activation('selu', input, inplace, row='elu', alpha=SELU_ALPHA, scale=SELU_SCALE,
                       input_scale=1.0)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """torch's celu is its elu kernel with the input scaled by 1/alpha (0 is torch's
    error, by name)."""
    if alpha == 0:
        return call('torch.nn.functional.celu', (input, alpha, inplace), {})
    return _activation('celu', input, inplace, (alpha,), row='elu', alpha=alpha, scale=1.0,
                       input_scale=1.0 / alpha)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    return _activation('softplus', input, False, (beta, threshold), beta=beta,
                       threshold=threshold)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    if min_val > max_val:
        raise ValueError('min_val cannot be greater than max_val')
    return _activation('hardtanh', input, inplace, (min_val, max_val), min_val=min_val,
                       max_val=max_val)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """torch's relu6 is hardtanh(0, 6)."""
    return _activation('relu6', input, inplace, row='hardtanh', min_val=0.0, max_val=6.0)


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Tensor:
    if dim is None:
        dim = implicit_softmax_dim('softmax', input.ndim, _stacklevel)
    return (input if dtype is None else input.to(dtype)).softmax(dim)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
                dtype=None) -> Tensor:
    if dim is None:
        dim = implicit_softmax_dim('log_softmax', input.ndim, _stacklevel)
    return (input if dtype is None else input.to(dtype)).log_softmax(dim)


def implicit_softmax_dim(name: str, ndim: int, stacklevel: int) -> int:
    """torch's deprecated choice when no dim is given (older tutorials' `nn.Softmax()`),
    with its warning at the caller's line: 0 for 0-, 1- and 3-d inputs, else 1."""
    warnings.warn(f'Implicit dimension choice for {name} has been deprecated. Change the call '
                  'to include dim=X as an argument.', stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """`input @ weight.T + bias`, with torch's (out_features, in_features) weight. A
    matrix input with a bias is torch's `addmm`, as torch's linear is: the BLAS adds the
    bias inside the product and rounds once, where a product and a sum round twice (in
    float32 from about 200 inputs on, an ulp apart). In half precision by name, on any
    cluster; else GT's `addmm` row, on a cluster of one worker (several shard a product
    and a sum). There a contiguous batch is flattened into rows, as torch's is (the
    bias's gradient then sums the rows of the output's gradient made contiguous, too),
    so the weight's gradient is the matrix product's, in torch's layout, as recorded:
    a batch's product left it to a pass (`fold_transposes`) that sees one fragment, and
    where the 256-op cut fell between the product and its transpose it was 1 ulp off."""
    input, weight, bias = gt_operands(input, weight, bias)
    if bias is not None and input.ndim == 2 and weight.ndim == 2:
        if input.dtype in HALF_PRECISION:
            return call('torch.addmm', (bias, input, weight.t()), {})
        if input._client.single_worker and bias.ndim == 1 and input.is_floating_point():
            return emit('addmm', bias, input, weight.transpose(0, 1))
    if (input.ndim > 2 and weight.ndim == 2 and input.numel()
            and input._client.single_worker and input.is_contiguous()):
        rows = input.reshape(math.prod(input.shape[:-1]), input.shape[-1])
        return linear(rows, weight, bias).view(*input.shape[:-1], weight.shape[0])
    output = input @ weight.transpose(0, 1) if weight.ndim == 2 else input @ weight
    return output if bias is None else output + bias


HALF_PRECISION = (torch.float16, torch.bfloat16)


def dropout(input: Tensor, p: float = 0.5, training: bool = True,
            inplace: bool = False) -> Tensor:
    """Zero each element with probability `p` and scale the rest by 1/(1-p); the mask is
    drawn on the worker. The identity when not training, as in torch."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f'dropout probability has to be between 0 and 1, but got {p}')
    if not training or p == 0.0:
        return input
    if p == 1.0:
        result = input * 0.0
    else:
        # As torch's CPU dropout: noise = empty_like(input).bernoulli_(1 - p) / (1 - p),
        # drawn by name from the session's generator, so the mask is torch's after the
        # same seed. The noise is laid out as torch lays the input out (on several
        # workers too, where the input may arrive gathered), and bernoulli_ fills in
        # memory order: a transposed input's mask is torch's too.
        with no_grad():
            noise = call('Tensor.bernoulli_', (empty_laid_out_like(input), 1 - p), {})
        result = input * (noise / (1 - p))
    return input._assign(result) if inplace else result


def gumbel_softmax(logits: Tensor, tau: float = 1.0, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:
    """softmax((logits + g) / tau) with g ~ Gumbel(0, 1); `hard` gives one-hot rows whose
    gradient is the soft sample's (straight through). torch's own steps: the noise is
    -log of an exponential_ draw, by name from the session's generator into a contiguous
    tensor, so after the same seed it is torch's; the rest are ops, which differentiate
    (torch's function run by name would not: GT has no gradient for a random call)."""
    if eps != 1e-10:
        warnings.warn('`eps` parameter is deprecated and has no effect.', stacklevel=2)
    with no_grad():
        noise = call('Tensor.exponential_', (zeros(logits.shape, dtype=logits.dtype),), {})
        gumbels = -noise.log()
    soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return soft
    index = soft.max(dim, keepdim=True)[1]
    one_hot_rows = zeros(logits.shape, dtype=logits.dtype).scatter(dim, index, 1.0)
    return one_hot_rows - soft.detach() + soft


def layer_norm(input: Tensor, normalized_shape: Sequence[int] | int,
               weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Normalize over the last dims with the biased variance: torch's kernel (the
    `layer_norm` row), whose gradient is torch's kernel too."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(input.shape[input.ndim - len(shape):]) != shape or len(shape) > input.ndim:
        raise InvalidOpError(f'layer_norm: normalized_shape {list(shape)} does not match the last '
                         f'dims of an input of shape {list(input.shape)}')
    parameters = [p for p in (weight, bias) if p is not None]
    if any(p.dtype != input.dtype for p in parameters):
        # torch's own rules for mixed dtypes (a float32 weight for a half input) and errors.
        return call('torch.nn.functional.layer_norm', (input, list(shape), weight, bias, eps), {})
    output, _, _ = emit('layer_norm', input, *parameters, normalized_shape=list(shape),
                        eps=float(eps), weight=weight is not None, bias=bias is not None)
    return output


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot rows: torch's own, run by name, so that a class out of range fails
    with torch's error when the program runs (a comparison with arange gave a row of
    zeros); its rows shard with the input's. `num_classes=-1` (torch's default) reads
    the largest class from the values: one fetch."""
    if tensor.dtype != torch.int64:
        raise RuntimeError('one_hot is only applicable to index tensor of type int64')
    if num_classes == -1:
        num_classes = int(tensor.max()) + 1 if tensor.numel() else 0
    return call('torch.nn.functional.one_hot', (tensor, num_classes), {})


def pad(input: Tensor, pad: Sequence[int], mode: str = 'constant',
        value: float | None = None) -> Tensor:
    """Constant padding (negative amounts crop) from concatenations, so it shards and
    differentiates as they do; the other modes run torch's by name."""
    if mode != 'constant':
        return call('torch.nn.functional.pad', (input, pad, mode), {'value': value})
    if len(pad) % 2 or len(pad) // 2 > input.ndim:
        raise InvalidOpError(f'pad: padding length must be even and at most twice the input\'s '
                         f'dimensions ({input.ndim}), got {len(pad)}')
    output = input
    for pair in range(len(pad) // 2):
        dim = input.ndim - 1 - pair
        before, after = pad[2 * pair], pad[2 * pair + 1]
        size = output.shape[dim]
        if before < 0 or after < 0:
            start, stop = max(-before, 0), size - max(-after, 0)
            if stop < start:
                raise InvalidOpError(f'pad: cropping {list(pad)} leaves a negative size in dim '
                                 f'{dim} of shape {list(input.shape)}')
            output = output[(slice(None),) * dim + (slice(start, stop),)]
        pieces = []
        for amount in (before, after):
            shape = list(output.shape)
            shape[dim] = max(amount, 0)
            pieces.append(full(shape, 0 if value is None else value, dtype=input.dtype))
        output = cat([pieces[0], output, pieces[1]], dim) if before > 0 or after > 0 else output
    return output


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Tensor | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """softmax(q k^T * scale + mask) v, as torch's math kernel, from rows: it shards
    over batch and heads and differentiates like the rest. `is_causal` with an
    `attn_mask` masks by both, as torch's CPU kernel does. A query row that the masks
    hide entirely attends to nothing (zeros, and no gradient), as torch's safe softmax
    has it, where a plain softmax gives NaN, which spreads through the gradients. Half
    and bfloat16 inputs are computed in float32 and rounded once at the end, as torch's
    kernels accumulate (in their own precision, GT's error was 3x torch's). On a cluster
    of one worker, without dropout, torch's own kernel runs by name instead: its bits,
    forward and backward (the math above rounds otherwise); not for a mask with
    `is_causal`, which torch's fused kernels refuse and its math path takes."""
    query, key, value, attn_mask = gt_operands(query, key, value, attn_mask)
    if (dropout_p == 0 and query._client.single_worker
            and not (is_causal and attn_mask is not None)):
        return call('torch.nn.functional.scaled_dot_product_attention', (query, key, value),
                    dict(attn_mask=attn_mask, is_causal=is_causal, scale=scale,
                         enable_gqa=enable_gqa))
    if enable_gqa and key.shape[-3] != query.shape[-3]:
        # grouped-query attention: each key/value head serves a group of query heads
        groups = query.shape[-3] // key.shape[-3]
        key = key.repeat_interleave(groups, dim=-3)
        value = value.repeat_interleave(groups, dim=-3)
    result_dtype = query.dtype
    if result_dtype in (torch.float16, torch.bfloat16):
        query, key, value = query.float(), key.float(), value.float()
    # torch's math kernel scales both operands by the scale's square root, for stability
    factor = math.sqrt(1 / math.sqrt(query.shape[-1]) if scale is None else abs(scale))
    query = query * (-factor if scale is not None and scale < 0 else factor)
    scores = query @ (key.transpose(-2, -1) * factor)
    hidden = None  # what the masks hide
    if attn_mask is not None:
        if attn_mask.dtype == torch.bool:
            hidden = ~attn_mask
            scores = scores.masked_fill(hidden, float('-inf'))
        else:
            hidden = attn_mask == float('-inf')
            scores = scores + attn_mask.to(scores.dtype)
    if is_causal:
        above = ~ones(query.shape[-2], key.shape[-2], dtype=torch.bool).tril()
        scores = scores.masked_fill(above, float('-inf'))
        hidden = above if hidden is None else hidden | above
    if hidden is not None and attn_mask is not None:  # causal alone hides no whole row
        hidden_rows = hidden.all(-1, keepdim=True)
        # Any finite row keeps softmax's output and gradient finite there; then zeros.
        weights = scores.masked_fill(hidden_rows, 0.0).softmax(-1).masked_fill(hidden_rows, 0.0)
    else:
        weights = scores.softmax(-1)
    if dropout_p > 0:
        weights = dropout(weights, dropout_p)
    return (weights @ value).to(result_dtype)


def multi_head_attention_forward(*args, **kwargs):
    """torch's signature, GT's ops (gt/nn/attention.py): run by name it would be one opaque
    call that neither shards nor differentiates by the ops' rules."""
    from gt.nn.attention import multi_head_attention_forward as forward  # it imports this
    return forward(*args, **kwargs)


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None,
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of `weight` picked by the integer tensor `input`. The `padding_idx` row gets no
    gradient: its lookups come from a detached weight. `max_norm` first rescales the rows
    `input` picks whose norm exceeds it, as torch does in place, here by rebinding
    `weight`. `sparse` gradients are dense ones here (GT has no sparse layout).
    `scale_grad_by_freq` runs torch's embedding by name, whose gradient divides each row's
    by how often the batch picks it."""
    if padding_idx is not None:
        rows = weight.shape[0]
        if not -rows <= padding_idx < rows:
            raise ValueError(f'Padding_idx must be within num_embeddings, got {padding_idx} '
                             f'for {rows} rows')
        padding_idx %= rows
    if max_norm is not None:
        _renormalize_rows(weight, input, max_norm, norm_type)
    if scale_grad_by_freq:
        return call('torch.nn.functional.embedding', (input, weight),
                    dict(padding_idx=padding_idx, scale_grad_by_freq=True))
    output = emit('embedding', weight, input)
    if padding_idx is None or not (weight.requires_grad and is_grad_enabled()):
        return output
    kept = (input != padding_idx).unsqueeze(-1)
    return output.where(kept, emit('embedding', weight.detach(), input))


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None,
                  max_norm: float | None = None, norm_type: float = 2.0,
                  scale_grad_by_freq: bool = False, mode: str = 'mean', sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    """torch's embedding_bag, run by name. `max_norm` rescales the picked rows first, as
    torch does in place, here by rebinding `weight`: run by name, torch would write into a
    worker's value, which other tensors may share."""
    if max_norm is not None:
        _renormalize_rows(weight, input, max_norm, norm_type)
    return call('torch.nn.functional.embedding_bag',
                (input, weight, offsets, None, norm_type, scale_grad_by_freq, mode, sparse,
                 per_sample_weights, include_last_offset, padding_idx), {})


def _renormalize_rows(weight: Tensor, input: Tensor, max_norm: float, norm_type: float) -> None:
    """torch's embedding_renorm_: each row `input` picks, if its norm exceeds `max_norm`,
    scaled by max_norm / (norm + 1e-7)."""
    with no_grad():
        picked = zeros(weight.shape[0], dtype=torch.bool).index_fill(0, input.flatten(), True)
        norms = weight.norm(norm_type, dim=1)
        scale = (max_norm / (norms + 1e-7)).where(picked & (norms > max_norm), 1.0)
        weight.copy_(weight * scale.unsqueeze(1))


__all__ = [
    'relu', 'sigmoid', 'tanh', 'gelu', 'silu', 'mish', 'hardswish', 'hardsigmoid', 'leaky_relu',
    'elu', 'selu', 'celu', 'softplus', 'hardtanh', 'relu6', 'softmax', 'log_softmax', 'linear',
    'dropout', 'layer_norm', 'batch_norm', 'multi_head_attention_forward', 'embedding',
    'embedding_bag', 'one_hot', 'pad', 'scaled_dot_product_attention', 'mse_loss', 'l1_loss',
    'binary_cross_entropy', 'binary_cross_entropy_with_logits', 'cross_entropy', 'nll_loss',
    'dropout1d', 'dropout2d', 'dropout3d', 'alpha_dropout', 'feature_alpha_dropout',
    'gaussian_nll_loss', 'instance_norm', 'gumbel_softmax', 'triplet_margin_with_distance_loss',
    'max_pool1d', 'max_pool2d', 'max_pool3d', 'fractional_max_pool2d',
    'fractional_max_pool3d', 'fractional_max_pool2d_with_indices',
    'fractional_max_pool3d_with_indices',
]

__getattr__ = namespace('torch.nn.functional', globals())
