"""Ctrl-C held back while a client sends: a message half sent cannot be taken back, and
raised again where Python would drop it (in a tensor's finalizer).

A KeyboardInterrupt raised inside a send leaves no way to tell whether the message went
(ZeroMQ may have queued it before the interrupt surfaced), and one between the parts of
a multipart message would glue the next message onto it. So while a Submit goes, SIGINT
is only noted, and raised once the send is done and recorded as sent. Only the main
thread receives signals, and only Python's own handler is replaced (a script's handler
is left as it is). `_signal` directly: `signal.signal`'s enum wrapping cost 6.7 us a
flush, this 0.5.
"""

import _signal
import _thread
import signal
import threading
from typing import Any

_MAIN = threading.main_thread()


class InterruptsHeld:
    """`with InterruptsHeld():` defers Ctrl-C to the end of the block."""

    __slots__ = ('previous', 'interrupted')

    def __enter__(self) -> 'InterruptsHeld':
        self.previous = None
        self.interrupted = False
        if threading.current_thread() is _MAIN:
            previous = _signal.signal(signal.SIGINT, self._note)
            if previous is _signal.default_int_handler:
                self.previous = previous
            else:  # the script's own handler: leave it as it is
                _signal.signal(signal.SIGINT, previous)
        return self

    def _note(self, signum: int, frame: object) -> None:
        self.interrupted = True

    def __exit__(self, *exception: object) -> None:
        if self.previous is not None:
            _signal.signal(signal.SIGINT, self.previous)
            if self.interrupted:
                raise KeyboardInterrupt


def release_when_collected(tensor: Any) -> None:
    """`Tensor.__del__`: hands the tensor's value back. Python drops an exception raised
    in a finalizer, so a Ctrl-C that lands in one is raised again in the main thread (it
    was printed as "Exception ignored", and the script ran on)."""
    try:
        if tensor._id is not None:
            tensor._client.release(tensor._id)
    except KeyboardInterrupt:
        _thread.interrupt_main()
