"""A worker's freed host memory: kept for the next run, given back when idle.

torch allocates a CPU tensor with malloc and frees it as soon as it dies. glibc serves a
large block (over 128 KB at first, then over the size of the last large block freed)
with a fresh mmap, and gives the top of its heap back to the OS once that is over twice
the same size. A training step frees and allocates the same blocks at every step, so
each step wrote to fresh pages, a page fault each: measured, 157 faults a step on an MLP
784-512-512-10 (batch 128), whose eager step in GT took 1.27-1.35x torch's (torch
updates in place and faults none); with freed memory kept, none, and 1.10-1.18x.

So a worker asks glibc to serve blocks under `KEPT_BYTES` from its heap and to keep
up to that much freed memory there, as a GPU's caching allocator keeps freed memory; and
once a heartbeat passes with no program run, it gives what is free back to the OS
(malloc_trim), so an idle worker holds only its tensors. A GPU worker's tensors are
not malloc's, so there it covers only host copies. Where malloc is not glibc's,
nothing changes.
"""

import ctypes
from typing import Any

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt options
KEPT_BYTES = 1 << 30
# glibc's documented ceiling for M_MMAP_THRESHOLD on 64-bit: versions that refuse more
MMAP_CEILING = 32 << 20


class HostMemory:
    """The worker's settings of glibc's allocator, and its trims when idle."""

    def __init__(self) -> None:
        self.libc = _glibc()
        self.kept = self.libc is not None and self._keep()
        self.trims = 0  # times freed memory went back to the OS
        self._ran_since_trim = False

    def _keep(self) -> bool:
        served = any(self.libc.mallopt(M_MMAP_THRESHOLD, size) == 1
                     for size in (KEPT_BYTES, MMAP_CEILING))
        return served and self.libc.mallopt(M_TRIM_THRESHOLD, KEPT_BYTES) == 1

    def after_beat(self, ran_programs: bool) -> None:
        """A heartbeat's report went out; `ran_programs`: whether programs ran since the
        last. The first quiet beat after work gives the freed memory back."""
        if ran_programs:
            self._ran_since_trim = True
        elif self._ran_since_trim and self.kept:
            self._ran_since_trim = False
            self.libc.malloc_trim(0)
            self.trims += 1


def _glibc() -> Any:
    """The C library, if it has glibc's mallopt and malloc_trim."""
    try:
        libc = ctypes.CDLL(None)
    except OSError:
        return None
    if not (hasattr(libc, 'mallopt') and hasattr(libc, 'malloc_trim')
            and hasattr(libc, 'gnu_get_libc_version')):
        return None  # musl has a mallopt that does nothing
    libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    libc.malloc_trim.argtypes = [ctypes.c_size_t]
    return libc
