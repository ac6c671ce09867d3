"""A worker that is behind reports its finished programs to the dispatcher several to a
message, on real processes: the dispatcher's counts of Done messages and of the programs
they reported say how many went together, and the work's result is torch's."""

import time

import torch
from gt_test_support import connected

import gt
from gt.runtime.scheduler import RECENT_SECONDS

PROGRAMS = 24


def _done_counts() -> tuple[int, int]:
    stats = gt.debug.get_dispatcher_stats()
    return stats['done_messages'], stats['done_programs']


def test_a_worker_with_programs_waiting_reports_them_done_together(cluster):
    start = torch.randn(500, 500) / 25  # under the auto-sharding size: one worker runs it
    expected = start
    for _ in range(PROGRAMS):
        expected = (expected @ expected).tanh()
    with connected(cluster.address):
        x = gt.tensor(start)
        x.numpy()
        # Sessions of earlier tests shared this worker: until they are half a second
        # past, its window is 1 program, and nothing ever waits there.
        time.sleep(RECENT_SECONDS + 0.2)
        messages_before, programs_before = _done_counts()
        for _ in range(PROGRAMS):
            x = (x @ x).tanh()
            gt.sync()  # one program each, sent at once: they queue at the worker
        result = x.numpy()
        messages_after, programs_after = _done_counts()
    torch.testing.assert_close(torch.from_numpy(result), expected)
    # Every program is reported; the stats requests in between add none.
    assert programs_after - programs_before == PROGRAMS
    # The dispatcher keeps 4 in flight, and a worker owes Dones while 2 or more wait:
    # mostly three to a message, never one each.
    assert messages_after - messages_before <= PROGRAMS // 2


def test_an_idle_worker_reports_each_program_at_once(cluster):
    with connected(cluster.address):
        x = gt.ones(4)
        x.numpy()
        for _ in range(5):
            messages_before, programs_before = _done_counts()
            x = x + 1
            gt.sync()
            # The stats request reaches the worker after the program, and its reply
            # after the program's Done: nothing waited behind it, so nothing was owed.
            messages_after, programs_after = _done_counts()
            assert (messages_after - messages_before, programs_after - programs_before) == (1, 1)
        assert x.tolist() == [6.0] * 4
