"""One OpInfo of PyTorch's op database, run through GT with torch as the oracle.

PyTorch describes every operator it tests by an OpInfo: the function and sample inputs
for it. `check_op_info` calls the function the way a GT user would (`gt.sin`,
`gt.linalg.norm`, `x.topk`, ...) on a few float32 CPU samples (integer ones for ops
torch has on integers only), then holds the values, and the gradients of the sum of the
floating outputs, against torch's. Shared by `python -m gt.scripts.coverage` and
tests/api/test_opinfo.py.
"""

import contextlib
import fnmatch
import importlib
import itertools
import math
import signal
from dataclasses import dataclass
from typing import Any, Callable

import torch

import gt
from gt.ir.torch_functions import RANDOM
from gt.runtime import client

# op_db name prefixes GT serves, as the GT module that serves them.
GT_NAMESPACES = ('linalg', 'special', 'fft', 'nn.functional')
# Names that are not random functions but draw random projections inside.
DRAWS_INSIDE = frozenset({'svd_lowrank', 'pca_lowrank'})
# Samples that draw (dropout with p > 0) are passed over; the op's others are compared.
DRAWING_SAMPLES = {
    'nn.functional.scaled_dot_product_attention': lambda s: s.kwargs.get('dropout_p', 0) > 0,
    'nn.functional.multi_head_attention_forward':  # args[9] is dropout_p
        lambda s: s.kwargs.get('training', True) and s.args[9] > 0,
}
# The sample dtype: float32 where torch has the op for it.
DTYPES = (torch.float32, torch.int64, torch.int32, torch.uint8, torch.bool)
# Values that are not defined: compared by shape and dtype only, as torch's own tests do.
UNINITIALIZED = frozenset({'empty', 'empty_like', 'empty_permuted', 'empty_strided',
                           'new_empty', 'new_empty_strided'})


@dataclass(frozen=True)
class Outcome:
    """'pass', 'fail', 'skip' (random, or no GT dtype) or 'unreached' (no GT route)."""
    status: str
    reason: str = ''


def op_infos(pattern: str = '*') -> list:
    """op_db's OpInfos whose id (`name.variant`) matches the shell pattern `pattern`."""
    from torch.testing._internal.common_methods_invocations import op_db

    return [op for op in op_db if fnmatch.fnmatchcase(op_id(op), pattern)]


def op_id(op: Any) -> str:
    return f'{op.name}.{op.variant_test_name}' if op.variant_test_name else op.name


def gt_route(op: Any) -> Callable | None:
    """How a GT user calls the OpInfo's function, or None when GT has no such name.

    `op.op` is torch's function (`torch.sin`), its method (`Tensor.topk`), either of
    them called through `wrapper_set_seed`, or a thin wrapper that reorders arguments
    (`lambda self, cond, other: torch.where(cond, ...)`). The first ones become GT's
    function or method of the same name; a wrapper is called itself on GT tensors,
    reaching GT through Tensor methods and `__torch_function__`."""
    prefix, _, attribute = op.name.rpartition('.')
    if prefix and prefix not in GT_NAMESPACES:
        return None
    gt_module = importlib.import_module(f'gt.{prefix}') if prefix else gt
    torch_module = importlib.import_module(f'torch.{prefix}') if prefix else torch
    function = getattr(gt_module, attribute, None)
    method = None if prefix else getattr(torch.Tensor, attribute, None)
    if function is None and method is None:
        return None
    seeded = 'wrapper_set_seed' in getattr(getattr(op.op, '__code__', None), 'co_names', ())
    if function is not None and (seeded or op.op is getattr(torch_module, attribute, None)):
        return function
    if method is not None and (seeded or op.op is method):
        return lambda tensor, *args, **kwargs: getattr(tensor, attribute)(*args, **kwargs)
    return op.op


