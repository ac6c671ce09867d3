"""Training through GT is training through PyTorch: the same model (weights loaded from
the torch model), batches and optimizer give the same loss at every step and the same
weights at the end."""

import numpy as np
import pytest
import torch
from nn_check import assert_close, seeded

import gt
import gt.nn as nn
import gt.nn.functional as F

STEPS = 20


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(20, 32)
        self.fc2 = nn.Linear(32, 32)
        self.fc3 = nn.Linear(32, 5)

    def forward(self, x):
        return self.fc3(self.fc2(self.fc1(x).relu()).relu())


class TorchMLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(20, 32)
        self.fc2 = torch.nn.Linear(32, 32)
        self.fc3 = torch.nn.Linear(32, 5)

    def forward(self, x):
        return self.fc3(self.fc2(self.fc1(x).relu()).relu())


def block(library, vocabulary: int = 11, width: int = 16):
    """Embedding -> LayerNorm -> Linear -> GELU -> Linear, from gt.nn or torch.nn."""
    return library.Sequential(
        library.Embedding(vocabulary, width), library.LayerNorm(width),
        library.Linear(width, 4 * width), library.GELU(), library.Linear(4 * width, vocabulary))


def train_both(mine, theirs, batches, loss_of) -> None:
    mine.load_state_dict(theirs.state_dict())
    optimizer = nn.Adam(mine.parameters(), lr=3e-3)
    expected = torch.optim.Adam(theirs.parameters(), lr=3e-3, foreach=False)
    for step, (x, y) in enumerate(batches):
        loss = loss_of(gt, F, mine, gt.tensor(x), gt.tensor(y))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        torch_loss = loss_of(torch, torch.nn.functional, theirs, x, y)
        torch_loss.backward()
        expected.step()
        expected.zero_grad()
        assert_close(loss, torch_loss, rtol=1e-4, atol=0), f'step {step}'
    # On one worker the weights are torch's bit for bit (GT runs torch's kernels and
    # optimizer updates; tests/optim/test_bitwise_training.py asserts it). The tolerance is
    # for tests/runtime/test_sharded_suite.py, which runs this file sharded over 3 workers,
    # where partial sums are added in another order.
    final = theirs.state_dict()
    for name, value in mine.state_dict().items():
        assert_close(value, final[name], rtol=1e-4, atol=1e-5)


def test_mlp_trains_exactly_as_in_torch():
    generator = seeded()
    batches = [(torch.randn(16, 20, generator=generator),
                torch.randint(0, 5, (16,), generator=generator)) for _ in range(STEPS)]
    train_both(MLP(), TorchMLP(), batches,
               lambda lib, functional, model, x, y: functional.cross_entropy(model(x), y))


def test_transformer_block_trains_exactly_as_in_torch():
    generator = seeded()
    batches = []
    for _ in range(STEPS):
        tokens = torch.randint(0, 11, (4, 9), generator=generator)
        batches.append((tokens[:, :-1], tokens[:, 1:]))  # predict the next token

    def loss_of(lib, functional, model, tokens, targets):
        logits = model(tokens)
        return functional.cross_entropy(logits.reshape(-1, 11), targets.reshape(-1))

    train_both(block(nn), block(torch.nn), batches, loss_of)


@pytest.mark.parametrize('transposed_input', [False, True])
@pytest.mark.parametrize('dims', [3, 4])
def test_linear_over_a_batch_gives_torchs_gradients_bit_for_bit(dims, transposed_input):
    """torch flattens a contiguous batch into rows for one addmm, so the bias's gradient
    sums the output gradient's rows made contiguous; a transposed input is a product and
    a sum, summed as laid out. A transposed output gradient told the two apart."""
    def run(library):
        library.manual_seed(0)
        shape = (7, 11, 16) if dims == 3 else (5, 7, 3, 16)
        x = library.randn(*shape) if not transposed_input else \
            library.randn(*reversed(shape[:-1]), 16).transpose(0, -2)
        x.requires_grad_()
        layer = library.nn.Linear(16, 24)
        out = layer(x)
        upstream = library.randn(*reversed(out.shape)).permute(*reversed(range(out.ndim)))
        (out * upstream).sum().backward()
        return [t.detach().numpy() for t in (out, x.grad, layer.weight.grad, layer.bias.grad)]
    exact = len(gt.runtime.client.current().workers) == 1
    for got, expected in zip(run(gt), run(torch), strict=True):
        assert (got == expected).all() if exact else np.allclose(got, expected, atol=1e-5)


