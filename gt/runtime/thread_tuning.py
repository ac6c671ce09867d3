"""How many threads each hot compiled program runs with on a CPU worker, chosen by
timing it.

A local cluster's client, dispatcher and workers share the machine's cores, and a thread
that does not make a program faster still costs a core: an OpenMP thread spins while it
waits for the next parallel op, and for a while after the last. Measured on 2 cores, a
small MLP's step ran in about 2 ms on two threads and on one, yet the worker spent 3-4.5
ms of CPU per step on two against 1.3-2 on one: time the client recording the next step
did not get. With its step compiled, GT's step went from 1.49x torch's (median) to 1.17x
by running it on one thread. A 1000x1000 matmul, whose client only waits for it, is 1.4x
faster on two threads.

So each such program is timed at each candidate count (the worker's full count, then
halvings down to 1), in blocks of runs in turns. A program run again and again cycles no
faster than its own run, nor faster than the machine's cores can supply the CPU of a run
(counted as its threads times its time) plus what every other process (the client, the
dispatcher, other workers, other users) spends while it runs. The program runs on the
fewest threads whose predicted cycle is within `NEAR_BEST` of the best. Work that only
alternates with the program's runs (a client that waits for each result) takes no core
from it, and is not counted. It is timed again after `RETUNE_SECONDS` on its choice,
since clients come and go, and when it switches to its compiled form.

Counts can change a float sum's order, and an eager program on the worker's count gives
torch's bits (a model trained on one worker equals torch's run bit for bit, when the
worker has the script's threads). So by default (`checked`) programs that run compiled
are tuned (Inductor's kernels give other bits than torch's eager ones anyway), and an
eager one only once it is shown to give the same bits on one thread: when it turns hot,
it runs once on one thread and once on the full count, on the same inputs (programs are
pure; those that draw random numbers or move data are not checked), and is tuned between
those two counts only if every result is the same to the bit. A small model's step, whose
ops are too small to split over threads, passes (an LSTM language model's: 2.2x torch's
step without tuning, measured); a 784x256 matmul's, which the BLAS splits, does not.
`GT_THREAD_TUNING=compiled` tunes compiled programs only, `all` every program, `0` none.
"""

import os
import statistics
import sys
import time
from typing import Any

import psutil
import torch

from gt.runtime import diagnostics, environment

BLOCK = 3  # runs in a row at one count; the first, after a switch, is not a sample
SAMPLES = 6  # runs timed per candidate count, at least
WINDOW_SECONDS = 0.5  # the machine's CPU counters tick every 10 ms: time this long at least
RETUNE_SECONDS = 60.0  # on the chosen count before timing the candidates again
NEAR_BEST = 1.05  # fewer threads are kept unless more would cut the cycle by over 5%
SETTINGS = environment.CHOICES['GT_THREAD_TUNING']


def scope() -> str | None:
    """Which programs `GT_THREAD_TUNING` has tuned: 'checked' (the default), 'compiled',
    'all', or None for `0`."""
    setting = os.environ.get('GT_THREAD_TUNING', 'checked')
    if setting not in SETTINGS:
        print(f'gt worker: GT_THREAD_TUNING={setting!r} is not one of 0, compiled, checked '
              'or all; tuning compiled programs and checked eager ones', file=sys.stderr,
              flush=True)
        return 'checked'
    return None if setting == '0' else setting


def same_bits(first: list, second: list) -> bool:
    """Whether two runs' results are equal to the bit (a NaN counts as a difference)."""
    return len(first) == len(second) and all(
        isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dtype == b.dtype
        and a.shape == b.shape and torch.equal(a, b) for a, b in zip(first, second))


