"""The worker: holds tensors keyed by (session, value id) and runs the programs the
dispatcher sends, in order, with one engine on one device; light sessions' programs
may run on its express lane beside a long one (gt.runtime.express_lane)."""

import gc
import os
import socket as sockets
import sys
import threading
import time
import traceback
import uuid
from collections import deque
from typing import Any

import msgpack
import zmq

from gt.runtime import diagnostics, early_reply, reverts, shared_memory
from gt.runtime.activity import Activity, kinds_of, memory_held
from gt.runtime.compiler import Compiler
from gt.runtime.curve import HandshakeWatch, Keys
from gt.runtime.engines import make_engine
from gt.runtime.exchange import PeerExchange
from gt.runtime.express_lane import ExpressLane, Lane
from gt.runtime.host_memory import HostMemory
from gt.runtime.program import Failed, Program
from gt.runtime.protocol import (
    Done,
    EndSession,
    Fetched,
    Heartbeat,
    Peers,
    ProtocolError,
    Refused,
    Register,
    Reregister,
    RunProgram,
    Stats,
    StatsRequest,
)
from gt.runtime.session_errors import FAILED, REVERTED
from gt.runtime.thread_tuning import WorkerThreads
from gt.runtime.transport import dealer, receive, send
from gt.runtime.worker_warnings import WorkerWarnings

HEARTBEAT_SECONDS = 0.5
NO_SERVER_NOTICE_SECONDS = 5.0  # silence after registering before the worker says so


