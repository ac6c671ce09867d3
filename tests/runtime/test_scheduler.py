"""The scheduler's rules on stand-ins for workers and sessions: a window of programs in
flight per worker, the least-served session first (by measured time over its weight),
order kept within a session, fragments sent to all their workers at once, no credit
banked while idle, lost workers never blocking; and which work takes a worker's express
lane: a light session's single-worker work while another session's program runs."""

import itertools
import time
from collections import deque
from dataclasses import dataclass, field

from gt.runtime.peers import WorkerHandle
from gt.runtime.scheduler import (
    EXPRESS,
    EXPRESS_SECONDS,
    LONGEST_HALF_LIFE,
    OUT_LONG_SECONDS,
    WINDOW,
    Fragment,
    Scheduler,
)

_numbers = itertools.count()


def FakeWorker(index: int) -> WorkerHandle:
    return WorkerHandle(index, b'w%d' % index, f'w{index}', 'cpu', 'here', 0, 0.0)


@dataclass(eq=False)
class FakeSession:
    name: str
    weight: float = 1.0
    served: float = 0.0
    queue: deque = field(default_factory=deque)
    queued_peak: int = 0
    number: int = field(default_factory=lambda: next(_numbers))
    longest_recent: float | None = None
    longest_at: float = field(default_factory=time.monotonic)
    main_sent: deque = field(default_factory=deque)
    default_dtype: str = 'float32'


def make(workers: int = 2):
    handles = [FakeWorker(i) for i in range(workers)]
    sent: list = []
    scheduler = Scheduler(handles, lambda session, fragment, worker, *rest:
                          sent.append((session.name, fragment.request, worker)
                                      + ((EXPRESS,) if rest[-1] == EXPRESS else ())))
    return scheduler, handles, sent


def fragment(tag: int, *workers: int) -> Fragment:
    return Fragment(None, [], tag, [(w, None, [], [], []) for w in workers])


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


def _with_express_lanes(workers: int = 1):
    scheduler, handles, sent = make(workers)
    for handle in handles:
        handle.express = handle.identity + b'/express'
    return scheduler, handles, sent


def test_a_light_sessions_work_takes_the_express_lane_beside_a_long_program():
    scheduler, handles, sent = _with_express_lanes()
    heavy, light = FakeSession('heavy'), FakeSession('light')
    scheduler.submit(heavy, fragment(0, 0))
    scheduler.submit(heavy, fragment(1, 0))
    scheduler.done(0, heavy, 0.5)  # measured: heavy; fragment 1 now runs
    scheduler.submit(light, fragment(10, 0))
    assert sent[-1] == ('light', 10, 0)  # not measured yet: the main lane, behind heavy
    scheduler.done(0, heavy, 0.5)
    scheduler.done(0, light, EXPRESS_SECONDS / 10)
    scheduler.submit(heavy, fragment(2, 0))
    scheduler.submit(light, fragment(11, 0))
    assert sent[-2:] == [('heavy', 2, 0), ('light', 11, 0, 'express')]
    # Order within the session: its next fragment waits for the express program, even
    # with room on the main lane, and may not overtake it there.
    scheduler.done(0, heavy, 0.5)
    scheduler.submit(light, fragment(12, 0))
    assert sent[-1] == ('light', 11, 0, 'express')
    scheduler.done(0, light, EXPRESS_SECONDS / 10, 'express')
    assert sent[-1] == ('light', 12, 0) and handles[0].express_session is None


def test_only_light_single_worker_work_of_a_session_idle_on_that_worker_goes_express():
    scheduler, handles, sent = _with_express_lanes(2)
    running, light, gang, busy = (FakeSession(n) for n in ('running', 'light', 'gang', 'busy'))
    for session in (light, gang, busy):
        session.longest_recent = EXPRESS_SECONDS / 10
    for tag in range(WINDOW):
        scheduler.submit(running, fragment(tag, 0))
    scheduler.submit(gang, fragment(20, 0, 1))  # two workers: it may move data
    assert sent[-1][0] == 'running'
    scheduler.submit(light, fragment(30, 0))
    assert sent[-1] == ('light', 30, 0, 'express')
    scheduler.submit(busy, fragment(40, 0))  # the lane holds one program at a time
    assert sent[-1] == ('light', 30, 0, 'express')
    scheduler.done(0, light, 0.001, 'express')
    assert sent[-1] == ('busy', 40, 0, 'express')
    scheduler.done(0, busy, 0.001, 'express')
    hog = FakeSession('hog', longest_recent=1.0)
    scheduler.submit(hog, fragment(50, 0))  # a heavy session never goes express
    assert sent[-1] == ('busy', 40, 0, 'express')
    # A session with work on the main lane waits there, behind it.
    handles[0].main_sessions[busy.number] = 1
    scheduler.submit(busy, fragment(41, 0))
    assert sent[-1] == ('busy', 40, 0, 'express')


