"""Many clients on one worker: `python benchmarks/multiplex.py`.

1. A heavy client (a queue of 1000x1000 matmuls, one fragment each) beside 3 light ones
   (a tiny op and a fetch every 10 ms): the light clients' p90 round trip alone and with
   the heavy one, under GT's scheduler (least-served session first, one program waiting
   per shared worker, light sessions' programs on the worker's express lane), without
   the express lane, and with the windows opened wide too (first come, first served, as
   before the scheduler). Targets: within 5x of alone, and under one heavy program plus
   the alone latency.
2. 4 identical clients training at once (started together once all are warm):
   per-client throughput max/min (target <= 1.25) and the aggregate against one client
   alone (target >= 0.9x).
3. One client streaming fragments without fetching, per window size: what the window
   costs a lone client (why the default is what it is).

Each setting runs a private `gt.server` and one `gt.worker` (1 thread); clients are
processes. torch's time for the same heavy program, in this process, is printed as the
reference. Timings on a shared 2-core machine are noisy: read the ratios, not the digits.
"""

import json
import os
import socket
import statistics
import subprocess
import sys
import textwrap
import time

import torch

LIGHT = """
import json, time, gt
gt.connect('{address}')
x = gt.ones(4)
x.sum().item()
latencies = []
for _ in range({rounds}):
    start = time.perf_counter()
    (x * 2).sum().item()
    latencies.append(time.perf_counter() - start)
    time.sleep(0.01)
print(json.dumps(latencies))
"""
HEAVY = """
import sys, time, gt
gt.connect('{address}')
x = gt.randn(1000, 1000)
x.data
print('ready', flush=True)
while True:
    for _ in range(20):
        x = (x @ x).tanh()
        gt.sync()
    x.sum().item()
"""
TRAIN = """
import json, sys, time, gt
gt.connect('{address}')
w = gt.randn(256, 256, requires_grad=True)
x = gt.randn(128, 256)
def step():
    loss = ((x @ w).relu() ** 2).mean()
    loss.backward()
    with gt.no_grad():
        w.sub_(0.001 * w.grad)
    w.grad = None
    return loss.item()
step()
print('ready', flush=True)
sys.stdin.readline()  # all clients start timing together
start = time.perf_counter()
for _ in range({steps}):
    step()
print(json.dumps({steps} / (time.perf_counter() - start)))
"""
STREAM = """
import json, time, gt
gt.connect('{address}')
x = gt.randn(64, 64)
x.data
start = time.perf_counter()
for _ in range(300):
    x = (x @ x).tanh()
    gt.sync()
x.sum().item()
print(json.dumps(300 / (time.perf_counter() - start)))
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


class Server:
    def __init__(self, window: int | None = None, express: bool = True):
        self.port = free_port()
        self.address = f'localhost:{self.port}'
        env = {**os.environ, 'GT_WORKER_THREADS': '1'}
        if window is not None:
            env['GT_WORKER_WINDOW'] = env['GT_SHARED_WINDOW'] = str(window)
        if not express:
            env['GT_EXPRESS_SECONDS'] = '0'
        self.processes = [
            subprocess.Popen([sys.executable, '-m', 'gt.server', '-p', str(self.port)], env=env),
            subprocess.Popen([sys.executable, '-m', 'gt.worker', '-p', str(self.port)], env=env)]
        self.run(LIGHT, rounds=1)  # up and answering

    def start(self, code: str, **fields) -> subprocess.Popen:
        source = textwrap.dedent(code).format(address=self.address, **fields)
        return subprocess.Popen([sys.executable, '-c', source], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)

    def run(self, code: str, **fields):
        process = self.start(code, **fields)
        out, _ = process.communicate('go\n', timeout=600)
        return json.loads(out.strip().splitlines()[-1])

    def stop(self) -> None:
        for process in self.processes:
            process.terminate()
            process.wait(10)


def p90(values: list) -> float:
    return statistics.quantiles(values, n=10)[-1]


def lights(server: Server, heavy: bool) -> tuple[float, float]:
    """The worst of 3 light clients' p90 latencies, and the heavy program's median time."""
    hog = None
    if heavy:
        hog = server.start(HEAVY)
        assert hog.stdout.readline().strip() == 'ready'
        time.sleep(1)
    clients = [server.start(LIGHT, rounds=100) for _ in range(3)]
    results = [json.loads(c.communicate(timeout=600)[0].strip().splitlines()[-1])
               for c in clients]
    if hog is not None:
        hog.kill()
        hog.wait()
    return max(p90(r) for r in results)


def torch_heavy_program() -> float:
    torch.set_num_threads(1)
    x = torch.randn(1000, 1000)
    times = []
    for _ in range(10):
        start = time.perf_counter()
        x = (x @ x).tanh()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    heavy_seconds = torch_heavy_program()
    print(f'heavy program (1000x1000 matmul + tanh, 1 thread): torch {heavy_seconds * 1e3:.1f} ms')
    for label, window, express in (('GT scheduler', None, True),
                                   ('without the express lane', None, False),
                                   ('window wide open (FCFS)', 100000, False)):
        server = Server(window, express)
        try:
            alone, beside = lights(server, heavy=False), lights(server, heavy=True)
        finally:
            server.stop()
        bound = heavy_seconds + alone
        print(f'{label:<26} light p90 alone {alone * 1e3:6.2f} ms, beside heavy '
              f'{beside * 1e3:7.2f} ms: {beside / alone:5.1f}x (target 5x; '
              f'{"under" if beside <= bound else "OVER"} heavy + alone = {bound * 1e3:.1f} ms)')
    server = Server()
    try:
        single = server.run(TRAIN, steps=150)
        # Each client imports torch for seconds, longer than its 150 steps: they start
        # timing together, once all are connected and warm.
        clients = [server.start(TRAIN, steps=150) for _ in range(4)]
        for client in clients:
            assert client.stdout.readline().strip() == 'ready'
        for client in clients:
            client.stdin.write('go\n')
            client.stdin.flush()
        rates = [json.loads(c.communicate(timeout=600)[0].strip().splitlines()[-1])
                 for c in clients]
    finally:
        server.stop()
    print(f'4 identical clients: steps/s {", ".join(f"{r:.0f}" for r in rates)}; max/min '
          f'{max(rates) / min(rates):.2f} (target 1.25); aggregate {sum(rates):.0f} against '
          f'{single:.0f} alone: {sum(rates) / single:.2f}x (target 0.9x)')
    for window in (1, 2, 4, 100000):
        server = Server(window)
        try:
            rate = server.run(STREAM)
        finally:
            server.stop()
        print(f'one client streaming 300 fragments, window {window:>6}: {rate:7.0f} '
              f'fragments/s')


if __name__ == '__main__':
    main()
