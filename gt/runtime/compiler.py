"""Compiling regions beside execution, so that no program ever waits for a compile.

`Compiler.submit` returns a Future at once; one daemon thread works through requests in
order. On a CPU worker `inductor` (the default backend) builds an AOTInductor package in
the compile helper process and loads it here (milliseconds); a package already on disk,
from another worker or an earlier run, is just loaded. The cheap backends (`eager`,
`aot_eager`, `cudagraphs`) compile in the thread with `torch.compile`, which takes a
fraction of a second; `torch._dynamo.run` then calls the result without ever compiling
again, so a guard that fails on the worker's thread runs the region eagerly instead of
recompiling.

On a GPU worker Inductor compiles in the thread too, as torch.compile does in a script:
on an H200 with torch 2.11 (cu130), loading a CUDA package crashed the process (SIGSEGV
in `AOTIModelPackageLoader`, in a script without GT as in GT's worker), so packages would
leave every GPU region eager. In the thread, the compile shares the interpreter with the
worker's loop, which runs on eagerly meanwhile; the lock changes hands more often while
it compiles (`_prompt_interpreter_handoffs`).

A compile that fails leaves its region eager, with one warning: a `gt.CompileWarning` to
each session whose program failed to compile (at its next fetch from this worker: the
user may be on another machine), and one line on the worker's stderr for its operator
(but for an auto-started worker, whose stderr is its script's: the user would read it
twice). `GT_DEBUG_COMPILE=1` prints every compile and every failure in full there.

Compiling is bounded by what comes back. A loop over changing shapes (a sequence growing
by one a step) makes a new program, or a new layout of one, at every length: each is hot
after two runs, and compiling each would keep the worker compiling for ever, for forms
that never run. So a session's new layout starts compiling only while fewer than
`MAX_PENDING_LAYOUTS` of the session's layouts wait for their compiles, and fewer than
`MAX_UNUSED_LAYOUTS` of them sit compiled and unused (ready, and not run since). A
deferred layout asks again at its program's next run; past the unused bound, only a
program that keeps coming back (`PERSISTENT_RUNS` runs) is compiled. The bounds are per
session, so that one session's loop, or the programs a finished script left unused, never
hold back another's compiles.
"""

import contextlib
import os
import queue
import sys
import threading
import time
import traceback
import weakref
from collections import Counter
from concurrent.futures import Future
from typing import Any, Callable, Iterator

import torch

from gt.runtime import aot_package, environment, generator_guard, graph_module
from gt.runtime.codegen import Step
from gt.runtime.compile_helper import CompileHelper
from gt.runtime.regions import Region
from gt.runtime.session_errors import WARNING

CLOSE_SECONDS = 3.0  # a cheap backend's compile under way ends well within this
MAX_PENDING_LAYOUTS = 4
MAX_UNUSED_LAYOUTS = 4
PERSISTENT_RUNS = 16
COMPILING_SWITCH_SECONDS = 0.0002
DESCRIBED_OPS = 5  # op kinds a debug line names for a region


def debugging() -> bool:
    return environment.switch('GT_DEBUG_COMPILE')


