"""ZeroMQ plumbing shared by the client, dispatcher and worker: addresses, sockets,
and sending a record with its tensor frames."""

import argparse
import gc
import os
import signal
import socket as sockets
import sys
import tempfile
import threading
from typing import Any

import zmq

from gt.runtime import environment
from gt.runtime.protocol import decode, encode

LOCAL_HOSTS = ('', 'localhost', '127.0.0.1')


def local_socket_path(port: int) -> str:
    """Where `python -m gt.server -p PORT` also listens, for clients on the same host."""
    return os.path.join(tempfile.gettempdir(), f'gt-{os.getuid()}-port-{port}.ipc')


def tcp_port(text: str) -> int:
    """A command line's port: an integer from 1 to 65535 (ZeroMQ would take others and
    wrap or refuse them later, far from the mistake)."""
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise argparse.ArgumentTypeError(f'{text!r} is not a TCP port (1 to 65535)')
    return int(text)


def endpoint_for(address: str) -> str:
    """`'localhost:12345'` -> the server's ipc socket when it has one, else
    `'tcp://127.0.0.1:12345'`; full ZeroMQ endpoints pass through."""
    if not isinstance(address, str):
        raise TypeError(f'expected an address like "localhost:12345", got {address!r}')
    if '://' in address:
        return address
    host, separator, port = address.rpartition(':')
    if not separator or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f'expected an address like "localhost:12345" (a port from 1 to '
                         f'65535), got {address!r}')
    if host in LOCAL_HOSTS:
        if _listening(local_socket_path(int(port))):
            return f'ipc://{local_socket_path(int(port))}'
        host = '127.0.0.1'
    return f'tcp://{host}:{port}'


def _listening(path: str) -> bool:
    """Whether a server listens on the ipc socket at `path`: a killed one leaves the file,
    which took `localhost:PORT` from a live server on TCP at that port."""
    if not os.path.exists(path):
        return False
    probe = sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM)
    try:
        probe.connect(path)
    except OSError:
        return False
    finally:
        probe.close()
    return True


def dealer(endpoint: str, identity: bytes | None = None, keys: Any = None,
           connect: bool = True) -> zmq.Socket:
    """A DEALER to `endpoint`; with `keys` (gt.runtime.curve.Keys) it talks CURVE. With
    `connect=False` the caller connects it, after watching its handshakes."""
    socket = zmq.Context.instance().socket(zmq.DEALER)
    socket.setsockopt(zmq.LINGER, 0)
    if identity is not None:
        socket.setsockopt(zmq.IDENTITY, identity)
    if keys is not None:
        keys.connect_as_client(socket)
    if connect:
        socket.connect(endpoint)
    return socket


MORE = int(zmq.SNDMORE)  # a plain int: pyzmq's enum flags cost microseconds to combine


def send(socket: zmq.Socket, message: Any, frames: list = (), to: bytes | None = None) -> None:
    """`socket.send_multipart([to, header, *frames], copy=False)` in a quarter of the
    time (2 against 8 µs for two parts): send_multipart checks every part and combines
    enum flags for each, where a plain int flag does. Every message of every process
    goes through here, several per fetch. The header is encoded before the first part
    goes: a failure then must not leave half a message on the socket."""
    header = encode(message)
    if to is not None:
        socket.send(to, MORE, copy=False)
    if not frames:
        socket.send(header, 0, copy=False)
        return
    socket.send(header, MORE, copy=False)
    last = len(frames) - 1
    for index, frame in enumerate(frames):
        socket.send(frame, MORE if index < last else 0, copy=False)


def receive(socket: zmq.Socket) -> tuple[Any, list]:
    """A DEALER's next message: `(record, frames)`."""
    header, *frames = receive_frames(socket)
    return decode(header.bytes), frames


def receive_frames(socket: zmq.Socket) -> list[zmq.Frame]:
    """`socket.recv_multipart(copy=False)`, in half the time: each frame says whether
    more follow, where recv_multipart asks the socket (an option lookup through enums)."""
    frame = socket.recv(copy=False)
    frames = [frame]
    while frame.more:
        frame = socket.recv(copy=False)
        frames.append(frame)
    return frames


def exit_with_parent(parent_pid: int) -> None:
    """End this process when `parent_pid` ends, even if the parent was killed outright.

    The auto-started server's processes must not outlive the script that started them.
    """
    def watch() -> None:
        while True:
            if os.getppid() != parent_pid:
                os.kill(os.getpid(), signal.SIGTERM)
                return
            threading.Event().wait(0.5)

    threading.Thread(target=watch, daemon=True, name='gt-parent-watch').start()


def serve_until_stopped(serve_forever: Any, greeting: str) -> None:
    """Run a server loop until Ctrl-C or SIGTERM; `greeting` goes to stderr with
    GT_VERBOSE=1 (stdout is the user's script's)."""
    if environment.switch('GT_VERBOSE'):
        print(greeting, file=sys.stderr, flush=True)
    # What is imported and built by now (torch's modules: 130,000 objects in a worker)
    # lives as long as the process; the collector's full passes need not scan it again.
    gc.freeze()
    try:
        serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # exiting already: a late TERM is moot


def terminate_on_sigterm() -> None:
    """Turn SIGTERM into SystemExit so that `finally` blocks clean up."""
    def stop(signum: int, frame: Any) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second TERM must not cut cleanup
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
