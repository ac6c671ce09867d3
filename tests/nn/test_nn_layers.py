"""Each layer and functional form against torch.nn with the same weights (loaded from the
torch layer through load_state_dict): outputs, input gradients, parameter gradients."""

import math
import os

import pytest
import torch
from nn_check import assert_close, both, check_module, randn, seeded

import gt
import gt.nn as nn
import gt.nn.functional as F


@pytest.mark.parametrize('bias', [True, False])
@pytest.mark.parametrize('shape', [(5, 7), (2, 3, 7), (7,)])
def test_linear(bias, shape):
    check_module(nn.Linear(7, 4, bias=bias), torch.nn.Linear(7, 4, bias=bias), randn(*shape))


def test_linear_initialization_follows_torch_distribution():
    layer = nn.Linear(400, 300)
    bound = 1 / math.sqrt(400)
    weight, bias = layer.weight.data, layer.bias.data
    assert weight.shape == (300, 400) and bias.shape == (300,)
    assert weight.abs().max() <= bound and bias.abs().max() <= bound
    # U(-b, b) has mean 0 and std b/sqrt(3); 120,000 draws pin both down closely.
    assert abs(weight.mean().item()) < 0.01 * bound
    assert abs(weight.std().item() - bound / math.sqrt(3)) < 0.01 * bound
    assert weight.std() > 0 and not torch.equal(weight[0], weight[1])
    assert layer.weight.is_leaf and layer.weight.requires_grad


def test_a_seeded_model_has_torch_s_weights_bit_for_bit():
    def model(lib):
        lib.manual_seed(11)
        return lib.nn.Sequential(lib.nn.Linear(30, 20), lib.nn.Embedding(7, 20),
                                 lib.nn.Linear(20, 5, bias=False), lib.nn.Linear(5, 1))
    mine, theirs = model(gt), model(torch)
    for (name, got), (_, want) in zip(mine.state_dict().items(), theirs.state_dict().items()):
        assert torch.equal(got, want), name


def test_initialization_sends_no_data(monkeypatch):
    client = gt.runtime.client.current()
    sent = []
    monkeypatch.setattr(client, 'add_data', lambda array: sent.append(array) or 0)
    nn.Sequential(nn.Linear(64, 32), nn.LayerNorm(32), nn.Embedding(10, 32))
    assert sent == []


def test_sequential_of_activations():
    layers = [('Linear', (6, 8)), ('ReLU', ()), ('Linear', (8, 8)), ('Sigmoid', ()),
              ('Linear', (8, 8)), ('Tanh', ()), ('Linear', (8, 5)), ('GELU', ())]
    mine = nn.Sequential(*[getattr(nn, name)(*args) for name, args in layers])
    theirs = torch.nn.Sequential(*[getattr(torch.nn, name)(*args) for name, args in layers])
    check_module(mine, theirs, randn(4, 6))


@pytest.mark.parametrize('approximate', ['none', 'tanh'])
def test_gelu(approximate):
    check_module(nn.GELU(approximate), torch.nn.GELU(approximate), randn(3, 5))


@pytest.mark.parametrize('name', ['Softmax', 'LogSoftmax'])
def test_softmax_modules(name):
    check_module(getattr(nn, name)(dim=1), getattr(torch.nn, name)(dim=1), randn(3, 5, 2))


@pytest.mark.parametrize('shape,normalized', [((4, 6), 6), ((2, 3, 6), (6,)),
                                               ((2, 3, 4), (3, 4))])
def test_layer_norm(shape, normalized):
    theirs = torch.nn.LayerNorm(normalized)
    with torch.no_grad():  # weights other than ones and zeros
        theirs.weight.copy_(randn(*theirs.weight.shape) + 1)
        theirs.bias.copy_(randn(*theirs.bias.shape))
    x = randn(*shape) * 3 + 1
    check_module(nn.LayerNorm(normalized), theirs, x)


