"""Which session's work each worker runs next: fair sharing by measured worker time.

A fragment's worker messages wait in its session's queue, in order, until every worker
it involves has room: fewer programs in flight (sent, not yet Done) than its window. The
next fragment to go is the head of the queue of the session served least so far (its
worker-seconds, as workers report them in Done, divided by its weight), among those
whose head fits: start-time fair queueing on measured time rather than on message
counts. A fragment goes to all its workers at once (gang scheduling), so its moves never
wait for a peer that is busy with another session's queue, and every worker receives
fragments in one global order, so two gangs can never wait on each other. A session
that was idle does not bank credit: it starts at the level of the session served last
(start-time fair queueing's virtual time).

The window is what keeps a worker busy: with 1 it idles for a dispatcher round trip
between programs (measured: a lone client streaming small fragments runs 1.5x slower
than with 4), while every program waiting at a worker is one a light client may have to
wait behind. So a worker that one session uses gets `WINDOW` (GT_WORKER_WINDOW, 4),
and one that several sessions used within the last half second gets 1: then a light
session waits for the program running there, not a queue (see benchmarks/multiplex.py).

Nor need it wait for that program: each worker has an express lane (a second thread,
gt.runtime.express_lane). A fragment goes there instead of behind the main lane's work
when it involves that worker alone (so it moves nothing), the lane is free, the main
lane holds a program of a session not known to be light, its session has nothing on
that worker's main lane (order within a session holds: nothing
of it goes to the main lane either until the express program is done), and its session
is light: its longest recent program, halving every LONGEST_HALF_LIFE seconds, is at
most EXPRESS_SECONDS (GT_EXPRESS_SECONDS, 2 ms; 0 turns the lane off). A light client
then waits for its own work, not a heavy one's. A session with no program run yet is
light for a small fragment (`Fragment.small`: a few ops on small tensors, as the
dispatcher judges from its plan), so a new client's first ops beside a heavy program do
not wait for it whole (its first op waited 48 s behind a 60 s program); once run, its
programs are measured like any other's.

A stats request is a fragment with no sends: it goes once everything its session sent
before it is dispatched and none of it is on an express lane, and each worker answers it
on its main lane after the programs before it, with its device synchronized. So it is
the session's barrier (`gt.cuda.synchronize()`, `gt.debug.get_worker_stats()`).
"""

import time
from typing import Callable, NamedTuple

from gt.runtime import environment

WINDOW = environment.integer('GT_WORKER_WINDOW')
# While several sessions use a worker: at most this many programs wait there.
SHARED_WINDOW = environment.integer('GT_SHARED_WINDOW')
RECENT_SECONDS = 0.5  # a session that sent work this recently still shares the worker
EXPRESS_SECONDS = environment.number('GT_EXPRESS_SECONDS')
# A session's longest recent program counts half as much after this many seconds: a cold
# first run (tens of ms) makes it light again within a few seconds, while a session that
# keeps running long programs stays heavy.
LONGEST_HALF_LIFE = 0.5
# A program out on a main lane this long is long, whatever its session's past programs:
# well above a light program's wait behind another, far below a heavy one's run.
OUT_LONG_SECONDS = 0.1
MAIN, EXPRESS = 'main', 'express'
# A fragment this small is light before its session's programs are measured: at most
# this many ops, none on a value of more elements (a 256x256 matmul: about 1 ms).
SMALL_OPS = 32
SMALL_ELEMENTS = 1 << 16


class Fragment(NamedTuple):
    """One Submit's work: `sends` is (worker, program, releases, reverts, fetches) per worker;
    `then` runs when its turn comes (a stats request after the work before it)."""

    message: object
    frames: list
    request: int
    sends: list
    then: Callable | None = None
    small: bool = False  # few ops on small tensors: light, for a session not yet measured


