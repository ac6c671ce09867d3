"""The dispatcher: one ROUTER socket serving many clients and workers.

Each client has a session (its values, its home worker, errors to report). A submitted
fragment is planned once per structure (gt.runtime.planner) and sent to each worker as
one message, when the scheduler gives it its turn (gt.runtime.scheduler); the client
never waits for that. Fetches are the only round trips. The worker side of the loop is
in gt.runtime.worker_links, what it tells logs and monitors in gt.runtime.monitoring,
and the server's limits in gt.runtime.guards.
"""

import contextlib
import functools
import gc
import itertools
import os
import random
import shutil
import time
import traceback
from collections import OrderedDict

import zmq

from gt.ir import Replicate, format_graph, format_placements
from gt.ir.graphviz import graph_to_dot
from gt.passes import PipelineOptions
from gt.runtime import compile_settings, diagnostics, environment
from gt.runtime.fragment import FragmentError
from gt.runtime.guards import Limits, OutOfMemory
from gt.runtime.monitoring import Monitor, dispatcher_stats, top_ops
from gt.runtime.peers import MissingValue, PendingRequest, Session, WorkerHandle
from gt.runtime.planner import Plan, Planner
from gt.runtime.protocol import (
    Configure,
    Done,
    Dumped,
    DumpRequest,
    EndSession,
    ExpressReady,
    Fetched,
    Goodbye,
    Heartbeat,
    Hello,
    KeepAlive,
    Mark,
    Marked,
    Ping,
    Pong,
    ProtocolError,
    Refused,
    Register,
    SessionEnded,
    Stats,
    StatsRequest,
    Submit,
    Welcome,
    decode,
)
from gt.runtime.refusals import Refusals
from gt.runtime.reverts import by_worker, malformed, revive
from gt.runtime.scheduler import Fragment, Scheduler, small
from gt.runtime.session_errors import WorkerLost, failures
from gt.runtime.transport import receive_frames, send
from gt.runtime.worker_links import WorkerLinks, nbytes

LIVENESS_CHECK_SECONDS = 0.2
YOUNG_OBJECTS = 20000  # allocations between the youngest generation's collections
# One turn of the loop takes at most LIVENESS_CHECK_SECONDS when the process runs; a turn
# longer than this means the dispatcher was not listening (a long handler, a stopped or
# starved process), and its peers' silence meanwhile is not theirs.
STALL_SECONDS = 1.0
FAREWELL_LINGER_MS = 500  # a stopping dispatcher's time to deliver its SessionEnded notes


