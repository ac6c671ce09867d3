"""Large fetches go through /dev/shm files when client and worker share it: the values
are right, the files are gone once taken, and a worker tidies what nobody took."""

import os

import numpy as np
import pytest
import torch
from gt_test_support import connected

import gt
from gt.runtime import shared_memory

pytestmark = pytest.mark.skipif(not shared_memory.available(), reason='no /dev/shm here')


def gt_files() -> set[str]:
    return {name for name in os.listdir(shared_memory.DIRECTORY) if name.startswith('gt-fetch')}


def test_a_large_fetch_maps_a_file_that_disappears_once_taken(monkeypatch):
    adopted = []
    adopt = shared_memory.adopt
    monkeypatch.setattr(shared_memory, 'adopt', lambda *args: adopted.append(args) or adopt(*args))
    before = gt_files()
    data = np.random.default_rng(0).standard_normal((2900, 2900)).astype(np.float32)
    tensor = gt.from_numpy(data) * 2  # 34 MB: over the threshold
    fetched = tensor.data
    assert len(adopted) == 1 and adopted[0][0].startswith(shared_memory.DIRECTORY)
    np.testing.assert_array_equal(fetched.numpy(), data * 2)
    fetched.numpy()[0, 0] = 1e9  # the mapping is private to this process: GT's value stays
    assert tensor[0, 0].item() == pytest.approx(float(data[0, 0] * 2))
    assert gt_files() == before


def test_small_fetches_and_every_dtype_round_trip():
    for dtype in (torch.float64, torch.int32, torch.bool, torch.bfloat16):
        expected = (torch.arange(300_000) % 7 == 0).to(dtype)
        assert torch.equal(gt.tensor(expected).data, expected)
    assert torch.equal(gt.tensor([1.0, 2.0]).data, torch.tensor([1.0, 2.0]))


def test_files_are_written_only_for_clients_that_share_the_directory(tmp_path):
    path = shared_memory.write(np.arange(10, dtype=np.int64), 'test-owner')
    assert os.path.basename(path) in gt_files()
    shared_memory.remove_owned('test-owner')
    assert not os.path.exists(path)


def test_stale_files_of_dead_processes_are_removed():
    dead_pid = 2 ** 22 + 12345  # beyond pid_max on typical systems: never alive
    stale = os.path.join(shared_memory.DIRECTORY, f'gt-fetch-{dead_pid}-0-stale')
    probe = os.path.join(shared_memory.DIRECTORY, f'gt-probe-{dead_pid}-stale')
    for path in (stale, probe):
        open(path, 'wb').close()
    shared_memory.remove_stale()
    assert not os.path.exists(stale) and not os.path.exists(probe)


def test_a_client_without_shared_memory_gets_frames(cluster, monkeypatch):
    monkeypatch.setattr(shared_memory, 'available', lambda: False)
    before = gt_files()
    with connected(cluster.address) as client:
        assert client.probe == ''
        data = np.arange(9_000_000, dtype=np.float32)  # 36 MB
        np.testing.assert_array_equal(gt.from_numpy(data).numpy(), data)
        assert gt_files() == before