def is_random(op: Any) -> bool:
    prefix, _, attribute = op.name.rpartition('.')
    names = {f'torch.{op.name}', f'Tensor.{attribute}', f'Tensor.{attribute}_'}
    if op.name in DRAWS_INSIDE:
        return True
    return prefix in ('', 'nn.functional') and not names.isdisjoint(RANDOM)


def sample_dtype(op: Any) -> torch.dtype | None:
    """float32, or for ops torch defines on integers or bools only, the first of those."""
    supported = op.supported_dtypes('cpu')
    return next((dtype for dtype in DTYPES if dtype in supported), None)


class TimeLimitExceeded(BaseException):  # not caught as a failing sample
    pass


def check_op_info(op: Any, max_samples: int = 3, seconds: float = 30.0) -> Outcome:
    """Run up to `max_samples` of `op`'s float32 CPU samples through GT and torch. A
    check that takes over `seconds` fails, and the session it hung is dropped (the next
    op starts a fresh local server), so that one hang does not stop a whole walk."""
    try:
        with raise_after(seconds, TimeLimitExceeded()):
            return _check(op, max_samples)
    except TimeLimitExceeded:
        _drop_session()
        return Outcome('fail', f'TimeLimitExceeded: no answer within {seconds:.0f} s')


def _check(op: Any, max_samples: int) -> Outcome:
    if is_random(op):
        return Outcome('skip', 'random')
    route = gt_route(op)
    if route is None:
        return Outcome('unreached', 'GT has no function of this name')
    dtype = sample_dtype(op)
    if dtype is None:
        return Outcome('skip', 'no GT dtype on CPU')
    grad = op.supports_autograd and dtype in op.supported_backward_dtypes('cpu')
    torch.manual_seed(0)  # samples are random tensors: the same ones every run
    draws = DRAWING_SAMPLES.get(op.name, lambda sample: False)
    samples = (sample for sample in op.sample_inputs('cpu', dtype, requires_grad=grad)
               if not draws(sample))
    tried = 0
    for sample in itertools.islice(samples, max_samples):
        tried += 1
        try:
            check_sample(op, route, sample, grad)
        except Exception as error:  # any failure is an answer: report its first line
            return Outcome('fail', _first_line(error))
    return Outcome('pass') if tried else Outcome('skip', 'random samples only')


def check_sample(op: Any, route: Callable, sample: Any, grad: bool) -> None:
    """GT's result on the sample equals torch's, and so do the gradients when `grad`.
    GT runs it three times on fresh tensors: the second backward records its ops and the
    third replays them (gt.backward_replay); all must match torch."""
    arguments = (sample.input, *sample.args), sample.kwargs
    torch_leaves: dict[int, torch.Tensor] = {}
    want_args, want_kwargs = _converted(arguments, lambda t: _memo(torch_leaves, t, _leaf))
    want = op.op(*want_args, **want_kwargs)
    differentiable = [w for w in _tensors(want) if w.requires_grad and w.dtype.is_floating_point]
    wrt = [key for key, leaf in torch_leaves.items() if leaf.requires_grad]
    want_grads = None
    if grad and differentiable and wrt:
        want_grads = torch.autograd.grad(sum(w.sum() for w in differentiable),
                                         [torch_leaves[key] for key in wrt], allow_unused=True)
    for run in ('', ' (second run, recorded backward)', ' (third run, replayed backward)'):
        gt_tensors: dict[int, gt.Tensor] = {}
        got_args, got_kwargs = _converted(arguments, lambda t: _memo(gt_tensors, t, _upload))
        got = route(*got_args, **got_kwargs)
        _compare(got, want, 'the result' + run, values=op.name not in UNINITIALIZED)
        if want_grads is None:
            continue
        outputs = [g for g, w in zip(_tensors(got), _tensors(want))
                   if w.requires_grad and w.dtype.is_floating_point]
        loss = outputs[0].sum()
        for g in outputs[1:]:
            loss = loss + g.sum()
        loss.backward()
        for number, (key, want_grad) in enumerate(zip(wrt, want_grads)):
            got_grad = gt_tensors[key].grad
            leaf = torch_leaves[key]
            _compare(got_grad if got_grad is not None else gt.zeros_like(gt_tensors[key]),
                     want_grad if want_grad is not None else torch.zeros_like(leaf),
                     f'gradient {number}{run}', values=True)


