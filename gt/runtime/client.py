"""The client's connection: it records ops into the pending fragment and sends it.

Recording is local and cheap; a flush is one message and never waits. Only fetching a
value waits, and while it waits it keeps checking that the dispatcher is alive, so a
lost server is an exception within seconds, never a hang.
"""

import atexit
import contextlib
import gc
import operator
import os
import socket as sockets
import threading
import time
import warnings

import msgpack
import torch
import zmq

from gt import autograd, config, signal
from gt.ir.dtypes import default_float
from gt.ir.ops import torch_calls
from gt.runtime import compile_settings, curve, diagnostics, environment, ownership, shared_memory
from gt.runtime.dispatcher_waits import DispatcherWaits
from gt.runtime.fetched import assemble
from gt.runtime.fragment import PendingFragment, encode_structure
from gt.runtime.interrupts import InterruptsHeld
from gt.runtime.launcher import LocalServer
from gt.runtime.locations import GT_DIR, user_call
from gt.runtime.pacing import Pacer
from gt.runtime.prefetch import Prefetch
from gt.runtime.protocol import (
    Configure,
    Dumped,
    DumpRequest,
    Fetched,
    Goodbye,
    Hello,
    KeepAlive,
    Mark,
    Marked,
    Ping,
    Stats,
    StatsRequest,
    Submit,
    Welcome,
    check_size,
)
from gt.runtime.recording import Recording
from gt.runtime.reports import Reports, first_unsendable, ids_made
from gt.runtime.reverts import Reverts
from gt.runtime.session_errors import SESSION_ENDED, ClosedSessionError
from gt.runtime.transport import dealer, endpoint_for, send

KEEP_ALIVE_SECONDS = 1.0
GOODBYE_SECONDS = 2.0  # a closing client's wait for its own server to end the session
# Frames between the user's line and a call GT runs by name: GT's, and torch's own when
# the user called torch (`torch.lu(x)` reaches GT through __torch_function__).
CALLERS_INSIDE = (GT_DIR, os.path.dirname(torch.__file__) + os.sep)
TORCH_MODULE = 'torch'  # where a hidden-by-default warning of a call by name comes from
# Created tensors at least this big are sharded over every worker when there are several
# (the seeds' auto-shard rule); smaller ones cost more to split than they gain: see
# benchmarks/sharding.py and docs/architecture.md. GT_AUTO_SHARD=0 (or off) turns it off.
AUTO_SHARD_ELEMENTS = environment.integer('GT_AUTO_SHARD_ELEMENTS')


