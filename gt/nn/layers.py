"""Layers with torch.nn's parameters, names, shapes and default initialization, and the
loss modules. Initial values are drawn on the worker, so making a model sends no data:
`Linear` draws torch's values through gt.nn.init, `Embedding` through `gt.randn`, each
in torch's order, so after the same seed they are torch's bit for bit.
"""

import math
from typing import Any, Sequence

from gt.autograd import no_grad
from gt.creation import ones, randn, zeros
from gt.nn import functional as F
from gt.nn import init
from gt.nn.module import Module
from gt.nn.parameter import Parameter
from gt.tensor import Tensor


class Linear(Module):
    """`y = x @ weight.T + bias`, weight (out_features, in_features), initialized as
    torch's `reset_parameters` does: kaiming_uniform_(a=sqrt(5)) for the weight, then
    U(-1/sqrt(in_features), 1/sqrt(in_features)) for the bias."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()  # `device` as torch's factories take it: GT places tensors itself
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(zeros(out_features, in_features, dtype=dtype))
        if bias:
            self.bias = Parameter(zeros(out_features, dtype=dtype))
        else:
            self.register_parameter('bias', None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f'in_features={self.in_features}, out_features={self.out_features}, '
                f'bias={self.bias is not None}')


class Bilinear(Module):
    """`y_k = x1 @ weight[k] @ x2 + bias[k]`, weight (out_features, in1_features,
    in2_features), both drawn from U(-1/sqrt(in1_features), 1/sqrt(in1_features)) as
    torch's `reset_parameters` draws them; torch's `bilinear` runs by name."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int,
                 bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.in1_features, self.in2_features = in1_features, in2_features
        self.out_features = out_features
        self.weight = Parameter(zeros(out_features, in1_features, in2_features, dtype=dtype))
        if bias:
            self.bias = Parameter(zeros(out_features, dtype=dtype))
        else:
            self.register_parameter('bias', None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f'in1_features={self.in1_features}, in2_features={self.in2_features}, '
                f'out_features={self.out_features}, bias={self.bias is not None}')


class Embedding(Module):
    """A table of `num_embeddings` rows of size `embedding_dim`, drawn from N(0, 1) (the
    `padding_idx` row zeroed), or `_weight` as given (`from_pretrained`)."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0,
                 scale_grad_by_freq: bool = False, sparse: bool = False,
                 _weight: Any = None, _freeze: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError('Padding_idx must be within num_embeddings')
            padding_idx %= num_embeddings
        self.padding_idx, self.max_norm, self.norm_type = padding_idx, max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if _weight is None:
            self.weight = Parameter(randn(num_embeddings, embedding_dim,
                                          **({} if dtype is None else {'dtype': dtype})))
            if padding_idx is not None:
                with no_grad():
                    self.weight[padding_idx] = 0.0
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise AssertionError('Shape of weight does not match num_embeddings and '
                                     'embedding_dim')
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self) -> None:
        """N(0, 1) again, the padding row zeroed, as torch's (an init loop over
        `hasattr(m, 'reset_parameters')` reaches this layer too)."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx] = 0.0

    @classmethod
    def from_pretrained(cls, embeddings: Any, freeze: bool = True,
                        padding_idx: int | None = None, max_norm: float | None = None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        sparse: bool = False) -> 'Embedding':
        if embeddings.dim() != 2:
            raise AssertionError('Embeddings parameter is expected to be 2-dimensional')
        rows, columns = embeddings.shape
        return cls(rows, columns, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse,
                   _weight=embeddings, _freeze=freeze)

    def forward(self, input: Tensor) -> Tensor:
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    def extra_repr(self) -> str:
        text = f'{self.num_embeddings}, {self.embedding_dim}'
        if self.padding_idx is not None:
            text += f', padding_idx={self.padding_idx}'
        if self.max_norm is not None:
            text += f', max_norm={self.max_norm}'
        if self.norm_type != 2:
            text += f', norm_type={self.norm_type}'
        if self.scale_grad_by_freq:
            text += f', scale_grad_by_freq={self.scale_grad_by_freq}'
        if self.sparse:
            text += ', sparse=True'
        return text


class LayerNorm(Module):
    def __init__(self, normalized_shape: Sequence[int] | int, eps: float = 1e-5,
                 elementwise_affine: bool = True, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) \
            else tuple(normalized_shape)
        self.normalized_shape, self.eps = shape, eps
        self.elementwise_affine = elementwise_affine
        self.register_parameter('weight', Parameter(ones(*shape, dtype=dtype))
                                if elementwise_affine else None)
        self.register_parameter('bias', Parameter(zeros(*shape, dtype=dtype))
                                if elementwise_affine and bias else None)

    def reset_parameters(self) -> None:
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f'{self.normalized_shape}, eps={self.eps}, '
                f'elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}')


class Dropout(Module):
    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f'dropout probability has to be between 0 and 1, but got {p}')
        self.p, self.inplace = p, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f'p={self.p}, inplace={self.inplace}'


# ---- parameter-free layers -------------------------------------------------------------------
class ReLU(Module):
    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor: return F.relu(input, self.inplace)
    def extra_repr(self) -> str: return 'inplace=True' if self.inplace else ''


class Sigmoid(Module):
    def forward(self, input: Tensor) -> Tensor: return input.sigmoid()


class Tanh(Module):
    def forward(self, input: Tensor) -> Tensor: return input.tanh()


class GELU(Module):
    def __init__(self, approximate: str = 'none') -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor: return input.gelu(self.approximate)
    def extra_repr(self) -> str: return f'approximate={self.approximate!r}'


class Softmax(Module):
    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor: return F.softmax(input, self.dim, _stacklevel=5)
    def extra_repr(self) -> str: return f'dim={self.dim}'


class LogSoftmax(Softmax):
    def forward(self, input: Tensor) -> Tensor:
        return F.log_softmax(input, self.dim, _stacklevel=5)


class Flatten(Module):
    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input: Tensor) -> Tensor:
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f'start_dim={self.start_dim}, end_dim={self.end_dim}'


class Identity(Module):
    """Takes any arguments and ignores them, as torch's does (`norm_layer(dim)` where the
    norm layer may be Identity)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor: return input
