"""torch.nn's Transformer family (`TransformerEncoderLayer`, `TransformerEncoder`, the
decoder pair and `Transformer`) composed of GT's MultiheadAttention, Linear, LayerNorm and
Dropout: torch's math path, its submodule names (so state dicts load both ways), its
initial draws in its order, and none of its fast path's kernels (nested tensors, fused
layers). One effect of that path is torch's to see, though: an encoder that takes it (in
eval mode, without gradients, with a padding mask) turns its batch into a nested tensor
and back, so padded positions come out as zeros (before the final norm). GT's encoder
gives the same, where torch's would take the path.
"""

import copy
import warnings
from typing import Any, Callable

import torch

from gt.autograd import is_grad_enabled
from gt.creation import full
from gt.functional import where
from gt.nn import functional as F
from gt.nn import init
from gt.nn.attention import MultiheadAttention, canonical_mask
from gt.nn.containers import ModuleList
from gt.nn.layers import GELU, Dropout, LayerNorm, Linear, ReLU
from gt.nn.module import Module
from gt.tensor import Tensor

Activation = str | Callable[[Tensor], Tensor]


def _generate_square_subsequent_mask(size: int, device: Any = None,
                                     dtype: torch.dtype | None = None) -> Tensor:
    """A float mask, -inf above the diagonal and 0 elsewhere: position i sees 0..i."""
    return full((size, size), float('-inf'), dtype=dtype).triu(1)


def _get_clones(module: Module, count: int) -> ModuleList:
    return ModuleList([copy.deepcopy(module) for _ in range(count)])


def _get_activation_fn(activation: str) -> Callable[[Tensor], Tensor]:
    if activation == 'relu':
        return F.relu
    if activation == 'gelu':
        return F.gelu
    raise RuntimeError(f'activation should be relu/gelu, not {activation}')


def _is_causal(is_causal: bool | None) -> bool:
    """torch's `_detect_is_causal_mask` compares a mask given with `is_causal=None` to
    the causal one (one fetch here). Only the hint is kept: a mask that is causal gives
    the same numbers as the hint would, so asking the worker buys nothing."""
    return is_causal is True


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block, each with a residual connection and a
    LayerNorm, after (post-norm, torch's default) or before (`norm_first`)."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: Activation = F.relu,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: torch.dtype | None = None) -> None:
        super().__init__()
        # torch's registration order, which is its draw order and its state dict's.
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, dtype=dtype)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        if isinstance(activation, str):
            activation = _get_activation_fn(activation)
        # torch's flag for its fused kernels: kept, as scripts read it.
        if activation is F.relu or isinstance(activation, ReLU):
            self.activation_relu_or_gelu = 1
        elif activation is F.gelu or isinstance(activation, GELU):
            self.activation_relu_or_gelu = 2
        else:
            self.activation_relu_or_gelu = 0
        self.activation = activation

    def forward(self, src: Tensor, src_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None, is_causal: bool = False) -> Tensor:
        src_key_padding_mask = canonical_mask(src_key_padding_mask, 'src_key_padding_mask',
                                              src.dtype, src_mask, 'src_mask')
        src_mask = canonical_mask(src_mask, 'src_mask', src.dtype)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x: Tensor, attn_mask: Tensor | None,
                  key_padding_mask: Tensor | None, is_causal: bool = False) -> Tensor:
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout2(x)


class TransformerDecoderLayer(Module):
    """Self-attention over the target, attention over the encoder's output (`memory`),
    then the feed-forward block; residuals and LayerNorms as in the encoder layer."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: Activation = F.relu,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: torch.dtype | None = None) -> None:
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                            batch_first=batch_first, bias=bias, dtype=dtype)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                                 batch_first=batch_first, bias=bias,
                                                 dtype=dtype)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _get_activation_fn(activation) if isinstance(activation, str) \
            else activation

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False) -> Tensor:
        x = tgt
        self_masks = (tgt_mask, tgt_key_padding_mask, tgt_is_causal)
        memory_masks = (memory_mask, memory_key_padding_mask, memory_is_causal)
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), *self_masks)
            x = x + self._mha_block(self.norm2(x), memory, *memory_masks)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, *self_masks))
            x = self.norm2(x + self._mha_block(x, memory, *memory_masks))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x: Tensor, attn_mask: Tensor | None,
                  key_padding_mask: Tensor | None, is_causal: bool = False) -> Tensor:
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _mha_block(self, x: Tensor, memory: Tensor, attn_mask: Tensor | None,
                   key_padding_mask: Tensor | None, is_causal: bool = False) -> Tensor:
        x = self.multihead_attn(x, memory, memory, attn_mask=attn_mask,
                                key_padding_mask=key_padding_mask, is_causal=is_causal,
                                need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout3(x)


class TransformerEncoder(Module):
    """`num_layers` copies of `encoder_layer` (equal initial weights, as torch's
    deepcopies), then `norm` if given. `enable_nested_tensor`: see the module's
    docstring; `use_nested_tensor` is torch's verdict on the layer, with its warning."""

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int,
                 norm: Module | None = None, enable_nested_tensor: bool = True,
                 mask_check: bool = True) -> None:
        super().__init__()
        self.layers = _get_clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        why_not = _why_no_nested_tensor(encoder_layer)
        if enable_nested_tensor and why_not:
            warnings.warn(f'enable_nested_tensor is True, but self.use_nested_tensor is False '
                          f'because {why_not}', stacklevel=2)
        self.use_nested_tensor = enable_nested_tensor and not why_not
        self.mask_check = mask_check

    def forward(self, src: Tensor, mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                is_causal: bool | None = None) -> Tensor:
        src_key_padding_mask = canonical_mask(src_key_padding_mask, 'src_key_padding_mask',
                                              src.dtype, mask, 'mask')
        mask = canonical_mask(mask, 'mask', src.dtype)
        output = src
        for layer in self.layers:
            output = layer(output, src_mask=mask, is_causal=_is_causal(is_causal),
                           src_key_padding_mask=src_key_padding_mask)
        if self._nested(src, mask, src_key_padding_mask):
            output = self._padded_with_zeros(output, src_key_padding_mask != 0)
        return output if self.norm is None else self.norm(output)

    def _nested(self, src: Tensor, mask: Tensor | None, padding: Tensor | None) -> bool:
        """Whether torch's encoder would run the batch as a nested tensor (its checks,
        but for the padding's alignment, which _padded_with_zeros checks on the values)."""
        layer = self.layers[0]
        if not (self.use_nested_tensor and torch.backends.mha.get_fastpath_enabled()
                and not layer.training and src.dim() == 3 and padding is not None
                and mask is None and not torch.is_autocast_enabled()):
            return False
        return not (is_grad_enabled() and (src.requires_grad or any(
            p.requires_grad for p in _fast_path_parameters(layer))))

    def _padded_with_zeros(self, output: Tensor, padded: Tensor) -> Tensor:
        """torch's nested round trip: zeros where padded, if each row's padding is at its
        end (torch's mask check; else it takes the plain path, or, without the check,
        leaves the values as they are)."""
        zeroed = output.masked_fill(padded.unsqueeze(-1), 0.0)
        if not self.mask_check:
            return zeroed
        left_aligned = (padded[:, 1:] >= padded[:, :-1]).all()
        return where(left_aligned, zeroed, output)


