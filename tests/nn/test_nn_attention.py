"""gt.nn.MultiheadAttention against torch.nn.MultiheadAttention with the same weights:
outputs, attention weights, input and parameter gradients over masks, layouts and
projections; names, shapes, reprs, seeded draws and errors as torch's."""

import numpy as np
import pytest
import torch
from attention_check import check_masked
from nn_check import randn, seeded

import gt
import gt.nn as nn

E, HEADS, L, S, N = 8, 2, 5, 6, 3


def masks(kind: str, tgt: int, src: int, batch: int) -> dict:
    """torch's mask arguments of one kind; no row is masked entirely (its softmax would
    be NaN in both)."""
    generator = seeded()
    padding = torch.zeros(batch, src, dtype=torch.bool)
    padding[0, -2:] = True
    padding[-1, -1] = True
    causal = torch.ones(tgt, src, dtype=torch.bool).triu(1)
    if kind == 'none':
        return {}
    if kind == 'causal_bool':
        return {'attn_mask': causal}
    if kind == 'causal_hint':
        return {'attn_mask': causal, 'is_causal': True}
    if kind == 'float':
        return {'attn_mask': randn(tgt, src, generator=generator)}
    if kind == 'bool_3d':
        mask = torch.rand(batch * HEADS, tgt, src, generator=generator) < 0.3
        return {'attn_mask': mask & ~torch.eye(tgt, src, dtype=torch.bool)}
    if kind == 'key_padding':
        return {'key_padding_mask': padding}
    if kind == 'key_padding_and_causal':
        return {'key_padding_mask': padding, 'attn_mask': causal}
    if kind == 'key_padding_float':
        return {'key_padding_mask': padding.float() * -1e4,
                'attn_mask': randn(tgt, src, generator=generator)}
    raise ValueError(kind)


def inputs(*shapes: tuple[int, ...]) -> list[torch.Tensor]:
    generator = seeded()
    return [randn(*shape, generator=generator) for shape in shapes]


WEIGHTS = [{}, {'need_weights': False}, {'average_attn_weights': False}]
MASKS = ['none', 'causal_bool', 'causal_hint', 'float', 'bool_3d', 'key_padding',
         'key_padding_and_causal', 'key_padding_float']


@pytest.mark.parametrize('weights', WEIGHTS, ids=['averaged', 'no_weights', 'per_head'])
@pytest.mark.parametrize('mask', MASKS)
@pytest.mark.parametrize('batch_first', [False, True])
def test_self_attention(batch_first, mask, weights):
    mine = nn.MultiheadAttention(E, HEADS, batch_first=batch_first)
    theirs = torch.nn.MultiheadAttention(E, HEADS, batch_first=batch_first)
    (x,) = inputs((N, L, E) if batch_first else (L, N, E))
    check_masked(mine, theirs, [x, x, x], **masks(mask, L, L, N), **weights)


@pytest.mark.parametrize('weights', WEIGHTS[:2], ids=['averaged', 'no_weights'])
@pytest.mark.parametrize('mask', ['none', 'float', 'key_padding'])
def test_cross_attention_with_other_key_and_value_sizes(mask, weights):
    mine = nn.MultiheadAttention(E, HEADS, kdim=5, vdim=3, batch_first=True)
    theirs = torch.nn.MultiheadAttention(E, HEADS, kdim=5, vdim=3, batch_first=True)
    query, key, value = inputs((N, L, E), (N, S, 5), (N, S, 3))
    check_masked(mine, theirs, [query, key, value], **masks(mask, L, S, N), **weights)


def test_encoder_decoder_attention_shares_key_and_value():
    query, memory = inputs((L, N, E), (S, N, E))
    check_masked(nn.MultiheadAttention(E, HEADS), torch.nn.MultiheadAttention(E, HEADS),
                 [query, memory, memory], **masks('key_padding', L, S, N))


@pytest.mark.parametrize('kdim', [None, 4])
def test_without_bias(kdim):
    mine = nn.MultiheadAttention(E, HEADS, bias=False, kdim=kdim, vdim=kdim)
    theirs = torch.nn.MultiheadAttention(E, HEADS, bias=False, kdim=kdim, vdim=kdim)
    query, key = inputs((L, N, E), (S, N, kdim or E))
    check_masked(mine, theirs, [query, key, key], need_weights=False)


@pytest.mark.parametrize('mask', ['none', 'key_padding', 'bool_3d'])
@pytest.mark.parametrize('batch_first', [False, True])
def test_unbatched_input(batch_first, mask):
    mine = nn.MultiheadAttention(E, HEADS, batch_first=batch_first)
    theirs = torch.nn.MultiheadAttention(E, HEADS, batch_first=batch_first)
    kwargs = masks(mask, L, L, 1)
    if 'key_padding_mask' in kwargs:
        kwargs['key_padding_mask'] = kwargs['key_padding_mask'][0]
    (x,) = inputs((L, E))
    check_masked(mine, theirs, [x, x, x], average_attn_weights=False, **kwargs)


