"""A worker started with `--backend numpy` runs the op table's numpy rows and gives the
numbers torch gives."""

import time

import numpy as np
import pytest
import torch
from gt_test_support import Cluster, connected

import gt

RNG = np.random.default_rng(1234)
X = RNG.standard_normal((6, 4)).astype(np.float32)
W = RNG.standard_normal((4, 5)).astype(np.float32)
B = RNG.standard_normal(5).astype(np.float32)
N = RNG.integers(-5, 5, (3, 4)).astype(np.int64)


def cases(x, w, b, n, lib):
    """The same computations over gt tensors or torch tensors; `lib` is gt or torch."""
    return {
        'add': x + 1.5,
        'broadcast add': (x @ w) + b,
        'matmul': x @ w,
        'sum all': x.sum(),
        'sum dim': x.sum(dim=1),
        'sum dims keepdim': (x * x).sum(dim=(0, 1), keepdim=True),
        'mean dim': x.mean(dim=0),
        'relu': x.relu(),
        'exp': lib.exp(x),
        'reshape': x.reshape(3, 8),
        'transpose': x.transpose(0, 1) @ x,
        'permute': x.reshape(2, 3, 4).permute(2, 0, 1),
        'index row': x[2],
        'index slice': x[1:5:2, ::2],
        'index negative': x[-1, 1:],
        'softmax': lib.softmax(x, dim=1),
        'sigmoid tanh': lib.sigmoid(x) * lib.tanh(x),
        'compare where': lib.where(x > 0, x, x * 0.1),
        'max dim': x.max(dim=1).values,
        'integers': (n * 3 - 2) // 2 + n.sum(dim=0),
        'cast': (x * 10).to(lib.int64),
        'activations': (lib.nn.functional.silu(x) * lib.nn.functional.elu(x, 0.5)
                        + lib.nn.functional.hardtanh(x, -0.5, 0.5)),
    }


@pytest.fixture(scope='module')
def numpy_results():
    cluster = Cluster(workers=1, backend='numpy')
    try:
        cluster.wait_ready()
        with connected(cluster.address):
            workers = gt.debug.get_worker_stats()
            x, w, b, n = (gt.from_numpy(a) for a in (X, W, B, N))
            results = {name: value.data for name, value in cases(x, w, b, n, gt).items()}
        yield workers, results
    finally:
        cluster.stop()


def test_the_worker_runs_numpy(numpy_results):
    workers, _ = numpy_results
    assert [worker['engine'] for worker in workers] == ['numpy']


NAMES = list(cases(*(torch.from_numpy(a) for a in (X, W, B, N)), torch))


@pytest.mark.parametrize('name', NAMES)
def test_numpy_engine_matches_torch(numpy_results, name):
    _, results = numpy_results
    want = cases(*(torch.from_numpy(a) for a in (X, W, B, N)), torch)[name]
    got = results[name]
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_a_draw_sharded_over_a_torch_and_a_numpy_worker_fails_at_once_naming_why():
    """Their generator states differ in kind: the numpy worker could not take the torch
    worker's, and the program's rerun waited again for the state it had taken, holding
    both workers, and every session on them, until GT_PEER_TIMEOUT (300 s)."""
    cluster = Cluster(workers=1)
    try:
        cluster.wait_ready()
        cluster.workers.append(cluster._start('worker1', [
            'gt.worker', '--host', 'localhost', '-p', str(cluster.port), '--backend', 'numpy',
            *cluster.guard]))
        cluster.wait_ready(2)
        with connected(cluster.address):
            gt.randn(4, 4).sum().item()  # a draw on one worker: the next must sync the state
            gt.register_config('shard rows', gt.SignalConfig(shard=gt.ShardConfig(axis=0)))
            with gt.signal.context('shard rows'):
                drawn = gt.randn(8, 4)
            started = time.monotonic()
            with pytest.raises(gt.WorkerError, match='needs workers of one engine'):
                drawn.sum().item()
            assert time.monotonic() - started < 30
            assert gt.ones(2).sum().item() == 2.0
    finally:
        cluster.stop()