def _why_no_nested_tensor(layer: Any) -> str:
    """torch's reasons (TransformerEncoder.__init__) a layer cannot run nested."""
    if not isinstance(layer, TransformerEncoderLayer):
        return 'encoder_layer was not TransformerEncoderLayer'
    attention = layer.self_attn
    if layer.norm_first:
        return 'encoder_layer.norm_first was True'
    if not attention.batch_first:
        return ('encoder_layer.self_attn.batch_first was not True(use batch_first for better '
                'inference performance)')
    if not attention._qkv_same_embed_dim:
        return 'encoder_layer.self_attn._qkv_same_embed_dim was not True'
    if attention.in_proj_bias is None:
        return 'encoder_layer.self_attn was passed bias=False'
    if not layer.activation_relu_or_gelu:
        return 'encoder_layer.activation_relu_or_gelu was not True'
    if layer.norm1.eps != layer.norm2.eps:
        return 'encoder_layer.norm1.eps was not equal to encoder_layer.norm2.eps'
    if attention.num_heads % 2 == 1:
        return 'encoder_layer.self_attn.num_heads is odd'
    return ''


def _fast_path_parameters(layer: Any) -> list:
    attention = layer.self_attn
    return [attention.in_proj_weight, attention.in_proj_bias, attention.out_proj.weight,
            attention.out_proj.bias, layer.norm1.weight, layer.norm1.bias, layer.norm2.weight,
            layer.norm2.bias, layer.linear1.weight, layer.linear1.bias, layer.linear2.weight,
            layer.linear2.bias]


class TransformerDecoder(Module):
    """`num_layers` copies of `decoder_layer`, each attending to the same `memory`, then
    `norm` if given."""

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int,
                 norm: Module | None = None) -> None:
        super().__init__()
        self.layers = _get_clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False) -> Tensor:
        output = tgt
        for layer in self.layers:
            output = layer(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                           tgt_key_padding_mask=tgt_key_padding_mask,
                           memory_key_padding_mask=memory_key_padding_mask,
                           tgt_is_causal=_is_causal(tgt_is_causal),
                           memory_is_causal=memory_is_causal)
        return output if self.norm is None else self.norm(output)


class Transformer(Module):
    """An encoder-decoder Transformer (Attention Is All You Need): `encoder` and `decoder`,
    each ending with a LayerNorm. Every weight matrix is redrawn by xavier_uniform_, in
    parameter order, as torch does."""

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: Activation = F.relu,
                 custom_encoder: Any = None, custom_decoder: Any = None,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: torch.dtype | None = None) -> None:
        super().__init__()
        layer_args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                      batch_first, norm_first, bias, device, dtype)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(
                TransformerEncoderLayer(*layer_args), num_encoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(
                TransformerDecoderLayer(*layer_args), num_decoder_layers,
                LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype))
        self._reset_parameters()
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Tensor | None = None,
                tgt_mask: Tensor | None = None, memory_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                src_is_causal: bool | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:
        batched = src.ndim == 3
        batch_dim = 0 if self.batch_first else 1
        if batched and src.shape[batch_dim] != tgt.shape[batch_dim]:
            raise RuntimeError('the batch number of src and tgt must be equal')
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError('the feature number of src and tgt must be equal to d_model')
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device: Any = None,
                                        dtype: torch.dtype | None = None) -> Tensor:
        """A float (sz, sz) mask with -inf above the diagonal, for causal attention."""
        return _generate_square_subsequent_mask(sz, device, dtype)

    def _reset_parameters(self) -> None:
        for parameter in self.parameters():
            if parameter.ndim > 1:
                init.xavier_uniform_(parameter)
