"""The dispatcher's side of its workers, a mixin of `Dispatcher` kept apart to keep files
short: workers joining and being lost, their heartbeats and replies, and the programs
sent to them (a program's encoding travels the first time a worker gets it; the
dispatcher mirrors each worker's cache of decoded programs).
"""

import hmac
import time

import zmq

from gt.runtime import diagnostics, environment
from gt.runtime.peers import Session, WorkerHandle
from gt.runtime.planner import WorkerPlan
from gt.runtime.protocol import (
    Done,
    EndSession,
    ExpressReady,
    Fetched,
    Heartbeat,
    Peers,
    Register,
    Reregister,
    RunProgram,
    SessionEnded,
    Stats,
    StatsRequest,
    Submit,
)
from gt.runtime.scheduler import EXPRESS, MAIN, Fragment
from gt.runtime.session_errors import failures

HEARTBEAT_TIMEOUT = environment.number('GT_HEARTBEAT_TIMEOUT')
# Clients send KeepAlive every second; a session silent this long belongs to a dead client.
SESSION_TIMEOUT = environment.number('GT_SESSION_TIMEOUT')
MONITOR_PATIENCE_SECONDS = 1.0  # before a monitor's statistics go out with a busy worker's last
ENDED_SESSIONS_KEPT = 1024  # sessions ended by timeout, remembered to tell their clients
PROGRAMS_PER_WORKER = 1024  # decoded programs a worker keeps; older ones are forgotten
PROGRAM_IDS_KEPT = 4 * PROGRAMS_PER_WORKER


