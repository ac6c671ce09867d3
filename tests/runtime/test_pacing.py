"""A client runs at most GT_MAX_QUEUED fragments ahead of the workers (gt.runtime.pacing):
past that, it waits, as a torch script waits for a full GPU launch queue; a real cluster,
a loop whose worker is slower than its client, and torch for the numbers."""

import numpy as np
import pytest
import torch
from gt_test_support import connected, finish_script, read_line, run_script, start_script

import gt
from gt.runtime import pacing
from gt.runtime.protocol import Mark, Marked
from gt.runtime.transport import dealer, receive, send

STEPS = 120


def run_ahead(address: str, fetch_every: int | None = None) -> tuple[np.ndarray, int]:
    """STEPS steps of four 256x256 matmuls (the worker's milliseconds against the client's
    tens of microseconds), each sent at once; the result and the session's longest queue."""
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((256, 256), dtype=np.float32) / 16
    start = rng.standard_normal((256, 256), dtype=np.float32)
    with connected(address):
        w, x = gt.from_numpy(weight), gt.from_numpy(start)
        for step in range(STEPS):
            for _ in range(4):
                x = gt.tanh(x @ w)
            gt.sync()
            if fetch_every and step % fetch_every == fetch_every - 1:
                x.sum().item()  # Marked answers arrive while this waits
        result = x.numpy()
        peak = gt.debug.get_dispatcher_stats()['session']['queued_peak']
    return result, peak


def torch_result() -> np.ndarray:
    rng = np.random.default_rng(0)
    w = torch.from_numpy(rng.standard_normal((256, 256), dtype=np.float32) / 16)
    x = torch.from_numpy(rng.standard_normal((256, 256), dtype=np.float32))
    for _ in range(STEPS * 4):
        x = torch.tanh(x @ w)
    return x.numpy()


@pytest.mark.parametrize('fetch_every', [None, 7])
def test_a_client_far_ahead_of_its_worker_waits_and_the_queue_stays_short(
        cluster, monkeypatch, fetch_every):
    monkeypatch.setattr(pacing, 'MAX_QUEUED', 8)
    result, peak = run_ahead(cluster.address, fetch_every)
    assert peak <= 8 + 1, peak  # its fragments, and the Mark among them
    np.testing.assert_allclose(result, torch_result(), rtol=1e-5, atol=1e-5)

    monkeypatch.setattr(pacing, 'MAX_QUEUED', 0)  # no bound: the same loop runs far ahead
    result, unbounded_peak = run_ahead(cluster.address)
    assert unbounded_peak > 4 * 8, unbounded_peak
    np.testing.assert_allclose(result, torch_result(), rtol=1e-5, atol=1e-5)


def test_a_mark_from_a_stranger_is_answered_at_once(cluster):
    """A Mark from a session the dispatcher does not know (one it forgot on a restart)
    has nothing before it: the client must not wait for ever."""
    stranger = dealer(cluster.endpoint)
    try:
        send(stranger, Mark(7))
        assert stranger.poll(5000), 'no answer to a Mark'
        message, _ = receive(stranger)
        assert message == Marked(7)
    finally:
        stranger.close(linger=0)


def test_gt_max_queued_sets_the_bound(cluster):
    result = run_script(f'''
        import gt
        gt.connect({cluster.address!r})
        w, x = gt.randn(256, 256) / 16, gt.randn(256, 256)
        for _ in range(40):
            for _ in range(4):
                x = gt.tanh(x @ w)
            gt.sync()
        x.sum().item()
        print('peak', gt.debug.get_dispatcher_stats()['session']['queued_peak'])
    ''', env={'GT_MAX_QUEUED': '4'})
    assert result.returncode == 0, result.explain()
    assert 2 <= int(result.stdout.split()[-1]) <= 4 + 1, result.stdout


@pytest.mark.time_limit(90)
def test_a_client_streaming_to_a_dispatcher_that_died_is_told_at_its_next_wait(start_cluster):
    """Unpaced, such a loop ran on to its end, its work queued in the socket; paced, a
    flush waits for the dispatcher and says it is gone (GT_TIMEOUT)."""
    private = start_cluster(workers=1)
    script = start_script(f'''
        import gt
        gt.connect({private.address!r})
        w, x = gt.randn(256, 256) / 16, gt.randn(256, 256)
        x.sum().item()
        print('streaming', flush=True)
        try:
            for _ in range(100_000):
                for _ in range(4):
                    x = gt.tanh(x @ w)
                gt.sync()
            print('the loop ran to its end')
        except ConnectionError as error:
            print('raised:', error)
    ''', env={'GT_TIMEOUT': '2'})
    assert read_line(script, 60).strip() == 'streaming'
    private.server.kill()
    result = finish_script(script, 60)
    assert 'raised: no answer from the GT dispatcher' in result.stdout, result.explain()
