"""Sharding across workers, measured in one run: `python benchmarks/sharding.py`.

1. A data-parallel matmul chain on 2 workers against 1 (one torch thread per worker; on
   a 2-core machine the target is at least 1.7x).
2. Moves between workers: all_gather and all_reduce of 16 MiB against a local copy of the
   same bytes (torch.clone in this process).
3. Data-parallel training of a small MLP on 4 workers against 1: time per step.
4. Where auto-sharding starts to pay: a created tensor times a whole weight, summed, at
   several sizes, sharded over 2 workers and not.
5. The transport alone: an all_reduce of 16 MiB between 2 processes with GT's peer
   exchange (ZeroMQ) and with a torch.distributed gloo process group.

Local servers are started here, each worker with one thread (GT_WORKER_THREADS=1).
"""

import os
import socket
import statistics
import sys
import time
from datetime import timedelta

import numpy as np
import torch

os.environ['GT_WORKER_THREADS'] = '1'
import gt  # noqa: E402
from gt.runtime import client as connection  # noqa: E402
from gt.runtime.launcher import LocalServer  # noqa: E402

MiB = 1 << 20


class Server:
    """A local dispatcher with `workers` workers, this process's connection for the block."""

    def __init__(self, workers: int, auto_shard: int | None = None):
        self.workers, self.auto_shard = workers, auto_shard

    def __enter__(self):
        self.server = LocalServer(self.workers)
        connection._client = connection.Client(self.server.endpoint, self.workers)
        if self.auto_shard is not None:
            set_auto_shard(self.auto_shard)
        return self

    def __exit__(self, *exc):
        connection._client.close()
        connection._client = None
        self.server.stop()
        gt.config.clear_configs()


def set_auto_shard(elements: int) -> None:
    connection.AUTO_SHARD_ELEMENTS = elements
    connection.current().config_version = -1  # send the session's configs again


def median_seconds(run, repeats: int = 7, warmup: int = 2) -> float:
    for _ in range(warmup):
        run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def matmul_chain(workers: int) -> float:
    rng = np.random.default_rng(0)
    weights_data = [rng.standard_normal((512, 512)).astype(np.float32) / 24 for _ in range(8)]
    with Server(workers):
        x = gt.randn(2048, 512)  # auto-sharded on axis 0 when there are 2 workers
        weights = [gt.from_numpy(w) for w in weights_data]

        def chain():
            h = x
            for w in weights:
                h = (h @ w).relu()
            return h.sum().item()
        return median_seconds(chain)


def moves() -> tuple[float, float]:
    gt.register_config('whole', gt.SignalConfig(shard=gt.ShardConfig(axis=9)))  # no axis 9:
    with Server(2):                                                            # replicated
        x = gt.randn(4096, 1024)  # 16 MiB, sharded on axis 0
        slabs = gt.randn(2, 4096, 1024)  # one slab per worker; summing them leaves partials
        # A column of the rows keeps them sharded: the fetch itself gathers next to nothing.
        base = median_seconds(lambda: x[:, :1].sum().item())
        gather = median_seconds(lambda: gt.signal.tensor(x, name='whole')[:, :1].sum().item())
        partial = median_seconds(lambda: slabs.sum(dim=0)[0, 0].item())
        reduce = median_seconds(
            lambda: gt.signal.tensor(slabs.sum(dim=0), name='whole')[0, 0].item())
    big = torch.randn(4096, 1024)
    copy = median_seconds(lambda: big.clone())
    # Both moves end in the copy `distribute` makes; take it out, as the local copy is.
    return gather - base - copy, reduce - partial - copy, copy


