"""The compile helper: a process beside each worker that builds AOTInductor packages.

Inductor spends seconds of Python in tracing, lowering and code generation; in a thread
of the worker that would hold the interpreter lock for hundreds of milliseconds at a time
and stall the programs the worker is running (measured: an eager MLP step of 7 ms took
up to 740 ms while a thread compiled). In a process of its own, at a lower priority (and
with the worker yielding it a core meanwhile: thread_tuning.WorkerThreads), it only shares the
cores. It also runs each new package once before publishing it, so that a package that
crashes ends the helper, not the worker (gt.runtime.aot_package). The helper starts on
the first Inductor compile, answers one request at a time over its stdin and stdout
(length-prefixed msgpack), and ends with its worker; one that died is started again for
the next request.

    request:  [region wire form, input specs, package path]
    reply:    ['ok', seconds]  or  ['error', message, traceback]
"""

import argparse
import os
import select
import signal
import struct
import subprocess
import sys
import traceback
import warnings
from typing import IO, Any

import msgpack

from gt.runtime import environment

NICER = 10  # the helper's niceness above its worker's: the running programs come first
# A build this long is taken for hung (a cold Inductor build of a region takes 10-60 s):
# its region runs eagerly, and the worker stops yielding the helper a core.
BUILD_SECONDS = 1200.0


class CompileHelper:
    """The worker's side: start the helper on first use, and ask it to build a package."""

    def __init__(self) -> None:
        self.process: subprocess.Popen | None = None
        self.closed = False

    def build(self, wire: list, specs: list, path: str) -> float:
        if self.closed:
            raise RuntimeError('the worker is stopping')
        if self.process is None or self.process.poll() is not None:
            self._start()
        try:
            _write(self.process.stdin, [wire, specs, path])
            if not select.select([self.process.stdout], [], [], BUILD_SECONDS)[0]:
                self.process.kill()  # stopped or hung: the next request starts another
                self._died(path)
                raise RuntimeError(f'the compile helper built for over {BUILD_SECONDS:.0f} s '
                                   '(hung, or stopped), and was ended')
            reply = _read(self.process.stdout)
        except (EOFError, BrokenPipeError):
            raise RuntimeError(self._died(path)) from None
        if reply[0] == 'ok':
            return reply[1]
        raise RuntimeError(f'{reply[1]}\n--- in the compile helper:\n{reply[2]}')

    def _died(self, path: str) -> str:
        """Reap the helper, drop the package it left half-built or untried, and say how it
        ended (the next request starts a new helper)."""
        from gt.runtime.aot_package import partial_path

        pid, code = self.process.pid, self.process.wait()
        self.process = None
        partial_path(path, pid).unlink(missing_ok=True)
        how = f'{signal.strsignal(-code)} (signal {-code})' if code < 0 else f'exit code {code}'
        return f'the compile helper process died while building or trying the package: {how}'

    def _start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, '-m', 'gt.runtime.compile_helper', '--parent', str(os.getpid())],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        # Lowered from here, before its interpreter has started: its imports (torch, gt,
        # then Inductor: seconds of CPU) must not take cores from the worker's programs.
        try:
            os.setpriority(os.PRIO_PROCESS, self.process.pid,
                           min(19, os.getpriority(os.PRIO_PROCESS, 0) + NICER))
        except ProcessLookupError:
            pass  # it died at once: the request's write finds that and says so

    def close(self) -> None:
        self.closed = True  # a compile still queued must not start a new helper
        process = self.process  # the compile thread may drop it meanwhile (`_died`)
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()


def serve(parent: int) -> None:
    # A worker that is stopping ignores SIGTERM, and a child inherits that: restore it,
    # so that exit_with_parent can end this process.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if not environment.switch('GT_DEBUG_COMPILE'):
        warnings.simplefilter('ignore')  # torch.export's deprecation notes, once per region
    from gt.runtime import aot_package
    from gt.runtime.transport import exit_with_parent

    exit_with_parent(parent)
    replies = os.fdopen(os.dup(1), 'wb')
    os.dup2(2, 1)  # whatever Inductor prints goes to stderr, not into the replies
    while True:
        try:
            wire, specs, path = _read(sys.stdin.buffer)
        except EOFError:
            return  # the worker closed the pipe: it is done
        try:
            reply = ['ok', aot_package.build(wire, specs, path)]
        except Exception as error:
            reply = ['error', f'{type(error).__name__}: {error}', traceback.format_exc()]
        _write(replies, reply)


def _write(stream: IO[bytes], message: Any) -> None:
    payload = msgpack.packb(message, use_bin_type=True)
    stream.write(struct.pack('<I', len(payload)) + payload)
    stream.flush()


def _read(stream: IO[bytes]) -> Any:
    header = stream.read(4)
    if len(header) < 4:
        raise EOFError('the other end closed the pipe')
    (length,) = struct.unpack('<I', header)
    payload = stream.read(length)
    if len(payload) < length:
        raise EOFError('the other end closed the pipe')
    return msgpack.unpackb(payload, raw=False, strict_map_key=False)


if __name__ == '__main__':
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--parent', type=int, required=True)
    serve(parser.parse_args().parent)
