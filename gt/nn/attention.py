"""`MultiheadAttention`: torch's math path (`F.multi_head_attention_forward`) step for step
from GT ops, so its values and gradients come from the ops' own rules and it runs where
its inputs live. Parameters carry torch's names, shapes and initial draws, so state dicts
move both ways. torch's fast path (fused kernels, nested tensors) is an inference shortcut
to the same numbers; GT does not take it. Also torch.nn.attention's `sdpa_kernel` and
`SDPBackend`, which attention code sets.
"""

import contextlib
import math
import warnings
from typing import Any, Iterator

import torch
from torch.nn.attention import SDPBackend  # noqa: F401 (torch's place: nn.attention)

from gt.creation import zeros
from gt.functional import cat
from gt.nn import functional as F
from gt.nn import init
from gt.nn.layers import Linear
from gt.nn.module import Module
from gt.nn.parameter import Parameter
from gt.tensor import Tensor


@contextlib.contextmanager
def sdpa_kernel(backends: Any, set_priority: bool = False) -> Iterator[None]:
    """torch.nn.attention's kernel choice for `scaled_dot_product_attention`: checked and
    accepted, as torch.backends' flags are; each worker's torch picks its own kernel."""
    chosen = backends if isinstance(backends, (list, tuple)) else [backends]
    if not all(isinstance(backend, SDPBackend) for backend in chosen):
        raise TypeError('Backend must be an instance of SDPBackend or a list of SDPBackend '
                        'instances')
    yield


class NonDynamicallyQuantizableLinear(Linear):
    """A Linear by torch's name for `out_proj` (it only keeps quantization tools away), so
    reprs match torch's."""


def canonical_mask(mask: Tensor | None, name: str, dtype: torch.dtype,
                   other: Tensor | None = None, other_name: str = '') -> Tensor | None:
    """torch's `_canonical_mask`: a bool mask (True: do not attend) becomes an additive
    float mask, -inf where True, so masks of either kind add up."""
    if mask is None:
        return None
    if mask.dtype != torch.bool and not mask.dtype.is_floating_point:
        raise AssertionError(f'only bool and floating types of {name} are supported')
    if other is not None and mask.dtype != other.dtype:
        warnings.warn(f'Support for mismatched {name} and {other_name} is deprecated. Use '
                      'same type for both instead.', stacklevel=2)
    if mask.dtype == torch.bool:
        return zeros(*mask.shape, dtype=dtype).masked_fill(mask, float('-inf'))
    return mask


def _check_shapes(query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Tensor | None,
                  attn_mask: Tensor | None, num_heads: int) -> bool:
    """torch's `_mha_shape_check`: whether the input is batched (3-D) or not (2-D)."""
    if query.ndim not in (2, 3):
        raise AssertionError(f'query should be unbatched 2D or batched 3D tensor but received '
                             f'{query.ndim}-D query tensor')
    batched = query.ndim == 3
    kind = 'batched (3-D)' if batched else 'unbatched (2-D)'
    if key.ndim != query.ndim or value.ndim != query.ndim:
        raise AssertionError(f'For {kind} `query`, expected `key` and `value` to be '
                             f'{query.ndim}-D but found {key.ndim}-D and {value.ndim}-D '
                             f'tensors respectively')
    if key_padding_mask is not None and key_padding_mask.ndim != query.ndim - 1:
        raise AssertionError(f'For {kind} `query`, expected `key_padding_mask` to be `None` '
                             f'or {query.ndim - 1}-D but found {key_padding_mask.ndim}-D '
                             f'tensor instead')
    if attn_mask is not None and attn_mask.ndim not in (2, 3):
        raise AssertionError(f'For {kind} `query`, expected `attn_mask` to be `None`, 2-D or '
                             f'3-D but found {attn_mask.ndim}-D tensor instead')
    if not batched and attn_mask is not None and attn_mask.ndim == 3:
        expected = (num_heads, query.shape[0], key.shape[0])
        if tuple(attn_mask.shape) != expected:
            raise AssertionError(f'Expected `attn_mask` shape to be {expected} but got '
                                 f'{tuple(attn_mask.shape)}')
    return batched


def _in_projection(query: Tensor, key: Tensor, value: Tensor, weights: list[Tensor],
                   bias: Tensor | None) -> tuple[Tensor, Tensor, Tensor]:
    """q, k, v projected. Self-attention with the packed weight is one matmul, split after
    (torch's `_in_projection_packed`); otherwise one per input."""
    if len(weights) == 1 and query is key and key is value:
        return F.linear(query, weights[0], bias).chunk(3, dim=-1)
    if len(weights) == 1 and key is value:  # encoder-decoder attention: keys and values
        # in one matmul, laid out as torch's (the bias's gradient sums their rows at once)
        embed_dim = query.shape[-1]
        w_q, w_kv = weights[0].split([embed_dim, 2 * embed_dim])
        b_q, b_kv = (None, None) if bias is None else bias.split([embed_dim, 2 * embed_dim])
        kv = F.linear(key, w_kv, b_kv).unflatten(-1, (2, embed_dim)).unsqueeze(0)
        kv = kv.transpose(0, -2).squeeze(-2).contiguous()
        return F.linear(query, w_q, b_q), kv[0], kv[1]
    biases = [None] * 3 if bias is None else list(bias.chunk(3))
    if len(weights) == 1:
        weights = list(weights[0].chunk(3))
    q, k, v = (F.linear(x, w, b) for x, w, b in zip((query, key, value), weights, biases))
    return q, k, v


