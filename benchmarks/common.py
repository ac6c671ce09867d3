"""Timing helpers for the benchmarks: best-of and median of repeated runs, as ratios
against plain PyTorch measured in the same process and the same run."""

import statistics
import time
from typing import Callable


def alternating(first: Callable[[], object], second: Callable[[], object],
                repeats: int = 15, warmup: int = 3) -> tuple[float, float]:
    """Median seconds of each, run in turns so that load from other processes on the
    machine falls on both alike."""
    for _ in range(warmup):
        first()
        second()
    times: tuple[list, list] = ([], [])
    for _ in range(repeats):
        for run, kept in zip((first, second), times):
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