class Scheduler:
    def __init__(self, workers: list, send_work: Callable) -> None:
        self.workers = workers  # the dispatcher's WorkerHandles, by index
        self.send_work = send_work  # send_work(session, fragment, worker, program, ...)
        self.waiting: list = []  # sessions with queued fragments
        self.clock = 0.0  # the served level of the session whose fragment went last
        self.users: dict[int, dict] = {}  # worker -> {session: when it last sent there}
        self.sessions: dict[int, object] = {}  # number -> session, while it has one

    def submit(self, session, fragment: Fragment) -> None:
        self.sessions[session.number] = session
        if not session.queue:
            session.served = max(session.served, self.clock)  # no credit for idle time
            self.waiting.append(session)
        session.queue.append(fragment)
        session.queued_peak = max(session.queued_peak, len(session.queue))
        self.dispatch()

    def done(self, worker: int, session, seconds: float, lane: str = MAIN) -> None:
        """A RunProgram's reply came from `worker`'s `lane`; `session` is None when it
        has ended since."""
        handle = self.workers[worker]
        if lane == EXPRESS:
            handle.express_session = None
        else:
            handle.in_flight = max(0, handle.in_flight - 1)
            if session is not None:
                if session.main_sent:
                    session.main_sent.popleft()
                left = handle.main_sessions.get(session.number, 0) - 1
                if left > 0:
                    handle.main_sessions[session.number] = left
                else:
                    handle.main_sessions.pop(session.number, None)
        if session is not None:
            session.served += max(0.0, seconds) / session.weight
            now = time.monotonic()
            session.longest_recent = max(seconds, _longest_now(session, now) or 0.0)
            session.longest_at = now
        self.dispatch()

    def forget(self, session) -> None:
        """A session ended: its queued work is dropped (its values go with it)."""
        session.queue.clear()
        self.sessions.pop(session.number, None)
        if session in self.waiting:
            self.waiting.remove(session)
        for handle in self.workers:
            handle.main_sessions.pop(session.number, None)

    def lost(self, worker: int) -> None:
        self.workers[worker].reset_lanes()
        for session in self.sessions.values():
            session.main_sent.clear()  # its programs there never say Done: start afresh
        self.dispatch()

    def dispatch(self) -> None:
        while self.waiting:
            ready = [(s, lane) for s in self.waiting
                     if (lane := self._lane(s, s.queue[0])) is not None]
            if not ready:
                return
            session, lane = min(ready, key=lambda ready: ready[0].served)
            self.clock = session.served
            fragment = session.queue.popleft()
            if not session.queue:
                self.waiting.remove(session)
            now = time.monotonic()
            for worker, program, releases, reverts, fetches in fragment.sends:
                handle = self.workers[worker]
                if handle.alive and lane == EXPRESS:
                    handle.express_session = session
                elif handle.alive:
                    session.main_sent.append(now)
                    handle.in_flight += 1
                    handle.main_sessions[session.number] = (
                        handle.main_sessions.get(session.number, 0) + 1)
                self.users.setdefault(worker, {})[id(session)] = now
                self.send_work(session, fragment, worker, program, releases, reverts, fetches,
                               lane)
            if fragment.then is not None:
                fragment.then()

    def _lane(self, session, fragment: Fragment) -> str | None:
        """Where `session`'s next fragment can go now: MAIN, EXPRESS or nowhere yet.
        Express whenever it may and the main lane holds a program that may be long, even
        with room there: a program waiting at a worker waits for all before it."""
        if not fragment.sends:  # a stats request: after all of the session's work
            return None if self.express_running(session) else MAIN
        if len(fragment.sends) == 1:
            worker = fragment.sends[0][0]
            if self._long_on_main(worker) and self._express_takes(session, worker, fragment):
                return EXPRESS
        if all(self._main_takes(session, w) for w, *_ in fragment.sends):
            return MAIN
        return None

    def express_running(self, session) -> bool:
        """Whether a program of `session` is on some worker's express lane."""
        return any(handle.express_session is session for handle in self.workers)

    def _main_takes(self, session, worker: int) -> bool:
        """Lost workers never block: what is sent to them is dropped, and requests that
        wait on them were failed when they were lost."""
        handle = self.workers[worker]
        if not handle.alive:
            return True
        return (handle.in_flight < self._window(worker)
                and handle.express_session is not session)

    def _express_takes(self, session, worker: int, fragment: Fragment) -> bool:
        handle = self.workers[worker]
        return (EXPRESS_SECONDS > 0 and handle.alive and handle.express is not None
                and handle.express_session is None
                and session.number not in handle.main_sessions
                and session.default_dtype == 'float32'  # see Worker.default_dtype_lock
                and (_light(session, time.monotonic())
                     or (session.longest_recent is None and fragment.small)))

    def _long_on_main(self, worker: int) -> bool:
        """Whether the worker's main lane holds work of a session not known to be light.
        Only beside such work does the lane spare a light program a wait; beside light
        work alone it made the sessions unequal (whichever reply came back first took the
        free lane again): 4 identical light clients ran 1.06-1.79x apart with it, 1.02-1.03
        without (benchmarks/multiplex.py). A program out for OUT_LONG_SECONDS is long
        whatever its session's past: a heavy session whose 4 s programs ran one
        after another counted as light 5 s after its last one finished (the decay), and a
        light session's work then waited behind a whole program."""
        now = time.monotonic()
        return any(not _light(session, now) or _out_long(session, now)
                   for session in map(self.sessions.get, self.workers[worker].main_sessions))

    def _window(self, worker: int) -> int:
        """WINDOW for a worker one session uses; SHARED_WINDOW while several do, so that
        a light session waits for at most the one program running there."""
        users = self.users.get(worker)
        if not users or len(users) == 1:
            return WINDOW
        cutoff = time.monotonic() - RECENT_SECONDS
        for session in [s for s, when in users.items() if when < cutoff]:
            del users[session]
        return WINDOW if len(users) <= 1 else SHARED_WINDOW


def _out_long(session, now: float) -> bool:
    """Whether `session`'s oldest program on a main lane has been out OUT_LONG_SECONDS."""
    return session is not None and bool(session.main_sent) and \
        now - session.main_sent[0] > OUT_LONG_SECONDS


def _light(session, now: float) -> bool:
    """Whether `session`'s recent programs were all short (unknown: not light)."""
    longest = None if session is None else _longest_now(session, now)
    return longest is not None and longest <= EXPRESS_SECONDS


def _longest_now(session, now: float) -> float | None:
    """The session's longest recent program, decayed to `now`."""
    if session.longest_recent is None:
        return None
    return session.longest_recent * 0.5 ** ((now - session.longest_at) / LONGEST_HALF_LIFE)


def small(plan) -> bool:
    """Whether a fragment's plan (None: releases alone) is `Fragment.small`."""
    return plan is None or (plan.largest <= SMALL_ELEMENTS
                            and sum(plan.ops.values()) <= SMALL_OPS)
