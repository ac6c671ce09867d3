"""A long training loop holds steady: after warm-up, neither the worker's live tensors
nor the dispatcher's bookkeeping for this session grow, step after step."""

import gc

import torch
from nn_check import seeded

import gt
import gt.nn as nn
import gt.nn.functional as F


def worker_tensors() -> int:
    gc.collect()  # tensors that earlier tests left in reference cycles go now, not mid-test
    return sum(worker['tensors'] for worker in gt.debug.get_worker_stats())


def session_values() -> int:
    return gt.debug.get_dispatcher_stats()['session_values']


def test_500_sgd_steps_do_not_grow_the_cluster():
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 4))
    optimizer = nn.SGD(model.parameters(), lr=0.05, momentum=0.9)
    generator = seeded()
    x = gt.tensor(torch.randn(16, 10, generator=generator))
    y = gt.tensor(torch.randint(0, 4, (16,), generator=generator))
    losses = []

    def step(index: int) -> None:
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if index % 50 == 0:
            losses.append(loss.item())

    for index in range(20):
        step(index)
    warm = worker_tensors(), session_values()
    for index in range(20, 500):
        step(index)
    assert (worker_tensors(), session_values()) == warm
    assert losses[-1] < losses[0] / 4  # and it did train
    # Growth in between would hide from two samples only if it were freed again.
    samples = []
    for index in range(500, 560):
        step(index)
        if index % 20 == 0:
            samples.append((worker_tensors(), session_values()))
    assert samples == [warm] * len(samples)
