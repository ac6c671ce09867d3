"""Compilation directives: the ops recorded under a signal whose config says
`compile: true` (examples/config_compile.yaml) are compiled on the worker once their
program is hot, beside the running loop: the loop never waits, it switches to the
compiled code when it is ready. The losses are checked against PyTorch at every step.

    python examples/compile_demo.py                           # Inductor (a first compile: 20-60 s)
    GT_COMPILE_BACKEND=eager python examples/compile_demo.py  # torch.compile's eager backend

GT_AUTO_COMPILE=1 would compile every hot program whole, without any signal.
"""

import os
import statistics
import time

import torch

os.environ.setdefault('GT_CONFIG', os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                'config_compile.yaml'))
import gt  # noqa: E402  (GT_CONFIG is read at import)
import gt.nn as nn  # noqa: E402
import gt.nn.functional as F  # noqa: E402

MAX_WAIT_SECONDS = 300
STEPS_AFTER = 20

torch.manual_seed(0)
reference = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(),
                                torch.nn.Linear(128, 10))
model = nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 10))
model.load_state_dict(reference.state_dict())
reference_optimizer = torch.optim.SGD(reference.parameters(), lr=0.05, momentum=0.9)
optimizer = nn.SGD(model.parameters(), lr=0.05, momentum=0.9)
x_data, y_data = torch.randn(256, 64), torch.randint(0, 10, (256,))
x, y = gt.tensor(x_data), gt.tensor(y_data)


def gt_step() -> float:
    with gt.signal.context('mlp_forward'):
        loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss.item()


def torch_step() -> float:
    loss = torch.nn.functional.cross_entropy(reference(x_data), y_data)
    loss.backward()
    reference_optimizer.step()
    reference_optimizer.zero_grad()
    return loss.item()


def all_compiled() -> bool:
    """Whether steps run compiled code and no compile is still under way."""
    workers = gt.debug.get_worker_stats()
    return (sum(worker['compiled_runs'] for worker in workers) > 0
            and not any(worker['compiles_pending'] for worker in workers))


def timed_step() -> float:
    start = time.perf_counter()
    loss = gt_step()
    seconds = time.perf_counter() - start
    expected = torch_step()
    assert abs(loss - expected) <= 1e-4 * max(1.0, abs(expected)), (loss, expected)
    return seconds


start = last_said = time.monotonic()
eager_steps = []
while not all_compiled():
    eager_steps.append(timed_step())
    if time.monotonic() - last_said > 5:
        last_said = time.monotonic()
        print(f'step {len(eager_steps)}: running on while the worker compiles')
    if time.monotonic() - start > MAX_WAIT_SECONDS:
        raise SystemExit(f'nothing compiled within {MAX_WAIT_SECONDS} s: '
                         f'{gt.debug.get_worker_stats()}')
print(f'compiled after {time.monotonic() - start:.1f} s and {len(eager_steps)} steps; the '
      f'slowest of them took {max(eager_steps[1:] or eager_steps) * 1e3:.1f} ms')
compiled_steps = [timed_step() for _ in range(STEPS_AFTER)]
print(f'median step: {statistics.median(eager_steps) * 1e3:.2f} ms while compiling, '
      f'{statistics.median(compiled_steps) * 1e3:.2f} ms compiled; every loss matches PyTorch')
gt.debug.print_worker_stats()
