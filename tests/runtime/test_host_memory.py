"""A worker keeps freed host memory for the next run and gives it back when idle
(gt.runtime.host_memory): counted in page faults and resident memory of real processes."""

import time

import psutil
import pytest
from gt_test_support import connected, run_script

import gt
from gt.runtime.host_memory import _glibc

pytestmark = pytest.mark.skipif(_glibc() is None, reason="malloc here is not glibc's")

# Out-of-place steps on blocks of 0.25-1.6 MB, as a worker runs a training step: with
# glibc's starting thresholds (128 KiB), they are mapped afresh at every step, unless
# freed memory is kept. glibc raises its thresholds as large blocks are freed, so how
# many faults a process sees depends on what it freed before (the full suite's
# subprocesses saw none): the fresh case fixes them at their start. On one thread: on
# two, the BLAS's allocations depend on the machine's load.
STEPS = '''
    import resource
    import torch
    from gt.runtime.host_memory import M_MMAP_THRESHOLD, M_TRIM_THRESHOLD, HostMemory, _glibc

    torch.set_num_threads(1)
    if {keep}:
        kept = HostMemory().kept
    else:
        libc = _glibc()
        kept = not (libc.mallopt(M_MMAP_THRESHOLD, 128 << 10) == 1
                    and libc.mallopt(M_TRIM_THRESHOLD, 128 << 10) == 1)
    x, w = torch.randn(128, 784), torch.randn(512, 784)
    def step(w):
        h = torch.relu(x @ w.t())
        g = h.t() @ x
        return w - 0.01 * g * 0.9 + 0.001 * w
    with torch.inference_mode():
        for _ in range(20):
            w = step(w)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(200):
            w = step(w)
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    print('kept', kept, 'faults per step', faults / 200)
'''


def faults_per_step(keep: bool) -> float:
    result = run_script(STEPS.format(keep=keep))
    assert result.returncode == 0, result.explain()
    kept, faults = result.stdout.split()[1], float(result.stdout.split()[-1])
    assert kept == str(keep), result.stdout
    return faults


def test_kept_memory_spares_a_step_its_page_faults():
    fresh, kept = faults_per_step(keep=False), faults_per_step(keep=True)
    # Measured: about 2500 faults a step fresh; kept, 0-4 (the BLAS's own scratch memory).
    assert fresh > 50 and kept < fresh / 10, (fresh, kept)


@pytest.mark.time_limit(120)
def test_an_idle_worker_gives_freed_memory_back(start_cluster):
    private = start_cluster(workers=1)
    worker = psutil.Process(private.workers[0].pid)
    with connected(private.address):
        assert gt.debug.get_worker_stats()[0]['host_memory_kept']
        x = gt.randn(25_000_000)  # 100 MB, and as much again for y
        y = x * 2
        assert y[:2].tolist() == (x[:2] * 2).tolist()
        holding = worker.memory_info().rss
        del x, y
        gt.sync()  # the releases go
        deadline = time.monotonic() + 30

        def trimmed() -> bool:  # the trim counts itself once malloc_trim has returned
            return (worker.memory_info().rss < holding - 150e6
                    and gt.debug.get_worker_stats()[0]['host_memory_trims'] >= 1)
        while not trimmed() and time.monotonic() < deadline:
            time.sleep(0.25)
        assert worker.memory_info().rss < holding - 150e6, (holding, worker.memory_info())
        assert gt.debug.get_worker_stats()[0]['host_memory_trims'] >= 1
