"""Values the client drops are freed on the workers and forgotten by the dispatcher: a long
loop of temporaries leaves the cluster holding what the client still holds, no more."""

import gc
import time

import numpy as np
import pytest
from gt_test_support import connected

import gt


def worker_tensors() -> int:
    return sum(worker['tensors'] for worker in gt.debug.get_worker_stats())


def session_values() -> int:
    return gt.debug.get_dispatcher_stats()['session_values']


@pytest.fixture
def client(cluster):
    with connected(cluster.address) as connection:
        yield connection


@pytest.mark.time_limit(120)
def test_temporaries_are_freed(client):
    gc.collect()
    empty_tensors, empty_values = worker_tensors(), session_values()
    assert empty_values == 0

    a = gt.from_numpy(np.ones((8, 4), dtype=np.float32))
    x = gt.randn(16, 16)
    c = gt.zeros(8, 4)
    c.data  # noqa: B018 (materialize, so that the three are on the workers)
    held_tensors, held_values = worker_tensors(), session_values()
    assert held_tensors > empty_tensors
    assert held_values == 3

    sums = []
    for step in range(1000):
        c = c + a
        (x * 2).sum()  # a temporary nobody keeps
        t = (c - 1).relu().mean()  # rebound every step, so the previous one is dropped
        if step % 100 == 99:
            sums.append(t.item())
            assert session_values() <= held_values + 1  # c, a, x and this step's t
    assert c.data.tolist() == [[1000.0] * 4] * 8
    assert sums == [float(step) for step in range(99, 1000, 100)]

    del t
    gc.collect()
    assert worker_tensors() == held_tensors
    assert session_values() == held_values

    del a, x, c
    gc.collect()
    assert worker_tensors() == empty_tensors
    assert session_values() == empty_values


def test_in_place_updates_free_the_old_value(client):
    p = gt.ones(8, 4)
    p.data  # noqa: B018
    gc.collect()
    held_tensors, held_values = worker_tensors(), session_values()
    for _ in range(300):
        p -= 0.5
        p += 0.5
    assert p.data.tolist() == [[1.0] * 4] * 8
    assert worker_tensors() == held_tensors
    assert session_values() == held_values


def test_ending_a_session_frees_its_values(cluster):
    with connected(cluster.address):
        before = worker_tensors()
    with connected(cluster.address):
        kept = [gt.randn(32, 32) for _ in range(5)]
        assert len([k.sum().item() for k in kept]) == 5
        assert worker_tensors() >= before + 5
    with connected(cluster.address):
        # The Goodbye of the session above came on another connection: allow it to land.
        deadline = time.monotonic() + 5
        while worker_tensors() != before and time.monotonic() < deadline:
            time.sleep(0.1)
        assert worker_tensors() == before
