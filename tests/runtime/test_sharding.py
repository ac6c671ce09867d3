"""Sharding on real processes: 4 workers exchanging shards peer to peer, checked against
torch; pipelines whose gradients run elsewhere; uneven shards; a worker killed mid-move."""

import os
import signal
import threading
import time

import numpy as np
import pytest
import torch
from gt_test_support import connected, run_script, running_cluster

import gt
from gt import ShardConfig, SignalConfig
from gt.config import clear_configs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope='module')
def four():
    """A dispatcher with 4 one-thread workers, shared by this module's tests."""
    with running_cluster(4) as started:
        yield started


@pytest.fixture(autouse=True)
def no_configs():
    clear_configs()
    yield
    clear_configs()


def _placements(ir: str, op: str) -> list[str]:
    return [line.split('<')[1].split('>')[0] for line in ir.splitlines() if f'= {op}(' in line]


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
    assert dispatcher['bytes_relayed'] == 0
    assert all(w['peer_bytes_sent'] > 0 for w in workers), workers


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
        placed = _placements(auto_ir, 'matmul')
        assert _placements(auto_ir, 'randn')[1].count('w') == 1, auto_ir
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
    with connected(four.address):
        w = gt.from_numpy(weight).requires_grad_()
        with gt.signal.context('stage'):
            x = gt.signal.tensor(gt.from_numpy(data), name='stage')
            loss = (x @ w).tanh().sum()
        loss.backward()
        ir = gt.debug.dump_ir(show=False)
        grad = w.grad.data
    reference = torch.from_numpy(weight).requires_grad_()
    (torch.from_numpy(data) @ reference).tanh().sum().backward()
    torch.testing.assert_close(grad, reference.grad, rtol=1e-5, atol=1e-5)
    backward_lines = [line for line in ir.splitlines() if 'signal=stage_backward' in line
                      and 'insert_moves' not in line]
    assert backward_lines and all('@w2,w3>' in line for line in backward_lines), ir


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


@pytest.mark.time_limit(120)
def test_a_worker_killed_during_a_move_fails_its_clients_quickly(start_cluster):
    private = start_cluster(workers=3, env={'GT_HEARTBEAT_TIMEOUT': '1.5'})
    gt.register_config('pair', SignalConfig(shard=ShardConfig(axis=0, workers=[0, 1])))
    with connected(private.address):
        with gt.signal.context('pair'):
            x = gt.randn(64, 64)
        assert x.sum().item() == pytest.approx(x.data.sum().item(), rel=1e-4)
        stats = gt.debug.get_worker_stats()
        pid = next(s['pid'] for s in stats if s['index'] == 1)
        victim = next(w for w in private.workers if w.pid == pid)
        os.kill(victim.pid, signal.SIGSTOP)  # stalls, so worker 0 waits for its shard
        threading.Timer(1.0, victim.kill).start()
        started = time.monotonic()
        with pytest.raises(gt.WorkerError, match='worker 1'):
            x.softmax(dim=0).sum().item()  # all_gather of x: worker 0 needs worker 1's rows
        assert time.monotonic() - started < 10
        assert (gt.ones(3) * 2).tolist() == [2.0, 2.0, 2.0]  # the survivors serve on
    assert private.server.poll() is None


@pytest.mark.time_limit(150)
@pytest.mark.parametrize('example', ['signal_demo.py', 'config_from_python.py',
                                     'simple_auto_shard.py'])
def test_examples_run(example):
    result = run_script(f'import runpy; runpy.run_path({os.path.join(ROOT, "examples", example)!r},'
                        f' run_name="__main__")', timeout=140)
    assert result.returncode == 0, result.explain()


@pytest.mark.time_limit(90)
def test_simple_auto_shard_against_a_hand_started_server(four):
    path = os.path.join(ROOT, 'examples', 'simple_auto_shard.py')
    result = run_script(f'import sys, runpy; sys.argv = [{path!r}, "--distributed", '
                        f'{four.address!r}]; runpy.run_path({path!r}, run_name="__main__")')
    assert result.returncode == 0, result.explain()
    assert '4 worker(s); c = a @ b is placed S0@w0,w1,w2,w3' in result.stdout