def candidate_counts(full: int) -> list[int]:
    """The full count and its halvings, down to one thread."""
    counts = [full]
    while counts[-1] > 1:
        counts.append(counts[-1] // 2)
    return counts


def machine_busy_seconds() -> float:
    """CPU seconds every process on the machine has spent, in ticks of 10 ms on Linux."""
    times = psutil.cpu_times()
    return times.user + times.system + getattr(times, 'nice', 0.0) + getattr(
        times, 'irq', 0.0) + getattr(times, 'softirq', 0.0)


def predicted_cycle(threads: int, run_seconds: float, others_cpu: float, cores: int) -> float:
    """How often a program can run when a run takes `run_seconds` on `threads` threads
    and the rest of the machine spends `others_cpu` seconds of CPU per run."""
    return max(run_seconds, (threads * run_seconds + others_cpu) / cores)


class ProgramThreads:
    """One program's timings and choice: `next_count` says what its next run uses, and
    `record` takes how long that run took."""

    def __init__(self, full: int, cores: int, candidates: list[int] | None = None) -> None:
        self.candidates = candidates or candidate_counts(full)
        self.cores = cores
        self.compiled = False  # the form the timings are of
        self.tunings = 0  # how many times a choice was made
        self._start_over()

    def next_count(self, compiled: bool) -> int:
        """`compiled`: whether the program's last run was of its compiled form."""
        if compiled != self.compiled:
            self.compiled = compiled
            self._start_over()
        if self.choice is not None:
            if time.perf_counter() < self.retune_at:
                return self.choice
            self._start_over()
        if self.window_start is None:
            self.window_start = time.perf_counter()
        if self.in_block == BLOCK:
            self.block_count = min(self.candidates, key=lambda count: len(self.samples[count]))
            self.in_block = 0
        self.in_block += 1
        return self.block_count

    def record(self, count: int, seconds: float, others_cpu: float) -> None:
        """`others_cpu`: the CPU the rest of the machine spent during the run."""
        if self.choice is not None or count != self.block_count:
            return
        self.window_runs += 1
        self.others_cpu += others_cpu
        if self.in_block > 1:
            self.samples[count].append(seconds)
        if (time.perf_counter() - self.window_start >= WINDOW_SECONDS
                and all(len(runs) >= SAMPLES for runs in self.samples.values())):
            self._choose()

    def pause(self) -> None:
        """A run went untimed (the compile helper was building, or the program ran
        eagerly where only compiled runs are tuned): time afresh."""
        if self.choice is None:
            self._start_over()

    def _choose(self) -> None:
        others = max(0.0, self.others_cpu / self.window_runs)
        runs = {count: statistics.median(times) for count, times in self.samples.items()}
        cycles = {count: predicted_cycle(count, seconds, others, self.cores)
                  for count, seconds in runs.items()}
        best = min(cycles.values())
        self.choice = min(count for count, cycle in cycles.items() if cycle <= NEAR_BEST * best)
        self.retune_at = time.perf_counter() + RETUNE_SECONDS
        self.tunings += 1
        diagnostics.debug('worker', lambda: (
            f'thread counts timed over {self.window_runs} runs; the rest of the machine '
            f'spent {others * 1e3:.3f} ms of CPU per run; ' + ', '.join(
                f'{count} thread(s): run {runs[count] * 1e3:.3f} ms, cycle '
                f'{cycles[count] * 1e3:.3f} ms' for count in runs)
            + f'; runs on {self.choice}'))

    def _start_over(self) -> None:
        self.choice: int | None = None
        self.retune_at = 0.0
        self.samples: dict[int, list[float]] = {count: [] for count in self.candidates}
        self.block_count = self.candidates[0]
        self.in_block = 0
        self.window_start: float | None = None
        self.window_runs = 0
        self.others_cpu = 0.0


class WorkerThreads:
    """The torch thread count of the worker's main lane: each hot program's tuned count,
    and one thread fewer while the compile helper builds. On a small machine the helper's
    compiler takes a core, and a parallel op whose thread it preempted stalls at its
    barrier: measured on 2 cores, compiled MLP steps took 160 ms instead of 5 while other
    regions compiled. Programs are not timed meanwhile."""

    def __init__(self, tune: bool) -> None:
        """`tune`: whether programs run on the CPU (a GPU's kernels are timed by the GPU)."""
        self.full = self.current = torch.get_num_threads()
        self.scope = scope() if tune and self.full > 1 else None
        self.cores = os.cpu_count() or 1
        self.cpu_at_start = (0.0, 0.0)  # the worker's and the machine's, at a timed run's start
        self.checked = 0  # eager programs checked on one thread
        self.same_bits = 0  # of which gave the same bits there

    def checks(self, program: Any, helper_building: bool) -> bool:
        """Whether `program`'s next run is its check (see the module's docstring): a hot
        eager program, pure and not checked yet, in the 'checked' scope."""
        return (self.scope == 'checked' and program.generated is not None
                and not program.compiles and program.same_bits_on_one is None
                and not program.moves and not program.draws and not helper_building)

    def check(self, program: Any, run: Any) -> tuple:
        """Run `program` (`run()`) on one thread, then on the full count; note whether
        both gave the same bits; return the full count's `(results, errors)`."""
        self._use(1)
        few, few_errors = run()
        self._use(self.full)
        results, errors = run()
        program.same_bits_on_one = not few_errors and not errors and same_bits(few, results)
        self.checked += 1
        self.same_bits += program.same_bits_on_one
        return results, errors

    def before_run(self, program: Any, helper_building: bool) -> bool:
        """Set the count for `program`'s next run; return whether the run is timed for
        the program's choice. Hot programs in the scope are tuned, unless they wait on
        peers (a move's time is its peers' as much as its threads')."""
        eager_ok = self.scope == 'all' or (self.scope == 'checked'
                                           and program.same_bits_on_one)
        tuned = (self.scope is not None and program.generated is not None
                 and not program.moves and (program.ran_compiled or eager_ok))
        if tuned and program.threads is None:
            # Checked on one thread and the full count only: counts between may split a
            # sum where neither does.
            program.threads = ProgramThreads(self.full, self.cores, None if (
                self.scope == 'all' or program.compiles) else [self.full, 1])
        if helper_building or not tuned:
            self._use(max(1, self.full - 1) if helper_building else self.full)
            if program.threads is not None:
                program.threads.pause()
            return False
        self._use(program.threads.next_count(program.ran_compiled))
        if program.threads.choice is not None:
            return False  # chosen: nothing to measure (reading the machine's CPU costs 40 µs)
        self.cpu_at_start = (time.process_time(), machine_busy_seconds())
        return True

    def after_run(self, program: Any, seconds: float) -> None:
        """After a timed run: `seconds` is how long it took. The machine's CPU counters
        tick every 10 ms, so one run's reading is rough; summed over the window's runs
        it is not."""
        own_at_start, machine_at_start = self.cpu_at_start
        others = (machine_busy_seconds() - machine_at_start) - (time.process_time()
                                                                 - own_at_start)
        program.threads.record(self.current, seconds, others)

    def stats(self, programs: Any) -> dict:
        """The full count, and how many of `programs` (the main lane's) were timed and
        run on fewer threads."""
        tuned = [program.threads for program in programs if program.threads is not None]
        return {'threads': self.full,
                'eager_programs_checked': self.checked,
                'eager_programs_same_bits_on_one_thread': self.same_bits,
                'programs_tuned': sum(threads.tunings > 0 for threads in tuned),
                'programs_on_fewer_threads': sum(
                    threads.choice is not None and threads.choice < self.full
                    for threads in tuned)}

    def _use(self, count: int) -> None:
        """Set only on a change: torch.set_num_threads also empties oneDNN's cache of
        convolution kernels (at::native::mkldnn::clear_computation_cache)."""
        if count != self.current:
            torch.set_num_threads(count)
            self.current = count