@pytest.mark.parametrize('grad', [True, False], ids=['training', 'no_grad'])
@pytest.mark.parametrize('shape', [(64, 784), (4, 16, 576), (16, 4, 576)],
                         ids=['rows', 'a batch', 'a transposed batch'])
@pytest.mark.parametrize('dtype', ['float32', 'float64'])
def test_a_wide_linear_adds_its_bias_inside_the_product_as_torchs(shape, dtype, grad):
    """torch's linear is one addmm (a contiguous batch flattened into rows): from about
    200 inputs in float32 (a few in float64) the BLAS's bias added inside the product
    rounds otherwise than a product and a sum, which GT computed (784 -> 256: every
    output differed in its last bits)."""
    def run(library):
        library.manual_seed(0)
        kind = getattr(library, dtype)
        x = library.randn(*shape, dtype=kind)
        if shape[0] == 16:
            x = library.randn(shape[1], shape[0], shape[2], dtype=kind).transpose(0, 1)
        layer = library.nn.Linear(shape[-1], 256, dtype=kind)
        with library.set_grad_enabled(grad):
            x.requires_grad_(grad)
            out = layer(x)
        if not grad:
            return [out.numpy()]
        (out * out).sum().backward()
        return [t.detach().numpy() for t in (out, x.grad, layer.weight.grad, layer.bias.grad)]
    exact = len(gt.runtime.client.current().workers) == 1
    for got, expected in zip(run(gt), run(torch), strict=True):
        assert (got == expected).all() if exact else np.allclose(got, expected, rtol=1e-4,
                                                                 atol=1e-4)


def test_a_wide_mlp_trains_exactly_as_in_torch():
    """benchmarks/mlp_step.py's model, with momentum: every step's weights are torch's."""
    def run(library):
        library.manual_seed(0)
        model = library.nn.Sequential(library.nn.Linear(784, 256), library.nn.ReLU(),
                                      library.nn.Linear(256, 10))
        optimizer = library.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        for _ in range(4):
            x, y = library.randn(64, 784), library.randint(0, 10, (64,))
            library.nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
            optimizer.zero_grad()
        return [value.numpy() for value in model.state_dict().values()]
    exact = len(gt.runtime.client.current().workers) == 1
    for got, expected in zip(run(gt), run(torch), strict=True):
        assert (got == expected).all() if exact else np.allclose(got, expected, atol=1e-5)


def test_a_batched_linears_weight_gradient_does_not_depend_on_where_a_fragment_ends():
    """GT sends a script's ops in fragments of at most 256. A bias-less Linear on a batch
    had its weight's gradient put in torch's layout by a pass over one fragment; where the
    cut fell between the product and its transpose, the gradient was 1 ulp off torch's
    (the lecture gpt.py's per-head keys). Unrelated ops before the step move the cut
    across it."""
    if len(gt.runtime.client.current().workers) > 1:
        pytest.skip('several workers shard the product: bits of their own')
    torch.manual_seed(0)
    x, w = torch.randn(8, 16, 32), torch.randn(8, 32) * 0.02
    expected = w.clone().requires_grad_()
    torch.nn.functional.linear(x, expected).pow(2).sum().backward()
    gx = gt.tensor(x)
    for pad in range(236, 258):
        gt.sync()
        filler = gt.zeros(1)
        for _ in range(pad):
            filler = filler + 1
        weight = gt.tensor(w).requires_grad_()
        gt.nn.functional.linear(gx, weight).pow(2).sum().backward()
        assert torch.equal(weight.grad.data, expected.grad), f'{pad} ops before the step'


@pytest.mark.parametrize('mode', ['no_grad', 'inference_mode'])
def test_a_linear_of_a_transposed_batch_without_grad_is_torchs(mode):
    """Under no_grad torch's `weight.t()` still says it requires grad, and torch.matmul
    folds a transposed batch by that: GT decided by its own view, which said no, and a
    batch-first attention's decode under no_grad was 1e-7 off."""
    if len(gt.runtime.client.current().workers) > 1:
        pytest.skip('several workers shard the product: bits of their own')
    results = []
    for library in (torch, gt):
        library.manual_seed(0)
        linear = library.nn.Linear(16, 48)
        attention = library.nn.MultiheadAttention(16, 4, batch_first=True)
        x = library.randn(2, 7, 16)
        with getattr(library, mode)():
            results.append([torch.as_tensor(t.tolist()) for t in (
                linear(x.transpose(0, 1)), attention(x, x, x, need_weights=False)[0])])
    for theirs, mine in zip(*results):
        assert torch.equal(mine, theirs)