class Client(Recording, DispatcherWaits):
    def __init__(self, endpoint: str, wait_for_workers: int = 1,
                 server: LocalServer | None = None, token: str | None = None,
                 weight: float | None = None, keys: curve.Keys | None = None):
        # Move everything imported so far (torch's many objects) out of the collector's
        # sight: otherwise each full collection scans them all, a pause of tens of ms.
        gc.freeze()
        torch_calls.warn_at_call = _warn_at_users_line
        self.compile_wish = compile_settings.requested()  # a bad GT_COMPILE_BACKEND raises here
        self.endpoint = endpoint
        self.server = server
        self.unanswered = False  # the last wait heard nothing from the dispatcher
        self.pid = os.getpid()
        self.conversation = threading.RLock()  # see ownership.one_thread_at_a_time
        self.token, self.keys = token, keys  # CURVE keys: see gt.runtime.curve
        self.socket = dealer(endpoint, keys=keys, connect=False)
        self.handshake: curve.HandshakeWatch | None = curve.HandshakeWatch(self.socket,
                                                                          endpoint, keys)
        self.socket.connect(endpoint)
        self.next_id = 0
        self.pending = PendingFragment(0)
        self.releases: list[int] = []
        self.submits_sent = 0
        self.reverts = Reverts()  # what rebound tensors go back to if their new value fails
        self.reports = Reports()  # failures, where their ops were recorded, work never run
        self.prefetch = Prefetch()  # a value guessed to be fetched after a step's message
        self.next_request = 0
        self.pacer = Pacer(lambda number: send(self.socket, Mark(number)),
                           lambda number: self._wait(Marked, number))
        self.closed = False
        self.ended: str | None = None  # why the server ended this session, if it did
        self.probe = shared_memory.make_probe() if shared_memory.available() else ''
        try:
            send(self.socket, Hello(f'{sockets.gethostname()}:{os.getpid()}', wait_for_workers,
                                    self.probe, token or os.environ.get('GT_TOKEN', ''),
                                    environment.weight(weight)))
            welcome, _ = self._wait(Welcome, startup=True)
        except BaseException:
            self.handshake.close()
            self.socket.close(linger=0)
            self._remove_probe()
            raise
        self.handshake.close()  # it succeeded: the Welcome came through
        self.handshake = None
        self.session = welcome.session
        self.workers = welcome.workers
        self.max_message_bytes = welcome.max_message_bytes
        self.server_writes_log = welcome.writes_log
        diagnostics.verbose('client', f'connected to {endpoint} as session {self.session}; '
                            f'{len(self.workers)} worker(s): ' + ', '.join(
                                f"{w['index']}: {w['device']} on {w['host']}"
                                for w in self.workers))
        self.config_version = -1
        self._send_configs()
        self._stop_keep_alive = threading.Event()
        threading.Thread(target=self._keep_alive, daemon=True, name='gt-keep-alive').start()

    @property
    def single_worker(self) -> bool:
        """Whether the cluster has one worker: there nothing is sharded, so a torch kernel
        run by name gives torch's bits where GT's composition of ops, which shards,
        rounds otherwise (attention, batch norm, norms, addmm choose so)."""
        return len(self.workers) == 1

    def _remove_probe(self) -> None:
        if self.probe:
            with contextlib.suppress(OSError):
                os.unlink(self.probe)

    def _keep_alive(self) -> None:
        """Tell the dispatcher every second that this client lives, from a socket of its
        own (sockets are not thread-safe): a client that dies silently loses its session."""
        socket = dealer(self.endpoint, keys=self.keys)
        try:
            while not self._stop_keep_alive.wait(KEEP_ALIVE_SECONDS):
                send(socket, KeepAlive(self.session))
        finally:
            socket.close(linger=0)

    def _send_configs(self) -> None:
        """The dispatcher plans with this session's signal configs: send them when they
        changed (before the work recorded under them)."""
        version = config.version()
        if self.config_version == version:
            return
        auto_shard = environment.switch('GT_AUTO_SHARD', True)
        configs = config.wire_form()
        signal.warn_of_absent_workers([w['index'] for w in self.workers])
        try:
            send(self.socket, Configure(configs, AUTO_SHARD_ELEMENTS if auto_shard else None,
                                       self.compile_wish, default_float()))
        except (OverflowError, TypeError, ValueError) as error:  # a config made unchecked
            raise ValueError(f'the signal configs cannot be sent to the GT server ('
                             f'{type(error).__name__}: {error}): {configs}') from None
        self.config_version = version  # else sent again, and refused again, next time

    def wish_compiled(self, backend: str | None) -> None:
        """`gt.compile`: compile hot programs with `backend` (None: the server's choice),
        where the environment set neither (its settings win); the dispatcher hears it
        before the next work."""
        when, chosen = self.compile_wish
        wish = [when or 'hot', chosen or backend]
        if wish != self.compile_wish:
            self.compile_wish = wish
            self.config_version = None  # resend the session's settings with the next flush

    def default_dtype_changed(self) -> None:
        """gt.set_default_dtype: the dispatcher hears the new default before the next work
        (the work before it was sent first)."""
        self.config_version = None

    # ---- sending -------------------------------------------------------------------------
    @ownership.one_thread_at_a_time
    def flush(self, fetch: list[int] = (), pace: bool = True) -> int:
        """Send the pending fragment, releases and fetches in one message; return its
        request. `pace`: wait if this session is too far ahead (gt.runtime.pacing)."""
        if ownership.process_id() != self.pid:
            raise RuntimeError(
                f'this GT connection belongs to process {self.pid}; a forked child cannot use '
                'it (its socket is shared with the parent). Call gt.connect() in the child, '
                'or create GT tensors only after forking')
        if self.closed:
            raise ClosedSessionError(SESSION_ENDED.format(session=self.session))
        if self.ended is not None:
            raise ClosedSessionError(self.ended)
        self.next_request += 1
        if not (self.pending.records or self.releases or fetch or self.reverts.pairs):
            return self.next_request
        self._send_configs()  # before the fragment leaves self.pending: a failure loses nothing
        pending, releases, reverts = self.pending, self.releases, self.reverts.pairs
        submits_sent = self.submits_sent
        try:
            self.pending, self.releases = PendingFragment(self.next_id), []
            reverts = self.reverts.take()
            guessed = []
            if not fetch and pending.records:
                fetch = guessed = self.prefetch.guess(pending.base, self.next_id - pending.base,
                                                      pending.dropped)
            self._submit(pending, self.next_id, releases, list(fetch), reverts)
        except (OverflowError, TypeError, ValueError) as error:
            # nothing was sent: send what can go
            self._salvage(pending, releases, error, reverts)
        except BaseException:
            if self.submits_sent == submits_sent:  # Ctrl-C before it went: it goes with the next
                self.pending, self.releases = pending, releases + self.releases
                if self.reverts.pairs is not reverts:
                    self.reverts.pairs[:0] = reverts
            raise
        request = self.next_request
        self.prefetch.sent(request, guessed)
        if pace:
            self.pacer.sent()
        return request

    def _submit(self, pending: PendingFragment, end: int, releases: list, fetch: list,
                reverts: list) -> None:
        """Send `pending` (which defines ids up to `end`) with releases and fetches. What
        msgpack cannot carry, or a message over the server's bound, raises before any
        part of it is sent."""
        structure = b''
        frames: list = []
        if pending.records:
            kept = [local for local in range(end - pending.base)
                    if pending.base + local not in pending.dropped]
            structure = encode_structure(pending.records, kept)
            if pending.data:
                frames = [msgpack.packb(pending.data_headers), *pending.data]
        message = Submit(structure, pending.base, pending.externals, pending.literals,
                         releases, reverts, fetch, self.next_request)
        if self.max_message_bytes:
            check_size(message, frames, self.max_message_bytes)
        with InterruptsHeld():
            send(self.socket, message, frames)
            self.submits_sent += 1
        if pending.records:
            # Only each op's name is kept: the records (a tuple, a list of operands and
            # attrs per op) lived on for 256 fragments, and the garbage collector scanned
            # them again and again (a collection of the oldest generation took 80 ms).
            self.reports.sent(pending.base, pending.locations,
                              [record[0] for record in pending.records], pending.outputs)
        diagnostics.debug('client', lambda: (
            f'sent fragment {pending.base}: {len(pending.records)} ops, {len(fetch)} '
            f'fetches, {len(releases)} releases, {len(structure)} bytes of structure'))

    def _salvage(self, pending: PendingFragment, releases: list, error: Exception,
                 reverts: list) -> None:
        """`pending` could not be sent (`error`): send its ops before the first msgpack cannot
        carry (they cannot read it), so that earlier tensors stay usable; the rest never
        ran, and each of its tensors says why. All of it was once dropped in silence."""
        position = first_unsendable(pending.records)
        sent_until = pending.base
        if position:
            end = pending.base + ids_made(position, pending.outputs)
            with contextlib.suppress(OverflowError, TypeError, ValueError):
                self._submit(pending.head(position), end, releases, [], reverts)
                releases, reverts, sent_until = [], [], end
        self.releases = releases + self.releases  # not sent: they go with the next message
        self.reverts.pairs[:0] = reverts
        raise self.reports.unsent(pending, position, error, sent_until, self.next_id) from None

    @ownership.one_thread_at_a_time
    def fetch(self, value_ids: list[int]) -> list[torch.Tensor]:
        if self.reports.lost:
            for value_id in value_ids:
                self.reports.check(value_id)
        kept = self.prefetch.kept(value_ids)
        if kept is not None:
            return kept
        started = time.perf_counter()
        guessed = self.prefetch.covers(value_ids)
        if guessed:
            fetched, reply, frames = self._prefetched()
            errors = reply.errors
        else:
            errors = []
            if self.prefetch.request is not None:  # a guess the script did not take
                _, guessed, guessed_frames = self._prefetched()
                _assemble_all(guessed.tensors, guessed_frames)  # its shared-memory files go
                errors = list(guessed.errors)
            self.prefetch.learn(value_ids)
            fetched = value_ids
            reply, frames = self._wait(Fetched, request=self.flush(value_ids))
            errors += reply.errors
        diagnostics.debug('client', lambda: (
            f'fetched {len(value_ids)} value(s) in '
            f'{(time.perf_counter() - started) * 1e3:.2f} ms'))
        headers = list(reply.tensors)[:len(fetched)]
        headers += [None] * (len(fetched) - len(headers))  # a refused fragment's answer has none
        wanted = [headers[fetched.index(value_id)] for value_id in value_ids]
        if errors:
            self.reverts.undo(errors)
        try:
            self.reports.raise_errors(errors, any(header is None for header in wanted),
                                      self.pending.base, value_ids)
        finally:
            failed = self.reports.failed(errors) if errors else None
            if failed is not None:
                autograd.forget_failed_grads(failed)
        values = dict(zip(fetched, _assemble_all(headers, frames)))
        if guessed:
            self.prefetch.stash(values, value_ids)
        self.reports.warn()
        return [values[value_id] for value_id in value_ids]

    def _prefetched(self) -> tuple:
        """The guessed fetch's ids and answer, waited for if it has not come
        (gt.runtime.prefetch)."""
        if self.prefetch.answer is None:
            self._wait(Fetched, request=self.prefetch.request)
        return self.prefetch.take()

    @ownership.one_thread_at_a_time
    def dump(self, form: str = 'ir') -> str:
        self.flush()
        self.next_request += 1
        send(self.socket, DumpRequest(self.next_request, form))
        return self._wait(Dumped, request=self.next_request)[0].text

    @ownership.one_thread_at_a_time
    def stats(self) -> Stats:
        self.flush()
        self.next_request += 1
        send(self.socket, StatsRequest(self.next_request))
        return self._wait(Stats, request=self.next_request)[0]

    def close(self) -> None:
        if self.closed or ownership.process_id() != self.pid:
            return  # a forked child must not end its parent's session
        self.prefetch.pattern = None  # nothing is fetched after this flush
        try:
            self.flush(pace=False)  # work the script recorded but never looked at still runs
        except (zmq.ZMQError, ClosedSessionError, OverflowError, TypeError, ValueError):
            pass  # it raised at the user's line already, or could not; the rest must end
        self.closed = True
        self._stop_keep_alive.set()
        try:
            send(self.socket, Goodbye())
            if self.server is not None:
                # The dispatcher answers in order: once Pong comes, it has ended the session
                # (and logged it) and may be stopped.
                send(self.socket, Ping())
                self._poll(int(GOODBYE_SECONDS * 1000))
        except zmq.ZMQError:
            pass
        self.socket.close(linger=100)
        self._remove_probe()
        if self.server is not None:
            self.server.stop()


