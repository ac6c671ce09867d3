"""GT: PyTorch-like tensors, computed lazily by a shared cluster of workers.

`import gt` starts nothing; the first operation starts a local server (a dispatcher and
`gt.gpu_workers(n)` workers) unless `gt.connect('host:port')` was called first.
"""

import os as _os
import sys as _sys
import warnings as _warnings
from importlib import metadata as _metadata

import torch as _torch
import torch.multiprocessing as multiprocessing

from gt import (
    accelerator,
    amp,
    backends,
    compiler,
    config,
    cpu,
    cuda,
    debug,
    distributed,
    distributions,
    fft,
    func,
    jit,
    linalg,
    nn,
    optim,
    random,
    signal,
    special,
    testing,
    utils,
)
from gt import autograd_submodules as _autograd_submodules
from gt import foreach as _foreach
from gt.amp import autocast
from gt.anomaly_mode import is_anomaly_check_nan_enabled, is_anomaly_enabled, set_anomaly_enabled
from gt.autograd import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from gt.compiling import compile
from gt.config import ConfigError as _ConfigError
from gt.config import ShardConfig, SignalConfig, load_config, register_config
from gt.creation import (
    arange,
    as_tensor,
    asarray,
    from_numpy,
    full,
    full_like,
    get_rng_state,
    manual_seed,
    ones,
    ones_like,
    rand,
    rand_like,
    randn,
    randn_like,
    set_rng_state,
    tensor,
    zeros,
    zeros_like,
)
from gt.data_loading import register_collate as _register_collate
from gt.default_dtype import set_default_dtype, set_default_tensor_type
from gt.fallback import namespace as _namespace
from gt.func import vmap
from gt.functional import (
    abs,
    argmax,
    argmin,
    atleast_1d,
    atleast_2d,
    atleast_3d,
    cat,
    clamp,
    exp,
    log,
    matmul,
    maximum,
    mean,
    minimum,
    relu,
    sigmoid,
    softmax,
    sqrt,
    stack,
    sum,
    tanh,
    where,
)
from gt.grad_mode import is_inference_mode_enabled
from gt.ir.invalid_op import InvalidOpError
from gt.legacy_types import (
    BFloat16Tensor,
    BoolTensor,
    ByteTensor,
    CharTensor,
    DoubleTensor,
    FloatTensor,
    HalfTensor,
    IntTensor,
    LongTensor,
    ShortTensor,
)
from gt.random import initial_seed, seed
from gt.runtime.client import connect as _connect
from gt.runtime.client import current as _current
from gt.runtime.client import set_auto_workers as gpu_workers
from gt.runtime.session_errors import (
    ClosedSessionError,
    CompileWarning,
    OutOfMemoryError,
    WorkerError,
)
from gt.serialization import load, save
from gt.tensor import Tensor
from gt.tensor_device import Generator, device

try:
    __version__ = _metadata.version('gt')
except _metadata.PackageNotFoundError:  # a source checkout on PYTHONPATH, not pip-installed
    __version__ = '0+source'
bool = _torch.bool
uint8, int8, int16 = _torch.uint8, _torch.int8, _torch.int16
int32, int64 = _torch.int32, _torch.int64
float16, bfloat16 = _torch.float16, _torch.bfloat16
float32, float64 = _torch.float32, _torch.float64
half, float, double, long, int = float16, float32, float64, int64, int32


def connect(address: str, token: str | None = None, weight=None,
            curve_server_key: str | None = None) -> None:
    """Send this script's work to the GT server at `address`, e.g. 'localhost:12345';
    `token` is the server's shared secret when it has one (default: $GT_TOKEN); `weight`
    is this script's share of the workers against other sessions' (default: $GT_WEIGHT,
    else 1: a session of weight 2 gets twice the worker time of one of weight 1);
    `curve_server_key` is the public key (a file, or 40 Z85 characters) of a server
    that uses CURVE encryption (default: $GT_CURVE_SERVER_KEY)."""
    _connect(address, token, weight, curve_server_key)


def is_tensor(obj) -> bool:
    """A GT tensor, or a torch one: state_dict() values and `.data` are CPU torch
    tensors, which a ported script's `torch.is_tensor(v)` must count."""
    return isinstance(obj, (Tensor, _torch.Tensor))


def set_num_threads(threads: int) -> None:
    """Accepted, and changes nothing: the client computes nothing itself, and each worker
    runs with GT_WORKER_THREADS threads (or torch's default)."""


def get_num_threads() -> int:
    return _torch.get_num_threads()


_float32_matmul_precision = 'highest'


def set_float32_matmul_precision(precision: str) -> None:
    """Accepted and kept, as `gt.backends.cuda.matmul.allow_tf32` is: workers multiply
    float32 at torch's default precision ('highest'), the same for every session."""
    global _float32_matmul_precision
    if precision not in ('highest', 'high', 'medium'):
        _warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the "
                       'set_float32_matmul_precision call has no effect', stacklevel=2)
        return
    _float32_matmul_precision = precision


