"""Layers that stay on a batch sharded over 4 real workers, forward and backward, against
torch: attention built from rows, layer norm, the activation rows, recurrent layers (one
call of torch's kernel), convolutions and poolings (calls by name with sharding rules of
their own) and batch norm (composed of ops on several workers), with the placement of
the nodes they make checked."""

import pytest
import torch
from gt_test_support import connected, placements_of

import gt
from gt import ShardConfig, SignalConfig

pytestmark = pytest.mark.usefixtures('fresh_configs')


def test_attention_built_from_rows_stays_sharded_over_the_batch(four):
    """scaled_dot_product_attention, tril and masked_fill are built from rows, so a batch
    sharded over 4 workers is attended to where it lives; a fallback call gathers."""
    gt.register_config('batch', SignalConfig(shard=ShardConfig(axis=0, workers=[0, 1, 2, 3])))
    with connected(four.address):
        gt.manual_seed(4)
        with gt.signal.context('batch'):
            q, k, v = gt.randn(8, 6, 16), gt.randn(8, 6, 16), gt.randn(8, 6, 16)
        out = gt.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        ir = gt.debug.dump_ir(show=False)
        cropped = out.tril().masked_fill(out < 0, 0.0)
        cropped_ir = gt.debug.dump_ir(show=False)
        gathered = gt.cummax(q, dim=1).values  # no row: inputs gathered, run replicated
        gathered_ir = gt.debug.dump_ir(show=False)
        values = out.data, cropped.data, gathered.data
    assert set(placements_of(ir, 'matmul')) == {'S0@w0,w1,w2,w3'}, ir
    assert placements_of(ir, 'softmax') == ['S0@w0,w1,w2,w3']
    assert placements_of(cropped_ir, 'where') == ['S0@w0,w1,w2,w3'] * 2, cropped_ir
    assert placements_of(gathered_ir, 'torch_call')[0].startswith('R@'), gathered_ir
    torch.manual_seed(4)
    tq, tk, tv = torch.randn(8, 6, 16), torch.randn(8, 6, 16), torch.randn(8, 6, 16)
    want = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=True)
    torch.testing.assert_close(values[0], want, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(values[1], want.tril().masked_fill(want < 0, 0.0), rtol=1e-5,
                               atol=1e-5)
    torch.testing.assert_close(values[2], torch.cummax(tq, dim=1).values)


def _placements_made(ir: str, op: str) -> list[list[str]]:
    """For each node of `op` in a dump, the placements of all its outputs."""
    return [[part.split('>')[0] for part in line.split(' = ')[0].split('<')[1:]]
            for line in ir.splitlines() if f'= {op}(' in line]


@pytest.mark.time_limit(90)
def test_layer_norm_and_its_gradient_stay_on_a_sharded_batch(four):
    """layer_norm and its gradient are torch's kernels with sharding rules: a batch sharded
    over 4 workers is normalized where it lives, the input's gradient stays sharded, and
    the weight's and bias's are partial sums, as are the loss's sums and a batched linear
    layer's weight gradient (one mm per worker)."""
    gt.register_config('batch', SignalConfig(shard=ShardConfig(axis=0, workers=[0, 1, 2, 3])))
    generator = torch.Generator().manual_seed(5)
    inputs = torch.randn(8, 6, 16, generator=generator)
    targets = torch.randint(0, 11, (8, 6), generator=generator)
    reference = torch.nn.Sequential(torch.nn.LayerNorm(16), torch.nn.Linear(16, 11))
    with torch.no_grad():
        reference[0].weight.add_(torch.randn(16, generator=generator))
    with connected(four.address):
        model = gt.nn.Sequential(gt.nn.LayerNorm(16), gt.nn.Linear(16, 11))
        model.load_state_dict(reference.state_dict())
        with gt.signal.context('batch'):
            x = gt.signal.tensor(gt.from_numpy(inputs.numpy()), name='batch').requires_grad_()
            y = gt.signal.tensor(gt.from_numpy(targets.numpy()), name='batch')
        normalized = model[0](x)
        forward_ir = gt.debug.dump_ir(show=False)
        loss = gt.nn.functional.cross_entropy(model[1](normalized).transpose(1, 2), y)
        loss_ir = gt.debug.dump_ir(show=False)
        loss.backward()
        backward_ir = gt.debug.dump_ir(show=False)
        values = [loss.data, normalized.data, x.grad.data] + [
            p.grad.data for p in model.parameters()]
    workers = 'w0,w1,w2,w3'
    assert _placements_made(forward_ir, 'layer_norm') == [[f'S0@{workers}'] * 3], forward_ir
    assert _placements_made(loss_ir, 'nll_loss_forward') == [[f'P:sum@{workers}'] * 2], loss_ir
    assert _placements_made(backward_ir, 'layer_norm_backward') == [
        [f'S0@{workers}', f'P:sum@{workers}', f'P:sum@{workers}']], backward_ir
    assert _placements_made(backward_ir, 'folded_mm') == [[f'P:sum@{workers}']], backward_ir
    assert _placements_made(backward_ir, 'log_softmax_backward') == [[f'S0@{workers}']]
    tx = inputs.clone().requires_grad_()
    t_normalized = reference[0](tx)
    t_loss = torch.nn.functional.cross_entropy(reference[1](t_normalized).transpose(1, 2),
                                               targets)
    t_loss.backward()
    expected = [t_loss, t_normalized, tx.grad] + [p.grad for p in reference.parameters()]
    for got, want in zip(values, expected):
        torch.testing.assert_close(got, want.detach(), rtol=1e-5, atol=1e-6)


@pytest.mark.time_limit(90)
@pytest.mark.parametrize('name', ['LSTM', 'GRU'])
def test_a_recurrent_layer_and_its_gradient_stay_on_a_sharded_batch(four, name):
    """gt.nn's recurrent layers are one call of torch's kernel, which has a sharding rule:
    a batch sharded over 4 workers runs where it lives (each worker its sequences), the
    input's gradient stays sharded and the weights' are partial sums, equal to torch's."""
    gt.register_config('batch', SignalConfig(shard=ShardConfig(axis=0, workers=[0, 1, 2, 3])))
    generator = torch.Generator().manual_seed(6)
    inputs = torch.randn(32, 6, 6, generator=generator)  # big beside the weights: they move
    reference = getattr(torch.nn, name)(6, 5, num_layers=2, bidirectional=True,
                                        batch_first=True)
    with connected(four.address):
        layer = getattr(gt.nn, name)(6, 5, num_layers=2, bidirectional=True, batch_first=True)
        layer.load_state_dict(reference.state_dict())
        with gt.signal.context('batch'):
            x = gt.signal.tensor(gt.from_numpy(inputs.numpy()), name='batch').requires_grad_()
        output, _ = layer(x)
        forward_ir = gt.debug.dump_ir(show=False)
        output.tanh().sum().backward()
        backward_ir = gt.debug.dump_ir(show=False)
        values = [output.data, x.grad.data] + [p.grad.data for p in layer.parameters()]
    workers = 'w0,w1,w2,w3'
    states = 2 if name == 'LSTM' else 1
    assert _placements_made(forward_ir, 'torch_call') == [[f'S1@{workers}'] * (1 + states)], \
        forward_ir
    made = _placements_made(backward_ir, 'torch_vjp')
    assert made == [[f'S1@{workers}'] + [f'P:sum@{workers}'] * 16], backward_ir
    tx = inputs.clone().requires_grad_()
    t_output, _ = reference(tx)
    t_output.tanh().sum().backward()
    expected = [t_output, tx.grad] + [p.grad for p in reference.parameters()]
    for got, want in zip(values, expected):
        torch.testing.assert_close(got, want.detach(), rtol=1e-5, atol=1e-5)


@pytest.mark.time_limit(90)
def test_activations_and_their_gradients_stay_on_a_sharded_batch(four):
    """The activation rows (silu, mish, leaky_relu, elu, softplus, hardtanh...) are
    pointwise: a batch sharded over 4 workers is activated where it lives, and so is the
    gradient (run by name, as they were, each gathered the batch to one worker)."""
    gt.register_config('batch', SignalConfig(shard=ShardConfig(axis=0, workers=[0, 1, 2, 3])))
    inputs = torch.randn(8, 6, generator=torch.Generator().manual_seed(7)) * 3

    def activated(x, functional):
        x = functional.silu(x) + functional.mish(x) + functional.hardswish(x)
        x = functional.leaky_relu(x, 0.1) + functional.elu(x) + functional.selu(x)
        return functional.softplus(x, beta=2.0) + functional.relu6(x)

    with connected(four.address):
        with gt.signal.context('batch'):
            x = gt.signal.tensor(gt.from_numpy(inputs.numpy()), name='batch').requires_grad_()
        output = activated(x, gt.nn.functional)
        output.tanh().sum().backward()
        ir = gt.debug.dump_ir(show=False)
        values = [output.data, x.grad.data]
    sharded = ['S0@w0,w1,w2,w3']
    for row in ('silu', 'mish', 'hardswish', 'leaky_relu', 'softplus', 'hardtanh'):
        assert _placements_made(ir, row) == [sharded], (row, ir)
        assert _placements_made(ir, f'{row}_backward') == [sharded], (row, ir)
    assert _placements_made(ir, 'elu') == [sharded] * 2, ir
    assert 'torch_call' not in ir and 'gather' not in ir, ir
    tx = inputs.clone().requires_grad_()
    t_output = activated(tx, torch.nn.functional)
    t_output.tanh().sum().backward()
    for got, want in zip(values, [t_output, tx.grad]):
        torch.testing.assert_close(got, want.detach(), rtol=1e-5, atol=1e-5)


@pytest.mark.time_limit(90)
def test_a_cnn_and_its_gradient_stay_on_a_sharded_batch(four):
    """Convolutions, poolings and group norm run by name with sharding rules of their own:
    a batch sharded over 4 workers is convolved where it lives, the input's gradient stays
    sharded and the weights' are partial sums, equal to torch's. An unbatched input's
    first axis is channels, so it gathers."""
    gt.register_config('batch', SignalConfig(shard=ShardConfig(axis=0, workers=[0, 1, 2, 3])))
    generator = torch.Generator().manual_seed(8)
    inputs = torch.randn(8, 3, 10, 10, generator=generator)
    torch.manual_seed(8)
    reference = torch.nn.Sequential(
        torch.nn.Conv2d(3, 6, 3, padding=1), torch.nn.GroupNorm(2, 6), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2), torch.nn.ConvTranspose2d(6, 4, 2, stride=2),
        torch.nn.AdaptiveAvgPool2d(3))
    with connected(four.address):
        model = gt.nn.Sequential(
            gt.nn.Conv2d(3, 6, 3, padding=1), gt.nn.GroupNorm(2, 6), gt.nn.ReLU(),
            gt.nn.MaxPool2d(2), gt.nn.ConvTranspose2d(6, 4, 2, stride=2),
            gt.nn.AdaptiveAvgPool2d(3))
        model.load_state_dict(reference.state_dict())
        with gt.signal.context('batch'):
            x = gt.signal.tensor(gt.from_numpy(inputs.numpy()), name='batch').requires_grad_()
        output = model(x)
        output.tanh().sum().backward()
        ir = gt.debug.dump_ir(show=False)
        values = [output.data, x.grad.data] + [p.grad.data for p in model.parameters()]
        unbatched = model[0](gt.from_numpy(inputs[0].numpy()))
        unbatched_ir = gt.debug.dump_ir(show=False)
        unbatched_value = unbatched.data
    sharded, partial = 'S0@w0,w1,w2,w3', 'P:sum@w0,w1,w2,w3'
    calls = [line for line in ir.splitlines() if '= torch_call(' in line]
    assert len(calls) == 5 and all(f'<{sharded}> = torch_call(' in c for c in calls), ir
    # Backward order: the average pooling, the transposed convolution, the group norm
    # and the convolution, each with the input's gradient first; the max pooling's
    # gradient is a row of its own, from the forward's indices.
    with_weights = [sharded, partial, partial]
    assert _placements_made(ir, 'torch_vjp') == [[sharded], with_weights, with_weights,
                                                 with_weights], ir
    assert _placements_made(ir, 'max_pooled') == [[sharded]], ir
    assert _placements_made(ir, 'max_pool_backward') == [[sharded]], ir
    assert 'R@' in _placements_made(unbatched_ir, 'torch_call')[0][0], unbatched_ir
    tx = inputs.clone().requires_grad_()
    t_output = reference(tx)
    t_output.tanh().sum().backward()
    expected = [t_output, tx.grad] + [p.grad for p in reference.parameters()]
    for got, want in zip(values, expected):
        torch.testing.assert_close(got, want.detach(), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(unbatched_value, reference[0](inputs[0]).detach(), rtol=1e-5,
                               atol=1e-6)


def test_batch_norm_on_several_workers_is_composed_of_ops_that_shard(four):
    """One worker trains batch norm with torch's kernels (gt/ir/ops/batch_norm.py); on
    several, it is composed of GT ops, so a batch sharded over 4 workers is normalized by
    the whole batch's statistics where it lives, as torch normalizes it on one device."""
    gt.register_config('batch', SignalConfig(shard=ShardConfig(axis=0, workers=[0, 1, 2, 3])))
    inputs = torch.randn(8, 3, 4, 4, generator=torch.Generator().manual_seed(5))
    reference = torch.nn.BatchNorm2d(3)
    with connected(four.address):
        layer = gt.nn.BatchNorm2d(3)
        with gt.signal.context('batch'):
            x = gt.signal.tensor(gt.from_numpy(inputs.numpy()), name='batch').requires_grad_()
        output = layer(x)
        output.tanh().sum().backward()
        ir = gt.debug.dump_ir(show=False)
        values = [output.data, x.grad.data, layer.weight.grad.data, layer.running_var.data]
    assert 'batch_norm' not in ir and 'torch_call' not in ir and 'gather' not in ir, ir
    assert placements_of(ir, 'tanh') == ['S0@w0,w1,w2,w3'], ir
    tx = inputs.clone().requires_grad_()
    t_output = reference(tx)
    t_output.tanh().sum().backward()
    for got, want in zip(values, [t_output, tx.grad, reference.weight.grad,
                                  reference.running_var]):
        torch.testing.assert_close(got, want.detach(), rtol=1e-5, atol=1e-5)


def test_one_hot_rows_stay_on_a_sharded_batch(four):
    """torch's one_hot, run by name: each label's row is made where the label lives."""
    gt.register_config('batch', SignalConfig(shard=ShardConfig(axis=0, workers=[0, 1, 2, 3])))
    labels = torch.tensor([3, 0, 1, 2, 2, 1, 0, 3])
    with connected(four.address):
        with gt.signal.context('batch'):
            y = gt.signal.tensor(gt.from_numpy(labels.numpy()), name='batch')
        rows = gt.nn.functional.one_hot(y, 4)
        ir = gt.debug.dump_ir(show=False)
        got = rows.data
    assert _placements_made(ir, 'torch_call') == [['S0@w0,w1,w2,w3']], ir
    assert torch.equal(got, torch.nn.functional.one_hot(labels, 4))
