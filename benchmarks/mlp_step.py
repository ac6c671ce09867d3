"""A training step through GT against plain PyTorch eager, in one run:
`python benchmarks/mlp_step.py`.

An MLP 784-256-10 on a batch of 64, cross-entropy loss, SGD: 20 steps then one fetch of
the loss, timed per step (target: 1.5x torch); and the same with the loss fetched every
step, as loops that print it do. Also counted: the messages a step sends.
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import DEVICE, alternating, devices, report  # noqa: E402

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


def main() -> int:
    labels = torch.randint(0, CLASSES, (BATCH,))
    _, torch_steps = build(torch.nn, torch.nn.functional, torch.optim,
                           torch.randn(BATCH, INPUTS, device=DEVICE), labels.to(DEVICE))
    _, gt_steps = build(nn, F, nn, gt.randn(BATCH, INPUTS), gt.tensor(labels))
    gt_steps(3)  # start the server and fill the plan cache before timing
    torch_steps(3)
    print(devices(gt))

    torch_time, gt_time = alternating(torch_steps, gt_steps)
    report(f'MLP {INPUTS}-{HIDDEN}-{CLASSES} SGD step ({STEPS} steps, 1 fetch)',
           torch_time / STEPS, gt_time / STEPS, 1.5)
    torch_time, gt_time = alternating(lambda: torch_steps(fetch_each=True),
                                      lambda: gt_steps(fetch_each=True))
    report('the same, fetching the loss every step', torch_time / STEPS, gt_time / STEPS, None)

    client = gt.runtime.client.current()
    before, first_value = client.next_request, client.next_id
    gt_steps(STEPS)
    messages = client.next_request - before
    print(f'messages: {messages} Submits for {STEPS} steps and a fetch of the last loss, and '
          f'one round trip (the fetch). optimizer.step() sends each step as one message. '
          f'{(client.next_id - first_value) // STEPS} values recorded per step.')
    stats = gt.debug.get_dispatcher_stats()
    print(f"dispatcher plan cache: {stats['plan_hits']} hits, {stats['plan_misses']} misses")
    return 0


if __name__ == '__main__':
    sys.exit(main())