class Compiler:
    def __init__(self, device: Any = 'cpu', warns_operator: bool = True) -> None:
        self.device = str(torch.device(device))  # where regions make their created tensors
        self.packages = torch.device(device).type == 'cpu'  # Inductor as packages (above)
        self.requests: queue.SimpleQueue = queue.SimpleQueue()
        self.helper = CompileHelper()
        self.thread: threading.Thread | None = None
        self.lock = threading.Lock()
        self.regions_compiled = 0
        self.failures = 0
        self.pending = 0
        self.seconds = 0.0
        self.programs_compiled = 0  # program layouts that switched to compiled regions
        self.compiled_runs = 0  # runs that used them
        self.warns_operator = warns_operator  # of the first failure, on stderr
        self.warned = False
        self.sessions_warned: set[int] = set()
        self.epoch = 0  # sessions' numbering: a restarted dispatcher numbers them anew
        # By session: the warning its next fetch takes, and where its region came from.
        self.warnings: dict[int, tuple[str, Callable[[int], list]]] = {}
        self.building = 0  # Inductor requests queued or under way: the helper is busy
        # Per session: its layouts whose regions are not all compiled yet, and those
        # compiled and not run since (weakly: a program the worker forgets takes its own).
        self.layouts_pending: Counter[int] = Counter()
        self.unused: dict[int, weakref.WeakSet] = {}
        self.layouts_deferred = 0  # times a hot layout was not compiled (see the module doc)

    def admits(self, session: int, runs: int) -> bool:
        """Whether `session`'s new layout of a program that has run `runs` times may
        start compiling now."""
        with self.lock:
            admitted = self.layouts_pending[session] < MAX_PENDING_LAYOUTS and (
                len(self.unused.get(session, ())) < MAX_UNUSED_LAYOUTS
                or runs >= PERSISTENT_RUNS)
            self.layouts_deferred += not admitted
        return admitted

    def watch(self, layout: Any, futures: list[Future]) -> None:
        """Count `layout` (of `layout.session`) pending until all its regions' `futures`
        are done, then unused until `used`."""
        session, left, epoch = layout.session, [len(futures)], self.epoch

        def one_done(_: Future) -> None:
            with self.lock:
                left[0] -= 1
                if left[0] == 0 and epoch == self.epoch and session in self.layouts_pending:
                    self.layouts_pending[session] -= 1
                    self.unused.setdefault(session, weakref.WeakSet()).add(layout)

        with self.lock:
            self.layouts_pending[session] += 1
        for future in futures:
            future.add_done_callback(one_done)

    def used(self, layout: Any) -> None:
        """`layout` ran compiled (or its compiles failed and it ran on)."""
        with self.lock:
            self.unused.get(layout.session, set()).discard(layout)

    def end_session(self, session: int) -> None:
        with self.lock:
            self.layouts_pending.pop(session, None)
            self.unused.pop(session, None)
            self.sessions_warned.discard(session)
            self.warnings.pop(session, None)

    def forget_sessions(self) -> None:
        """The dispatcher restarted: every session number is about to mean another
        session. A compile under way for an old one fails without a word."""
        with self.lock:
            self.epoch += 1
            self.layouts_pending.clear()
            self.unused.clear()
            self.sessions_warned.clear()
            self.warnings.clear()

    def take_warnings(self, session: int) -> list[list]:
        """What `session` is to be warned of (at most once: see the module's docstring),
        as reports `[base, [first, last], WARNING, text]`: the region's first and last ops
        in the fragment the session last ran its program for."""
        with self.lock:
            warning = self.warnings.pop(session, None)
        if warning is None:
            return []
        text, origin = warning
        return [[*origin(session), WARNING, text]]

    def submit(self, steps: list[Step], region: Region, examples: tuple, backend: str,
               session: int, origin: Callable[[int], list]) -> Future:
        """Compile `region` for inputs laid out as `examples` (real inputs it ran with:
        torch.compile runs it once on them; Inductor needs only their layouts, so they are
        not kept waiting in the queue), for `session`'s program (warned if it fails;
        `origin(session)` says where the region's ops were recorded)."""
        future: Future = Future()
        with self.lock:
            self.pending += 1
            self.layouts_pending[session] += 0  # live until end_session: see _report_failure
            if self._packaged(backend):
                examples = tuple(graph_module.spec_of(value) for value in examples)
                self.building += 1
        self.requests.put((future, steps, region, examples, backend, (self.epoch, session),
                           origin))
        if self.thread is None:
            self.thread = threading.Thread(target=self._work, daemon=True, name='gt-compile')
            self.thread.start()
        return future

    def stats(self) -> dict:
        return {'compiled_programs': self.programs_compiled,
                'compiled_regions': self.regions_compiled,
                'compiled_runs': self.compiled_runs, 'compile_seconds': round(self.seconds, 3),
                'compile_failures': self.failures, 'compiles_pending': self.pending,
                'compiles_deferred': self.layouts_deferred}

    def close(self) -> None:
        """Stop compiling: queued requests are dropped, and a compile under way is waited
        for (a thread left inside torch.compile at exit aborts the process)."""
        self.helper.close()
        if self.thread is not None:
            self.requests.put(None)
            self.thread.join(CLOSE_SECONDS)

    def _work(self) -> None:
        generator_guard.guard_restores()  # Dynamo's, in this thread: see that module
        while True:
            request = self.requests.get()
            if request is None:
                return
            future, steps, region, examples, backend, (epoch, session), origin = request
            if self.helper.closed:
                future.set_exception(RuntimeError('the worker is stopping'))
                continue
            start = time.perf_counter()
            if debugging():
                _say(f'compiling {_described(steps, region)} with {backend}')
            try:
                if self._packaged(backend):
                    result = self._compile(steps, region, examples, backend)
                else:
                    with _prompt_interpreter_handoffs():
                        result = self._compile(steps, region, examples, backend)
            except Exception as error:
                if not self.helper.closed:  # not a failure: the worker is stopping
                    with self.lock:
                        self.failures += 1
                    self._report_failure(error, steps, region, backend, (epoch, session),
                                         origin)
                future.set_exception(error)
            else:
                with self.lock:
                    self.regions_compiled += 1
                if debugging():
                    _say(f'compiled {_described(steps, region)} with {backend} in '
                         f'{time.perf_counter() - start:.2f} s')
                future.set_result(result)
            finally:
                del examples  # not kept alive until the next request
                with self.lock:
                    self.pending -= 1
                    self.building -= self._packaged(backend)
                    self.seconds += time.perf_counter() - start

    def _packaged(self, backend: str) -> bool:
        """Whether `backend` builds in the compile helper (the worker's `building` counts)."""
        return backend == 'inductor' and self.packages

    def _compile(self, steps: list[Step], region: Region, examples: tuple, backend: str) -> Any:
        if self._packaged(backend):
            wire, specs = graph_module.to_wire(steps, region, self.device), list(examples)
            path = aot_package.package_path(wire, specs)
            loaded = None
            if path.exists():
                try:
                    loaded = aot_package.load(path, specs)
                except RuntimeError:  # damaged on disk (a torn copy): built again, below
                    path.unlink(missing_ok=True)
            if loaded is None:
                self.helper.build(wire, specs, str(path))  # at once if another built it
                loaded = aot_package.load(path, specs)
            # A package's first call sets itself up (a millisecond or more, measured):
            # here, on zeros, rather than in a step of the worker's loop.
            aot_package.try_on_zeros(loaded, specs)
            return loaded
        if backend == 'cudagraphs' and not any(
                isinstance(value, torch.Tensor) and value.is_cuda for value in examples):
            # torch's backend would skip its graphs with a warning of 26 lines, and its
            # threads sometimes abort the worker at exit ('terminate called...').
            raise RuntimeError('cudagraphs captures CUDA graphs, and this region runs on '
                               'the CPU; choose eager, aot_eager or inductor for a CPU worker')
        compiled = torch.compile(graph_module.build(steps, region, self.device),
                                 backend=backend, dynamic=False)
        numbers = _cpu_numbers(examples) if backend == 'cudagraphs' else []
        examples = _on_device(examples, numbers, self.device)
        with torch.inference_mode():  # as the worker runs: the guards must match its calls
            compiled(*examples)
        run = torch._dynamo.run(compiled)
        return _replaying(run, numbers, self.device) if backend == 'cudagraphs' else run

    def tell(self, session: int, warning: str, origin: Callable[[int], list]) -> None:
        """Warn `session` of `warning` at its next fetch, unless it was warned already."""
        if session in self.sessions_warned:
            return
        with self.lock:
            if session not in self.sessions_warned:
                self.sessions_warned.add(session)
                self.warnings[session] = (warning, origin)

    def _report_failure(self, error: Exception, steps: list[Step], region: Region,
                        backend: str, whose: tuple[int, int],
                        origin: Callable[[int], list]) -> None:
        """`whose`: the epoch and session the compile was for, warned if it is still
        there (not ended, and its number not another session's since)."""
        epoch, session = whose
        with self.lock:
            live = epoch == self.epoch and session in self.layouts_pending
        if live:
            self.tell(session, failure_warning(error, region, backend), origin)
        if debugging():
            _say(f'{_described(steps, region)} did not compile with {backend}; it runs '
                 'eagerly:\n' + ''.join(traceback.format_exception(error)))
        elif self.warns_operator and not self.warned:
            self.warned = True
            _say(f'warning: {_failure(error, region, backend)}. GT_DEBUG_COMPILE=1 shows '
                 'details.')