def multi_head_attention_forward(
        query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int, num_heads: int,
        in_proj_weight: Tensor | None, in_proj_bias: Tensor | None, bias_k: Tensor | None,
        bias_v: Tensor | None, add_zero_attn: bool, dropout_p: float, out_proj_weight: Tensor,
        out_proj_bias: Tensor | None, training: bool = True,
        key_padding_mask: Tensor | None = None, need_weights: bool = True,
        attn_mask: Tensor | None = None, use_separate_proj_weight: bool = False,
        q_proj_weight: Tensor | None = None, k_proj_weight: Tensor | None = None,
        v_proj_weight: Tensor | None = None, static_k: Tensor | None = None,
        static_v: Tensor | None = None, average_attn_weights: bool = True,
        is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
    """torch.nn.functional.multi_head_attention_forward's math, sequence-first: query
    (L, N, E) or (L, E), key and value (S, N, E_k/E_v) or (S, E_k/E_v)."""
    if static_k is not None or static_v is not None:
        raise NotImplementedError('gt.nn: multi_head_attention_forward does not support '
                                  'static_k/static_v')
    if (bias_k is None) != (bias_v is None):
        raise AssertionError('bias_k and bias_v go together (add_bias_kv)')
    batched = _check_shapes(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = canonical_mask(key_padding_mask, 'key_padding_mask', query.dtype,
                                      attn_mask, 'attn_mask')
    if is_causal and attn_mask is None:
        raise RuntimeError('Need attn_mask if specifying the is_causal hint. You may use the '
                           'Transformer module method `generate_square_subsequent_mask` to '
                           'create this mask.')
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # the hint stands for the mask, as in torch
    else:
        attn_mask = canonical_mask(attn_mask, 'attn_mask', query.dtype)
        is_causal = is_causal and key_padding_mask is None
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f'was expecting embedding dimension of {embed_dim_to_check}, but '
                             f'got {embed_dim}')
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f'embed_dim {embed_dim} not divisible by num_heads {num_heads}')
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {tuple(key.shape[:2])} do not "
                                 f"match value's {tuple(value.shape[:2])}")
        weights = [q_proj_weight, k_proj_weight, v_proj_weight]
    else:
        if tuple(key.shape) != tuple(value.shape):
            raise AssertionError(f'key shape {tuple(key.shape)} does not match value shape '
                                 f'{tuple(value.shape)}')
        weights = [in_proj_weight]
    q, k, v = _in_projection(query, key, value, weights, in_proj_bias)
    if bias_k is not None:  # a learned key and value every query may attend to
        k, v = cat([k, bias_k.repeat(1, bsz, 1)]), cat([v, bias_v.repeat(1, bsz, 1)])
        src_len += 1

    if attn_mask is not None:
        given_len = src_len - (bias_k is not None)
        expected = (tgt_len, given_len) if attn_mask.ndim == 2 else \
            (bsz * num_heads, tgt_len, given_len)
        if tuple(attn_mask.shape) != expected:
            raise RuntimeError(f'The shape of the {attn_mask.ndim}D attn_mask is '
                               f'{list(attn_mask.shape)}, but should be {expected}.')
        if attn_mask.ndim == 2:
            attn_mask = attn_mask.unsqueeze(0)
    if bias_k is not None:  # nothing masks the learned key
        attn_mask = None if attn_mask is None else F.pad(attn_mask, (0, 1))
        key_padding_mask = None if key_padding_mask is None else F.pad(key_padding_mask, (0, 1))
    # (L, N, E) -> (N * heads, L, head_dim): heads become batches.
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = k.reshape(src_len, bsz * num_heads, head_dim).transpose(0, 1)
    v = v.reshape(src_len, bsz * num_heads, head_dim).transpose(0, 1)
    if add_zero_attn:
        zero = zeros(bsz * num_heads, 1, head_dim, dtype=k.dtype)
        k, v = cat([k, zero], 1), cat([v, zero], 1)
        attn_mask = None if attn_mask is None else F.pad(attn_mask, (0, 1))
        key_padding_mask = None if key_padding_mask is None else F.pad(key_padding_mask, (0, 1))
        src_len += 1
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, src_len):
            raise AssertionError(f'Expected key_padding_mask of shape {(bsz, src_len)}, but '
                                 f'got {tuple(key_padding_mask.shape)}')
        padding = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(-1, num_heads, -1, -1)
        padding = padding.reshape(bsz * num_heads, 1, src_len)
        attn_mask = padding if attn_mask is None else attn_mask + padding
    if not training:
        dropout_p = 0.0

    if need_weights:
        scores = (q * math.sqrt(1.0 / float(head_dim))) @ k.transpose(-2, -1)
        if attn_mask is not None:
            scores = scores + attn_mask
        attn_weights = scores.softmax(-1)
        if dropout_p > 0.0:
            attn_weights = F.dropout(attn_weights, p=dropout_p)
        output = attn_weights @ v
        # (N * heads, L, head_dim) -> (L * N, E) rows for the output projection, as
        # torch's: a 3-D projection's input gradient, from a batch-first output's
        # transposed one, was a batched product rounding otherwise.
        output = output.transpose(0, 1).contiguous().view(tgt_len * bsz, embed_dim)
        output = F.linear(output, out_proj_weight, out_proj_bias).view(tgt_len, bsz, -1)
    else:
        # As torch's: attention over (N, heads, L, head_dim), whose bits differ from the
        # (N * heads) batch's, then the heads joined row by row for the projection.
        attn_weights = None
        if attn_mask is not None:
            attn_mask = attn_mask.unsqueeze(0) if attn_mask.shape[0] == 1 else \
                attn_mask.view(bsz, num_heads, -1, src_len)
        q, k, v = (t.view(bsz, num_heads, -1, head_dim) for t in (q, k, v))
        output = F.scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
        output = output.permute(2, 0, 1, 3).contiguous().view(bsz * tgt_len, embed_dim)
        output = F.linear(output, out_proj_weight, out_proj_bias).view(tgt_len, bsz, -1)
    if attn_weights is not None:
        attn_weights = attn_weights.reshape(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            attn_weights = attn_weights.mean(dim=1)
        if not batched:
            attn_weights = attn_weights.squeeze(0)
    if not batched:
        output = output.squeeze(1)
    return output, attn_weights


class MultiheadAttention(Module):
    """Attention over `num_heads` subspaces of `embed_dim` (Attention Is All You Need).
    The input projection is one packed `in_proj_weight` (3 * embed_dim, embed_dim) when
    keys and values have embed_dim features, else `q_proj_weight`, `k_proj_weight` and
    `v_proj_weight`; drawn by xavier_uniform_ after `out_proj`'s own draws, biases zero,
    torch's draws in torch's order."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0,
                 bias: bool = True, add_bias_kv: bool = False, add_zero_attn: bool = False,
                 kdim: int | None = None, vdim: int | None = None, batch_first: bool = False,
                 device: Any = None, dtype: torch.dtype | None = None) -> None:
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f'embed_dim and num_heads must be greater than 0, got '
                             f'embed_dim={embed_dim} and num_heads={num_heads} instead')
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads, self.dropout, self.batch_first = num_heads, dropout, batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != self.embed_dim:
            raise AssertionError('embed_dim must be divisible by num_heads')
        # Empty (undrawn) until _reset_parameters, as torch.empty leaves them; in `dtype`,
        # since torch draws in it (a float64 draw is not a float32 draw widened).
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(zeros(3 * embed_dim, embed_dim, dtype=dtype))
            for name in ('q_proj_weight', 'k_proj_weight', 'v_proj_weight'):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = Parameter(zeros(embed_dim, embed_dim, dtype=dtype))
            self.k_proj_weight = Parameter(zeros(embed_dim, self.kdim, dtype=dtype))
            self.v_proj_weight = Parameter(zeros(embed_dim, self.vdim, dtype=dtype))
            self.register_parameter('in_proj_weight', None)
        self.register_parameter('in_proj_bias',
                                Parameter(zeros(3 * embed_dim, dtype=dtype)) if bias else None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias,
                                                        dtype=dtype)
        if add_bias_kv:
            self.bias_k = Parameter(zeros(1, 1, embed_dim, dtype=dtype))
            self.bias_v = Parameter(zeros(1, 1, embed_dim, dtype=dtype))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def forward(self, query: Tensor, key: Tensor, value: Tensor,
                key_padding_mask: Tensor | None = None, need_weights: bool = True,
                attn_mask: Tensor | None = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
        """(output, weights): weights averaged over heads (N, L, S), per head
        (N, heads, L, S) with `average_attn_weights=False`, None without `need_weights`."""
        batched = query.ndim == 3
        if self.batch_first and batched:
            # Keep `query is key is value`: self-attention projects with one matmul.
            if key is value:
                if query is key:
                    query = key = value = query.transpose(1, 0)
                else:
                    query, key = query.transpose(1, 0), key.transpose(1, 0)
                    value = key
            else:
                query, key, value = (x.transpose(1, 0) for x in (query, key, value))
        separate = not self._qkv_same_embed_dim
        output, weights = multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight,
            self.in_proj_bias, self.bias_k, self.bias_v, self.add_zero_attn, self.dropout,
            self.out_proj.weight, self.out_proj.bias, training=self.training,
            key_padding_mask=key_padding_mask, need_weights=need_weights, attn_mask=attn_mask,
            use_separate_proj_weight=separate, q_proj_weight=self.q_proj_weight,
            k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights, is_causal=is_causal)
        if self.batch_first and batched:
            output = output.transpose(1, 0)
        return output, weights
