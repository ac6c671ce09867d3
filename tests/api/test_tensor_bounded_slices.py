"""Slices between a 0-d integer tensor and itself plus an int (nanoGPT's
`data[i:i + block_size] for i in ix`): read, written and differentiated as torch's,
cut on the workers without fetching the bounds, and an out-of-range one failing by name
rather than clamped to a shape GT could not know. torch is the oracle."""

import pytest
import torch

import gt
from gt.runtime import client as connection


def random_offset_work(lib):
    lib.manual_seed(0)
    data = lib.randint(0, 50, (300,))
    ix = lib.randint(len(data) - 9, (5,))
    x = lib.stack([data[i:i + 8] for i in ix])
    y = lib.stack([data[i + 1:i + 1 + 8] for i in ix])  # both bounds offset from i
    before = lib.stack([data[i + 8 - 3:i + 8] for i in ix])
    image = lib.arange(2 * 9 * 10.0).reshape(2, 9, 10)
    top, left = lib.tensor(3), lib.tensor(6)
    crop = image[:, top:top + 4, left:left + 3]  # a random crop, two dims at once
    rows = image[1, top - 2:top]  # a difference with an int, and an int index beside
    empty = data[ix[0]:ix[0]]
    w = lib.arange(12.0, requires_grad=True)
    (w[top:top + 5] * lib.arange(5.0)).sum().backward()
    z = lib.zeros(10)
    z[top:top + 3] = 7  # written through
    z[top - 2:top] += 1
    z[left:left + 2].zero_()
    z[top:top] = 5  # an empty slice: nothing written
    return [x.tolist(), y.tolist(), before.tolist(), crop.tolist(), rows.tolist(),
            list(empty.shape), w.grad.tolist(), z.tolist(), list(x.shape)]


def test_tensor_bounded_slices_give_torchs_results():
    assert random_offset_work(gt) == random_offset_work(torch)


def test_the_bounds_are_not_fetched(monkeypatch):
    data, ix = gt.arange(100), gt.tensor([5, 40, 90])
    gt.stack([data[i:i + 4] for i in ix]).sum().item()  # warm
    fetches = []
    real_fetch = connection.Client.fetch

    def counted_fetch(self, *args, **kwargs):
        fetches.append(1)
        return real_fetch(self, *args, **kwargs)

    monkeypatch.setattr(connection.Client, 'fetch', counted_fetch)
    batch = gt.stack([data[i:i + 4] for i in ix])
    assert fetches == []
    assert batch.tolist() == [[5, 6, 7, 8], [40, 41, 42, 43], [90, 91, 92, 93]]


def test_a_bound_written_in_place_since_is_fetched_as_torch_would():
    """`j = i + 3; i += 1`: j is no longer i + 3, so its length is not known; the bounds
    are read as torch reads them."""
    results = []
    for lib in (gt, torch):
        data, i = lib.arange(10), lib.tensor(6)
        j = i + 3
        i += 1
        results.append(data[i:j].tolist())
    assert results[0] == results[1] == [7, 8]


def test_a_slice_running_past_the_end_fails_naming_the_index():
    """torch clamps `data[8:13]` to 2 elements; GT cannot know that length without the
    bound's value, so the gather that cuts it fails, naming the index, and the session
    goes on."""
    data, i = gt.arange(10), gt.tensor(8)
    cut = data[i:i + 5]
    with pytest.raises(gt.WorkerError, match='index 10 is out of bounds for dimension 0'):
        cut.tolist()
    assert (data + 1).tolist() == list(range(1, 11))