def failure_warning(error: BaseException, region: Region, backend: str) -> str:
    """What a session whose program failed to compile is told."""
    return (f'{_failure(error, region, backend)}, with the same results (GT_DEBUG_COMPILE=1 '
            "in the worker's environment prints the whole error)")


def _described(steps: list[Step], region: Region) -> str:
    """`a region of 37 ops (6 matmul, 5 add, ...)`: which region a debug line is about."""
    counts = Counter(steps[index].op for index in region.steps).most_common()
    shown = ', '.join(f'{count} {op}' for op, count in counts[:DESCRIBED_OPS])
    more = ', ...' if len(counts) > DESCRIBED_OPS else ''
    return f'a region of {len(region.steps)} ops ({shown}{more})'


def _failure(error: BaseException, region: Region, backend: str) -> str:
    first_line = str(error).splitlines()[0] if str(error) else ''
    return (f'a region of {len(region.steps)} ops did not compile with {backend} '
            f'({type(error).__name__}: {first_line}); it runs eagerly')


@contextlib.contextmanager
def _prompt_interpreter_handoffs() -> Iterator[None]:
    """While this thread compiles, the interpreter lock changes hands every
    `COMPILING_SWITCH_SECONDS` rather than Python's 5 ms: each time the worker's loop lets
    go of the lock (a socket wait, a device sync) a compiling thread takes it, and the loop
    waited a whole interval to get it back, again and again within one program."""
    usual = sys.getswitchinterval()
    sys.setswitchinterval(COMPILING_SWITCH_SECONDS)
    try:
        yield
    finally:
        sys.setswitchinterval(usual)