class Worker:
    def __init__(self, endpoint: str, backend: str = 'torch', device: str | None = None,
                 keys: Keys | None = None, say_if_unanswered: bool = True,
                 auto_started: bool = False):
        self.endpoint = endpoint
        # A worker started beside its dispatcher (a script's local server, a test's): a
        # slow start is no news.
        self.say_if_unanswered = say_if_unanswered
        self.engine = make_engine(backend, device)  # the seeds' Worker(backend='numpy')
        name = f'worker-{sockets.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}'
        self.identity = name.encode()
        self.keys = keys  # CURVE: for the dispatcher, and its peer socket's own
        self.socket = dealer(endpoint, self.identity, keys, connect=False)
        self.handshake: HandshakeWatch | None = HandshakeWatch(self.socket, endpoint, keys)
        self.socket.connect(endpoint)
        self.exchange = PeerExchange(self.engine, sockets.gethostname(), keys)
        self.backlog: deque = deque()  # dispatcher messages read ahead of running them
        self.owed: list = []  # [session, seconds] of main-lane programs not yet reported Done
        self.poller = zmq.Poller()  # for those waits: a piece, or news from the dispatcher
        self.poller.register(self.exchange.socket, zmq.POLLIN)
        self.poller.register(self.socket, zmq.POLLIN)
        self.values: dict[int, dict[int, Any]] = {}
        self.contexts: dict[int, Any] = {}
        self.errors: dict[int, list] = {}
        self.told: dict[int, set] = {}  # per session: failures its fetches took (reverts.apply)
        self.warnings = WorkerWarnings()  # Python's, raised in a session's program
        self.programs: dict[int, Program] = {}
        # Compiling is torch's: the numpy engine runs every program as generated Python.
        # An auto-started worker's stderr is its script's, whose user hears of a failed
        # compile as a gt.CompileWarning already.
        self.compiler = (Compiler(self.engine.device, warns_operator=not auto_started)
                         if self.engine.name == 'torch' else None)
        self.main = Lane(self.socket, self.programs, self.compiler)
        self.threads = WorkerThreads(tune=self.engine.name == 'torch'
                                     and self.engine.device.type == 'cpu')
        self.express = ExpressLane(self)
        self.host_memory = HostMemory()
        self.probes_seen: dict[str, bool] = {}
        self.salt = 0
        self.ops_run = 0
        self.programs_run = 0
        self.early_answers = 0  # fetches answered before their program ended
        self.activity = Activity()
        self.activity_lock = threading.Lock()  # the loop adds, the heartbeat thread takes
        # torch's default dtype is the process's: a program of a session that set another
        # (which the dispatcher never sends express) runs with the express lane held off.
        self.default_dtype_lock = threading.Lock()
        self.report_programs = False
        self.handlers = {
            RunProgram: self.run_program,
            EndSession: self.end_session,
            StatsRequest: self.report_stats,
            Reregister: self.reregister,
            Peers: self.peers,
            Refused: self.refused,
        }

    def serve_forever(self) -> None:
        gc.freeze()  # keep full collections from rescanning torch's objects mid-program
        self.warnings.install()
        if shared_memory.available():
            shared_memory.remove_stale()
        self._register()
        threading.Thread(target=self._beat, daemon=True, name='gt-heartbeat').start()
        try:
            self._await_handshake()
            self.express.start()
            with self.engine.running():
                self._serve()
        finally:
            self.exchange.close()
            if self.compiler is not None:
                self.compiler.close()

    def _serve(self) -> None:
        while True:
            if self.backlog:
                message, frames = self.backlog.popleft()
            else:
                try:
                    message, frames = receive(self.socket)
                except ProtocolError:
                    continue  # the dispatcher never sends these; drop noise rather than die
            try:
                self.handlers[type(message)](message, frames)
            except Exception:  # a worker outlives any one bad message
                traceback.print_exc()

    def _wait_for_peer(self, peer_socket: Any, milliseconds: int) -> bool:
        """Wait until a piece arrives; meanwhile apply membership news at once (it may end
        the wait) and keep other dispatcher messages for later. Owed Dones go first: a
        wait may be long, and the dispatcher's accounting should not wait with it."""
        self._report_done()
        ready = dict(self.poller.poll(milliseconds))
        if self.socket in ready:
            try:
                message, frames = receive(self.socket)
            except ProtocolError:
                return False
            if isinstance(message, Peers):
                self.peers(message, frames)
            else:
                self.backlog.append((message, frames))
        return peer_socket in ready

    def peers(self, message: Peers, frames: list) -> None:
        self.exchange.set_peers(message.index, message.peers)
        self.salt = message.salt
        self.report_programs = bool(message.report_programs)

    def _register(self) -> None:
        diagnostics.verbose('worker', f'registering with {self.endpoint} as '
                            f'{self.identity.decode()} ({self.engine.describe()})')
        send(self.socket, Register(self.identity.decode(), self.engine.describe(),
                                   sockets.gethostname(), os.getpid(),
                                   self.exchange.endpoints, os.environ.get('GT_TOKEN', ''),
                                   self.exchange.public_key, self.express.key))

    def _await_handshake(self) -> None:
        """Wait for the dispatcher's socket to complete its handshake (ZeroMQ would fail a
        wrong CURVE key in silence), then stop watching. It connects in silence too, so a
        worker started before its server (or at a wrong address) says so, once."""
        try:
            if (self.say_if_unanswered
                    and not self.handshake.check(int(NO_SERVER_NOTICE_SECONDS * 1000))):
                print(f'gt.worker: no GT server has answered at {self.endpoint} in '
                      f'{NO_SERVER_NOTICE_SECONDS:.0f} s; still trying (is python -m gt.server '
                      f'running there?{_remote_hint(self.endpoint)})', file=sys.stderr,
                      flush=True)
            self.handshake.wait()
        except ConnectionError as error:
            raise SystemExit(f'gt.worker: {error}') from None
        finally:
            self.handshake.close()
            self.handshake = None

    def refused(self, message: Refused, frames: list) -> None:
        raise SystemExit(f'gt.worker: the dispatcher refused this worker: {message.reason}')

    def reregister(self, message: Reregister, frames: list) -> None:
        """The dispatcher restarted: its sessions and program ids are new, drop ours."""
        self.values.clear()
        self.contexts.clear()
        self.errors.clear()
        self.told.clear()
        self.warnings.forget_sessions()
        self.owed.clear()  # programs the old dispatcher sent: the new one counts none
        self.programs.clear()
        self.express.programs.clear()
        self.exchange.clear()
        if self.compiler is not None:
            self.compiler.forget_sessions()  # the new dispatcher numbers them from 0 again
        self._register()

    def _beat(self) -> None:
        heartbeat = dealer(self.endpoint, keys=self.keys)
        programs_run = self.programs_run
        while True:
            send(heartbeat, Heartbeat(self.identity, self._take_activity()))
            self.host_memory.after_beat(ran_programs=self.programs_run != programs_run)
            programs_run = self.programs_run
            threading.Event().wait(HEARTBEAT_SECONDS)

    def _take_activity(self, periodic: bool = True) -> dict:
        """The activity since the last report; the periodic beat adds the memory held
        (a system call, too slow for the report sent before each fetch)."""
        with self.activity_lock:
            activity, self.activity = self.activity, Activity()
        extra = {'compiled_programs': self.compiler.programs_compiled if self.compiler else 0}
        if periodic:
            extra['memory'] = memory_held(self.engine.name)
        return activity.report(extra)

    def run_program(self, message: RunProgram, frames: list) -> None:
        self.execute(message, frames, self.main)

    def execute(self, message: RunProgram, frames: list, lane: Lane) -> None:
        """Run one RunProgram on `lane` (the main loop's, or the express lane's thread).
        The dispatcher keeps only a few in flight here: each ends in a reply on its lane,
        Fetched when it fetches, else Done, with the seconds it took. The main lane owes
        its Dones while two or more programs wait, and reports them in one message when
        it is down to its last (or idle): the dispatcher refills the queue while that
        one runs, and a worker that is behind sends a third of the messages."""
        started = time.perf_counter()
        replied = False
        try:
            replied = self._run_program(message, frames, started, lane)
        finally:
            report = [message.session, time.perf_counter() - started]
            if lane is not self.main:
                if not replied:
                    send(lane.socket, Done([report]))
            else:
                if not replied:
                    self.owed.append(report)
                if self.owed and self._programs_waiting() < 2:
                    self._report_done()

    def _programs_waiting(self) -> int:
        """RunPrograms that have arrived and not run: the socket is read into the backlog,
        which keeps the dispatcher's order."""
        while self.socket.poll(0):
            try:
                self.backlog.append(receive(self.socket))
            except ProtocolError:
                continue
        return sum(type(message) is RunProgram for message, _ in self.backlog)

    def _report_done(self) -> None:
        if self.owed:
            send(self.socket, Done(self.owed))
            self.owed = []

    def _run_program(self, message: RunProgram, frames: list, started: float,
                     lane: Lane) -> bool:
        session = message.session
        values = self.values.setdefault(session, {})
        for program_id in message.forget:
            lane.programs.pop(program_id, None)
        answered = False
        if message.program_id >= 0:
            try:
                answered = self._run(message, values, frames, lane)
            except Exception as error:  # not an op's failure: the message itself was bad
                report = [message.base, None, 'run', f'{type(error).__name__}: {error}']
                self.errors.setdefault(session, []).append(report)
        if message.reverts:  # before the releases, which may free the values gone back to
            gone_back = reverts.apply(values, message.reverts, Failed,
                                      self.told.get(session, ()))
            if gone_back:
                self.errors.setdefault(session, []).append([None, None, REVERTED, gone_back])
        # Releases come after the run: the fragment may read a value freed since it was recorded.
        for value_id in message.releases:
            values.pop(value_id, None)
        if message.fetch and not answered:
            self._fetch(message, values.get, time.perf_counter() - started, lane)
            return True
        return False

    def _run(self, message: RunProgram, values: dict, frames: list, lane: Lane) -> bool:
        """Run the message's program; True when its fetch was answered early
        (gt.runtime.early_reply)."""
        if message.program is not None:
            lane.programs[message.program_id] = Program(message.program, self.engine.implementation,
                                                        lane.compiler)
            diagnostics.debug('worker', lambda: (
                f'program {message.program_id} decoded: '
                f'{len(lane.programs[message.program_id].steps)} steps'))
        program = lane.programs[message.program_id]
        context = self.contexts.get(message.session) or self.contexts.setdefault(
            message.session, self.engine.new_context((self.salt << 16) + message.session))
        context.data = [self.engine.from_wire(dtype, shape, frame.buffer)
                        for (dtype, shape), frame in zip(_data_headers(frames), frames[1:])]
        context.literals = message.literals
        context.exchange, context.wait = self.exchange, self._wait_for_peer
        context.session, context.base, context.moved = message.session, message.base, {}
        inputs = [values[value_id] if value_id in values else _missing(value_id)
                  for value_id in message.externals[:program.n_inputs]]
        building = lane.compiler is not None and lane.compiler.building > 0
        checks = lane.compiler is not None and self.threads.checks(program, building)
        timed = not checks and lane.compiler is not None and self.threads.before_run(
            program, building)
        started, start = time.time(), time.perf_counter()
        if self.report_programs:  # the log shows it started, even if it never ends
            send(lane.socket, Heartbeat(self.identity, {'running': [
                started, message.session, message.program_id, len(program.steps),
                kinds_of(program.op_counts), lane is not self.main]}))
        self.warnings.run_for(message.session)
        alone = program.default_dtype is not None or lane is not self.main
        answered: list = []
        try:
            if alone:
                self.default_dtype_lock.acquire()
            split = None if checks or lane is not self.main else self._early_split(
                message, program)
            if checks:
                kept, errors = self.threads.check(
                    program, lambda: program.run(inputs, context, message.base))
            elif split is not None:
                def answer(carried: dict) -> None:
                    self._fetch(message, self._early_values(message, program, carried, values),
                                None, lane)
                    answered.append(True)
                    self.early_answers += 1
                kept, errors = early_reply.run_split(program, split, inputs, context,
                                                     message.base, answer)
            else:
                kept, errors = program.run(inputs, context, message.base)
        finally:
            if alone:
                self.default_dtype_lock.release()
            self.warnings.run_for(None)
        seconds = time.perf_counter() - start
        if timed:
            self.threads.after_run(program, seconds)
        with self.activity_lock:
            self.activity.add(message.session, message.program_id, program.op_counts,
                              len(program.steps), started, seconds, program.ran_compiled,
                              self.report_programs, lane is not self.main)
            self.ops_run += len(program.steps)
            self.programs_run += 1
        diagnostics.debug('worker', lambda: (
            f"session {message.session} ran program {message.program_id} "
            f"({'compiled' if program.ran_compiled else f'run {program.runs}'}) in "
            f"{seconds * 1e3:.3f} ms" + (f'; {len(errors)} op(s) failed' if errors else '')))
        context.data = []
        failed = []
        for (_, local), value in zip(program.keep, kept):
            # `-1 - k`: a copy of the k-th external, kept under its id (see planner.py)
            value_id = message.base + local if local >= 0 else message.externals[-1 - local]
            values[value_id] = value
            if errors and type(value) is Failed:
                failed.append(value_id)
        if errors:
            self.errors.setdefault(message.session, []).extend(errors)
        if failed:
            self.errors[message.session].append([None, None, FAILED, failed])
        return bool(answered)

    def _early_split(self, message: RunProgram, program: Program) -> Any:
        """The split answering this message's fetch early, if it fetches and one pays."""
        if not message.fetch:
            return None
        local = program.slot_of_local
        return early_reply.split_for(program, [local[value_id - message.base]
                                               for value_id in message.fetch
                                               if value_id - message.base in local])

    @staticmethod
    def _early_values(message: RunProgram, program: Program, carried: dict,
                      values: dict) -> Any:
        """Where an early answer finds each fetched value: made by the program's first
        half, or made before."""
        local = program.slot_of_local

        def value_of(value_id: int) -> Any:
            slot = local.get(value_id - message.base)
            return values.get(value_id) if slot is None else carried.get(slot)
        return value_of

    def _fetch(self, message: RunProgram, value_of: Any, seconds: float | None,
               lane: Lane) -> None:
        """Send the message's fetched values (`value_of(value_id)`) and the session's
        errors. `seconds`: the program's, which ends it for the dispatcher; None for an
        early answer (gt.runtime.early_reply), whose program's Done follows."""
        if self.report_programs and self.activity.events:
            # Events are on: the programs' times reach the log before the reply does.
            send(lane.socket, Heartbeat(self.identity, self._take_activity(periodic=False)))
        headers, frames, errors = [], [], self.errors.pop(message.session, [])
        if errors:
            reverts.note_told(self.told.setdefault(message.session, set()), errors)
        if self.compiler is not None:
            errors += self.compiler.take_warnings(message.session)
        errors += self.warnings.take(message.session)
        for value_id in message.fetch:
            value = value_of(value_id)
            if value is None or isinstance(value, Failed):
                headers.append(None)
                failed = value or _missing(value_id)
                if failed.report not in errors:
                    errors.append(failed.report)
                continue
            try:
                dtype, shape, array = self.engine.to_wire(value)
            except Exception as error:  # the client must hear of it, not wait forever
                headers.append(None)
                errors.append([None, None, 'fetch', f'value {value_id} could not be sent: '
                               f'{type(error).__name__}: {error}'])
                continue
            if array.nbytes >= shared_memory.MIN_BYTES and self._shares_memory(message):
                path = shared_memory.write(array, self._owner(message.session))
                headers.append([dtype, shape, path])
            else:
                headers.append([dtype, shape])
                frames.append(memoryview(array).cast('B') if array.size else b'')
        send(lane.socket, Fetched(message.request, headers, errors, seconds), frames)

    def _shares_memory(self, message: RunProgram) -> bool:
        probe = message.shared_memory_probe
        if probe not in self.probes_seen:
            self.probes_seen[probe] = bool(probe) and os.path.exists(probe)
        return self.probes_seen[probe]

    def _owner(self, session: int) -> str:
        return f'{os.getpid()}-{session}'

    def end_session(self, message: EndSession, frames: list) -> None:
        """Drop everything the session held. Each step runs whatever the others do: one
        that raised once (a bad piece stored by the exchange) left the rest held."""
        session = message.session
        steps = [lambda: shared_memory.remove_owned(self._owner(session)),
                 lambda: self.values.pop(session, None),
                 lambda: self.exchange.drop_session(session),
                 lambda: self.contexts.pop(session, None),
                 lambda: self.errors.pop(session, None),
                 lambda: self.told.pop(session, None),
                 lambda: self.warnings.end_session(session)]
        if self.compiler is not None:
            steps.append(lambda: self.compiler.end_session(session))
        for step in steps:
            try:
                step()
            except Exception:
                traceback.print_exc()

    def report_stats(self, message: StatsRequest, frames: list) -> None:
        """After the work sent before it, to the end on the device: a stats request is the
        session's barrier (gt.cuda.synchronize)."""
        self.engine.synchronize()
        live = [value for session in self.values.values() for value in session.values()
                if not isinstance(value, Failed)]
        stats = {
            'name': self.identity.decode(), 'device': self.engine.describe(),
            'engine': self.engine.name, 'pid': os.getpid(),
            'tensors': len(live), 'bytes': sum(self.engine.nbytes(v) for v in live),
            'ops': self.ops_run, 'programs_run': self.programs_run,
            'express_programs': self.express.runs, 'early_answers': self.early_answers,
            'host_memory_kept': self.host_memory.kept, 'host_memory_trims': self.host_memory.trims,
            'programs_cached': len(self.programs), 'sessions': len(self.values),
            'peer_endpoints': self.exchange.endpoints,
            'peer_curve': self.exchange.keys is not None,
            'peer_bytes_sent': self.exchange.bytes_sent,
            'peer_bytes_received': self.exchange.bytes_received,
            **(self.compiler.stats() if self.compiler else {}),
            **self.threads.stats(self.programs.values()),
        }
        send(self.socket, Stats(message.request, [stats], {}))


def _data_headers(frames: list) -> list:
    """Data frames come after one frame of msgpack'd `[dtype, shape]` headers."""
    return msgpack.unpackb(frames[0].bytes, raw=False) if frames else []


def _missing(value_id: int) -> Failed:
    message = f'value {value_id} is not on this worker (freed, or never computed)'
    return Failed([None, None, 'read', message])


def _remote_hint(endpoint: str) -> str:
    """For a server on another machine: it listens on its own loopback unless told not to."""
    host = endpoint.rpartition('://')[2].rpartition(':')[0]
    if endpoint.startswith('tcp://') and host not in ('127.0.0.1', 'localhost', '::1', '[::1]'):
        return (' A server listens on its own machine only unless started with --host, e.g. '
                'python -m gt.server --host 0.0.0.0 --token SECRET, with GT_TOKEN=SECRET here')
    return ''