@pytest.mark.time_limit(90)
def test_view_ir_draws_one_cluster_per_worker_with_moves_in_red(four, tmp_path):
    pytest.importorskip('shutil').which('dot') or pytest.skip("Graphviz's dot is not installed")
    gt.register_config('rows', SignalConfig(shard=ShardConfig(axis=0, workers=[0, 1, 2])))
    with connected(four.address):
        with gt.signal.context('rows'):
            x = gt.randn(12, 6)
        weight = gt.from_numpy(np.ones((6, 3), dtype=np.float32))
        total = (x @ weight).relu().sum()
        picture = gt.debug.view_ir(str(tmp_path / 'step.svg'))
        png = gt.debug.view_ir(str(tmp_path / 'step.png'))
        source = gt.debug.view_ir(str(tmp_path / 'step.dot'))
        with pytest.raises(ValueError, match='format'):
            gt.debug.view_ir(str(tmp_path / 'step.txt'))
        assert total.item() == pytest.approx(np.maximum(x.numpy() @ np.ones((6, 3)), 0).sum(),
                                             rel=1e-4)
    svg = open(picture).read()
    assert svg.lstrip().startswith(('<?xml', '<svg', '<!DOCTYPE'))
    for worker in range(3):
        assert f'worker {worker}' in svg
    assert open(png, 'rb').read(8) == b'\x89PNG\r\n\x1a\n'
    dot = open(source).read()
    assert 'color="#d93025"' in dot  # the transfer of the weight from its home worker
    assert 'S0@w0,w1,w2' in dot


@pytest.mark.time_limit(90)
def test_a_failed_shard_fails_the_move_with_the_ops_error_not_a_hang(four):
    """Worker 1's rows divide by zero; the gather that needs them reports that op."""
    gt.register_config('rows', SignalConfig(shard=ShardConfig(axis=0, workers=[0, 1])))
    numerators = np.arange(8, dtype=np.int64).reshape(4, 2)
    divisors = np.array([[1, 1], [1, 1], [0, 1], [1, 1]], dtype=np.int64)
    with connected(four.address):
        with gt.signal.context('rows'):
            top = gt.signal.tensor(gt.from_numpy(numerators), name='rows')
            bottom = gt.signal.tensor(gt.from_numpy(divisors), name='rows')
        quotient = top // bottom
        gathered = quotient.amax(dim=0)  # amax over the sharded axis gathers the rows
        with pytest.raises(gt.WorkerError, match='floor_divide') as raised:
            gathered.tolist()
        assert 'test_sharding.py' in str(raised.value)
        assert (top + 1).amax(dim=0).tolist() == [7, 8]  # the session goes on


@pytest.mark.time_limit(90)
def test_garbage_on_the_peer_sockets_is_dropped(four):
    import zmq

    with connected(four.address):
        endpoints = [w['peer_endpoints'][0] for w in gt.debug.get_worker_stats()]
        context = zmq.Context.instance()
        for endpoint in endpoints:
            stranger = context.socket(zmq.DEALER)
            stranger.connect(endpoint)
            stranger.send(b'hello')
            stranger.send_multipart([b'\xc1\xff', b'junk'])
            stranger.send_multipart([b'\x93\x01\x02\x03', b'x' * 10])
            stranger.close(linger=500)
        gt.register_config('rows', SignalConfig(shard=ShardConfig(axis=0)))
        with gt.signal.context('rows'):
            x = gt.signal.tensor(gt.from_numpy(np.arange(16, dtype=np.float32).reshape(8, 2)),
                                 name='rows')
        assert x.amax(dim=0).tolist() == [14.0, 15.0]
    assert four.server.poll() is None and all(w.poll() is None for w in four.workers)


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
def test_nonsense_configs_on_the_wire_are_skipped(four):
    """A crafted Configure (GT's client never sends one) cannot place values badly or stop
    the dispatcher: the session goes on with the sensible entries."""
    from gt.runtime.protocol import Configure
    from gt.runtime.transport import send

    with connected(four.address) as client:
        for configs in ({'a': 5}, {'b': [-1, None]}, {'c': [True, [0]]}, {'d': [0, 7]},
                        [1, 2], {'rows': [0, [3, 1, 99, -4]]}):
            send(client.socket, Configure(configs, 'many'))
        client.config_version = gt.config.version()  # keep the crafted ones in place
        with gt.signal.context('rows'), gt.signal.context('b'):
            x = gt.randn(6, 2)
        with gt.signal.context('rows'):
            y = gt.randn(6, 2)
        ir = gt.debug.dump_ir(show=False)
        assert (x + y).sum().item() == pytest.approx((x.data + y.data).sum().item(), rel=1e-5)
    assert _placements(ir, 'randn') == ['R@w0', 'S0@w3,w1'], ir  # 'b' (axis -1) skipped;
    # 'rows' kept the live workers 3 and 1, in its order
    assert four.server.poll() is None


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
