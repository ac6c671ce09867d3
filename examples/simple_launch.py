"""Start a GT dispatcher and its workers by hand, as the original GT docs do, then check
them with a small computation against numpy (unless --no-test), and keep them serving
until Ctrl-C.

    python examples/simple_launch.py                  # dispatcher on 12345, 1 worker
    python examples/simple_launch.py --workers 2 --port 12346
    python examples/simple_launch.py --no-test        # just serve; connect your own client
                                                      # with gt.connect('localhost:12345')
"""

import argparse
import signal
import socket
import subprocess
import sys
import time

import numpy as np

import gt

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument('--workers', type=int, default=1, help='workers to start (default 1)')
parser.add_argument('--port', type=int, default=12345, help="the dispatcher's port")
parser.add_argument('--no-test', action='store_true', help='start, and skip the check')
options = parser.parse_args()
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # stopped by kill, too: clean up

with socket.socket() as probe:  # another server there would take our workers and test
    if probe.connect_ex(('127.0.0.1', options.port)) == 0:
        sys.exit(f'port {options.port} is in use (another GT server?): choose another '
                 'with --port')
processes = [subprocess.Popen([sys.executable, '-m', 'gt.server', '-p', str(options.port)])]
processes += [subprocess.Popen([sys.executable, '-m', 'gt.worker', '--host', 'localhost',
                                '-p', str(options.port)]) for _ in range(options.workers)]
try:
    gt.connect(f'localhost:{options.port}')
    deadline = time.monotonic() + 60
    while len(gt.debug.get_worker_stats()) < options.workers:  # until all have joined
        if processes[0].poll() is not None:
            sys.exit('the dispatcher stopped (its error is above)')
        if time.monotonic() > deadline:
            sys.exit(f'only {len(gt.debug.get_worker_stats())} of {options.workers} workers '
                     'joined within 60 s')
        time.sleep(0.2)
    print(f'GT is serving on localhost:{options.port} with {options.workers} worker(s)')
    if not options.no_test:
        a = np.random.default_rng(0).standard_normal((64, 32)).astype(np.float32)
        got = (gt.tensor(a) @ gt.tensor(a.T)).relu().sum(dim=1).numpy()
        want = np.maximum(a @ a.T, 0).sum(axis=1)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
        print('test passed: (A @ A.T).relu().sum(1) matches numpy')
    print('Ctrl-C stops the dispatcher and workers')
    while all(process.poll() is None for process in processes):
        time.sleep(0.5)
except KeyboardInterrupt:
    pass
finally:
    for process in reversed(processes):  # workers first, while their dispatcher hears them
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