# ---- the process's connection ----------------------------------------------------------------
_client: Client | None = None


def _forked() -> None:
    if _client is not None:
        ownership.disown(_client)


os.register_at_fork(after_in_child=_forked)
_auto_workers = environment.integer('GT_WORKERS')


def current() -> Client:
    """The connection, starting a local server on first use if `connect` was not called."""
    global _client
    if _client is not None and _client.pid != ownership.process_id():
        # Inherited through fork: this process gets a session of its own on the same server,
        # seeded as torch's generator is here: a DataLoader worker seeds torch with its
        # own seed (base_seed + worker id) before it runs the Dataset's draws.
        _client = Client(_client.endpoint, wait_for_workers=1, token=_client.token,
                         keys=_client.keys)
        from gt.tensor import apply

        apply('manual_seed', [], seed=torch.initial_seed())
    if _client is None:
        compile_settings.requested()  # raise for a bad setting before starting anything
        server = LocalServer(_auto_workers)
        try:
            _client = Client(server.endpoint, _auto_workers, server)
        except BaseException:
            server.stop()
            raise
    return _client


def connect(address: str, token: str | None = None, weight: float | None = None,
            curve_server_key: str | None = None) -> Client:
    """Use the GT server at `address` ('host:port' or a ZeroMQ endpoint); `token` is its
    shared secret (default: $GT_TOKEN); `weight` this script's share of the workers
    against other sessions' (default: $GT_WEIGHT, else 1); `curve_server_key` its CURVE
    public key, a file or 40 Z85 characters (default: $GT_CURVE_SERVER_KEY; this
    script's own key pair is $GT_CURVE_SECRET, else one made in memory)."""
    global _client
    keys = curve.client_keys(curve_server_key)
    if _client is not None:
        _client.close()
    _client = None
    _client = Client(endpoint_for(address), wait_for_workers=1, token=token, weight=weight,
                     keys=keys)
    if os.environ.get('GT_INSTRUCTION_LOG') and not _client.server_writes_log:
        warnings.warn('GT_INSTRUCTION_LOG is read by the server that writes the log, and the '
                      f'one at {address} writes none: start it with python -m gt.server --log '
                      'PATH (or with the variable set), or attach python -m gt.scripts.trace '
                      'to it', stacklevel=2)
    return _client