def test_beside_light_work_alone_a_light_session_waits_its_turn_on_the_main_lane():
    """The lane is for waits behind long programs: among light sessions it would go to
    whichever reply came back first, and they would run unequally."""
    scheduler, handles, sent = _with_express_lanes()
    first, second = (FakeSession(n, longest_recent=EXPRESS_SECONDS / 10)
                     for n in ('first', 'second'))
    scheduler.submit(first, fragment(0, 0))
    scheduler.submit(second, fragment(10, 0))
    assert sent == [('first', 0, 0), ('second', 10, 0)]  # the main lane: room for both
    scheduler.done(0, first, EXPRESS_SECONDS / 10)
    scheduler.done(0, second, EXPRESS_SECONDS / 10)
    hog = FakeSession('hog', longest_recent=1.0)
    scheduler.submit(hog, fragment(20, 0))
    scheduler.submit(first, fragment(1, 0))
    assert sent[-1] == ('first', 1, 0, 'express')  # beside a long program it goes express
    scheduler.forget(hog)
    scheduler.done(0, None, 1.0)
    scheduler.done(0, first, EXPRESS_SECONDS / 10, EXPRESS)
    scheduler.submit(second, fragment(11, 0))
    scheduler.submit(first, fragment(2, 0))
    assert sent[-1] == ('second', 11, 0)  # shared now: one program at a time, no lane
    scheduler.done(0, second, EXPRESS_SECONDS / 10)
    assert sent[-1] == ('first', 2, 0)


def test_a_stats_request_waits_for_its_sessions_express_program_alone():
    """A stats request (no sends) is its session's barrier: it goes once that session's
    express program is done, while another session's goes at once."""
    scheduler, handles, sent = _with_express_lanes()
    running, light, other = (FakeSession(n) for n in ('running', 'light', 'other'))
    light.longest_recent = EXPRESS_SECONDS / 10
    scheduler.submit(running, fragment(0, 0))
    scheduler.submit(light, fragment(10, 0))
    assert sent[-1] == ('light', 10, 0, 'express')
    went = []
    assert scheduler.express_running(light) and not scheduler.express_running(other)
    scheduler.submit(light, Fragment(None, [], 11, [], lambda: went.append('light')))
    scheduler.submit(other, Fragment(None, [], 20, [], lambda: went.append('other')))
    assert went == ['other']
    scheduler.done(0, running, 0.5)  # the main lane's work ending changes nothing
    assert went == ['other']
    scheduler.done(0, light, EXPRESS_SECONDS / 10, EXPRESS)
    assert went == ['other', 'light'] and not light.queue


def test_a_session_whose_recent_programs_were_long_is_light_again_later():
    scheduler, handles, sent = _with_express_lanes()
    session = FakeSession('mixed')
    scheduler.submit(session, fragment(0, 0))
    scheduler.done(0, session, 10 * EXPRESS_SECONDS)  # a cold first run, say
    scheduler.submit(session, fragment(1, 0))
    scheduler.done(0, session, EXPRESS_SECONDS / 100)
    assert session.longest_recent > EXPRESS_SECONDS  # short ones do not undo it at once
    session.longest_at -= 4 * LONGEST_HALF_LIFE  # as if that was 2 s ago: 1/16 of it now
    other = FakeSession('other')
    scheduler.submit(other, fragment(10, 0))  # keeps the main lane busy
    scheduler.submit(session, fragment(2, 0))
    assert sent[-1] == ('mixed', 2, 0, 'express')


def test_without_an_express_lane_or_when_its_worker_is_lost_work_waits():
    scheduler, handles, sent = make(1)
    heavy, light = FakeSession('heavy'), FakeSession('light', longest_recent=0.0001)
    for tag in range(WINDOW):
        scheduler.submit(heavy, fragment(tag, 0))
    scheduler.submit(light, fragment(10, 0))
    assert sent[-1][0] == 'heavy'  # no lane connected
    handles[0].express = b'lane'
    scheduler.dispatch()
    assert sent[-1] == ('light', 10, 0, 'express')
    handles[0].alive = False
    scheduler.lost(0)
    assert handles[0].express_session is None and handles[0].in_flight == 0


def test_a_program_out_long_makes_the_main_lane_long_whatever_its_sessions_past():
    """A heavy session's last program ended long ago (its length has decayed to a light
    one's) but its current one has been out OUT_LONG_SECONDS: a light session goes
    express beside it, rather than waiting behind the whole program."""
    scheduler, handles, sent = _with_express_lanes(1)
    heavy = FakeSession('heavy', longest_recent=4.0,
                        longest_at=time.monotonic() - 40 * LONGEST_HALF_LIFE)
    light = FakeSession('light', longest_recent=EXPRESS_SECONDS / 10)
    scheduler.submit(heavy, fragment(0, 0))
    scheduler.submit(light, fragment(10, 0))
    assert sent[-1] == ('light', 10, 0)  # just sent: not known to be long yet
    scheduler.done(0, light, EXPRESS_SECONDS / 10)
    heavy.main_sent[0] -= 2 * OUT_LONG_SECONDS  # as if sent that long ago, still running
    scheduler.submit(light, fragment(11, 0))
    assert sent[-1] == ('light', 11, 0, 'express')
    scheduler.done(0, heavy, 4.0)
    assert not heavy.main_sent


def test_a_new_sessions_small_first_work_takes_the_express_lane():
    """A session not measured yet is light for a small fragment (a new client's first
    ops beside a long program), not for a large one; once measured, its time decides."""
    scheduler, handles, sent = _with_express_lanes()
    heavy, new, big = FakeSession('heavy'), FakeSession('new'), FakeSession('big')
    scheduler.submit(heavy, fragment(0, 0))
    scheduler.submit(heavy, fragment(1, 0))
    scheduler.done(0, heavy, 0.5)  # measured: heavy; fragment 1 now runs
    scheduler.submit(big, fragment(20, 0))
    assert sent[-1] == ('big', 20, 0)  # not small: the main lane, behind heavy
    scheduler.submit(new, fragment(10, 0)._replace(small=True))
    assert sent[-1] == ('new', 10, 0, 'express')
    scheduler.done(0, new, 0.5, 'express')  # measured: its first program was long
    scheduler.submit(new, fragment(11, 0)._replace(small=True))
    assert sent[-1] != ('new', 11, 0, 'express')
