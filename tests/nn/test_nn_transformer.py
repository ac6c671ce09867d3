"""gt.nn's Transformer modules against torch.nn's with the same weights: outputs, input
and parameter gradients over masks, layouts, norm placement and activations; names,
reprs and seeded draws as torch's; and a tiny language model that trains as torch's."""

import pytest
import torch
from attention_check import check_masked
from nn_check import randn, seeded

import gt
import gt.nn as nn
import gt.nn.functional as F

D, HEADS, FF, L, S, N = 8, 2, 16, 5, 4, 3


def sequences(*shapes: tuple[int, ...]) -> list[torch.Tensor]:
    generator = seeded()
    return [randn(*shape, generator=generator) for shape in shapes]


def padding(batch: int, length: int, dtype: torch.dtype = torch.bool) -> torch.Tensor:
    """A key padding mask: the first sequence's last two positions are padding."""
    mask = torch.zeros(batch, length, dtype=torch.bool)
    mask[0, -2:] = True
    return mask if dtype == torch.bool else torch.zeros(batch, length).masked_fill(mask, -1e9)


def causal(length: int) -> torch.Tensor:
    return torch.nn.Transformer.generate_square_subsequent_mask(length)


def layers(name: str, *args, **kwargs) -> tuple[nn.Module, torch.nn.Module]:
    """GT's and torch's module of one name; dropout 0, so the two compare exactly."""
    kwargs.setdefault('dropout', 0.0)
    return getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)


ACTIVATIONS = {'relu': ('relu', 'relu'), 'gelu': ('gelu', 'gelu'),
               'callable': (nn.GELU(approximate='tanh'), torch.nn.GELU(approximate='tanh'))}


@pytest.mark.parametrize('activation', ACTIVATIONS)
@pytest.mark.parametrize('norm_first', [False, True])
def test_encoder_layer(norm_first, activation):
    mine_activation, their_activation = ACTIVATIONS[activation]
    mine = nn.TransformerEncoderLayer(D, HEADS, FF, 0.0, mine_activation, norm_first=norm_first,
                                      batch_first=True)
    theirs = torch.nn.TransformerEncoderLayer(D, HEADS, FF, 0.0, their_activation,
                                              norm_first=norm_first, batch_first=True)
    assert mine.activation_relu_or_gelu == theirs.activation_relu_or_gelu
    (src,) = sequences((N, L, D))
    check_masked(mine, theirs, [src], src_key_padding_mask=padding(N, L))


MASKS = {
    'none': {},
    'causal_float': {'src_mask': causal(L)},
    'causal_hint': {'src_mask': causal(L), 'is_causal': True},
    'bool': {'src_mask': torch.ones(L, L, dtype=torch.bool).triu(1)},
    'key_padding': {'src_key_padding_mask': padding(N, L)},
    'both': {'src_mask': causal(L), 'src_key_padding_mask': padding(N, L, torch.float32)},
}


@pytest.mark.parametrize('mask', MASKS)
@pytest.mark.parametrize('batch_first', [False, True])
def test_encoder_layer_masks(batch_first, mask):
    mine, theirs = layers('TransformerEncoderLayer', D, HEADS, FF, batch_first=batch_first)
    (src,) = sequences((N, L, D) if batch_first else (L, N, D))
    check_masked(mine, theirs, [src], **MASKS[mask])


def test_encoder_layer_unbatched_without_bias():
    mine, theirs = layers('TransformerEncoderLayer', D, HEADS, FF, bias=False,
                          layer_norm_eps=1e-3)
    (src,) = sequences((L, D))
    check_masked(mine, theirs, [src], src_key_padding_mask=padding(1, L)[0])