def _first_line(error: Exception) -> str:
    """The error's first line; for values that are not close, with by how much."""
    lines = str(error).strip().splitlines() or ['']
    worst = [line for line in lines if line.startswith('Greatest absolute difference')]
    return f'{type(error).__name__}: ' + ' '.join(lines[:1] + worst)[:300]


@contextlib.contextmanager
def raise_after(seconds: float, error: BaseException):
    """Raise `error` in the main thread once `seconds` pass: SIGALRM interrupts even a
    blocking ZeroMQ poll. The test suite bounds its runtime tests with it too."""
    def expire(signum, frame):
        raise error
    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _drop_session() -> None:
    if client._client is not None:
        client._client.close()
    client._client = None


def _upload(tensor: torch.Tensor) -> gt.Tensor:
    return gt.tensor(tensor.detach(), requires_grad=tensor.requires_grad)


def _leaf(tensor: torch.Tensor) -> torch.Tensor:
    """A copy, so that an in-place torch call cannot touch what GT was given."""
    return tensor.detach().clone().requires_grad_(tensor.requires_grad)


def _memo(seen: dict, tensor: torch.Tensor, make: Callable) -> Any:
    """One converted tensor per sample tensor: an argument given twice stays one tensor."""
    if id(tensor) not in seen:
        seen[id(tensor)] = make(tensor)
    return seen[id(tensor)]


def _converted(arguments: tuple, convert: Callable) -> tuple:
    def walk(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return convert(value)
        if type(value) in (list, tuple):
            return type(value)(walk(item) for item in value)
        return value
    args, kwargs = arguments
    return walk(args), {key: walk(value) for key, value in kwargs.items()}


def _tensors(result: Any) -> list:
    if isinstance(result, (torch.Tensor, gt.Tensor)):
        return [result]
    if isinstance(result, (list, tuple)):
        return [tensor for item in result for tensor in _tensors(item)]
    return []


def _compare(got: Any, want: Any, what: str, values: bool) -> None:
    """GT's `got` is torch's `want`: tensors (GT ones) close in value, the rest equal."""
    if isinstance(want, torch.Tensor):
        if not isinstance(got, gt.Tensor):
            raise AssertionError(f'{what}: GT returned a {type(got).__name__}, torch a tensor'
                                 + (' (it ran outside GT)' if isinstance(got, torch.Tensor)
                                    else ''))
        data = got.data
        if values:
            torch.testing.assert_close(data, want.detach(), equal_nan=True,
                                       msg=lambda message: f'{what}: {message}')
        elif (data.shape, data.dtype) != (want.shape, want.dtype):
            raise AssertionError(f'{what}: {data.dtype}{list(data.shape)} != torch '
                                 f'{want.dtype}{list(want.shape)}')
    elif isinstance(want, (list, tuple)):
        if not isinstance(got, (list, tuple)) or len(got) != len(want):
            raise AssertionError(f'{what}: GT returned {type(got).__name__}, torch '
                                 f'{type(want).__name__} of {len(want)}')
        for index, (got_item, want_item) in enumerate(zip(got, want)):
            _compare(got_item, want_item, f'{what}[{index}]', values)
    elif isinstance(want, float) and isinstance(got, (int, float)):
        both_nan = math.isnan(got) and math.isnan(want)
        if not (both_nan or math.isclose(got, want, rel_tol=1.3e-6, abs_tol=1e-5)):
            raise AssertionError(f'{what}: GT returned {got}, torch {want}')
    elif got != want:
        raise AssertionError(f'{what}: GT returned {got!r}, torch {want!r}')
