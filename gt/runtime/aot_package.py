"""Inductor-compiled regions as AOTInductor packages on disk, keyed by what they compute.

A package's name is a hash of the region (ops, slots, attrs), its inputs' shapes,
strides, dtypes and devices, and the torch version, so every worker on this machine and
every restart finds what any of them built: two users running the same model pay for one
compile. Packages live in `$TORCHINDUCTOR_CACHE_DIR/gt_aoti` (Inductor's own default
directory when the variable is unset). Building one takes seconds to tens of seconds; it
runs in the compile helper process (gt.runtime.compile_helper), never in a worker's
thread, so the worker's loop keeps the interpreter lock. Loading one takes milliseconds.
"""

import fcntl
import hashlib
import os
import platform
import time
from pathlib import Path
from typing import Any

import msgpack
import torch

from gt.runtime import graph_module

FORMAT = 1  # bump when the wire form of regions changes meaning


def cache_dir() -> Path:
    from torch._inductor.runtime.cache_dir_utils import cache_dir as inductor_cache_dir

    return Path(inductor_cache_dir()) / 'gt_aoti'


def package_path(wire: list, specs: list) -> Path:
    key = msgpack.packb([FORMAT, torch.__version__, platform.machine(), wire, specs],
                        use_bin_type=True)
    return cache_dir() / f'{hashlib.sha256(key).hexdigest()[:32]}.pt2'


def build(wire: list, specs: list, path: str) -> float:
    """Export and compile the region into `path` unless a package is there already (another
    worker may be building it: its lock is waited for). Returns the seconds spent."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with open(target.with_suffix('.lock'), 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.exists():
            return 0.0
        module = graph_module.from_wire(wire)
        exported = torch.export.export(module, tuple(graph_module.example_inputs(specs)),
                                       strict=False)
        partial = target.with_name(f'{target.stem}.{os.getpid()}.partial.pt2')
        torch._inductor.aoti_compile_and_package(exported, package_path=str(partial))
        os.replace(partial, target)  # readers never see half a package
    return time.perf_counter() - start


def load(path: Path) -> Any:
    """A callable taking the region's inputs and returning the list of its outputs."""
    return torch._inductor.aoti_load_package(str(path))
