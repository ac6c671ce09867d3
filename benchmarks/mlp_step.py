"""A training step through GT against plain PyTorch eager, in one run:
`python benchmarks/mlp_step.py`.

An MLP 784-256-10 on a batch of 64, cross-entropy loss, SGD: 20 steps then one fetch of
the loss, timed per step (target: 1.5x torch); and the same with the loss fetched every
step, as loops that print it do. After each ratio, where GT's time went: the CPU a step
costs the client, the dispatcher and the worker (main thread + ZeroMQ I/O + others).
Also counted: the messages a step sends. Then the same steps with `GT_AUTO_COMPILE=1`
(Inductor, in a child process, since GT reads it at connect; target: 1.0x torch eager),
once the step's program has compiled, and how long that took (Inductor's cache,
TORCHINDUCTOR_CACHE_DIR, makes a second run's fast); `--no-compile` skips it.
"""

import argparse
import os
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import DEVICE, alternating, compile_totals, cpu_per_run, devices, report  # noqa: E402

import gt  # noqa: E402
import gt.nn as nn  # noqa: E402
import gt.nn.functional as F  # noqa: E402

STEPS = 20
BATCH, INPUTS, HIDDEN, CLASSES = 64, 784, 256, 10


def build(library, functional, optimizers, x, y):
    """The model, its optimizer and a function running `count` steps, in either library."""
    model = library.Sequential(library.Linear(INPUTS, HIDDEN), library.ReLU(),
                               library.Linear(HIDDEN, CLASSES)).to(DEVICE)  # GT's: unchanged
    optimizer = optimizers.SGD(model.parameters(), lr=0.01)

    def steps(count: int = STEPS, fetch_each: bool = False) -> float:
        for _ in range(count):
            loss = functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            if fetch_each:
                loss.item()
        return loss.item()

    return model, steps


def both(labels):
    """torch's and GT's `steps`, from the same labels."""
    _, torch_steps = build(torch.nn, torch.nn.functional, torch.optim,
                           torch.randn(BATCH, INPUTS, device=DEVICE), labels.to(DEVICE))
    _, gt_steps = build(nn, F, nn, gt.randn(BATCH, INPUTS), gt.tensor(labels))
    gt_steps(3)  # start the server and fill the plan cache before timing
    torch_steps(3)
    return torch_steps, gt_steps


def eager() -> None:
    torch_steps, gt_steps = both(torch.randint(0, CLASSES, (BATCH,)))
    print(devices(gt))

    torch_time, gt_time = alternating(torch_steps, gt_steps)
    report(f'MLP {INPUTS}-{HIDDEN}-{CLASSES} SGD step ({STEPS} steps, 1 fetch)',
           torch_time / STEPS, gt_time / STEPS, 1.5)
    print(cpu_per_run(gt_steps, STEPS))
    torch_time, gt_time = alternating(lambda: torch_steps(fetch_each=True),
                                      lambda: gt_steps(fetch_each=True))
    report('the same, fetching the loss every step', torch_time / STEPS, gt_time / STEPS, None)
    print(cpu_per_run(lambda: gt_steps(fetch_each=True), STEPS))

    client = gt.runtime.client.current()
    before, first_value = client.next_request, client.next_id
    gt_steps(STEPS)
    messages = client.next_request - before
    print(f'messages: {messages} Submits for {STEPS} steps and a fetch of the last loss, and '
          f'one round trip (the fetch). optimizer.step() sends each step as one message. '
          f'{(client.next_id - first_value) // STEPS} values recorded per step.')
    stats = gt.debug.get_dispatcher_stats()
    print(f"dispatcher plan cache: {stats['plan_hits']} hits, {stats['plan_misses']} misses; "
          f"workers reported {stats['done_programs']} programs done in "
          f"{stats['done_messages']} messages")


def auto_compiled(wait: float) -> None:
    """In a process started with GT_AUTO_COMPILE=1: steps until the step's program has
    compiled (or `wait` seconds), then the steady state against torch eager."""
    started = time.perf_counter()
    torch_steps, gt_steps = both(torch.randint(0, CLASSES, (BATCH,)))
    while True:
        totals = compile_totals(gt)
        done = totals['compiled_regions'] + totals['compile_failures']
        if done and not totals['compiles_pending']:
            break
        if time.perf_counter() - started > wait:
            print(f'GT_AUTO_COMPILE=1: nothing compiled within {wait:.0f} s '
                  f'({totals["compiles_pending"]} pending); no steady state to measure')
            return
        gt_steps()
    print(f'GT_AUTO_COMPILE=1: {totals["compiled_regions"]} region(s) compiled, '
          f'{totals["compile_failures"]} failed, {time.perf_counter() - started:.1f} s after '
          f'the first step (its steps ran eagerly meanwhile)')
    torch_time, gt_time = alternating(torch_steps, gt_steps)
    report('the same, GT with GT_AUTO_COMPILE=1', torch_time / STEPS, gt_time / STEPS, 1.0)
    print(cpu_per_run(gt_steps, STEPS))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--no-compile', action='store_true',
                        help='skip the GT_AUTO_COMPILE=1 measurement')
    parser.add_argument('--compile-wait', type=float, default=240.0,
                        help='seconds to wait for the step to compile')
    parser.add_argument('--auto-compiled', action='store_true',
                        help='internal: the GT_AUTO_COMPILE=1 measurement, in this process')
    args = parser.parse_args()
    if args.auto_compiled:
        auto_compiled(args.compile_wait)
        return 0
    eager()
    if not args.no_compile:
        sys.stdout.flush()
        subprocess.run([sys.executable, __file__, '--auto-compiled',
                        '--compile-wait', str(args.compile_wait)],
                       env=dict(os.environ, GT_AUTO_COMPILE='1'), check=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
