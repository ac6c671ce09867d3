"""A worker's express lane: a second socket and thread that run light sessions' programs
while the main loop is inside another session's long one (the dispatcher's scheduler
chooses what goes here: single-worker programs of sessions whose recent programs were
short, one at a time, never beside the same session's work on the main lane).

Kernels release the GIL, so a tiny op here runs on the core the long kernel leaves, and
a light client waits for its own work instead of a whole heavy program (measured in
benchmarks/multiplex.py). The lane has its own socket, because ZeroMQ sockets are not
thread-safe, and its own cache of decoded programs, which the dispatcher mirrors apart
from the main lane's: a program sent to one lane first may still be queued there.
"""

import secrets
import threading
import traceback
from typing import Any, NamedTuple

import zmq

from gt.runtime.protocol import ExpressReady, ProtocolError, RunProgram
from gt.runtime.transport import dealer, receive, send

# While idle the lane says so this often: a dispatcher that restarted learns of it.
READY_EVERY_SECONDS = 0.5


class Lane(NamedTuple):
    """Where a program came from and how it runs there: the socket its reply goes back
    on, the lane's decoded programs, and the compiler (None: never compiled)."""

    socket: zmq.Socket
    programs: dict
    compiler: Any


class ExpressLane:
    def __init__(self, worker: Any) -> None:
        self.worker = worker
        self.key = secrets.token_hex(16)  # proves to the dispatcher the lane is this worker's
        self.programs: dict = {}
        self.runs = 0

    def start(self) -> None:
        threading.Thread(target=self._serve, daemon=True, name='gt-express-lane').start()

    def _serve(self) -> None:
        worker = self.worker
        socket = dealer(worker.endpoint, worker.identity + b'/express', worker.keys)
        lane = Lane(socket, self.programs, None)
        with worker.engine.running():  # torch's inference mode is per thread
            while True:
                if not socket.poll(int(READY_EVERY_SECONDS * 1000)):
                    send(socket, ExpressReady(worker.identity, self.key))
                    continue
                try:
                    message, frames = receive(socket)
                except ProtocolError:
                    continue
                if not isinstance(message, RunProgram):
                    continue
                self.runs += 1
                try:
                    worker.execute(message, frames, lane)
                except Exception:  # the lane outlives any one bad message, as the main does
                    traceback.print_exc()
