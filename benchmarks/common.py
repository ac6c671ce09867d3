"""Timing helpers for the benchmarks: medians of repeated runs, as ratios against plain
PyTorch measured in the same process and the same run, and where GT's CPU goes."""

import itertools
import os
import statistics
import time
from typing import Callable

import psutil
import torch

DEVICE = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
"""Where torch runs in every comparison: where a GT worker on this machine runs by default
(CUDA when there is a GPU), so both sides do the same work. Each timed run ends with a
fetch to the host, which waits for the device's queue on both sides."""


def devices(gt) -> str:
    """Which devices the ratios compare (GT's workers say which device they run on)."""
    workers = ', '.join(sorted({worker['device'] for worker in gt.debug.get_worker_stats()}))
    return f'torch on {DEVICE}, GT worker(s) on {workers}'


def alternating(first: Callable[[], object], second: Callable[[], object],
                repeats: int = 15, warmup: int = 3, warmup_seconds: float = 0.5,
                block: int = 3, settle_seconds: float = 0.05) -> tuple[float, float]:
    """Median seconds of each in steady state, `repeats` runs each, timed in turns of
    `block` runs so that load from other processes on the machine falls on both alike.

    Each turn starts with untimed runs for `settle_seconds` (one at least): what the
    other side left running when its turn ended must not be timed as this side's. An
    OpenMP thread spins for milliseconds after its last parallel op, in torch's own
    process and in GT's worker alike; timed run by run in strict turns, an MLP step of
    torch's took 2.1-2.6 ms against 1.3-1.9 ms after settling, and GT's 3.1-3.5 ms
    against 2.7-2.9 (the same run, this 2-core machine).

    Both first run `warmup` times and for at least `warmup_seconds`: a GT client's
    first 65,000 or so ops also fill its history of where each op was recorded (kept
    for error messages, 256 fragments), and until that is full, recording pays for
    memory it touches for the first time (measured: a 1000-op chain records in 1.7 ms
    for its first 60 runs, then 1.3 ms)."""
    warm_until = time.perf_counter() + warmup_seconds
    for done in itertools.count():
        if done >= warmup and time.perf_counter() >= warm_until:
            break
        first()
        second()
    times: tuple[list, list] = ([], [])
    while len(times[1]) < repeats:
        for run, kept in zip((first, second), times):
            settled = time.perf_counter() + settle_seconds
            run()
            while time.perf_counter() < settled:
                run()
            for _ in range(min(block, repeats - len(kept))):
                start = time.perf_counter()
                run()
                kept.append(time.perf_counter() - start)
    return statistics.median(times[0]), statistics.median(times[1])


def report(name: str, torch_seconds: float, gt_seconds: float, target: float | None) -> None:
    """One line: both times, their ratio, and whether it meets the target (a benchmark
    measures; on a shared machine a ratio moves from run to run, so it asserts nothing)."""
    ratio = gt_seconds / torch_seconds
    verdict = '' if target is None else \
        f'  (target {target}x: {"met" if ratio <= target else "over"})'
    print(f'{name:<44} torch {torch_seconds * 1e3:8.3f} ms   gt {gt_seconds * 1e3:8.3f} ms   '
          f'ratio {ratio:5.2f}x{verdict}')


def compile_totals(gt) -> dict:
    """GT's workers' compile counters, summed: what was compiled, how long it took, what
    is still pending or failed, and how many runs used compiled code."""
    keys = ('compiled_programs', 'compiled_regions', 'compiled_runs', 'compile_seconds',
            'compile_failures', 'compiles_pending', 'programs_run')
    workers = gt.debug.get_worker_stats()
    return {key: sum(worker.get(key, 0) for worker in workers) for key in keys}


def cpu_per_run(run: Callable[[], object], per: int = 1, repeats: int = 20,
                warm: bool = True) -> str:
    """Where GT's time goes: the CPU each process spends per run of `run` (divided by
    `per`, say the steps in a run), timed back to back after one untimed run (none
    unless `warm`: a run that is new each time, not yet cached anywhere). The
    processes are this one (the client) and its children, GT's auto-started dispatcher,
    workers and compile helpers; each one's CPU is split into its main thread, ZeroMQ's
    I/O threads and the rest (OpenMP's pool, GT's heartbeat and compile threads)."""
    processes = {os.getpid(): 'client'}
    for child in psutil.Process().children(recursive=True):
        try:
            processes[child.pid] = _label(child.cmdline())
        except psutil.Error:
            continue
    if warm:
        run()
    before = {pid: _thread_seconds(pid) for pid in processes}
    start = time.perf_counter()
    for _ in range(repeats):
        run()
    wall = time.perf_counter() - start
    after = {pid: _thread_seconds(pid) for pid in processes}
    scale = 1e3 / (repeats * per)
    parts, total = [], 0.0
    for pid, name in processes.items():
        split = {'main': 0.0, 'zmq': 0.0, 'other': 0.0}
        for tid, (seconds, thread_name) in after[pid].items():
            kind = 'main' if tid == pid else 'zmq' if thread_name.startswith('ZMQbg') else 'other'
            split[kind] += seconds - before[pid].get(tid, (0.0, ''))[0]
        total += sum(split.values())
        parts.append(f'{name} ' + '+'.join(f'{seconds * scale:.2f}' for seconds in split.values()))
    return (f'  CPU per {"step" if per > 1 else "run"} in ms, main thread + ZeroMQ I/O + other '
            f'threads: {", ".join(parts)}; {total * scale:.2f} in all, in '
            f'{wall * scale:.2f} of wall on {os.cpu_count()} cores')


def _label(command: list[str]) -> str:
    """`python -m gt.worker ...` -> 'gt.worker'."""
    if '-m' in command[:-1]:
        return command[command.index('-m') + 1]
    return os.path.basename(command[0]) if command else '?'


def _thread_seconds(pid: int) -> dict[int, tuple[float, str]]:
    """Seconds on a CPU so far, and the name, of each thread of process `pid`, by thread
    id: from /proc (schedstat counts nanoseconds) where there is one, else psutil's
    10 ms ticks, unnamed."""
    try:
        tasks = os.listdir(f'/proc/{pid}/task')
    except OSError:
        try:
            return {thread.id: (thread.user_time + thread.system_time, '')
                    for thread in psutil.Process(pid).threads()}
        except psutil.Error:
            return {}
    threads = {}
    for tid in tasks:
        try:
            with open(f'/proc/{pid}/task/{tid}/schedstat') as stats, \
                    open(f'/proc/{pid}/task/{tid}/comm') as name:
                threads[int(tid)] = (int(stats.read().split()[0]) / 1e9, name.read().strip())
        except (OSError, ValueError, IndexError):
            continue  # the thread ended meanwhile
    return threads