def mlp_training(workers: int, steps: int = 10) -> float:
    rng = np.random.default_rng(1)
    inputs = gt_data = rng.standard_normal((256, 784)).astype(np.float32)
    labels = rng.integers(0, 10, 256)
    gt.register_config('data', gt.SignalConfig(shard=gt.ShardConfig(axis=0)))
    with Server(workers):
        model = gt.nn.Sequential(gt.nn.Linear(784, 256), gt.nn.ReLU(), gt.nn.Linear(256, 10))
        optimizer = gt.nn.SGD(model.parameters(), lr=0.01)
        with gt.signal.context('data'):
            x = gt.signal.tensor(gt.from_numpy(gt_data), name='data')
            y = gt.signal.tensor(gt.tensor(labels), name='data')
        del inputs

        def train():
            for _ in range(steps):
                with gt.signal.context('data'):
                    loss = gt.nn.functional.cross_entropy(model(x), y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            return loss.item()
        return median_seconds(train, repeats=5) / steps


def auto_shard_sizes() -> list[tuple[int, float, float]]:
    rows = []
    weight = np.random.default_rng(2).standard_normal((256, 256)).astype(np.float32)
    with Server(2) as server:
        w = gt.from_numpy(weight)
        for elements in (4096, 16384, 65536, 262144, 1048576):
            timings = []
            for threshold in (1 << 40, 1):  # never, then always
                set_auto_shard(threshold)
                a = gt.randn(elements // 256, 256)

                def work():
                    return (a @ w).relu().sum().item()
                timings.append(median_seconds(work))
            rows.append((elements, *timings))
        del server
    return rows


def _gloo_all_reduce(rank: int, port: int, results) -> None:
    import torch.distributed as dist

    store = dist.TCPStore('127.0.0.1', port, 2, rank == 0, timeout=timedelta(seconds=30))
    group = dist.ProcessGroupGloo(dist.PrefixStore('bench', store), rank, 2,
                                  timedelta(seconds=30))
    x = torch.randn(4096, 1024)
    seconds = median_seconds(lambda: group.allreduce([x]).wait(), repeats=10)
    if rank == 0:
        results.put(seconds)


class _Run:
    """The context a worker's program gives a move: one per run, so tags never repeat."""

    def __init__(self, run: int):
        self.session, self.base, self.moved = 0, run, {}


def _exchange_all_reduce(rank: int, endpoints, results) -> None:
    from gt.runtime.engines import TorchEngine
    from gt.runtime.exchange import PeerExchange

    exchange = PeerExchange(TorchEngine('cpu'), socket.gethostname())
    endpoints[rank] = exchange.endpoints
    while len(endpoints) < 2:
        time.sleep(0.01)
    exchange.set_peers(rank, [[i, socket.gethostname(), endpoints[i], True, '']  # no CURVE key
                              for i in range(2)])
    x = torch.randn(4096, 1024)
    runs = iter(range(1 << 30))

    def all_reduce():
        exchange.move(_Run(next(runs)), x, ['P', [0, 1]], ['R', [0, 1]], [4096, 1024],
                      'float32', 0, wait=lambda peer_socket, ms: bool(peer_socket.poll(ms)))
    seconds = median_seconds(all_reduce, repeats=10)
    if rank == 0:
        results.put(seconds)
    time.sleep(0.5)  # the other side may still wait for this side's last piece
    exchange.close()


def transports() -> tuple[float, float]:
    import torch.multiprocessing as multiprocessing

    spawn = multiprocessing.get_context('spawn')
    results = spawn.Queue()
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        port = probe.getsockname()[1]
    timings = []
    for target, argument in ((_gloo_all_reduce, port), (_exchange_all_reduce,
                                                        spawn.Manager().dict())):
        processes = [spawn.Process(target=target, args=(rank, argument, results))
                     for rank in range(2)]
        for process in processes:
            process.start()
        timings.append(results.get(timeout=120))
        for process in processes:
            process.join(30)
    return timings[0], timings[1]


def main() -> int:
    one, two = matmul_chain(1), matmul_chain(2)
    print(f'data-parallel matmul chain (2048x512 @ 8 x 512x512): 1 worker {one * 1e3:7.1f} ms, '
          f'2 workers {two * 1e3:7.1f} ms: speedup {one / two:4.2f}x (target >= 1.7x)')
    gather, reduce, copy = moves()
    print(f'all_gather of 16 MiB over 2 workers: {gather * 1e3:6.1f} ms, '
          f'{16 / gather / 1024:5.2f} GiB/s; local copy of 16 MiB {copy * 1e3:5.1f} ms, '
          f'{16 / copy / 1024:5.2f} GiB/s: {gather / copy:4.1f}x the copy')
    print(f'all_reduce of 16 MiB over 2 workers: {reduce * 1e3:6.1f} ms, '
          f'{16 / reduce / 1024:5.2f} GiB/s: {reduce / copy:4.1f}x the copy')
    one, four = mlp_training(1), mlp_training(4)
    print(f'data-parallel MLP 784-256-10, batch 256, SGD: 1 worker {one * 1e3:6.2f} ms/step, '
          f'4 workers {four * 1e3:6.2f} ms/step: {four / one:4.2f}x')
    print('auto-shard threshold: (created [n/256, 256] @ whole [256, 256]).relu().sum()')
    for elements, whole, sharded in auto_shard_sizes():
        print(f'  {elements:>8} elements: on 1 worker {whole * 1e3:6.2f} ms, sharded over 2 '
              f'{sharded * 1e3:6.2f} ms ({whole / sharded:4.2f}x)')
    gloo, exchange = transports()
    print(f'all_reduce of 16 MiB between 2 processes: GT peer exchange {exchange * 1e3:5.1f} ms, '
          f'torch.distributed gloo {gloo * 1e3:5.1f} ms ({exchange / gloo:4.2f}x)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