class WorkerLinks:
    def _program_id(self, encoded: bytes) -> int:
        """Ids are never reused, so a worker can never run a program under a stale id."""
        program_id = self.program_ids.get(encoded)
        if program_id is None:
            program_id = self.program_ids[encoded] = next(self.program_counter)
            if len(self.program_ids) > PROGRAM_IDS_KEPT:
                self.program_ids.popitem(last=False)
        else:
            self.program_ids.move_to_end(encoded)
        return program_id

    def _send_scheduled(self, session: Session, fragment: Fragment, worker: int,
                        program: WorkerPlan | None, releases: list, reverts: list,
                        fetches: list, lane: str) -> None:
        self._send_work(session, fragment.message, fragment.frames, worker, program, releases,
                        reverts, fetches, fragment.request, lane)

    def _lane_of(self, identity: bytes) -> tuple[WorkerHandle | None, str]:
        """The worker a reply came from, and by which of its lanes."""
        handle = self.worker_by_identity.get(identity)
        if handle is not None:
            return handle, MAIN
        return self.express_by_identity.get(identity), EXPRESS

    def done(self, identity: bytes, message: Done, frames: list) -> None:
        handle, lane = self._lane_of(identity)
        if handle is None or not isinstance(message.programs, list):
            return
        self.done_messages += 1
        for report in message.programs:
            try:
                session, seconds = report
            except (TypeError, ValueError):
                continue
            if not isinstance(session, int):
                continue
            seconds = seconds if isinstance(seconds, (int, float)) else 0.0
            self.done_programs += 1
            self._program_done(handle, lane, self.session_numbers.get(session), seconds)

    def _program_done(self, handle: WorkerHandle, lane: str, session: Session | None,
                      seconds: float) -> None:
        ran = handle.express_session if lane == EXPRESS else None
        self.scheduler.done(handle.index, session, seconds, lane)
        self.monitor.charge(handle.index, session, seconds)
        if ran is not None and ran.number not in self.session_numbers:
            # It ended while its program ran on the express lane, which may have kept
            # values after the worker dropped the session's: drop them too.
            self._send(handle.identity, EndSession(ran.number))

    def express_ready(self, identity: bytes, message: ExpressReady, frames: list) -> None:
        """A worker's express lane is connected (its key says whose it is)."""
        handle = self.worker_by_identity.get(message.worker) if isinstance(
            message.worker, bytes) else None
        if (handle is None or handle.express == identity or not handle.express_key
                or not isinstance(message.key, str)
                or not hmac.compare_digest(message.key.encode(), handle.express_key.encode())):
            return
        if handle.express is not None:
            self.express_by_identity.pop(handle.express, None)
        handle.express = identity
        self.express_by_identity[identity] = handle
        self.scheduler.dispatch()

    def _send_work(self, session: Session, message: Submit, frames: list, worker: int,
                   program: WorkerPlan | None, releases: list, reverts: list, fetches: list,
                   request: int, lane: str = MAIN) -> None:
        handle = self.workers[worker]
        express = lane == EXPRESS
        programs = handle.express_programs if express else handle.programs
        program_id, encoded, externals, forget = -1, None, [], []
        if program is not None:
            program_id = self._program_id(program.program)
            if program_id in programs:
                programs.move_to_end(program_id)
            else:
                encoded = program.program
                programs[program_id] = None
                while len(programs) > PROGRAMS_PER_WORKER:
                    forget.append(programs.popitem(last=False)[0])
            externals = [message.externals[i] for i in program.input_refs]
        data = frames if program is not None and program.reads_data else []
        if self.monitor.on:
            self.monitor.emit('WORKER_SEND', handle.label, 'RunProgram', session=session.number,
                             worker=handle.index, program=program_id,
                             ops=program.ops if program else 0, fetch=len(fetches),
                             releases=len(releases), bytes=sum(map(nbytes, data)),
                             first=encoded is not None, **({'lane': EXPRESS} if express else {}))
        self._send(handle.express if express else handle.identity, RunProgram(
            session.number, program_id, encoded, message.base, externals,
            message.literals if program else [], releases, reverts, fetches, request, forget,
            session.shared_memory_probe if fetches else '',
        ), data)
        self.bytes_from_clients += sum(map(nbytes, data))

    def register(self, identity: bytes, message: Register, frames: list) -> None:
        problem = register_problem(message)
        if problem is not None:
            # A Register of the wrong shape once joined as a worker, and every program
            # placed on it failed ("sync_generator failed: StopIteration").
            return self._refuse(identity, 'a worker', f'malformed Register: {problem}')
        if not self._admitted(identity, message.token, f'worker {message.name}'):
            return
        handle = self.worker_by_identity.get(identity)
        if handle is not None:
            if not handle.alive:  # back after a stall: it dropped its state, so start clean
                handle.alive, handle.last_seen = True, time.monotonic()
                handle.programs.clear()
                handle.express_programs.clear()
                handle.reset_lanes()
                handle.peer_endpoints = [str(e) for e in message.peer_endpoints]
                handle.peer_key = str(message.peer_key)
                self._rehome_stranded(handle)
                self._announce_peers()
                self._welcome_waiting()
            return
        handle = WorkerHandle(len(self.workers), identity, str(message.name),
                              str(message.device), str(message.host), message.pid,
                              time.monotonic(), peer_endpoints=[
                                  str(e) for e in message.peer_endpoints],
                              peer_key=str(message.peer_key),
                              express_key=str(message.express_key))
        self.workers.append(handle)
        self.worker_by_identity[identity] = handle
        if self.monitor.on:
            self.monitor.emit('WORKER_JOIN', handle.label, 'Register', worker=handle.index,
                             name=handle.name, device=handle.device, host=handle.host)
        diagnostics.verbose('dispatcher', f'worker {handle.index} joined: {handle.device} on '
                            f'{handle.host} (pid {handle.pid})')
        self._rehome_stranded(handle)
        self._announce_peers()
        self._welcome_waiting()

    def _rehome_stranded(self, handle: WorkerHandle) -> None:
        """Sessions whose home worker was lost with no other alive (their only one) make
        their new tensors on the worker that just joined: before, every later op failed
        for good, naming the lost worker."""
        for session in self.sessions.values():
            if not self.workers[session.home_worker].alive:
                session.home_worker = handle.index

    def _announce_peers(self) -> None:
        """Tell every live worker its index and where its peers are (and which are lost)."""
        peers = [[w.index, w.host, w.peer_endpoints, w.alive, w.peer_key]
                 for w in self.workers]
        for handle in self._live_workers():
            self._send(handle.identity, Peers(handle.index, peers, self.salt,
                                              self.monitor.reporting_programs))

    def heartbeat(self, identity: bytes, message: Heartbeat, frames: list) -> None:
        if not isinstance(message.worker, bytes):
            return
        handle = self.worker_by_identity.get(message.worker)
        if handle is None or not handle.alive:
            # A worker of a previous dispatcher, or one declared lost during a stall: its
            # state is stale either way, so it starts afresh.
            self._send(message.worker, Reregister())
            return
        handle.last_seen = time.monotonic()
        if isinstance(message.activity, dict):
            self.monitor.note_activity(handle, message.activity)

    def _stats(self, identity: bytes, message: StatsRequest) -> None:
        """Ask every live worker for its statistics; the reply gathers them."""
        live = self._live_workers()
        request = self._open_request(identity, message.request, {w.index for w in live},
                                     is_stats=True)
        for worker in live:
            self._send(worker.identity, StatsRequest(request))
            if self.monitor.on and identity in self.sessions:
                self.monitor.emit('WORKER_SEND', worker.label, 'Stats', worker=worker.index,
                                  request=request)
        if not live:
            self._finish(request)

    def worker_reply(self, identity: bytes, message: Fetched | Stats, frames: list) -> None:
        handle, lane = self._lane_of(identity)
        pending = self.pending.get(message.request) if isinstance(message.request, int) else None
        if handle is None:
            return
        if isinstance(message, Fetched) and isinstance(message.seconds, (int, float)):
            owner = self.sessions.get(pending.identity) if pending else None
            self._program_done(handle, lane, owner, message.seconds)  # it ends a RunProgram
        if isinstance(message, Stats):
            handle.last_stats, handle.last_stats_at = message.workers, time.monotonic()
        if pending is None or handle.index not in pending.workers:
            return
        # A monitor's statistics (top, trace: no session) stay out of what it watches.
        if self.monitor.on and (isinstance(message, Fetched) or pending.identity in self.sessions):
            errors = failures(message.errors) if isinstance(message, Fetched) else 0
            self.monitor.emit('WORKER_RECV', handle.label, type(message).__name__,
                             worker=handle.index, request=message.request,
                             success=errors == 0, errors=errors,
                             bytes=sum(map(nbytes, frames)),
                             **({'lane': EXPRESS} if lane == EXPRESS else {}))
        pending.workers.discard(handle.index)
        if isinstance(message, Stats):
            pending.stats.extend(dict(s, index=handle.index) for s in message.workers)
        else:
            # Put each value back at its place in the client's fetch list.
            frames = iter(frames)
            for (position, piece), header in zip(pending.positions.get(handle.index, []),
                                                 message.tensors):
                pending.tensors[position][piece] = header
                has_frame = header is not None and len(header) == 2  # not in shared memory
                pending.frames[position][piece] = next(frames) if has_frame else None
            pending.errors.extend(message.errors)
        if not pending.workers:
            self._finish(message.request)

    def _answer_waiting_monitors(self) -> None:
        """A monitor's statistics (top, trace: no session) that a busy worker has not
        answered for `MONITOR_PATIENCE_SECONDS` go out with that worker's last statistics,
        marked with their age (`stale_seconds`; None: it never sent any), rather than
        after its program: a worker answers between programs, and one program may run for
        minutes. A session's request waits: it is that session's barrier."""
        now = time.monotonic()
        for request, pending in list(self.pending.items()):
            if (not pending.is_stats or pending.identity in self.sessions
                    or now - pending.opened < MONITOR_PATIENCE_SECONDS):
                continue
            for index in sorted(pending.workers):
                handle = self.workers[index]
                age = round(now - handle.last_stats_at, 1) if handle.last_stats else None
                known = handle.last_stats or [self._describe(handle)]
                pending.stats.extend(dict(s, index=index, stale_seconds=age) for s in known)
            pending.workers.clear()
            self._finish(request)

    def _check_liveness(self) -> None:
        self._answer_waiting_monitors()
        now = time.monotonic()
        for handle in self._live_workers():
            if now - handle.last_seen > HEARTBEAT_TIMEOUT:
                self._lose(handle)
        for identity, session in list(self.sessions.items()):
            if now - session.last_seen > SESSION_TIMEOUT:
                self._end_session(identity, 'timeout')  # its client died without goodbye
                # Or it was stopped (SIGSTOP, a suspended laptop): if it speaks again, it
                # hears why its work is refused, not "say Hello first".
                self.ended_sessions[identity] = SessionEnded(session.number, (
                    f'the GT server ended session {session.number} after '
                    f'{SESSION_TIMEOUT:g} s without contact from this client '
                    '(GT_SESSION_TIMEOUT; was this process stopped or suspended?): its '
                    'tensors are gone'))
                while len(self.ended_sessions) > ENDED_SESSIONS_KEPT:
                    self.ended_sessions.popitem(last=False)

    def _excuse_silence(self, seconds: float) -> None:
        """The loop was away for `seconds`: what peers sent meanwhile waits in the socket,
        so that time does not count toward anyone's timeout."""
        now = time.monotonic()
        for peer in [*self._live_workers(), *self.sessions.values()]:
            peer.last_seen = min(now, peer.last_seen + seconds)
        diagnostics.verbose('dispatcher', f'the dispatcher was away for {seconds:.1f} s '
                            '(busy or stopped); silence then does not count')

    def _lose(self, handle: WorkerHandle) -> None:
        handle.alive = False
        if self.monitor.on:
            self.monitor.emit('WORKER_LOST', handle.label, 'Heartbeat', worker=handle.index)
        diagnostics.error('dispatcher', f'worker {handle.index} ({handle.name} on {handle.host}) '
                          f'was lost: no heartbeat for {HEARTBEAT_TIMEOUT} s')
        self._announce_peers()  # ends any wait for a piece from it
        report = f'worker {handle.index} ({handle.name} on {handle.host}) was lost'
        for request, pending in list(self.pending.items()):
            if handle.index in pending.workers:
                pending.workers.discard(handle.index)
                pending.errors.append([None, None, 'worker', report])
                if not pending.workers:
                    self._finish(request)
        self.scheduler.lost(handle.index)
        for session in self.sessions.values():
            session.lose_values_on(handle.index, f'worker {handle.index} ({handle.name} on '
                                   f'{handle.host})')
        live = self._live_workers()
        for session in self.sessions.values():
            if session.home_worker == handle.index and live:
                session.home_worker = live[0].index

    def _sessions_homed_on(self, handle: WorkerHandle) -> int:
        return sum(session.home_worker == handle.index for session in self.sessions.values())

    def _live_workers(self) -> list[WorkerHandle]:
        return [w for w in self.workers if w.alive]

    def _describe(self, handle: WorkerHandle) -> dict:
        return {'index': handle.index, 'name': handle.name, 'device': handle.device,
                'host': handle.host, 'pid': handle.pid}


def register_problem(message: Register) -> str | None:
    """What is wrong with a Register's fields, or None: names and keys are strings, the
    pid a number, and the peer endpoints ZeroMQ addresses, one of them tcp (a peer on
    another host can reach only that)."""
    for name in ('name', 'device', 'host', 'token', 'peer_key', 'express_key'):
        if not isinstance(getattr(message, name), str):
            return f'{name} is not a string'
    if not message.name:
        return 'name is empty'
    if type(message.pid) is not int or message.pid <= 0:
        return 'pid is not a process id'
    endpoints = message.peer_endpoints
    if not isinstance(endpoints, list) or not all(
            isinstance(e, str) and e.startswith(('tcp://', 'ipc://')) for e in endpoints):
        return 'peer_endpoints is not a list of tcp:// and ipc:// addresses'
    if not any(e.startswith('tcp://') for e in endpoints):
        return 'peer_endpoints has no tcp:// address'
    if len(message.peer_key) not in (0, 40):
        return 'peer_key is not a CURVE public key (40 characters)'
    return None


def nbytes(frame) -> int:
    return memoryview(frame.buffer if isinstance(frame, zmq.Frame) else frame).nbytes
