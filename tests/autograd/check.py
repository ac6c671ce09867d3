"""`check_vs_torch`: run one function on GT and on torch tensors holding the same random
data, backpropagate the same gradient through both, and compare values and `.grad`s.

Everything GT computed is fetched in one round trip, which keeps the suite fast.
"""

import os
import zlib
from typing import Any, Callable

import numpy as np
import torch

import gt
from gt.ir import OPS
from gt.tensor import apply

TOLERANCES = {torch.float64: (1e-5, 1e-8), torch.float32: (1e-4, 1e-5),
              torch.float16: (1e-2, 1e-2)}


def rng() -> np.random.Generator:
    """Random data seeded by the running test's id: the same whatever else ran before."""
    test = os.environ.get('PYTEST_CURRENT_TEST', '').rsplit(' ', 1)[0]
    return np.random.default_rng(zlib.crc32(test.encode()))


def lib(x: Any) -> Any:
    """The module of `x`, for functions written once for both (`lib(x).cat([x, y])`)."""
    return gt if isinstance(x, gt.Tensor) else torch


def like(x: Any, data: Any) -> Any:
    """`data` (an index array, a constant) as a tensor of the same library as `x`."""
    return gt.tensor(data) if isinstance(x, gt.Tensor) else torch.tensor(data)


def op(name: str, *inputs: Any, **attrs: Any) -> Any:
    """An op of the table without a Tensor method; `torch_fn` of the row for torch inputs."""
    if isinstance(inputs[0], gt.Tensor):
        return apply(name, list(inputs), **attrs)
    return OPS[name].torch(*inputs, **attrs)


def fetch(tensors: list) -> list[torch.Tensor]:
    """The values of GT tensors, all in one round trip (`.data` would take one each)."""
    if not tensors:
        return []
    return tensors[0]._client.fetch([t._id for t in tensors])


def flat(result: Any) -> list:
    return list(result) if isinstance(result, (tuple, list)) else [result]


def assert_close(got: torch.Tensor, want: torch.Tensor, what: str) -> None:
    assert got.dtype == want.dtype, f'{what}: dtype {got.dtype}, torch gives {want.dtype}'
    assert got.shape == want.shape, f'{what}: shape {list(got.shape)}, torch gives ' \
                                    f'{list(want.shape)}'
    rtol, atol = TOLERANCES.get(want.dtype, (0, 0))
    torch.testing.assert_close(got, want, rtol=rtol, atol=atol, equal_nan=True,
                               msg=lambda message: f'{what}: {message}')


def check_vs_torch(fn: Callable, *shapes: tuple[int, ...], grad: bool = True,
                   dtype: torch.dtype = torch.float64, gradient: str = 'random',
                   positive: bool = False, data: list | None = None) -> None:
    """Compare `fn(*inputs)` and the inputs' gradients between GT and torch.

    Inputs are standard normal (`positive`: in [0.5, 2.5)), or `data` given as arrays.
    `gradient='random'` backpropagates a random gradient of each output's shape (through
    `backward(gradient)` when there is one output); `'sum'` calls `.sum().backward()`.
    Outputs that do not require grad (indices, masks) are compared but not differentiated.
    GT runs three times on fresh leaves: the second backward records the ops its rules
    emit and the third replays them (gt.backward_replay), so every way of computing
    gradients meets torch.
    """
    generator = rng()
    if data is None:
        data = [generator.standard_normal(shape) for shape in shapes]
        if positive:
            data = [np.abs(array) + 0.5 for array in data]
    want_inputs = [torch.tensor(array, dtype=dtype, requires_grad=grad) for array in data]
    want = flat(fn(*want_inputs))
    differentiated = [index for index, w in enumerate(want) if w.requires_grad]
    weights = None
    if grad and differentiated:
        weights = _weights(want, differentiated, generator, gradient)
        _backward(want, differentiated, weights, torch.tensor)
    for run in ('first run', 'second run (recorded backward)',
                'third run (replayed backward)'):
        got_inputs = [gt.tensor(array, dtype=dtype, requires_grad=grad) for array in data]
        got = flat(fn(*got_inputs))
        assert len(got) == len(want), f'{len(got)} outputs, torch gives {len(want)}'
        for index, (g, w) in enumerate(zip(got, want)):
            assert g.requires_grad == w.requires_grad, \
                f'output {index}: requires_grad {g.requires_grad}, torch gives {w.requires_grad}'
        if weights is not None:
            _backward(got, differentiated, weights, gt.tensor)
        values = fetch(got + [x.grad for x in got_inputs if x.grad is not None])
        for index, w in enumerate(want):
            assert_close(values[index], w.detach(), f'{run}: output {index}')
        grads = iter(values[len(got):])
        for index, (g, w) in enumerate(zip(got_inputs, want_inputs)):
            if w.grad is None:
                assert g.grad is None, f'{run}: input {index} has a grad; torch gives it none'
                continue
            assert g.grad is not None, f'{run}: input {index} has no grad; torch gives it one'
            assert_close(next(grads), w.grad, f'{run}: grad of input {index}')


def _weights(want: list, indices: list[int], generator: np.random.Generator,
             gradient: str) -> list:
    if gradient == 'sum':
        return [None] * len(indices)
    return [generator.standard_normal(tuple(want[i].shape)) for i in indices]


def _backward(outputs: list, indices: list[int], weights: list, make: Callable) -> None:
    """Backpropagate `weights` (None: a sum) from `outputs`, in torch or in GT (`make`)."""
    dtypes = [outputs[i].dtype for i in indices]
    if len(indices) == 1 and weights[0] is not None:
        outputs[indices[0]].backward(make(weights[0], dtype=dtypes[0]))
        return
    total = 0
    for i, weight, dtype in zip(indices, weights, dtypes):
        out = outputs[i]
        total = total + (out.sum() if weight is None else (out * make(weight, dtype=dtype)).sum())
    total.backward()


def assert_torchs_bits(got: list[torch.Tensor], compute: Callable[[], list[torch.Tensor]]) -> None:
    """`got` equals, bit for bit, what `compute()` gives torch at some thread count from 1
    to all: a worker runs kernels on the threads the runtime gives it, and some kernels
    (mm, native_layer_norm_backward's weight gradient) split their sums by thread."""
    threads = torch.get_num_threads()
    tried = []
    try:
        for count in range(threads, 0, -1):
            torch.set_num_threads(count)
            want = compute()
            if all(torch.equal(a, b) for a, b in zip(got, want)):
                return
            tried.append(max((a - b).abs().max().item() for a, b in zip(got, want)))
    finally:
        torch.set_num_threads(threads)
    raise AssertionError(f'not torch\'s bits at any thread count (largest differences, from '
                         f'{threads} threads down: {tried})')
