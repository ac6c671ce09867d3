"""How a client waits for the dispatcher's answer (a mixin of `Client`): it keeps
checking that the dispatcher is alive, pinging it, so a lost server is an exception
within seconds, never a hang; it says so while a new server has no worker yet, and
raises a refusal or the end of the session as soon as they come.
"""

import sys
import time

import zmq

from gt.runtime import environment, ownership
from gt.runtime.protocol import Fetched, Marked, Ping, ProtocolError, Refused, SessionEnded
from gt.runtime.session_errors import ClosedSessionError
from gt.runtime.transport import receive, send

SILENCE_SECONDS = environment.number('GT_TIMEOUT')  # no sign of life: give up
PING_SECONDS = 1.0
RECHECK_SECONDS = 2.0  # after a silent wait: how long the next one waits for a Pong
WORKERLESS_NOTICE_SECONDS = 5.0  # waiting this long at connect for a worker: say so
STARTUP_SECONDS = environment.number('GT_STARTUP_TIMEOUT')


class DispatcherWaits:
    @ownership.one_thread_at_a_time
    def _wait(self, kind: type, request: int | None = None, startup: bool = False):
        if self.unanswered:  # silent through a whole wait before: ask once, briefly
            send(self.socket, Ping())
            if not self._poll(int(RECHECK_SECONDS * 1000)):
                raise ConnectionError(
                    f'the GT dispatcher at {self.endpoint} gave no answer for '
                    f'{SILENCE_SECONDS:.0f} s before, and none now: is it running?')
            self.unanswered = False
        last_heard = last_ping = time.monotonic()
        started = last_heard
        noticed = False
        while True:
            if self._poll(250):
                try:
                    message, frames = receive(self.socket)
                except ProtocolError:
                    continue
                last_heard = time.monotonic()
                if isinstance(message, Refused):
                    raise ConnectionError(f'the GT dispatcher refused: {message.reason}')
                if isinstance(message, SessionEnded):
                    self._stop_keep_alive.set()
                    self.ended = (f'{message.reason}. Call gt.connect(address) for a new '
                                  'session and make the tensors again, or run the script again')
                    raise ClosedSessionError(self.ended)
                if isinstance(message, Marked):
                    self.pacer.marked(message.number)
                    if kind is Marked and message.number == request:
                        return message, frames
                    continue
                if self.prefetch.keep(message, frames):  # a guessed fetch's answer
                    if kind is Fetched and message.request == request:
                        return message, frames
                    continue
                if isinstance(message, kind) and getattr(message, 'request', request) == request:
                    return message, frames
                continue
            now = time.monotonic()
            if self.server is not None:
                self.server.check_alive(starting=startup)
            if self.handshake is not None:
                self.handshake.check()  # a failed one raises what to set, at once
            # A local server that is still starting is silent while it imports torch; its
            # processes being alive is the sign of life then.
            starting_locally = startup and self.server is not None
            if now - last_heard > SILENCE_SECONDS and not starting_locally:
                self.unanswered = True  # the next wait asks once, and gives up sooner
                raise ConnectionError(
                    f'no answer from the GT dispatcher at {self.endpoint} for '
                    f'{SILENCE_SECONDS:.0f} s: is it running?'
                    + (self.handshake.hint() if self.handshake else ''))
            # Only a dispatcher heard from answers: one that is not running said nothing.
            if (startup and not starting_locally and not noticed and last_heard > started
                    and now - started > WORKERLESS_NOTICE_SECONDS):
                noticed = True
                print(f'gt: the dispatcher at {self.endpoint} answers, but no worker has '
                      f'joined it yet; waiting up to {STARTUP_SECONDS:.0f} s '
                      '(GT_STARTUP_TIMEOUT) for one (python -m gt.worker --host H -p PORT)',
                      file=sys.stderr, flush=True)
            if startup and now - started > STARTUP_SECONDS:
                raise ConnectionError(f'no GT worker joined the dispatcher at {self.endpoint} '
                                      f'within {STARTUP_SECONDS:.0f} s')
            if now - last_ping > PING_SECONDS:
                send(self.socket, Ping())
                last_ping = now

    def _poll(self, milliseconds: int) -> bool:
        """Whether a message waits, within `milliseconds`; until the first handshake
        succeeds, a handshake event ends the wait too, so a wrong key is said at once."""
        if self.handshake is None:
            return bool(self.socket.poll(milliseconds))
        poller = zmq.Poller()
        poller.register(self.socket, zmq.POLLIN)
        poller.register(self.handshake.monitor, zmq.POLLIN)
        return self.socket in dict(poller.poll(milliseconds))
