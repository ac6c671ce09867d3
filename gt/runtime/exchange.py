"""Worker-to-worker moves: the pieces of gt.ir.exchange_plan, sent peer to peer over ZeroMQ.

Each worker binds a ROUTER for its peers and connects one DEALER to each peer it sends
to. A piece is a msgpack header `[session, base, tag, sender, dtype, shape, report]` and
one raw frame; `report` is set instead of data when the sender's value had failed, so
the receiver fails too instead of waiting. Sends never block (ZeroMQ queues them), and
every worker runs its moves in the graph's order, so no two workers wait on each other.
The dispatcher never carries these bytes. With CURVE (the worker was given the server's
key), the peer ROUTER is a CURVE server with the worker's own key pair, on its tcp and
ipc endpoints alike, and a worker learns each peer's public key from `Peers`: pieces
between hosts are encrypted, and only those the dispatcher told the key can connect.

While a worker waits for a piece it keeps reading its dispatcher socket: a `Peers`
update that declares the sender lost ends the wait with an error naming that worker;
other messages are kept for after the program.
"""

import functools
import os
import tempfile
import time
import uuid
from abc import ABC, abstractmethod
from typing import Any, Callable

import msgpack
import zmq

from gt.ir.exchange_plan import plan_exchange
from gt.ir.placement import decode_placement, local_shape
from gt.runtime import environment
from gt.runtime.program import Failed

# A last resort: a peer that lives but never sends (which GT's ordering rules out).
PEER_TIMEOUT = environment.number('GT_PEER_TIMEOUT')
POLL_MILLISECONDS = 100


class PeerLost(RuntimeError):
    pass


@functools.lru_cache(maxsize=1024)
def _plan(source: tuple, target: tuple, shape: tuple) -> tuple:
    return plan_exchange(decode_placement(_listed(source)), decode_placement(_listed(target)),
                         shape)


def _listed(frozen: tuple) -> list:
    return [list(item) if isinstance(item, tuple) else item for item in frozen]


def _frozen(encoded: list) -> tuple:
    return tuple(tuple(item) if isinstance(item, list) else item for item in encoded)


