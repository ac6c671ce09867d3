"""What the instruction log and the monitor cost: `python benchmarks/instruction_log.py`.

The same small training-like step (a 256x256 layer forward and backward, an SGD update,
one fetch) runs against torch eager in one process per setting, each with its own
auto-started server: with nothing listening (the default), with GT_INSTRUCTION_LOG set,
and with the log and a `gt.scripts.trace` subscriber on the monitor socket. Each line
prints GT's step time as a ratio to torch's, measured in turns in that process; the
off line is the reference for the others.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

STEP_CHILD = '--child'


def child() -> None:
    import torch

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from common import alternating

    import gt

    def step(lib, w, x):
        loss = ((x @ w).relu() ** 2).mean()
        loss.backward()
        with lib.no_grad():
            w -= 0.01 * w.grad
        w.grad = None
        return loss.item()

    tw = torch.randn(256, 256, requires_grad=True)
    tx = torch.randn(64, 256)
    gw = gt.randn(256, 256, requires_grad=True)
    gx = gt.randn(64, 256)
    gx.data  # the server is up
    time.sleep(float(os.environ.get('GT_BENCH_SETTLE', '0')))  # a subscriber attaches
    torch_seconds, gt_seconds = alternating(lambda: step(torch, tw, tx),
                                            lambda: step(gt, gw, gx), repeats=200, warmup=20)
    print(json.dumps([torch_seconds, gt_seconds]))


def measure(env: dict) -> tuple[float, float]:
    result = subprocess.run([sys.executable, os.path.abspath(__file__), STEP_CHILD],
                            env={**os.environ, **env}, capture_output=True, text=True,
                            check=True, timeout=600)
    return tuple(json.loads(result.stdout.strip().splitlines()[-1]))


def main() -> None:
    folder = tempfile.mkdtemp(prefix='gt-log-bench-')
    log = os.path.join(folder, 'ops.log')
    rows = [('log off (nothing listening)', {}, False),
            ('GT_INSTRUCTION_LOG on', {'GT_INSTRUCTION_LOG': log}, False),
            ('log on + trace subscribed to the monitor', {'GT_INSTRUCTION_LOG': log}, True)]
    reference = None
    for name, env, subscribe in rows:
        torch_seconds, gt_seconds = (_measure_with_trace(env, folder) if subscribe
                                     else measure(env))
        ratio = gt_seconds / torch_seconds
        reference = reference or ratio
        print(f'{name:<42} torch {torch_seconds * 1e3:7.3f} ms   gt {gt_seconds * 1e3:7.3f} ms'
              f'   ratio {ratio:5.2f}x   ({ratio / reference:4.2f} of the off ratio)')
    lines = sum(1 for _ in open(log)) if os.path.exists(log) else 0
    print(f'({lines} log lines written to {log})')


def _measure_with_trace(env: dict, folder: str) -> tuple[float, float]:
    """Run the step with a trace capturing from the child's own auto-started dispatcher
    (found in the registry once it is up)."""
    process = subprocess.Popen([sys.executable, os.path.abspath(__file__), STEP_CHILD],
                               env={**os.environ, **env, 'GT_BENCH_SETTLE': '8'},
                               stdout=subprocess.PIPE, text=True)
    time.sleep(4)  # the child's server is up and registered by then
    trace = subprocess.Popen([sys.executable, '-m', 'gt.scripts.trace', '-s', '120', '--dir',
                              folder], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out, _ = process.communicate(timeout=600)
    trace.terminate()
    trace.wait()
    return tuple(json.loads(out.strip().splitlines()[-1]))


if __name__ == '__main__':
    child() if STEP_CHILD in sys.argv else main()