def test_add_zero_attn():
    mine = nn.MultiheadAttention(E, HEADS, add_zero_attn=True)
    theirs = torch.nn.MultiheadAttention(E, HEADS, add_zero_attn=True)
    (x,) = inputs((L, N, E))
    check_masked(mine, theirs, [x, x, x], **masks('key_padding_and_causal', L, L, N))


@pytest.mark.parametrize('mask', ['none', 'key_padding_and_causal', 'bool_3d'])
@pytest.mark.parametrize('zero_attn', [False, True])
def test_add_bias_kv(zero_attn, mask):
    """A learned key and value row every query may attend to, unmasked."""
    mine = nn.MultiheadAttention(E, HEADS, add_bias_kv=True, add_zero_attn=zero_attn)
    theirs = torch.nn.MultiheadAttention(E, HEADS, add_bias_kv=True, add_zero_attn=zero_attn)
    (x,) = inputs((L, N, E))
    check_masked(mine, theirs, [x, x, x], **masks(mask, L, L, N))


def test_dropout_applies_in_training_only():
    attention = nn.MultiheadAttention(E, HEADS, dropout=0.5)
    theirs = torch.nn.MultiheadAttention(E, HEADS, dropout=0.5).eval()
    attention.load_state_dict(theirs.state_dict())
    (x,) = inputs((L, N, E))
    output, weights = attention(gt.tensor(x), gt.tensor(x), gt.tensor(x))
    assert not torch.allclose(weights.data.sum(-1), torch.ones(N, L))  # dropped and scaled
    attention.eval()
    check_masked(attention, theirs, [x, x, x])


def test_is_causal_needs_a_mask_as_in_torch():
    x = gt.randn(L, N, E)
    with pytest.raises(RuntimeError, match='Need attn_mask if specifying the is_causal hint'):
        nn.MultiheadAttention(E, HEADS)(x, x, x, is_causal=True)


@pytest.mark.parametrize('kwargs', [{}, {'kdim': 4, 'vdim': 6}, {'bias': False},
                                    {'add_bias_kv': True}])
def test_names_shapes_and_seeded_draws_are_torchs(kwargs):
    gt.manual_seed(7)
    mine = nn.MultiheadAttention(E, HEADS, **kwargs)
    torch.manual_seed(7)
    theirs = torch.nn.MultiheadAttention(E, HEADS, **kwargs)
    got, want = mine.state_dict(), theirs.state_dict()
    assert list(got) == list(want)
    for name in want:
        assert torch.equal(got[name], want[name]), name
    assert repr(mine) == repr(theirs)
    assert mine._qkv_same_embed_dim == theirs._qkv_same_embed_dim
    # And GT's weights load into torch.
    other = torch.nn.MultiheadAttention(E, HEADS, **kwargs)
    other.load_state_dict(got)
    assert all(torch.equal(value, want[name]) for name, value in other.state_dict().items())


def test_bad_arguments_raise_as_torch():
    for lib in (torch.nn, nn):
        with pytest.raises(AssertionError, match='embed_dim must be divisible by num_heads'):
            lib.MultiheadAttention(10, 3)
        with pytest.raises(ValueError, match='must be greater than 0'):
            lib.MultiheadAttention(8, 0)


def test_mismatched_mask_types_warn_as_torch():
    (x,) = inputs((L, N, E))
    kwargs = masks('key_padding', L, L, N) | masks('float', L, L, N)
    for lib, value in ((torch, x), (gt, gt.tensor(x))):
        with pytest.warns(UserWarning, match='mismatched key_padding_mask and attn_mask'):
            lib.nn.MultiheadAttention(E, HEADS)(value, value, value, **{
                name: mask if lib is torch else gt.tensor(mask) for name, mask in kwargs.items()})