def connected() -> Client | None:
    """This process's connection, if it has one (none is started)."""
    return _client if _client is not None and _client.pid == ownership.process_id() else None


def _assemble_all(headers: list, frames: list) -> list:
    """Each fetched value in `headers`' order (None for a failed one), consuming the
    frames of every one, wanted or not."""
    frames = iter(frames)
    return [None if header is None else assemble(header, frames) for header in headers]


def set_auto_workers(count: int) -> None:
    global _auto_workers
    try:
        count = operator.index(count)
    except TypeError:
        raise TypeError(f'gt.gpu_workers takes a number of workers, got {count!r}') from None
    if count < 1:
        raise ValueError(f'gt.gpu_workers needs at least 1 worker, got {count}')
    if _client is not None:
        raise RuntimeError('gt.gpu_workers() must be called before the first tensor operation')
    _auto_workers = count


def _close_at_exit() -> None:
    if _client is not None:
        _client.close()


atexit.register(_close_at_exit)


def _warn_at_users_line(warning: warnings.WarningMessage) -> None:
    """torch's warning from working out a call's types, at the line that made the call
    (not inside GT or torch's dispatch to it, where the script's filters by module or
    line would miss it); the kinds Python hides unless asked stay where torch raised
    them, so that the same filters hide them."""
    if issubclass(warning.category, (DeprecationWarning, PendingDeprecationWarning)):
        warnings.warn_explicit(warning.message, warning.category, warning.filename,
                               warning.lineno, module=TORCH_MODULE)
        return
    level, _ = user_call(CALLERS_INSIDE)
    warnings.warn(warning.message, stacklevel=level)
