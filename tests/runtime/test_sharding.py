"""Sharding on real processes, checked against torch: data-parallel training equal to one
worker's, uneven and automatic shards, pipelines whose gradients run on other workers,
every family of sharding rules, optimizer state on the shards, copies kept after a
move, and random draws made only where their values go. Layers that stay on a sharded
batch are in test_sharded_layers.py."""

import warnings

import numpy as np
import pytest
import torch
from gt_test_support import connected, placements_of, run_script

import gt
from gt import ShardConfig, SignalConfig

pytestmark = pytest.mark.usefixtures('fresh_configs')


def _train(address: str, reference: torch.nn.Module, inputs, targets, sharded: bool):
    """Five SGD steps of `reference`'s twin in GT, data-parallel over 4 workers or on one."""
    with connected(address):
        model = gt.nn.Sequential(gt.nn.Linear(20, 16), gt.nn.Tanh(), gt.nn.Linear(16, 4))
        model.load_state_dict(reference.state_dict())
        optimizer = gt.nn.SGD(model.parameters(), lr=0.1)
        x, y = gt.from_numpy(inputs), gt.from_numpy(targets)
        losses = []
        for _ in range(5):
            with gt.signal.context('data' if sharded else 'none'):
                batch, wanted = gt.signal.tensor(x, name='data'), gt.signal.tensor(y, name='data')
                loss = ((model(batch) - wanted) ** 2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        weights = {name: p.data for name, p in model.state_dict().items()}
        return (losses, weights, gt.debug.dump_ir(show=False), gt.debug.get_dispatcher_stats(),
                gt.debug.get_worker_stats())


@pytest.mark.time_limit(120)
def test_data_parallel_training_matches_one_worker_and_torch(four, monkeypatch):
    rng = np.random.default_rng(0)
    inputs = rng.standard_normal((64, 20)).astype(np.float32)
    targets = rng.standard_normal((64, 4)).astype(np.float32)
    reference = torch.nn.Sequential(torch.nn.Linear(20, 16), torch.nn.Tanh(),
                                    torch.nn.Linear(16, 4))
    monkeypatch.setenv('GT_AUTO_SHARD', '0')
    alone, alone_weights, alone_ir, _, _ = _train(four.address, reference, inputs, targets,
                                                  sharded=False)
    gt.register_config('data', SignalConfig(shard=ShardConfig(axis=0, workers=[0, 1, 2, 3])))
    losses, weights, ir, dispatcher, workers = _train(four.address, reference, inputs, targets,
                                                      sharded=True)
    expected_losses = []
    optimizer = torch.optim.SGD(reference.parameters(), lr=0.1)
    for _ in range(5):
        loss = ((reference(torch.from_numpy(inputs)) - torch.from_numpy(targets)) ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        expected_losses.append(loss.item())
    np.testing.assert_allclose(losses, alone, rtol=1e-5)
    np.testing.assert_allclose(losses, expected_losses, rtol=1e-5)
    for name, value in reference.state_dict().items():
        torch.testing.assert_close(weights[name], alone_weights[name], rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(weights[name], value, rtol=1e-5, atol=1e-6)
    assert 'insert_moves' not in alone_ir and '@w0,w1,w2,w3>' not in alone_ir
    assert 'all_reduce' in ir  # the weight gradients' partial sums
    # ... all-reduced where the updates need them: every worker updates its whole copy
    # (a gradient made contiguous was reduced onto one worker, which alone kept the weight)
    assert set(placements_of(ir, 'addcmul')) == {'R@w0,w1,w2,w3'}, ir
    assert dispatcher['bytes_relayed'] == 0
    assert all(w['peer_bytes_sent'] > 0 for w in workers), workers


@pytest.mark.time_limit(60)
def test_a_config_naming_absent_workers_warns_and_uses_the_live_ones(cluster):
    with connected(cluster.address):
        gt.manual_seed(4)
        with pytest.warns(UserWarning, match=r"'wide' names worker\(s\) \[5, 6\].*live "
                                             r"workers \[0, 1\]"):
            gt.register_config('wide', SignalConfig(shard=ShardConfig(axis=0,
                                                                      workers=[1, 5, 6])))
            with gt.signal.context('wide'):
                x = gt.randn(6, 3)
            placed = placements_of(gt.debug.dump_ir(show=False), 'randn')
        values = x.data
    torch.manual_seed(4)
    torch.testing.assert_close(values, torch.randn(6, 3))
    assert placed == ['S0@w1'], placed  # all of it on worker 1, the one live worker named


@pytest.mark.time_limit(60)
def test_absent_workers_are_named_once_per_signal_used_at_the_users_line(cluster):
    """Not at connect for every config (an example's file names four workers for any
    number of them), nor from GT's own code: once, where the script enters the signal."""
    gt.register_config('never_entered', SignalConfig(shard=ShardConfig(axis=0, workers=[7])))
    gt.register_config('far', SignalConfig(shard=ShardConfig(axis=0, workers=[0, 8]),
                                           backward_signal='far_back'))
    gt.register_config('far_back', SignalConfig(shard=ShardConfig(axis=0, workers=[9])))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        with connected(cluster.address):
            x = gt.ones(4)
            for _ in range(2):
                with gt.signal.context('far'):
                    y = x * 2
            assert y.sum().item() == 8.0
    said = [(str(w.message).split(' names')[0], w.filename) for w in caught
            if 'which are not among the live workers' in str(w.message)]
    assert said == [("signal 'far'", __file__), ("signal 'far_back'", __file__)], said


@pytest.mark.time_limit(60)
def test_a_batch_brought_into_a_signal_is_split_and_the_weights_arrive_whole(cluster):
    """The seeds' complete example: `pred = model(X_train)` inside a data-parallel
    signal, the data and the model made outside it. The batch and the targets span the
    ops' outputs along the signal's axis, so they arrive split and the matmul runs on
    half the rows on each worker; the weight does not, so it arrives whole. Before, the
    batch was copied whole to both workers and the work done twice."""
    data, targets = torch.randn(64, 12), torch.randn(64, 3)
    reference = torch.nn.Linear(12, 3)
    with connected(cluster.address):
        gt.register_config('batch', SignalConfig(shard=ShardConfig(axis=0, workers=[0, 1]),
                                                 backward_signal='batch'))
        model = gt.nn.Linear(12, 3)
        model.load_state_dict(reference.state_dict())
        x, y = gt.tensor(data), gt.tensor(targets)
        with gt.signal.context('batch'):
            loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        ir = gt.debug.dump_ir(show=False)
        got = [loss.item(), model.weight.grad.data]
    expected = ((reference(data) - targets) ** 2).mean()
    expected.backward()
    torch.testing.assert_close(got[0], expected.item(), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(got[1], reference.weight.grad, rtol=1e-5, atol=1e-6)
    assert placements_of(ir, 'matmul')[0] == 'S0@w0,w1', ir  # half the rows each
    transfers = [line for line in ir.splitlines() if '= transfer(' in line]
    assert any('f32[64,12]<S0@w0,w1>' in line for line in transfers), ir  # the batch, split
    assert any('f32[3,12]<R@w0,w1>' in line for line in transfers), ir  # the weight, whole


def test_gt_verbose_says_when_a_signal_cannot_split_what_is_made_under_it():
    result = run_script("""
        import gt
        from gt import ShardConfig, SignalConfig
        gt.register_config('deep', SignalConfig(shard=ShardConfig(axis=5, workers=[0, 1])))
        with gt.signal.context('deep'):
            x = gt.randn(8, 4) + gt.randn(8, 4)  # said once
            scale = gt.tensor(2.0)  # a number: never split, not said
        print(x.shape == (8, 4), scale.item())
    """, env={'GT_VERBOSE': '1', 'GT_WORKERS': '2'})
    assert result.returncode == 0, result.explain()
    assert result.stdout.strip() == 'True 2.0'
    # Counted in the whole of stderr: the server processes write their own lines there,
    # and one may be cut by the client's.
    message = ("gt: signal 'deep' shards on axis 5, but a tensor of shape [8, 4] made under "
               "it has no axis 5: it is copied whole to each of the signal's workers")
    assert result.stderr.count(message) == 1, result.stderr
    assert result.stderr.count('axis 5') == 2 and 'cannot' not in result.stderr, result.stderr


@pytest.mark.time_limit(90)
def test_uneven_shards_and_auto_sharding(four):
    gt.register_config('three', SignalConfig(shard=ShardConfig(axis=0, workers=[0, 1, 2])))
    with connected(four.address):
        gt.manual_seed(3)
        with gt.signal.context('three'):
            x = gt.randn(100, 7)  # 34, 34, 32 rows: torch.chunk's split
            column_sums = x.sum(dim=0)
            softened = x.softmax(dim=1)
        ir = gt.debug.dump_ir(show=False, workers=True)
        gt.manual_seed(3)
        auto = gt.randn(1024, 256)  # big enough, and 1024 divides by 4: sharded on axis 0
        gt.randn(256, 256)  # too small to be worth it: on one worker
        product = auto @ gt.from_numpy(np.eye(256, dtype=np.float32))
        auto_ir = gt.debug.dump_ir(show=False)
        placed = placements_of(auto_ir, 'matmul')
        assert placements_of(auto_ir, 'randn')[1].count('w') == 1, auto_ir
        values = x.data, column_sums.data, softened.data, auto.data, product.data
    torch.manual_seed(3)
    expected = torch.randn(100, 7)
    torch.testing.assert_close(values[0], expected)
    torch.testing.assert_close(values[1], expected.sum(dim=0), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(values[2], expected.softmax(dim=1))
    assert 'f32[34,7]' in ir and 'f32[32,7]' in ir
    torch.manual_seed(3)
    torch.testing.assert_close(values[3], torch.randn(1024, 256))
    torch.testing.assert_close(values[4], values[3], rtol=1e-5, atol=1e-5)
    assert placed == ['S0@w0,w1,w2,w3']


@pytest.mark.time_limit(90)
def test_pipeline_gradients_run_on_the_backward_workers(four):
    gt.register_config('stage', SignalConfig(shard=ShardConfig(axis=0, workers=[0, 1]),
                                             backward_signal='stage_backward'))
    gt.register_config('stage_backward', SignalConfig(shard=ShardConfig(axis=0, workers=[2, 3])))
    rng = np.random.default_rng(1)
    data = rng.standard_normal((16, 8)).astype(np.float32)
    weight = rng.standard_normal((8, 8)).astype(np.float32)
    bias = rng.standard_normal(8).astype(np.float32)
    with connected(four.address):
        w = gt.from_numpy(weight).requires_grad_()
        b = gt.from_numpy(bias).requires_grad_()
        with gt.signal.context('stage'):
            x = gt.signal.tensor(gt.from_numpy(data), name='stage')
            loss = gt.nn.functional.linear(x, w.T, b).tanh().sum()
        loss.backward()
        ir = gt.debug.dump_ir(show=False)
        grad, bias_grad = w.grad.data, b.grad.data
    reference = torch.from_numpy(weight).requires_grad_()
    reference_bias = torch.from_numpy(bias).requires_grad_()
    (torch.from_numpy(data) @ reference + reference_bias).tanh().sum().backward()
    torch.testing.assert_close(grad, reference.grad, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(bias_grad, reference_bias.grad, rtol=1e-5, atol=1e-5)
    backward_lines = [line for line in ir.splitlines() if 'signal=stage_backward' in line
                      and 'insert_moves' not in line]
    assert backward_lines and all('@w2,w3>' in line for line in backward_lines), ir
    # The bias's gradient (a sum over the batch) and backward's seed go there too.
    assert any('= sum(' in line and 'dim=[0]' in line for line in backward_lines), ir
    assert any('= ones(' in line for line in backward_lines), ir


@pytest.mark.time_limit(90)
def test_every_op_family_gives_the_same_values_sharded(four):
    """Each family of sharding rules on sharded operands, against torch."""
    gt.register_config('rows', SignalConfig(shard=ShardConfig(axis=0)))
    gt.register_config('cols', SignalConfig(shard=ShardConfig(axis=1, workers=[1, 3])))
    rng = np.random.default_rng(2)
    a = rng.standard_normal((12, 6)).astype(np.float32)
    b = rng.standard_normal((6, 5)).astype(np.float32)
    with connected(four.address):
        with gt.signal.context('rows'):
            left = gt.signal.tensor(gt.from_numpy(a), name='rows')
        with gt.signal.context('cols'):
            right = gt.signal.tensor(gt.from_numpy(b), name='cols')
        results = {
            'matmul': left @ right, 'contract': left.T @ left, 'mean': left.mean(),
            'amax': left.amax(dim=0), 'reshape': left.reshape(12, 3, 2).sum(dim=2),
            'index': left[:, 2:4] * 3, 'transpose': (right.T @ left.T).T,
            'cat': gt.cat([left, left], dim=1), 'var': left.var(dim=1),
        }
        fetched = {name: value.data for name, value in results.items()}
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    expected = {
        'matmul': ta @ tb, 'contract': ta.T @ ta, 'mean': ta.mean(), 'amax': ta.amax(dim=0),
        'reshape': ta.reshape(12, 3, 2).sum(dim=2), 'index': ta[:, 2:4] * 3,
        'transpose': (tb.T @ ta.T).T, 'cat': torch.cat([ta, ta], dim=1), 'var': ta.var(dim=1),
    }
    for name, value in expected.items():
        torch.testing.assert_close(fetched[name], value, rtol=1e-5, atol=1e-5, msg=name)


@pytest.mark.time_limit(90)
def test_sharded_parameters_are_updated_where_their_shards_live(four):
    """A layer made under a signal has its weight sharded by rows; Adam's state and update
    stay on those shards, and the training equals torch's."""
    gt.register_config('model', SignalConfig(shard=ShardConfig(axis=0, workers=[1, 2])))
    reference = torch.nn.Linear(12, 6)
    data = np.random.default_rng(4).standard_normal((5, 12)).astype(np.float32)
    with connected(four.address):
        with gt.signal.context('model'):
            layer = gt.nn.Linear(12, 6)
        layer.load_state_dict(reference.state_dict())
        optimizer = gt.nn.Adam(layer.parameters(), lr=0.01)
        x = gt.from_numpy(data)
        for _ in range(3):
            loss = layer(x).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        ir = gt.debug.dump_ir(show=False)
        weight = layer.weight.data
    optimizer = torch.optim.Adam(reference.parameters(), lr=0.01)
    for _ in range(3):
        loss = reference(torch.from_numpy(data)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    torch.testing.assert_close(weight, reference.weight.detach(), rtol=1e-5, atol=1e-6)
    header = ir.splitlines()[0]
    assert header.count('f32[6,12]<S0@w1,w2>') == 3, header  # weight, exp_avg, exp_avg_sq
    updated = [line for line in ir.splitlines() if line.split(' = ')[0].endswith('f32[6,12]')]
    assert all('<S0@w1,w2>' in line or 'insert_moves' in line for line in updated)


@pytest.mark.time_limit(90)
def test_a_copy_moved_once_is_kept_for_later_fragments(four):
    """A whole weight sent to the shards' workers, or partial sums all-reduced, are kept
    where they went: the next fragments move nothing, and the values stay right."""
    with connected(four.address):
        weight = gt.from_numpy(np.eye(4, dtype=np.float32) * 2)
        gt.register_config('rows', SignalConfig(shard=ShardConfig(axis=0)))
        with gt.signal.context('rows'):
            x = gt.randn(8, 4)
        column_sums = x.sum(dim=0)  # partial sums over the 4 workers
        moves = []
        for _ in range(3):
            y = (x @ weight) + column_sums
            torch.testing.assert_close(y.data, x.data * 2 + x.data.sum(0), rtol=1e-5, atol=1e-5)
            moves.append(gt.debug.dump_ir(show=False).count('insert_moves'))
        header = gt.debug.dump_ir(show=False).splitlines()[0]
        del y
        before = [s['tensors'] for s in gt.debug.get_worker_stats()]
        del weight  # its copies go with it, on every worker that holds one
        after = [s['tensors'] for s in gt.debug.get_worker_stats()]
    assert moves == [2, 0, 0], moves  # transfer and all_reduce once, then nothing
    assert 'f32[4,4]<R@w0,w1,w2,w3>' in header and 'f32[4]<R@w0,w1,w2,w3>' in header
    assert [b - a for b, a in zip(before, after)] == [1, 1, 1, 1], (before, after)


@pytest.mark.time_limit(90)
def test_draws_run_only_where_their_values_go_and_still_equal_torchs(four):
    """A small draw stays on the home worker (no other worker hears of it); a later big
    sharded draw first brings the others' generators in step, and equals torch's."""
    with connected(four.address):
        gt.manual_seed(11)
        gt.sync()
        programs = {s['index']: s['programs_run'] for s in gt.debug.get_worker_stats()}
        small = [gt.randn(3) for _ in range(4)]
        values = [t.data for t in small]
        busy = [s['programs_run'] - programs[s['index']] for s in gt.debug.get_worker_stats()]
        big = gt.randn(1024, 256)  # auto-sharded over all 4
        assert 'sync_generator' in gt.debug.dump_ir(show=False)
        tail = gt.rand(5)
        drawn = big.data, tail.data
    torch.manual_seed(11)
    for value in values:
        torch.testing.assert_close(value, torch.randn(3))
    torch.testing.assert_close(drawn[0], torch.randn(1024, 256))
    torch.testing.assert_close(drawn[1], torch.rand(5))
    assert sorted(busy)[:3] == [0, 0, 0], busy  # only the home worker ran the small draws


CONCURRENT_CLIENT = '''
import json, os
import numpy as np
import gt

gt.connect(os.environ['GT_ADDRESS'])
seed = int(os.environ['SEED'])
workers = [[0, 1, 2, 3], [1, 2], [3, 0, 2]][seed % 3]
gt.register_config('data', gt.SignalConfig(shard=gt.ShardConfig(axis=0, workers=workers)))
rng = np.random.default_rng(seed)
x = gt.from_numpy(rng.standard_normal((24, 8)).astype(np.float32))
w = gt.from_numpy(rng.standard_normal((8, 3)).astype(np.float32)).requires_grad_()
losses = []
for step in range(30):
    with gt.signal.context('data'):
        loss = (gt.signal.tensor(x, name='data') @ w).tanh().pow(2).mean()
    loss.backward()
    with gt.no_grad():
        w -= 0.1 * w.grad
    w.grad = None
    losses.append(loss.item())
print(json.dumps({'losses': losses, 'w': w.data.tolist()}))
'''


@pytest.mark.time_limit(150)
def test_several_clients_shard_over_shared_workers_at_once(four):
    import json

    from gt_test_support import finish_script, start_script

    seeds = (3, 4, 5)
    scripts = [start_script(CONCURRENT_CLIENT, env={'GT_ADDRESS': four.address,
                                                    'SEED': str(seed)}) for seed in seeds]
    results = [finish_script(script, timeout=140) for script in scripts]
    for seed, result in zip(seeds, results):
        assert result.returncode == 0, result.explain()
        got = json.loads(result.stdout)
        rng = np.random.default_rng(seed)
        x = torch.from_numpy(rng.standard_normal((24, 8)).astype(np.float32))
        w = torch.from_numpy(rng.standard_normal((8, 3)).astype(np.float32)).requires_grad_()
        losses = []
        for _ in range(30):
            loss = (x @ w).tanh().pow(2).mean()
            loss.backward()
            with torch.no_grad():
                w -= 0.1 * w.grad
            w.grad = None
            losses.append(loss.item())
        np.testing.assert_allclose(got['losses'], losses, rtol=1e-5)
        np.testing.assert_allclose(got['w'], w.detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.time_limit(120)
def test_the_numpy_engine_shards_and_moves_too(start_cluster):
    """The reference engine runs the same moves and generator copies: a draw placed
    anywhere equals the same draw made on one worker."""
    private = start_cluster(workers=3, backend='numpy')
    gt.register_config('rows', SignalConfig(shard=ShardConfig(axis=0)))
    weight = np.arange(4, dtype=np.float32).reshape(2, 2)
    with connected(private.address):
        gt.manual_seed(3)
        first = gt.randn(3)  # on the home worker only
        with gt.signal.context('rows'):
            x = gt.randn(7, 2)  # 3, 3 and 1 rows, after the others' generators catch up
            doubled_sums = (x * 2).sum(dim=0)
        top = (x @ gt.from_numpy(weight)).amax(dim=0)
        values = first.numpy(), x.numpy(), doubled_sums.numpy(), top.numpy()
        gt.manual_seed(3)
        again = gt.randn(3).numpy(), gt.randn(7, 2).numpy()
    np.testing.assert_array_equal(again[0], values[0])
    np.testing.assert_array_equal(again[1], values[1])
    np.testing.assert_allclose(values[2], values[1].sum(0) * 2, rtol=1e-5)
    np.testing.assert_allclose(values[3], (values[1] @ weight).max(0), rtol=1e-5)