class Mover(ABC):
    """A worker's part of moves, whatever carries the pieces: `_send` and `_receive` do."""

    def __init__(self, engine: Any, index: int | None = None):
        self.engine = engine
        self.index = index
    @abstractmethod
    def _send(self, peer: int, key: tuple, value: Any) -> None:
        """Send one piece (or a Failed) to `peer`; never block."""

    @abstractmethod
    def _receive(self, key: tuple, sender: int, wait: Callable) -> Any:
        """The piece `sender` sent under `key` (a Failed if its value had failed)."""

    # ---- moving ----------------------------------------------------------------------
    def move(self, context: Any, value: Any, source: list, target: list, shape: list,
             dtype: str, tag: int, wait: Callable) -> Any:
        """Carry out this worker's part of one move; return its part of the result (None
        when it only sends). A program rerun after a failure gets the first run's result
        (or error) again: the pieces were sent and taken already."""
        if tag >= 0 and tag in context.moved:
            done = context.moved[tag]
            if isinstance(done, Exception):
                raise done
            return done
        try:
            result = self._move(context, value, source, target, shape, dtype, tag, wait)
        except Exception as error:
            if tag >= 0:
                context.moved[tag] = error
            raise
        if tag >= 0:
            context.moved[tag] = result
        return result

    def sync_generator(self, context: Any, source: int, targets: list, tag: int,
                       wait: Callable) -> None:
        """Copy the session's generator state from `source` to `targets`. A failure is
        kept, as a move's is: the program's rerun after it must not wait again for the
        state it took (it waited until GT_PEER_TIMEOUT, holding the worker)."""
        if tag in context.moved:
            done = context.moved[tag]
            if isinstance(done, Exception):
                raise done
            return
        try:
            self._sync_generator(context, source, targets, tag, wait)
        except Exception as error:
            context.moved[tag] = error
            raise
        context.moved[tag] = None

    def _sync_generator(self, context: Any, source: int, targets: list, tag: int,
                        wait: Callable) -> None:
        key = (context.session, context.base, tag)
        if self.index == source:
            state = self.engine.generator_state(context.generator)
            for target in targets:
                self._send(target, key, state)
        elif self.index in targets:
            state = self._receive(key, source, wait)
            if isinstance(state, Failed):
                raise PeerLost(f'worker {source} could not send its random generator state')
            try:
                self.engine.set_generator_state(context.generator, state)
            except Exception as error:
                raise RuntimeError(
                    f"worker {source}'s random generator state is not one this worker "
                    f'({self.engine.describe()}) can take: a random draw sharded over '
                    'workers needs workers of one engine and one device kind') from error

    def _move(self, context: Any, value: Any, source: list, target: list, shape: list,
              dtype: str, tag: int, wait: Callable) -> Any:
        me = self.index
        key = (context.session, context.base, tag)
        plan = _plan(_frozen(source), _frozen(target), tuple(shape))
        if value is not None:
            for assembly in plan:
                if assembly.receiver == me:
                    continue
                for piece in assembly.pieces:
                    if piece.sender == me:  # a view: sending copies it out anyway
                        self._send(assembly.receiver, key,
                                   self._cut(value, piece.region, keep=False))
        result = None
        for assembly in plan:
            if assembly.receiver == me:
                parts = [self._cut(value, piece.region) if piece.sender == me
                         else self._receive(key, piece.sender, wait)
                         for piece in assembly.pieces]
                result = self._combine(assembly, parts, shape, dtype, decode_placement(target))
        return result

    def _cut(self, value: Any, region: tuple, keep: bool = True) -> Any:
        """The region of `value`; a part this worker keeps is a copy, so that it does not
        hold the whole value's memory alive."""
        if isinstance(value, Failed) or not region:
            return value
        index = [slice(None)] * len(value.shape)
        whole = True
        for axis, start, stop in region:
            index[axis] = slice(start, stop)
            whole = whole and start == 0 and stop == value.shape[axis]
        if whole:
            return value
        part = value[tuple(index)]
        return self.engine.copy(part) if keep else part

    def _combine(self, assembly: Any, parts: list, shape: list, dtype: str,
                 target: Any) -> Any:
        failed = next((part for part in parts if isinstance(part, Failed)), None)
        if failed is not None:
            return failed
        if not parts:  # an empty shard
            return self.engine.empty(local_shape(tuple(shape), target, self.index), dtype)
        if assembly.combine == 'single':
            return parts[0]
        if assembly.combine == 'cat':
            return self.engine.concatenate(parts, assembly.axis)
        total = parts[0]
        for part in parts[1:]:
            total = total + part
        return total