def test_the_functional_form_is_gt_s_own_and_matches_torch():
    theirs = torch.nn.MultiheadAttention(8, 2)
    x = randn(5, 3, 8)
    args = (8, 2, theirs.in_proj_weight, theirs.in_proj_bias, None, None, False, 0.0,
            theirs.out_proj.weight, theirs.out_proj.bias)
    want, want_weights = torch.nn.functional.multi_head_attention_forward(x, x, x, *args)
    mine = gt.tensor(x)
    got, got_weights = nn.functional.multi_head_attention_forward(
        mine, mine, mine, *[gt.tensor(a.detach()) if isinstance(a, torch.Tensor) else a
                            for a in args])
    assert nn.functional.multi_head_attention_forward.__module__ == 'gt.nn.functional'
    torch.testing.assert_close(got.data, want.detach(), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(got_weights.data, want_weights.detach(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('masking', ['none', 'causal', 'boolean', 'additive', 'gqa'])
def test_attention_on_one_worker_is_torchs_kernel_bit_for_bit(masking):
    """Without dropout, on one worker, torch's fused kernel runs by name: its output and
    gradients to the bit (GT's math rounded otherwise; found porting nanoGPT). On
    several (the sharded re-run), GT's sharding math: close."""
    def run(library):
        library.manual_seed(0)
        heads = 2 if masking == 'gqa' else 4
        q = library.randn(2, 4, 8, 8, requires_grad=True)
        k = library.randn(2, heads, 8, 8, requires_grad=True)
        v = library.randn(2, heads, 8, 8, requires_grad=True)
        mask = {'boolean': library.rand(8, 8) > 0.3,
                'additive': library.randn(8, 8)}.get(masking)
        out = library.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, is_causal=masking == 'causal', enable_gqa=masking == 'gqa')
        (out * library.linspace(-1, 1, out.numel()).reshape(out.shape)).sum().backward()
        return [t.detach().numpy() for t in (out, q.grad, k.grad, v.grad)]
    exact = len(gt.runtime.client.current().workers) == 1
    for got, expected in zip(run(gt), run(torch)):
        assert (got == expected).all() if exact else np.allclose(got, expected, atol=1e-5)


@pytest.mark.parametrize('scale', [None, 0.3, -0.5])
def test_attention_with_dropout_is_torchs_math_bit_for_bit(scale):
    """With dropout (and on several workers), GT's ops as torch's math kernel: both
    operands scaled by the scale's square root, the same draws (a Transformer's training
    step drifted from torch's in the last bits)."""
    def run(library):
        library.manual_seed(0)
        q, k, v = (library.randn(2, 2, 6, 8, requires_grad=True) for _ in range(3))
        out = library.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=library.rand(6, 6) > 0.2, dropout_p=0.25, scale=scale)
        (out * library.linspace(-1, 1, out.numel()).reshape(out.shape)).sum().backward()
        return [t.detach().numpy() for t in (out, q.grad, k.grad, v.grad)]
    for got, expected in zip(run(gt), run(torch)):
        assert (got == expected).all()


@pytest.mark.parametrize('batch_first', [False, True])
@pytest.mark.parametrize('masked', [False, True])
def test_transformer_layer_attention_is_torchs_bit_for_bit(batch_first, masked):
    """`nn.TransformerEncoderLayer` calls attention without weights: torch's runs it over
    (N, heads, L, head_dim), and its batch-first input projection folds the transposed
    batch into one mm; GT's differed in the last bits on both counts."""
    def run(library):
        library.manual_seed(0)
        layer = library.nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0,
                                                   batch_first=batch_first)
        x = library.randn(3, 5, 16, requires_grad=True)
        length = 5 if batch_first else 3
        mask = library.nn.Transformer.generate_square_subsequent_mask(length) if masked \
            else None
        out = layer(x, src_mask=mask)
        (out * library.linspace(-1, 1, out.numel()).reshape(out.shape)).sum().backward()
        return [out.detach().numpy(), x.grad.numpy(),
                layer.self_attn.in_proj_weight.grad.numpy()]
    exact = len(gt.runtime.client.current().workers) == 1
    for got, expected in zip(run(gt), run(torch)):
        assert (got == expected).all() if exact else np.allclose(got, expected, atol=1e-5)


@pytest.mark.parametrize('dropout', [0.0, 0.3])
@pytest.mark.parametrize('mask', [None, 'bool', 'float'])
@pytest.mark.parametrize('need_weights', [False, True])
@pytest.mark.parametrize('batch_first', [False, True])
@pytest.mark.parametrize('cross', [False, True], ids=['self', 'cross'])
def test_multihead_attention_is_torchs_bit_for_bit(cross, batch_first, need_weights, mask,
                                                   dropout):
    """Every gradient, with the weights (torch's default) or without, for self- and
    encoder-decoder attention: with weights and a batch-first input, the output
    projection took a 3-D input whose transposed gradient a batched product rounded
    otherwise; encoder-decoder attention projected keys and values apart, where torch's
    one matmul sums their bias's gradient at once."""
    def run(library):
        library.manual_seed(0)
        attention = library.nn.MultiheadAttention(16, 4, dropout=dropout,
                                                  batch_first=batch_first)
        x = library.randn(3, 5, 16, requires_grad=True)
        memory = library.randn(*((3, 6) if batch_first else (6, 5)), 16,
                               requires_grad=True) if cross else x
        queries, keys = (5, 6 if cross else 5) if batch_first else (3, 6 if cross else 3)
        masks = {None: None, 'bool': library.rand(queries, keys) > 0.7,
                 'float': library.randn(queries, keys)}
        out, weights = attention(x, memory, memory, need_weights=need_weights,
                                 attn_mask=masks[mask])
        (out * library.linspace(-1, 1, out.numel()).reshape(out.shape)).sum().backward()
        results = [out, x.grad, memory.grad, *(p.grad for p in attention.parameters())]
        if weights is not None:
            results.append(weights)
        return [t.detach().numpy() for t in results]
    exact = len(gt.runtime.client.current().workers) == 1
    for got, expected in zip(run(gt), run(torch), strict=True):
        assert (got == expected).all() if exact else np.allclose(got, expected, atol=1e-5)
