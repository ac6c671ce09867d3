"""Sharding under faults: a worker killed in the middle of a move, a shard whose op failed,
garbage on the peer sockets, and nonsense configs on the wire. Each ends in a clear error
or in nothing at all, never a hang, and the rest goes on."""

import os
import signal
import threading
import time

import numpy as np
import pytest
from gt_test_support import connected, placements_of

import gt
from gt import ShardConfig, SignalConfig

pytestmark = pytest.mark.usefixtures('fresh_configs')


@pytest.mark.time_limit(120)
def test_a_worker_killed_during_a_move_fails_its_clients_quickly(start_cluster):
    private = start_cluster(workers=3, env={'GT_HEARTBEAT_TIMEOUT': '1.5'})
    gt.register_config('pair', SignalConfig(shard=ShardConfig(axis=0, workers=[0, 1])))
    with connected(private.address):
        with gt.signal.context('pair'):
            x = gt.randn(64, 64)
        assert x.sum().item() == pytest.approx(x.data.sum().item(), rel=1e-4, abs=1e-3)
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
        assert 'test_sharding_faults.py' in str(raised.value)
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
def test_nonsense_configs_on_the_wire_are_skipped(four):
    """A crafted Configure (GT's client never sends one) cannot place values badly or stop
    the dispatcher: the session goes on with the sensible entries."""
    from gt.runtime.protocol import Configure
    from gt.runtime.transport import send

    with connected(four.address) as client:
        for configs in ({'a': 5}, {'b': [-1, None]}, {'c': [True, [0]]}, {'d': [0, 7]},
                        [1, 2], {'rows': [0, [3, 1, 99, -4]]}):
            send(client.socket, Configure(configs, 'many', 'always', ['float64']))
        client.config_version = gt.config.version()  # keep the crafted ones in place
        gt.manual_seed(0)  # the same draws whichever session number this one gets
        with gt.signal.context('rows'), gt.signal.context('b'):
            x = gt.randn(6, 2)
        with gt.signal.context('rows'):
            y = gt.randn(6, 2)
        ir = gt.debug.dump_ir(show=False)
        # Partial sums add in another order than torch's: an absolute bound too, since a
        # sum of 12 normal draws may cancel to near zero.
        assert (x + y).sum().item() == pytest.approx((x.data + y.data).sum().item(), rel=1e-5,
                                                      abs=1e-5)
    first, second = placements_of(ir, 'randn')
    # 'b' (axis -1) skipped: replicated on the session's home worker (the least busy one,
    # which depends on other sessions still open on this server); 'rows' kept the live
    # workers 3 and 1, in its order
    assert first in ('R@w0', 'R@w1', 'R@w2', 'R@w3') and second == 'S0@w3,w1', ir
    assert four.server.poll() is None


@pytest.mark.time_limit(90)
def test_an_op_that_failed_on_several_workers_is_reported_once(four):
    """A function run by name on a matrix sharded over two workers runs on both (each
    gathers the matrix), and fails on both. The fetch raises it; a later fetch served by
    the other worker, which holds its own report of the same failure, must not raise it
    again for an unrelated value."""
    gt.register_config('rows', SignalConfig(shard=ShardConfig(axis=0, workers=[0, 1])))
    with connected(four.address):
        with gt.signal.context('rows'):
            matrix = gt.signal.tensor(-gt.eye(4), name='rows')
        factor = gt.linalg.cholesky(matrix)
        with pytest.raises(gt.WorkerError, match='cholesky'):
            factor.tolist()
        for _ in range(3):
            assert (matrix * 2).sum(0).tolist() == [-2.0] * 4  # pieces on both workers