@pytest.mark.parametrize('is_causal', [None, True])
@pytest.mark.parametrize('norm_first', [False, True])
def test_encoder_of_two_layers_with_a_final_norm(norm_first, is_causal):
    def encoder(lib):
        layer = lib.TransformerEncoderLayer(D, HEADS, FF, 0.0, batch_first=True,
                                            norm_first=norm_first)
        return lib.TransformerEncoder(layer, 2, lib.LayerNorm(D), enable_nested_tensor=False)
    mine, theirs = encoder(nn), encoder(torch.nn)
    # torch's copies start equal; a different state per layer shows they load apart.
    theirs.layers[1].linear1.weight.data.mul_(-1.5)
    (src,) = sequences((N, L, D))
    check_masked(mine, theirs, [src], mask=torch.ones(L, L, dtype=torch.bool).triu(1),
                 is_causal=is_causal, src_key_padding_mask=padding(N, L))


@pytest.mark.parametrize('norm_first', [False, True])
def test_decoder_layer(norm_first):
    mine, theirs = layers('TransformerDecoderLayer', D, HEADS, FF, norm_first=norm_first,
                          activation='gelu')
    tgt, memory = sequences((L, N, D), (S, N, D))
    check_masked(mine, theirs, [tgt, memory], tgt_mask=causal(L), tgt_is_causal=True,
                 memory_key_padding_mask=padding(N, S))


def test_decoder_of_two_layers_with_a_final_norm():
    def decoder(lib):
        layer = lib.TransformerDecoderLayer(D, HEADS, FF, 0.0, batch_first=True)
        return lib.TransformerDecoder(layer, 2, lib.LayerNorm(D))
    mine, theirs = decoder(nn), decoder(torch.nn)
    theirs.layers[0].multihead_attn.in_proj_weight.data.mul_(2.0)
    tgt, memory = sequences((N, L, D), (N, S, D))
    check_masked(mine, theirs, [tgt, memory], tgt_mask=causal(L),
                 tgt_key_padding_mask=padding(N, L, torch.float32), memory_mask=randn(L, S))


@pytest.mark.filterwarnings('ignore:enable_nested_tensor is True')
@pytest.mark.parametrize('batch_first', [False, True])
def test_transformer(batch_first):
    mine, theirs = layers('Transformer', D, HEADS, 2, 1, FF, batch_first=batch_first)
    shape = (lambda length: (N, length, D)) if batch_first else (lambda length: (length, N, D))
    src, tgt = sequences(shape(S), shape(L))
    check_masked(mine, theirs, [src, tgt], tgt_mask=causal(L), src_key_padding_mask=padding(N, S),
                 memory_key_padding_mask=padding(N, S))


def test_square_subsequent_mask_is_torchs():
    mask = nn.Transformer.generate_square_subsequent_mask(4)
    assert mask.dtype == torch.float32
    assert torch.equal(mask.data, torch.nn.Transformer.generate_square_subsequent_mask(4))
    double = nn.Transformer.generate_square_subsequent_mask(3, dtype=torch.float64)
    assert torch.equal(double.data, causal(3).double())


@pytest.mark.filterwarnings('ignore:enable_nested_tensor is True')
@pytest.mark.parametrize('name,args', [
    ('TransformerEncoderLayer', (D, HEADS, FF)),
    ('TransformerDecoderLayer', (D, HEADS, FF)),
    ('Transformer', (D, HEADS, 1, 1, FF)),
])
def test_seeded_modules_have_torchs_names_reprs_and_weights(name, args):
    gt.manual_seed(5)
    mine = getattr(nn, name)(*args, bias=name != 'TransformerDecoderLayer')
    torch.manual_seed(5)
    theirs = getattr(torch.nn, name)(*args, bias=name != 'TransformerDecoderLayer')
    assert repr(mine) == repr(theirs)
    got, want = mine.state_dict(), theirs.state_dict()
    assert list(got) == list(want)
    for key in want:
        assert torch.equal(got[key], want[key]), key
    theirs.load_state_dict(got)  # and back into torch


def test_an_encoders_layers_start_equal_and_train_apart():
    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(D, HEADS, FF), 2)
    first, second = encoder.layers
    assert first.linear1.weight is not second.linear1.weight
    assert torch.equal(first.linear1.weight.data, second.linear1.weight.data)
    with gt.no_grad():
        first.linear1.weight.mul_(0.0)
    assert second.linear1.weight.data.abs().sum() > 0


