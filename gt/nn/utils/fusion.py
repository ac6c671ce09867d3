"""torch.nn.utils.fusion: a convolution or linear layer with the batch norm after it
folded in, for inference. In eval mode the norm is an affine map per channel,
`(y - mean) / sqrt(var + eps) * weight + bias`, so the layer's weight scales by
`weight / sqrt(var + eps)` along its output channels and its bias shifts to match."""

import copy
from typing import Any

from gt.creation import ones_like, zeros_like
from gt.nn.parameter import Parameter


def fuse_conv_bn_eval(conv: Any, bn: Any, transpose: bool = False) -> Any:
    """A copy of `conv` that computes `bn(conv(x))` (both in eval mode)."""
    if conv.training or bn.training:
        raise AssertionError('Fusion only for eval!')
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight,
        bn.bias, transpose)
    return fused


def fuse_conv_bn_weights(conv_w: Any, conv_b: Any, bn_rm: Any, bn_rv: Any, bn_eps: float,
                         bn_w: Any, bn_b: Any, transpose: bool = False) -> tuple:
    """The fused convolution's weight and bias, as Parameters. Output channels are the
    weight's dim 0, or dim 1 for a transposed convolution."""
    conv_b = zeros_like(bn_rm) if conv_b is None else conv_b
    bn_w = ones_like(bn_rm) if bn_w is None else bn_w
    bn_b = zeros_like(bn_rm) if bn_b is None else bn_b
    scale = bn_w * (bn_rv + bn_eps).rsqrt()
    shape = [1, -1] if transpose else [-1, 1]
    weight = conv_w * scale.reshape(shape + [1] * (conv_w.ndim - 2)).to(conv_w.dtype)
    bias = ((conv_b - bn_rm) * scale + bn_b).to(conv_b.dtype)
    return (Parameter(weight.detach(), conv_w.requires_grad),
            Parameter(bias.detach(), conv_b.requires_grad))


def fuse_linear_bn_eval(linear: Any, bn: Any) -> Any:
    """A copy of `linear` that computes `bn(linear(x))` (both in eval mode)."""
    if linear.training or bn.training:
        raise AssertionError('Fusion only for eval!')
    if not (linear.out_features == bn.num_features or bn.num_features == 1):
        raise AssertionError('To fuse, linear.out_features == bn.num_features or '
                             'bn.num_features == 1, got linear.out_features='
                             f'{linear.out_features} and bn.num_features={bn.num_features}')
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight,
        bn.bias)
    return fused


def fuse_linear_bn_weights(linear_w: Any, linear_b: Any, bn_rm: Any, bn_rv: Any,
                           bn_eps: float, bn_w: Any, bn_b: Any) -> tuple:
    """The fused linear layer's weight and bias, as Parameters."""
    linear_b = zeros_like(bn_rm) if linear_b is None else linear_b
    scale = bn_w * (bn_rv + bn_eps).rsqrt()
    weight = linear_w * scale.unsqueeze(-1)
    bias = (linear_b - bn_rm) * scale + bn_b
    return (Parameter(weight.detach(), linear_w.requires_grad),
            Parameter(bias.detach(), linear_b.requires_grad))