def test_layer_norm_options_and_functional_form():
    check_module(nn.LayerNorm(5, eps=1e-3, elementwise_affine=False),
                 torch.nn.LayerNorm(5, eps=1e-3, elementwise_affine=False), randn(4, 5))
    check_module(nn.LayerNorm(5, bias=False), torch.nn.LayerNorm(5, bias=False), randn(4, 5))
    (x, x_t), (w, w_t), (b, b_t) = both(randn(3, 4)), both(randn(4)), both(randn(4))
    assert_close(F.layer_norm(x, (4,), w, b), torch.nn.functional.layer_norm(x_t, (4,), w_t, b_t))
    with pytest.raises(ValueError, match=r'\[5\].*\[3, 4\]'):
        F.layer_norm(x, (5,))
    with pytest.raises(ValueError, match='at least one dimension'):
        F.layer_norm(x, ())


def test_layer_norm_of_mixed_dtypes_is_torchs():
    """A float32 weight and bias for a half input: torch's own mixed-precision kernel (run
    by name), which keeps the input's dtype; a float64 weight for float32 is refused as
    torch refuses it."""
    x, weight, bias = randn(3, 4).half(), randn(4), randn(4)
    assert_close(F.layer_norm(gt.tensor(x), (4,), gt.tensor(weight), gt.tensor(bias)),
                 torch.nn.functional.layer_norm(x, (4,), weight, bias), rtol=1e-3, atol=1e-3)
    with pytest.raises(RuntimeError, match='mixed dtype'):
        F.layer_norm(gt.tensor(x.float()), (4,), gt.tensor(weight.double())).data


def test_embedding():
    indices = torch.randint(0, 10, (3, 4), generator=seeded())
    mine, theirs = nn.Embedding(10, 6), torch.nn.Embedding(10, 6)
    mine.load_state_dict(theirs.state_dict())
    out = mine(gt.tensor(indices))
    expected = theirs(indices)
    assert_close(out, expected)
    weights = randn(3, 4, 6)
    (out * gt.tensor(weights)).sum().backward()
    (expected * weights).sum().backward()
    assert_close(mine.weight.grad, theirs.weight.grad)  # repeated indices accumulate
    assert_close(F.embedding(gt.tensor(indices), mine.weight),
                 torch.nn.functional.embedding(indices, theirs.weight))


def test_dropout_in_training_zeroes_and_scales():
    layer = nn.Dropout(0.25)
    assert layer.training
    x = gt.ones(200, 100, requires_grad=True)
    y = layer(x)
    values = y.data
    kept = values != 0
    assert torch.all(values[kept] == 1 / 0.75)
    assert abs(1 - kept.float().mean().item() - 0.25) < 0.02
    y.sum().backward()
    assert torch.equal(x.grad.data, values)  # the same mask scales the gradient
    second = layer(x).data
    assert not torch.equal(second != 0, kept)  # a new mask per call


@pytest.mark.parametrize('layout', ['contiguous', 'transposed', 'sliced'])
def test_dropout_draws_torch_s_mask_after_the_same_seed(layout):
    """torch draws the mask in the input's memory order: a transposed input's too (on one
    worker: a value sharded and gathered has the layout the gather gave it)."""
    if layout == 'transposed' and os.environ.get('GT_AUTO_SHARD_ELEMENTS'):
        pytest.skip('sharded: a gathered value has a layout of its own')
    view = {'contiguous': lambda x: x, 'transposed': lambda x: x.t(),
            'sliced': lambda x: x[:, 1:]}[layout]
    masks = []
    for lib in (gt, torch):
        lib.manual_seed(4)
        x = lib.randn(6, 5)
        masks.append(lib.nn.functional.dropout(view(x), 0.5).tolist())
    assert masks[0] == masks[1]


