"""Timing helpers for the benchmarks: best-of and median of repeated runs, as ratios
against plain PyTorch measured in the same process and the same run."""

import statistics
import time
from typing import Callable


def measure(run: Callable[[], None], repeats: int = 20, warmup: int = 3) -> float:
    """Median seconds of `run()` after `warmup` unmeasured calls."""
    for _ in range(warmup):
        run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def report(name: str, torch_seconds: float, gt_seconds: float, bound: float) -> bool:
    ratio = gt_seconds / torch_seconds
    verdict = 'ok' if ratio <= bound else 'OVER'
    print(f'{name:<44} torch {torch_seconds * 1e3:8.3f} ms   gt {gt_seconds * 1e3:8.3f} ms   '
          f'ratio {ratio:5.2f}x  (bound {bound}x: {verdict})')
    return ratio <= bound
