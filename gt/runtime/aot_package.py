"""Inductor-compiled regions of a CPU worker as AOTInductor packages on disk, keyed by
what they compute (a GPU worker's Inductor compiles in its thread: gt.runtime.compiler).

A package's name is a hash of the region (ops, slots, attrs), its inputs' shapes,
strides, dtypes and devices, the torch version, the CPU's features (`_cpu_features`) and
GT's op code (`_op_code`), so every worker on this machine and every restart finds what
any of them built: two users running the same model pay for one compile. A package on
disk that does not load (a torn copy) is removed and built again. Packages live in
`$TORCHINDUCTOR_CACHE_DIR/gt_aoti` (Inductor's own default directory when the variable
is unset). Building one takes seconds to tens of seconds; it runs in the compile helper process
(gt.runtime.compile_helper), never in a worker's thread, so the worker's loop keeps the
interpreter lock. Loading one takes milliseconds.

A worker never imports torch._inductor: that import takes 1-2 s of Python (Dynamo,
sympy, the distributed packages), which in a worker's thread holds the interpreter lock
away from the programs it runs (measured: an MLP step of 7 ms took 20-35 ms for a second).
So the worker finds the cache directory itself and loads packages with torch's C++ loader.

A package is run once in the helper before it is published (an error its zero inputs
raise does not count against it: `try_on_zeros`): a package that crashes the
process running it (seen on CUDA, where torch 2.11's AOTInductor killed the worker with
SIGSEGV) then ends the helper, and the worker's region stays eager, instead of ending the
worker and every session's tensors on it.
"""

import fcntl
import functools
import getpass
import hashlib
import os
import platform
import re
import tempfile
import time
from pathlib import Path
from typing import Any

import msgpack
import torch
from torch.utils import _pytree as pytree

from gt.runtime import graph_module


def cache_dir() -> Path:
    """`gt_aoti` in Inductor's cache directory: TORCHINDUCTOR_CACHE_DIR, or where Inductor
    puts its cache when that is unset (torchinductor_<user> in the system's temporary
    directory)."""
    chosen = os.environ.get('TORCHINDUCTOR_CACHE_DIR')
    if chosen is None:
        try:
            user = getpass.getuser()
        except (KeyError, ModuleNotFoundError, OSError):  # a uid with no name, say
            user = f'uid_{os.getuid()}'
        chosen = os.path.join(tempfile.gettempdir(),
                              'torchinductor_' + re.sub(r'[\\/:*?"<>|]', '_', user))
    return Path(os.path.abspath(chosen)) / 'gt_aoti'


def package_path(wire: list, specs: list) -> Path:
    key = msgpack.packb([torch.__version__, platform.machine(), _cpu_features(), _op_code(),
                         wire, specs], use_bin_type=True)
    return cache_dir() / f'{hashlib.sha256(key).hexdigest()[:32]}.pt2'


@functools.cache
def _cpu_features() -> str:
    """The CPU's instruction-set extensions, as Linux lists them: Inductor compiles for
    the CPU it runs on (`-march=native`), so a cache directory shared between machines
    (over NFS, say) must not hand a package built with AVX-512 to a CPU without it, where
    it would end the worker loading it (SIGILL)."""
    try:
        with open('/proc/cpuinfo') as info:
            flags = next((line for line in info if line.startswith(('flags', 'Features'))), '')
    except OSError:
        flags = ''
    return hashlib.sha256(' '.join(sorted(flags.split(':')[-1].split())).encode()).hexdigest()[:16]


@functools.cache
def _op_code() -> str:
    """A digest of the code a region's ops run and of the packages' form (the op table,
    what builds the graph from the wire, and this module): an op's name and attrs say
    what it means only for one version of GT, and a package built by an older one (a
    fixed op) must not be loaded by a newer one."""
    digest = hashlib.sha256()
    here = Path(__file__).resolve().parent
    for path in sorted((here.parent / 'ir').rglob('*.py')) + [here / 'graph_module.py',
                                                               here / 'aot_package.py']:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


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
        partial = partial_path(path, os.getpid())
        try:
            _export_compile_and_try(wire, specs, partial)
            os.replace(partial, target)  # readers never see half a package, nor an untried one
        except BaseException:
            partial.unlink(missing_ok=True)  # a build that failed leaves nothing behind
            raise
    return time.perf_counter() - start


def _export_compile_and_try(wire: list, specs: list, partial: Path) -> None:
    module = graph_module.from_wire(wire)
    exported = torch.export.export(module, tuple(graph_module.example_inputs(specs)),
                                   strict=False)
    torch._inductor.aoti_compile_and_package(exported, package_path=str(partial))
    del exported  # it keeps its example inputs
    try_on_zeros(load(partial, specs), specs)


def try_on_zeros(package: Any, specs: list) -> None:
    """Call `package` once on zeros of the inputs' layouts, as the worker will call it.
    What this checks is that the call does not end the process; an error the values
    raise (zeros divide an integer by 0, make a matrix singular) says nothing of the
    package, which the worker's real inputs may run well."""
    with torch.inference_mode():
        try:
            package(*graph_module.example_inputs(specs))
        except RuntimeError:
            pass


def partial_path(path: str, builder: int) -> Path:
    """Where the helper with pid `builder` writes the package before trying it."""
    target = Path(path)
    return target.with_name(f'{target.stem}.{builder}.partial.pt2')


def load(path: Path, specs: list) -> Any:
    """A callable taking the region's inputs and returning the list of its outputs."""
    # torch's own loader (torch._inductor.aoti_load_package) makes the same C++ loader.
    loader = torch._C._aoti.AOTIModelPackageLoader(str(path), 'model', False, 1, -1)
    return flat_caller(loader, len(specs))


def flat_caller(loader: Any, inputs: int) -> Any:
    """The package `loader` called with its inputs handed over as one list.

    torch's AOTICompiledModel parses its call spec (JSON) and walks both pytrees on
    every call, to take and return any structure, on the worker's loop: measured, a call
    of an MLP step's region (6 inputs, 5 outputs) took 330 µs that way against 275, and
    a region of 105 inputs paid 130 µs. A region's inputs are `inputs` tensors and it
    returns a flat tuple of them, so the loader takes the list as is."""
    in_spec, out_spec = (pytree.treespec_loads(spec) for spec in loader.get_call_spec())
    flat_in = pytree.tree_structure((tuple(range(inputs)), {}))
    flat_out = pytree.tree_structure(tuple(range(out_spec.num_leaves)))
    if in_spec != flat_in or out_spec != flat_out:
        raise RuntimeError(f'the package takes {in_spec} and returns {out_spec}, not a flat '
                           f'tuple of {inputs} tensors and a flat tuple of tensors')
    run = loader.boxed_run
    return lambda *values: run(list(values))