def test_dropout_in_eval_and_edge_probabilities():
    x = gt.tensor(randn(4, 5))
    layer = nn.Dropout(0.5).eval()
    assert layer(x) is x
    assert F.dropout(x, 0.0) is x and F.dropout(x, 0.5, training=False) is x
    assert torch.equal(F.dropout(x, 1.0).data, torch.zeros(4, 5))
    with pytest.raises(ValueError, match='between 0 and 1'):
        nn.Dropout(1.5)


def test_functional_forms():
    (x, x_t) = both(randn(3, 5))
    (w, w_t), (b, b_t) = both(randn(4, 5)), both(randn(4))
    functional = torch.nn.functional
    assert_close(F.linear(x, w, b), functional.linear(x_t, w_t, b_t))
    assert_close(F.linear(x, w), functional.linear(x_t, w_t))
    for name in ['relu', 'sigmoid', 'tanh', 'gelu']:
        assert_close(getattr(F, name)(x), getattr(functional, name)(x_t))
    assert_close(F.softmax(x, dim=1), functional.softmax(x_t, dim=1))
    assert_close(F.log_softmax(x, dim=0), functional.log_softmax(x_t, dim=0))
    assert_close(F.softmax(x, 1, dtype=torch.float64),
                 functional.softmax(x_t, 1, dtype=torch.float64))


def test_flatten_and_identity():
    """Identity takes and ignores any arguments (`norm_layer(dim)`, `act(inplace=True)`)."""
    check_module(nn.Sequential(nn.Flatten(), nn.Identity(12, inplace=True), nn.Linear(12, 2)),
                 torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Identity(12, inplace=True),
                                     torch.nn.Linear(12, 2)), randn(5, 3, 4))


def test_dropout_draws_torchs_mask_after_the_same_seed():
    data = randn(64, 50)
    gt.manual_seed(11)
    x = gt.tensor(data, requires_grad=True)
    y = F.dropout(x, 0.3)
    y.sum().backward()
    torch.manual_seed(11)
    tx = torch.tensor(data, requires_grad=True)
    ty = torch.nn.functional.dropout(tx, 0.3)
    ty.sum().backward()
    assert torch.equal(y.data, ty.detach())
    assert torch.equal(x.grad.data, tx.grad)


def test_reset_parameters_of_embedding_and_layer_norm_is_torchs():
    """The init loop `if hasattr(m, 'reset_parameters'): m.reset_parameters()` skipped
    them: GT's Embedding and LayerNorm had none."""
    results = {}
    for library in (gt, torch):
        library.manual_seed(4)
        embedding = library.nn.Embedding(6, 3, padding_idx=2)
        norm = library.nn.LayerNorm(3)
        with library.no_grad():
            norm.weight.fill_(5.0)
            norm.bias.fill_(5.0)
        for module in (embedding, norm):
            module.reset_parameters()
        results[library] = [embedding.weight.tolist(), norm.weight.tolist(), norm.bias.tolist()]
    assert results[gt] == results[torch]


def test_a_conv_subclass_convolves_its_own_weight_through_conv_forward():
    """Weight standardization as written for torch: `self._conv_forward(x, w, self.bias)`."""
    def standardized(library):
        class StdConv2d(library.nn.Conv2d):
            def forward(self, x):
                w = self.weight
                mean = w.mean(dim=(1, 2, 3), keepdim=True)
                std = w.std(dim=(1, 2, 3), keepdim=True)
                return self._conv_forward(x, (w - mean) / (std + 1e-5), self.bias)
        return StdConv2d

    torch.manual_seed(1)
    theirs = standardized(torch)(3, 4, 3, padding=1, padding_mode='reflect')
    mine = standardized(gt)(3, 4, 3, padding=1, padding_mode='reflect')
    mine.load_state_dict(theirs.state_dict())
    x = torch.randn(2, 3, 6, 6)
    torch.testing.assert_close(torch.as_tensor(mine(gt.tensor(x)).tolist()), theirs(x))