_deterministic = {'mode': False, 'warn_only': False}


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Accepted and kept for the script to read back: GT's ops run on CPU workers with
    torch's deterministic CPU kernels whatever it says; GPU workers do not take it."""
    _deterministic.update(mode=True if mode else False,  # `bool` is gt.bool here
                          warn_only=True if warn_only else False)


def are_deterministic_algorithms_enabled() -> bool:
    return _deterministic['mode']


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return _deterministic['warn_only']


def set_default_device(device) -> None:
    """Accepted, and changes nothing: GT places tensors on its workers itself, as
    `.to(device)` and `.cuda()` leave them."""


def is_autocast_enabled(device_type: str | None = None) -> bool:
    return False  # gt.autocast runs ops in their inputs' dtypes (gt/amp.py)


def get_autocast_dtype(device_type: str) -> _torch.dtype:
    """The dtype autocast would use there: torch's defaults (GT does not autocast)."""
    return _torch.bfloat16 if device_type == 'cpu' else _torch.float16


def get_float32_matmul_precision() -> str:
    return _float32_matmul_precision


def sync() -> None:
    """Send pending work now, without waiting for it to finish (unless this session is
    already GT_MAX_QUEUED fragments ahead of the workers: gt.runtime.pacing)."""
    _current().flush()


__all__ = [
    'Tensor', 'device', 'Generator', 'tensor', 'as_tensor', 'asarray', 'from_numpy', 'randn',
    'rand',
    'zeros', 'ones', 'full', 'arange', 'zeros_like', 'ones_like', 'randn_like', 'rand_like',
    'full_like', 'manual_seed', 'get_rng_state', 'set_rng_state', 'seed', 'initial_seed',
    'random', 'connect', 'gpu_workers', 'sync', 'is_tensor', 'no_grad', 'enable_grad',
    'set_grad_enabled', 'is_grad_enabled', 'is_inference_mode_enabled', 'signal', 'debug',
    'WorkerError', 'CompileWarning',
    'ClosedSessionError', 'OutOfMemoryError', 'InvalidOpError', 'linalg', 'special', 'fft',
    'utils', 'cat', 'stack', 'where', 'matmul', 'relu', 'sigmoid', 'tanh', 'exp', 'log', 'sqrt',
    'abs', 'clamp', 'maximum', 'minimum', 'sum', 'mean', 'softmax', 'argmax', 'argmin',
    'atleast_1d', 'atleast_2d', 'atleast_3d', 'nn',
    'optim', 'save', 'load', 'config', 'load_config', 'register_config', 'SignalConfig',
    'ShardConfig', 'cuda', 'accelerator', 'func', 'jit', 'multiprocessing', 'amp', 'autocast',
    'backends', 'testing', 'distributed',
    'inference_mode', 'set_num_threads',
    'get_num_threads', 'set_float32_matmul_precision', 'get_float32_matmul_precision',
    'use_deterministic_algorithms', 'are_deterministic_algorithms_enabled',
    'is_deterministic_algorithms_warn_only_enabled', 'set_default_device',
    'is_autocast_enabled', 'get_autocast_dtype', 'cpu', 'compile', 'FloatTensor',
    'DoubleTensor', 'HalfTensor',
    'BFloat16Tensor', 'LongTensor', 'IntTensor', 'ShortTensor', 'CharTensor', 'ByteTensor',
    'BoolTensor', 'distributions', 'is_anomaly_enabled', 'is_anomaly_check_nan_enabled',
    'set_anomaly_enabled', 'compiler', 'vmap', 'set_default_dtype', 'set_default_tensor_type',
]

_torch_function = _namespace('torch', globals())


def __getattr__(name: str):
    """Every other torch function (`gt.einsum`, `gt.topk`, `gt.linspace`, ...) runs by
    name on the workers (gt/fallback.py); torch's constants and types are torch's."""
    if name in _FROM_TORCH:
        return getattr(_torch, name)
    if name.startswith(_foreach.PREFIX) and hasattr(_torch, name):
        return _foreach.function(name)
    return _torch_function(name)


_FROM_TORCH = frozenset({'pi', 'e', 'inf', 'nan', 'Size', 'dtype', 'finfo', 'iinfo',
                         'get_default_dtype', 'promote_types', 'version',
                         'result_type', 'can_cast', 'broadcast_shapes', 'uint16', 'uint32',
                         'uint64', 'cfloat', 'short', 'chalf', 'cdouble',
                         'set_printoptions',  # printing fetches into torch tensors
                         'contiguous_format', 'legacy_contiguous_format', 'channels_last',
                         'channels_last_3d',
                         'preserve_format', 'memory_format', 'strided', 'layout'})

_register_collate()
# torch.multiprocessing, for `import torch.multiprocessing as mp`; GT tensors do not
# cross into its processes (gt/runtime/ownership.py, Module.share_memory).
_sys.modules[f'{__name__}.multiprocessing'] = multiprocessing
_autograd_submodules.register()
if _os.environ.get('GT_CONFIG'):
    try:
        load_config(_os.environ['GT_CONFIG'])
    except OSError as _error:  # the variable's name, as for any other bad GT_* value
        raise _ConfigError(f"GT_CONFIG={_os.environ['GT_CONFIG']!r} cannot be read: "
                          f'{_error.strerror}') from None