def test_a_two_layer_encoders_repr_is_torchs():
    mine = nn.TransformerEncoder(nn.TransformerEncoderLayer(D, HEADS, FF), 2)
    theirs = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(D, HEADS, FF), 2,
                                         enable_nested_tensor=False)
    assert repr(mine) == repr(theirs)


def test_bad_activation_raises_as_torch():
    for lib in (torch.nn, nn):
        with pytest.raises(RuntimeError, match='activation should be relu/gelu, not tanh'):
            lib.TransformerEncoderLayer(D, HEADS, FF, activation='tanh')


def test_tiny_language_model_trains_as_torchs():
    """Embedding -> 2 causal encoder layers -> Linear, three Adam steps on the same data
    from the same weights: the losses agree."""
    vocab, length, batch = 11, 6, 4

    def model(lib):
        layer = lib.nn.TransformerEncoderLayer(D, HEADS, FF, dropout=0.0, batch_first=True)
        return lib.nn.Sequential(lib.nn.Embedding(vocab, D),
                                 lib.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False),
                                 lib.nn.Linear(D, vocab))

    generator = seeded()
    tokens = torch.randint(vocab, (batch, length + 1), generator=generator)
    mask = causal(length)
    losses = {}
    theirs = model(torch)
    mine = model(gt)
    mine.load_state_dict(theirs.state_dict())
    for lib, net in ((torch, theirs), (gt, mine)):
        optimizer = lib.optim.Adam(net.parameters(), lr=1e-2)
        same = gt.tensor if lib is gt else torch.clone
        inputs, targets = same(tokens[:, :-1]), same(tokens[:, 1:]).reshape(-1)
        losses[lib.__name__] = []
        for _ in range(3):
            optimizer.zero_grad()
            hidden = net[1](net[0](inputs), mask=same(mask), is_causal=True)
            logits = net[2](hidden)
            loss = lib.nn.functional.cross_entropy(logits.reshape(-1, vocab), targets)
            loss.backward()
            optimizer.step()
            losses[lib.__name__].append(loss.item())
    assert losses['torch'][-1] < losses['torch'][0]
    for got, want in zip(losses['gt'], losses['torch']):
        assert abs(got - want) < 1e-4, (losses['gt'], losses['torch'])


def test_functional_relu_is_the_default_activation():
    assert nn.TransformerEncoderLayer(D, HEADS).activation is F.relu


PADDINGS = {'at the ends': [[False, False, True, True], [False, False, False, True]],
            'in the middle': [[False, True, False, True], [False, False, False, False]]}


@pytest.mark.parametrize('norm', [False, True], ids=['no norm', 'final norm'])
@pytest.mark.parametrize('padding', PADDINGS, ids=str)
@pytest.mark.parametrize('grad', [False, True], ids=['no_grad', 'grad'])
def test_an_encoder_in_eval_gives_torchs_zeros_at_padded_positions(padding, norm, grad):
    """torch's encoder runs a padded batch as a nested tensor in eval mode without
    gradients: padded positions come back as zeros when each row's padding is at its end
    (else, or with gradients, it takes the plain path). Mean pooling reads them."""
    results = []
    for lib in (gt, torch):
        lib.manual_seed(0)
        layer = lib.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
        encoder = lib.nn.TransformerEncoder(layer, 2, norm=lib.nn.LayerNorm(8) if norm else None)
        encoder.eval()
        x = lib.randn(2, 4, 8)
        with lib.set_grad_enabled(grad):
            out = encoder(x, src_key_padding_mask=lib.tensor(PADDINGS[padding]))
        results.append(torch.tensor(out.tolist()))
    torch.testing.assert_close(results[0], results[1], rtol=1e-5, atol=1e-5)


def test_an_encoder_warns_as_torchs_when_its_layer_cannot_run_nested():
    messages = []
    for lib in (gt, torch):
        with pytest.warns(UserWarning, match='enable_nested_tensor is True') as caught:
            lib.nn.TransformerEncoder(lib.nn.TransformerEncoderLayer(8, 2, 16), 1)
        messages.append(str(caught[0].message))
    assert messages[0] == messages[1]