class PeerExchange(Mover):
    """Pieces over ZeroMQ: a ROUTER for what peers send here, a DEALER to each peer."""

    def __init__(self, engine: Any, host: str, keys: Any = None):
        super().__init__(engine)
        self.host = host
        self.keys = keys  # gt.runtime.curve.Keys, or None: no CURVE
        self.socket = zmq.Context.instance().socket(zmq.ROUTER)
        self.socket.setsockopt(zmq.LINGER, 0)
        if keys is not None:
            keys.serve(self.socket)
        self.public_key = keys.public.decode() if keys is not None else ''
        bind_host = os.environ.get('GT_PEER_HOST', '127.0.0.1')
        port = self.socket.bind_to_random_port(f'tcp://{bind_host}')
        self.ipc_path = os.path.join(tempfile.gettempdir(),
                                     f'gt-peer-{os.getpid()}-{uuid.uuid4().hex[:8]}.ipc')
        self.socket.bind(f'ipc://{self.ipc_path}')
        self.endpoints = [f'tcp://{bind_host}:{port}', f'ipc://{self.ipc_path}']
        self.peers: dict[int, list] = {}  # index -> [host, endpoints, alive, key]
        self.outgoing: dict[int, zmq.Socket] = {}
        self.arrived: dict[tuple, tuple] = {}
        self.bytes_sent = 0
        self.bytes_received = 0

    def close(self) -> None:
        for socket in self.outgoing.values():
            socket.close(0)
        self.socket.close(0)
        if os.path.exists(self.ipc_path):
            os.unlink(self.ipc_path)

    # ---- membership ------------------------------------------------------------------
    def set_peers(self, index: int, peers: list) -> None:
        """`peers` are `[index, host, endpoints, alive, key]`; ids of lost peers stay
        known so that a wait on them ends."""
        self.index = index
        for peer, host, endpoints, alive, key in peers:
            known = self.peers.get(peer)
            if known is not None and (not alive or known[1] != endpoints or known[3] != key):
                socket = self.outgoing.pop(peer, None)
                if socket is not None:
                    socket.close(0)
            self.peers[peer] = [host, list(endpoints), bool(alive), str(key)]

    def drop_session(self, session: int) -> None:
        for key in [key for key in self.arrived if key[:1] == (session,)]:
            del self.arrived[key]

    def clear(self) -> None:
        self.arrived.clear()

    def _outgoing(self, peer: int) -> zmq.Socket:
        socket = self.outgoing.get(peer)
        if socket is None:
            host, endpoints, _, key = self.peers[peer]
            same_host = host == self.host
            endpoint = next((e for e in endpoints if e.startswith('ipc://')), None)
            if not same_host or endpoint is None:
                endpoint = next(e for e in endpoints if e.startswith('tcp://'))
            socket = zmq.Context.instance().socket(zmq.DEALER)
            socket.setsockopt(zmq.LINGER, 0)
            socket.setsockopt(zmq.SNDHWM, 0)
            socket.setsockopt(zmq.IDENTITY, str(self.index).encode())
            if key and self.keys is not None:
                self.keys.connect_as_client(socket, server=key.encode())
            socket.connect(endpoint)
            self.outgoing[peer] = socket
        return socket

    def _send(self, peer: int, key: tuple, value: Any) -> None:
        if not self.peers.get(peer, [None, None, False])[2]:
            return  # lost: nobody will wait for it
        if isinstance(value, Failed):
            header, frame = [*key, self.index, None, None, value.report], b''
        else:
            dtype, shape, array = self.engine.to_wire(value)
            header = [*key, self.index, dtype, shape, None]
            frame = memoryview(array).cast('B') if array.size else b''
            self.bytes_sent += array.nbytes
        try:
            self._outgoing(peer).send_multipart([msgpack.packb(header), frame], copy=False,
                                                flags=zmq.NOBLOCK)
        except zmq.ZMQError:
            pass  # the peer is gone; its receivers learn it from the dispatcher

    def _receive(self, key: tuple, sender: int, wait: Callable) -> Any:
        deadline = time.monotonic() + PEER_TIMEOUT
        full_key = (*key, sender)
        while full_key not in self.arrived:
            if not self.peers.get(sender, [None, None, False])[2]:
                raise PeerLost(f'worker {sender} was lost before it sent its part of a move')
            if time.monotonic() > deadline:
                raise PeerLost(f'worker {sender} sent nothing for {PEER_TIMEOUT:.0f} s')
            if wait(self.socket, POLL_MILLISECONDS):
                self._take_arrivals()
        header, frame = self.arrived.pop(full_key)
        dtype, shape, report = header[4:]
        if report is not None:
            return Failed(report)
        self.bytes_received += len(frame.buffer)
        return self.engine.adopt(dtype, shape, frame.buffer)

    def _take_arrivals(self) -> None:
        while True:
            try:
                _, header, frame = self.socket.recv_multipart(zmq.NOBLOCK, copy=False)
            except zmq.Again:
                return
            except ValueError:
                continue  # not three frames: not a peer of ours
            try:
                fields = msgpack.unpackb(header.bytes, raw=False)
            except Exception:
                continue  # garbage on the peer socket is dropped
            if _is_piece_header(fields):
                self.arrived[tuple(fields[:4])] = (fields, frame)


def _is_piece_header(fields: object) -> bool:
    """Whether `fields` is a piece's header, `[session, base, tag, sender, dtype, shape,
    report]`: anything else is dropped before it is stored. A header `[]` was once kept
    under the key `()`, and every later end of a session failed on it."""
    if not isinstance(fields, list) or len(fields) != 7:
        return False
    if not all(type(field) is int for field in fields[:4]):
        return False
    dtype, shape, report = fields[4:]
    if report is not None:
        return isinstance(report, list) and len(report) == 4  # [base, location, op, message]
    return (isinstance(dtype, str) and isinstance(shape, list)
            and all(type(size) is int and size >= 0 for size in shape))