class Dispatcher(WorkerLinks, Refusals):
    def __init__(self, endpoints: list[str], runtime_dir: str | None = None,
                 log_path: str | None = None, monitor_host: str = '127.0.0.1',
                 limits: Limits = Limits()):
        self.context = zmq.Context.instance()
        self.socket = self.context.socket(zmq.ROUTER)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.setsockopt(zmq.ROUTER_MANDATORY, 1)
        self.limits = limits
        if limits.max_message_bytes:
            # libzmq drops a peer whose message would exceed this before buffering it whole.
            self.socket.setsockopt(zmq.MAXMSGSIZE, limits.max_message_bytes)
        self.last_header: zmq.Frame | None = None  # for the address of a rejected peer
        self.strangers_told: set[bytes] = set()
        self.endpoints = endpoints
        self.monitor = Monitor(endpoints, log_path, self.context, monitor_host, limits.curve)
        if limits.curve is not None:
            limits.curve.protect(self.socket, log_failures=True)
        try:
            for endpoint in endpoints:
                self.socket.bind(endpoint)
        except zmq.ZMQError:  # the monitor came first: a log in use stops it unbound
            self.monitor.close()  # its note and log: this server never ran
            raise
        self.runtime_dir = runtime_dir
        self.workers: list[WorkerHandle] = []
        self.worker_by_identity: dict[bytes, WorkerHandle] = {}
        self.express_by_identity: dict[bytes, WorkerHandle] = {}  # their express lanes
        self.sessions: dict[bytes, Session] = {}
        self.session_numbers: dict[int, Session] = {}
        # Clients whose sessions timed out, and what to tell them if they speak again.
        self.ended_sessions: OrderedDict[bytes, SessionEnded] = OrderedDict()
        self.scheduler = Scheduler(self.workers, self._send_scheduled)
        self.waiting_hellos: list[tuple[bytes, Hello]] = []
        self.pending: dict[int, PendingRequest] = {}
        self.program_ids: OrderedDict[bytes, int] = OrderedDict()
        self.program_counter = itertools.count()
        self.planner = Planner()
        # Compiling for clients that do not say (see gt.runtime.compile_settings).
        self.compile_default = compile_settings.requested()
        self.next_session = 0
        self.next_request = 0
        # Tensor bytes sent to workers, and how many of them came from clients (from_numpy
        # data): the rest would be bytes relayed between workers, which moves never do.
        self.bytes_to_workers = 0
        self.bytes_from_clients = 0
        self.done_messages = 0  # workers' Done replies, and the programs they reported
        self.done_programs = 0
        self.salt = random.getrandbits(48)
        self.handlers = {
            Hello: self.hello, Submit: self.submit, Ping: self.ping, Goodbye: self.goodbye,
            KeepAlive: self.keep_alive, DumpRequest: self.dump, Configure: self.configure,
            StatsRequest: self.stats_request, Register: self.register, Heartbeat: self.heartbeat,
            Fetched: self.worker_reply, Stats: self.worker_reply, Done: self.done,
            ExpressReady: self.express_ready, Mark: self.mark,
        }

    # ---- the loop ------------------------------------------------------------------------
    def serve_forever(self) -> None:
        gc.freeze()  # keep full collections from rescanning imported objects
        # Planning a new fragment makes thousands of objects that live until its plan is
        # made: collected every 700 allocations (Python's default), they were promoted
        # to older generations and so brought on full collections. Measured on a loop of
        # new shapes (benchmarks/generation.py): 2.5 ms of dispatcher CPU a token, 1.95
        # with collections every YOUNG_OBJECTS allocations.
        gc.set_threshold(YOUNG_OBJECTS, *gc.get_threshold()[1:])
        # A receive timeout rather than a poll before each receive: one call per message.
        self.socket.setsockopt(zmq.RCVTIMEO, int(LIVENESS_CHECK_SECONDS * 1000))
        next_check = time.monotonic() + LIVENESS_CHECK_SECONDS
        listening_since = time.monotonic()
        try:
            while True:
                try:
                    self._handle(*self._receive())
                except zmq.Again:
                    pass
                now = time.monotonic()
                if now - listening_since > STALL_SECONDS:
                    self._excuse_silence(now - listening_since)
                listening_since = now
                if now >= next_check:
                    self._check_liveness()
                    if self.monitor.serve(self.workers, list(self.sessions.values())):
                        self._announce_peers()  # whether to report programs' times
                    next_check = time.monotonic() + LIVENESS_CHECK_SECONDS
        finally:
            self.monitor.close()
            for session in self.sessions.values():  # they would wait GT_TIMEOUT to notice
                self._send(session.identity, SessionEnded(session.number, (
                    f'the GT server ended session {session.number}: it was stopped, and its '
                    'tensors are gone')))
            self.socket.close(FAREWELL_LINGER_MS if self.sessions else 0)
            for endpoint in self.endpoints:
                if endpoint.startswith('ipc://'):
                    with contextlib.suppress(OSError):
                        os.unlink(endpoint[len('ipc://'):])
            if self.runtime_dir:
                shutil.rmtree(self.runtime_dir, ignore_errors=True)

    def _receive(self) -> tuple:
        identity, header, *frames = receive_frames(self.socket)
        self.last_header = header
        return identity.bytes, header.bytes, frames

    def _handle(self, identity: bytes, header: bytes, frames: list) -> None:
        try:
            message = decode(header)
            handler = self.handlers[type(message)]
        except ProtocolError as error:
            return self._refuse_stranger(identity, str(error))
        except KeyError:
            return self._refuse_stranger(identity, f'a {type(message).__name__} message, '
                                         'which the server does not take')
        if identity in self.worker_by_identity:
            self.worker_by_identity[identity].last_seen = time.monotonic()
        session = self.sessions.get(identity)
        if session is not None:
            session.last_seen = time.monotonic()
        try:
            handler(identity, message, frames)
        except Exception:  # a message that decodes but makes no sense must not end the server
            traceback.print_exc()

    def _send(self, identity: bytes, message: object, frames: list = ()) -> None:
        try:
            send(self.socket, message, frames, to=identity)
        except zmq.ZMQError:
            return  # the peer is gone; heartbeats or its session's end will tidy up
        if frames and identity in self.worker_by_identity:
            self.bytes_to_workers += sum(map(nbytes, frames))

    # ---- clients -------------------------------------------------------------------------
    def hello(self, identity: bytes, message: Hello, frames: list) -> None:
        if not isinstance(message.wait_for_workers, int) or not isinstance(message.client, str):
            return self._send(identity, Refused('malformed hello'))
        if not self._admitted(identity, message.token, f'client {message.client}'):
            return
        self._end_session(identity)  # a second Hello starts over
        self.waiting_hellos.append((identity, message))
        self._welcome_waiting()

    def _welcome_waiting(self) -> None:
        live = self._live_workers()
        still_waiting = []
        for identity, hello in self.waiting_hellos:
            if len(live) < max(1, hello.wait_for_workers):
                still_waiting.append((identity, hello))
                continue
            home = min(live, key=self._sessions_homed_on)
            session = Session(self.next_session, identity, hello.client, home.index,
                              shared_memory_probe=str(hello.shared_memory_probe),
                              weight=environment.hello_weight(hello.weight))
            self.next_session += 1
            self.sessions[identity] = session
            self.session_numbers[session.number] = session
            self._send(identity, Welcome(session.number, [self._describe(w) for w in live],
                                         self.limits.max_message_bytes,
                                         self.monitor.events.lines is not None))
            if self.monitor.on:
                self.monitor.emit('CONNECT', session.client, 'Hello', session=session.number,
                                 home=f'w{home.index}', weight=session.weight)
            diagnostics.verbose('dispatcher', f'client {session.client} connected: session '
                                f'{session.number}, home worker {home.index}')
        self.waiting_hellos = still_waiting

    def configure(self, identity: bytes, message: Configure, frames: list) -> None:
        session = self.sessions.get(identity)
        if session is not None:
            session.configure(message.configs, message.auto_shard_elements, message.compile,
                              self.compile_default, message.default_dtype)

    def submit(self, identity: bytes, message: Submit, frames: list) -> None:
        session = self.sessions.get(identity)
        if session is None:
            ended = self.ended_sessions.get(identity)
            return self._send(identity, ended or Refused(
                'no session: say Hello first (this dispatcher has no session for this client: '
                'was it restarted? gt.connect() starts a new session; earlier tensors are '
                'gone)'))
        session.next_base(message.base)
        try:
            self._submit(session, message, frames)
        except Exception as error:  # the client hears why its work did not run
            if not isinstance(error, (FragmentError, TypeError, ValueError, KeyError,
                                      OutOfMemory, WorkerLost)):
                traceback.print_exc()  # a fault of GT's own: worth a report
            report = f'{type(error).__name__}: {error}'
            if message.structure and isinstance(message.base, int):
                self._refuse_fragment(session, message.base,
                                      getattr(error, 'cause', None) or report)
                self._keep_replaced(session, message)
            session.errors.append([message.base if message.structure else None, None,
                                   'submit', report])
            if message.fetch:
                self._reply_error(session, message.request)

    @staticmethod
    def _refuse_fragment(session: Session, base: int, why: str) -> None:
        """None of the fragment from `base` runs: forget what planning it held (ids from
        `base` on are its own: later fragments have not come yet), and remember why, for
        a later read of one of its values."""
        for value_id in [v for v in session.values if v >= base]:
            session.release(value_id)
        session.refuse(base, why)

    def _keep_replaced(self, session: Session, message: Submit) -> None:
        """After refusing a fragment: what its rebindings replaced stays its tensors'
        value (reverts.revive), and its releases apply (they were held for good)."""
        if malformed(message.releases, message.reverts):
            return
        reverts = revive(session, message.base, message.reverts)
        releases = self._routed_releases(session, message.releases)
        workers = sorted(w for w in set(reverts) | set(releases) if self.workers[w].alive)
        if workers:
            self.scheduler.submit(session, Fragment(message, [], -1, [
                (w, None, releases.get(w, []), reverts.get(w, []), []) for w in workers]))

    def _routed_releases(self, session: Session, value_ids: list[int]) -> dict[int, list[int]]:
        """Forget `value_ids`; the live workers that hold them, with those they hold."""
        releases: dict[int, list[int]] = {}
        for value_id in value_ids:
            entry = session.release(value_id)
            session.lost_values.pop(value_id, None)
            if entry is not None:
                for worker in entry[2].workers:
                    if self.workers[worker].alive:  # a lost worker's values are gone anyway
                        releases.setdefault(worker, []).append(value_id)
        return releases

    def _submit(self, session: Session, message: Submit, frames: list) -> None:
        problem = malformed(message.releases, message.reverts)
        if problem:
            raise ValueError(problem)
        plan = self._plan(session, message) if message.structure else None
        if plan is not None:
            session.ops += sum(plan.ops.values())
            session.programs += len(plan.programs)
        if self.monitor.on:
            self.monitor.emit('RECV', session.client, 'Submit', session=session.number,
                             base=message.base, ops=sum(plan.ops.values()) if plan else 0,
                             kinds=top_ops(plan), fetch=len(message.fetch),
                             releases=len(message.releases), bytes=sum(map(nbytes, frames)))
        # Reverts and releases after planning: the fragment may read values freed since it
        # was recorded; reverts before releases, while each `old` is still known.
        reverts = by_worker(session.values, message.reverts) if message.reverts else {}
        releases = self._routed_releases(session, message.releases)
        fetches: dict[int, list[int]] = {}
        positions: dict[int, list[tuple[int, int]]] = {}
        layouts: list = [None] * len(message.fetch)
        for position, value_id in enumerate(message.fetch):
            entry = session.values.get(value_id)
            if entry is None:
                session.errors.append([None, None, 'fetch', session.why_missing(value_id)])
                continue
            placement = entry[2]
            holders = placement.workers
            if isinstance(placement, Replicate):  # any copy will do: a live one
                holders = [next((w for w in holders if self.workers[w].alive), holders[0])]
            layouts[position] = placement
            for piece, worker in enumerate(holders):
                fetches.setdefault(worker, []).append(value_id)
                positions.setdefault(worker, []).append((position, piece))
        programs = {p.worker: p for p in plan.programs} if plan else {}
        involved = set(programs) | set(releases) | set(reverts) | set(fetches)
        lost = [self.workers[w] for w in involved if not self.workers[w].alive]
        if lost:
            if not any(worker.alive for worker in self.workers):
                raise WorkerLost(f'worker {lost[0].index} ({lost[0].name}) was lost and no '
                                 'worker is alive to run this work; new work runs once one '
                                 'joins')
            raise WorkerLost(f'worker {lost[0].index} ({lost[0].name}) was lost, and with it '
                             'the values this work needs')
        request = -1
        if message.fetch:
            request = self._open_request(session.identity, message.request, set(fetches),
                                         is_stats=False)
            pending = self.pending[request]
            pending.positions = positions
            pending.layouts = layouts
            pending.tensors = [{} for _ in message.fetch]
            pending.frames = [{} for _ in message.fetch]
        if involved:
            self.scheduler.submit(session, Fragment(message, frames, request, [
                (worker, programs.get(worker), releases.get(worker, []), reverts.get(worker, []),
                 fetches.get(worker, [])) for worker in sorted(involved)], small=small(plan)))
        if message.fetch and not fetches:
            self._finish(request)

    def _plan(self, session: Session, message: Submit) -> Plan:
        external_types = []
        for value_id in message.externals:
            entry = session.values.get(value_id)
            if entry is None:
                raise MissingValue(session.why_missing(value_id),
                                   session.refused_why(value_id))
            external_types.append(entry)
        options = PipelineOptions(tuple(w.index for w in self._live_workers()),
                                  session.home_worker, session.configs,
                                  session.auto_shard_elements, session.generator_holders,
                                  session.default_dtype)
        misses, started = self.planner.misses, time.perf_counter()
        plan = self.planner.plan(message.structure, external_types, options, session.compile)
        session.last_fragment = (message.structure, external_types, options)
        self.limits.check_memory(session, plan.kept, plan.upgrades, message.releases,
                                 external_types)
        diagnostics.debug('dispatcher', lambda: (
            f"session {session.number} fragment {message.base}: "
            f"{'planned' if self.planner.misses > misses else 'plan cached'} in "
            f"{(time.perf_counter() - started) * 1e3:.2f} ms, {sum(plan.ops.values())} ops, "
            f"{len(plan.programs)} worker program(s); "
            f"{format_placements(self.planner.graphs(*session.last_fragment)[0])}"))
        session.generator_holders = plan.generator_holders
        for local, shape, dtype, placement in plan.kept:
            session.hold(message.base + local, (shape, dtype, placement))
        for position, placement in plan.upgrades:
            shape, dtype, _ = external_types[position]
            session.hold(message.externals[position], (shape, dtype, placement))
        return plan

    def dump(self, identity: bytes, message: DumpRequest, frames: list) -> None:
        session = self.sessions.get(identity)
        fragment = session.last_fragment if session else None
        if fragment is None:
            text = '(no fragment planned yet)'
        else:
            graph, worker_graphs = self.planner.graphs(*fragment)
            if message.form == 'workers':
                text = '\n'.join(format_graph(graph) for _, graph in sorted(worker_graphs.items()))
            elif message.form == 'dot':
                text = graph_to_dot(graph)
            else:
                text = format_graph(graph)
        self._send(identity, Dumped(message.request, text))

    def ping(self, identity: bytes, message: Ping, frames: list) -> None:
        self._send(identity, Pong())

    def goodbye(self, identity: bytes, message: Goodbye, frames: list) -> None:
        self._end_session(identity)

    def keep_alive(self, identity: bytes, message: KeepAlive, frames: list) -> None:
        for session in self.sessions.values():
            if session.number == message.session:
                session.last_seen = time.monotonic()

    def _end_session(self, identity: bytes, reason: str = 'goodbye') -> None:
        session = self.sessions.pop(identity, None)
        self.ended_sessions.pop(identity, None)
        if session is not None:
            self.session_numbers.pop(session.number, None)
            self.scheduler.forget(session)
            if self.monitor.on:
                self.monitor.emit('DISCONNECT', session.client, 'Goodbye',
                                 session=session.number, reason=reason, ops=session.ops)
            diagnostics.verbose('dispatcher', f'client {session.client} left ({reason}): '
                                f'session {session.number}, {session.ops} ops')
            for worker in self._live_workers():
                self._send(worker.identity, EndSession(session.number))

    def stats_request(self, identity: bytes, message: StatsRequest, frames: list) -> None:
        session = self.sessions.get(identity)
        if session is None and not self._admitted(identity, message.token, 'monitor'):
            return  # the statistics name every session's client, ops and memory
        if session is not None and (session.queue or self.scheduler.express_running(session)):
            # The statistics must show the work this session sent before asking, on either
            # lane: they are its barrier (gt.cuda.synchronize).
            self.scheduler.submit(session, Fragment(message, [], -1, [], lambda: self._stats(
                identity, message)))
            return
        self._stats(identity, message)

    def mark(self, identity: bytes, message: Mark, frames: list) -> None:
        """Answered once the session's fragments before it have gone to the workers
        (gt.runtime.pacing); at once for a session this dispatcher does not know."""
        session = self.sessions.get(identity)
        answer = functools.partial(self._send, identity, Marked(message.number))
        if session is not None and session.queue:
            self.scheduler.submit(session, Fragment(message, [], -1, [], answer))
            return
        answer()

    # ---- workers -------------------------------------------------------------------------
    # ---- replies -------------------------------------------------------------------------
    def _open_request(self, identity: bytes, client_request: int, workers: set,
                      is_stats: bool) -> int:
        self.next_request += 1
        self.pending[self.next_request] = PendingRequest(identity, client_request, workers,
                                                         is_stats)
        return self.next_request

    def _finish(self, request: int) -> None:
        pending = self.pending.pop(request)
        session = self.sessions.get(pending.identity)
        errors = pending.errors
        if session is not None:
            errors = session.errors + errors
            session.errors = []
        if pending.is_stats:
            return self._send(pending.identity, Stats(pending.request, pending.stats,
                                                      dispatcher_stats(self, session)))
        tensors, frames = pending.joined()
        if self.monitor.on and session is not None:
            failed = failures(errors)
            self.monitor.emit('SEND', session.client, 'Fetched', session=session.number,
                             tensors=len(tensors), success=not failed, errors=failed,
                             bytes=sum(map(nbytes, frames)))
        self._send(pending.identity, Fetched(pending.request, tensors, errors), frames)

    def _reply_error(self, session: Session, client_request: int) -> None:
        self._send(session.identity, Fetched(client_request, [], session.errors))
        session.errors = []
