"""The scheduler's rules on stand-ins for workers and sessions: a window of programs in
flight per worker, the least-served session first (by measured time over its weight),
order kept within a session, fragments sent to all their workers at once, no credit
banked while idle, lost workers never blocking."""

from collections import deque
from dataclasses import dataclass, field

from gt.runtime.scheduler import WINDOW, Fragment, Scheduler


@dataclass
class FakeWorker:
    index: int
    alive: bool = True
    in_flight: int = 0


@dataclass(eq=False)
class FakeSession:
    name: str
    weight: float = 1.0
    served: float = 0.0
    queue: deque = field(default_factory=deque)


def make(workers: int = 2):
    handles = [FakeWorker(i) for i in range(workers)]
    sent: list = []
    scheduler = Scheduler(handles, lambda session, fragment, worker, *rest:
                          sent.append((session.name, fragment.request, worker)))
    return scheduler, handles, sent


def fragment(tag: int, *workers: int) -> Fragment:
    return Fragment(None, [], tag, [(w, None, [], []) for w in workers])


def test_a_window_of_programs_per_worker_then_the_least_served_session():
    scheduler, handles, sent = make(1)
    heavy, light = FakeSession('heavy'), FakeSession('light')
    for tag in range(10):
        scheduler.submit(heavy, fragment(tag, 0))
    assert [s[1] for s in sent] == list(range(WINDOW))  # the rest wait
    scheduler.submit(light, fragment(100, 0))
    assert len(sent) == WINDOW
    scheduler.done(0, heavy, 0.5)  # the heavy session has been served more
    assert sent[-1] == ('light', 100, 0)
    # Shared now: one program at a time waits at the worker, so the light session's
    # next request waits for the running program only.
    for _ in range(WINDOW - 1):
        scheduler.done(0, heavy, 0.5)
    assert sent[-1] == ('light', 100, 0) and handles[0].in_flight == 1
    scheduler.done(0, light, 0.001)
    assert sent[-1] == ('heavy', WINDOW, 0)  # order within a session is kept
    assert handles[0].in_flight == 1
    scheduler.submit(light, fragment(101, 0))
    assert sent[-1] == ('heavy', WINDOW, 0)  # waits for the one program running
    scheduler.done(0, heavy, 0.5)
    assert sent[-1] == ('light', 101, 0)


def test_weights_divide_the_time_served():
    scheduler, _, sent = make(1)
    double, single = FakeSession('double', weight=2.0), FakeSession('single')
    for tag in range(60):
        scheduler.submit(double, fragment(tag, 0))
        scheduler.submit(single, fragment(tag, 0))
    for _ in range(60):
        name = sent[len(sent) - WINDOW][0]  # the oldest in flight finishes, 10 ms each
        scheduler.done(0, double if name == 'double' else single, 0.010)
    counts = [name for name, *_ in sent[:60]]
    assert 36 <= counts.count('double') <= 44  # about 2 to 1


def test_a_fragment_goes_to_all_its_workers_at_once():
    scheduler, handles, sent = make(2)
    busy, gang = FakeSession('busy'), FakeSession('gang')
    for tag in range(WINDOW + 1):
        scheduler.submit(busy, fragment(tag, 1))
    scheduler.submit(gang, fragment(50, 0, 1))
    assert not any(name == 'gang' for name, *_ in sent)  # worker 1 has no room yet
    assert handles[0].in_flight == 0
    scheduler.done(1, busy, 0.5)
    assert [s for s in sent if s[0] == 'gang'] == [('gang', 50, 0), ('gang', 50, 1)]


def test_an_idle_session_banks_no_credit():
    scheduler, _, sent = make(1)
    old, new = FakeSession('old'), FakeSession('new', served=0.0)
    old.served = 5.0
    scheduler.submit(old, fragment(0, 0))
    scheduler.submit(new, fragment(1, 0))
    assert new.served == 5.0


def test_lost_workers_and_ended_sessions_never_block():
    scheduler, handles, sent = make(2)
    gone, other = FakeSession('gone'), FakeSession('other')
    for tag in range(5):
        scheduler.submit(gone, fragment(tag, 0))
    scheduler.forget(gone)
    handles[1].in_flight = WINDOW
    handles[1].alive = False
    scheduler.lost(1)
    scheduler.submit(other, fragment(9, 1))
    assert sent[-1] == ('other', 9, 1)
