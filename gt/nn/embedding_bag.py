"""`EmbeddingBag`: the sums, means or maxima of bags of embedding rows without making the
rows (the text classifier of torchtext's tutorials). The reduction is torch's
`embedding_bag`, run by name, so values and gradients are its kernel's; the table is
drawn as torch's `reset_parameters` draws it, so a seeded model starts as torch's."""

from typing import Any

from gt.autograd import no_grad
from gt.creation import randn
from gt.nn import functional as F
from gt.nn.module import Module
from gt.nn.parameter import Parameter
from gt.tensor import Tensor


class EmbeddingBag(Module):
    """A table of `num_embeddings` rows of size `embedding_dim`, N(0, 1) (the `padding_idx`
    row zeroed), reduced per bag by `mode` ('sum', 'mean' or 'max'); bags are the rows of a
    2-d input, or the pieces of a 1-d input that `offsets` starts."""

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm: float | None = None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = 'mean',
                 sparse: bool = False, _weight: Any = None, include_last_offset: bool = False,
                 padding_idx: int | None = None, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError('padding_idx must be within num_embeddings')
            padding_idx %= num_embeddings
        self.padding_idx = padding_idx
        if _weight is None:
            self.weight = Parameter(randn(num_embeddings, embedding_dim,
                                          **({} if dtype is None else {'dtype': dtype})))
            self._fill_padding_idx_with_zero()
        else:
            if list(_weight.shape) != [num_embeddings, embedding_dim]:
                raise AssertionError('Shape of weight does not match num_embeddings and '
                                     'embedding_dim')
            self.weight = Parameter(_weight)
        self.mode, self.sparse, self.include_last_offset = mode, sparse, include_last_offset

    def reset_parameters(self) -> None:
        with no_grad():
            self.weight.normal_()
        self._fill_padding_idx_with_zero()

    def _fill_padding_idx_with_zero(self) -> None:
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx] = 0.0

    def forward(self, input: Tensor, offsets: Tensor | None = None,
                per_sample_weights: Tensor | None = None) -> Tensor:
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                               self.scale_grad_by_freq, self.mode, self.sparse,
                               per_sample_weights, self.include_last_offset, self.padding_idx)

    def extra_repr(self) -> str:
        text = f'{self.num_embeddings}, {self.embedding_dim}'
        if self.max_norm is not None:
            text += f', max_norm={self.max_norm}'
        if self.norm_type != 2:
            text += f', norm_type={self.norm_type}'
        if self.scale_grad_by_freq:
            text += f', scale_grad_by_freq={self.scale_grad_by_freq}'
        text += f', mode={self.mode!r}'
        if self.padding_idx is not None:
            text += f', padding_idx={self.padding_idx}'
        return text

    @classmethod
    def from_pretrained(cls, embeddings: Any, freeze: bool = True,
                        max_norm: float | None = None, norm_type: float = 2.0,
                        scale_grad_by_freq: bool = False, mode: str = 'mean',
                        sparse: bool = False, include_last_offset: bool = False,
                        padding_idx: int | None = None) -> 'EmbeddingBag':
        if embeddings.dim() != 2:
            raise AssertionError('Embeddings parameter is expected to be 2-dimensional')
        rows, columns = embeddings.shape
        bag = cls(rows, columns, max_norm, norm_type, scale_grad_by_freq, mode, sparse,
                  _weight=embeddings, include_last_offset=include_last_offset,
                  padding_idx=padding_idx)
        bag.weight.requires_grad = not freeze
        return bag