def _cpu_numbers(examples: Any) -> list[int]:
    """Which inputs are number operands, 0-d CPU tensors on a GPU worker as torch keeps
    a Python number (engines._torch_literal): torch's cudagraphs backend would skip its
    graphs for them (with a warning of 26 lines)."""
    return [index for index, value in enumerate(examples) if isinstance(value, torch.Tensor)
            and value.device.type == 'cpu' and value.dim() == 0]


def _on_device(inputs: Any, numbers: list[int], device: Any) -> Any:
    if not numbers:
        return inputs
    inputs = list(inputs)
    for index in numbers:
        inputs[index] = inputs[index].to(device, non_blocking=True)
    return inputs


def _replaying(run: Any, numbers: list[int], device: Any) -> Any:
    """A CUDA graph's run: its number operands moved to the device (a replay copies each
    input into the graph's own), and its outputs copied out as soon as the replay ends.
    A CUDA graph replays into memory of its own, which its next replay overwrites, while
    a region's outputs live on as the worker's tensors (a parameter, a momentum buffer):
    a device copy, as torch advises for outputs kept across runs."""
    def replay(*inputs: Any) -> tuple:
        return tuple(output.clone() if isinstance(output, torch.Tensor) else output
                     for output in run(*_on_device(inputs, numbers, device)))

    return replay


def _say(text: str) -> None:
    print(f'gt worker {os.getpid()} [compile {time.strftime("%H:%M:%S")}]: {text}',
          file=sys.stderr, flush=True)
