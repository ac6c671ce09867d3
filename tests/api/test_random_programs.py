"""Hypothesis: random shapes and random chains of ops (elementwise, broadcasting,
reductions, reshape/transpose, matmul) give torch's result when GT evaluates them.

Each step is an op name and a number that picks its dims or operand shape from the
current shape; steps that do not apply to that shape are skipped, the same for both.
"""

import numpy as np
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gt

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def _operand_shape(shape: tuple, choice: int) -> tuple:
    """A shape that broadcasts with `shape`: a suffix of it with some sizes set to 1."""
    suffix = shape[choice % (len(shape) + 1):]
    return tuple(1 if (choice >> (3 + axis)) & 1 else size for axis, size in enumerate(suffix))


def _factor(shape: tuple, choice: int) -> tuple | None:
    """Another shape with as many elements, or None for the flat one."""
    total = int(np.prod(shape))
    divisors = [d for d in range(1, total + 1) if total % d == 0]
    first = divisors[choice % len(divisors)]
    return (first, -1) if choice % 3 else (-1,)


def _dim(shape: tuple, choice: int) -> int:
    return choice % len(shape) - (len(shape) if choice % 2 else 0)


# name -> (applies to shape?, extra arguments from (shape, choice, rng), how to apply)
STEPS = {
    'relu': (None, None, lambda lib, x: x.relu()),
    'sigmoid': (None, None, lambda lib, x: x.sigmoid()),
    'tanh': (None, None, lambda lib, x: lib.tanh(x)),
    'exp': (None, None, lambda lib, x: x.clamp(-10, 10).exp()),
    'log': (None, None, lambda lib, x: (x.abs() + 1).log()),
    'sqrt': (None, None, lambda lib, x: x.abs().sqrt()),
    'neg': (None, None, lambda lib, x: -x),
    'gelu': (None, None, lambda lib, x: x.gelu() if lib is gt
             else torch.nn.functional.gelu(x)),
    'clamp': (None, None, lambda lib, x: x.clamp(-0.5, 0.75)),
    'scalar': (None, lambda s, c, r: {'k': [0.5, 2, -3, 1.5][c % 4]},
               lambda lib, x, k: (k - x * k) / (x.abs() + k * k)),
    'pow': (None, None, lambda lib, x: x ** 2 + 2 ** x.clamp(-3, 3)),
    'add': (None, 'operand', lambda lib, x, y: x + y),
    'mul': (None, 'operand', lambda lib, x, y: y * x),
    'sub': (None, 'operand', lambda lib, x, y: x - y),
    'div': (None, 'operand', lambda lib, x, y: x / (y.abs() + 1)),
    'maximum': (None, 'operand', lambda lib, x, y: lib.maximum(x, y)),
    'where': (None, 'operand', lambda lib, x, y: lib.where(x > y, x, y * 2)),
    'compare': (None, 'operand', lambda lib, x, y: (x >= y).float() + x),
    'sum': (len, lambda s, c, r: {'dim': _dim(s, c), 'keepdim': bool(c & 4)},
            lambda lib, x, dim, keepdim: x.sum(dim, keepdim=keepdim)),
    'sum_dims': (len, lambda s, c, r: {'dims': sorted({c % len(s), (c >> 2) % len(s)})},
                 lambda lib, x, dims: x.sum(dim=tuple(dims))),
    'mean': (len, lambda s, c, r: {'dim': _dim(s, c), 'keepdim': bool(c & 4)},
             lambda lib, x, dim, keepdim: x.mean(dim=dim, keepdim=keepdim)),
    'sum_all': (None, None, lambda lib, x: x.sum() / (x.numel() or 1)),
    'max': (len, lambda s, c, r: {'dim': _dim(s, c)},
            lambda lib, x, dim: x.max(dim=dim).values + x.argmax(dim) * 0.01),
    'amax': (None, None, lambda lib, x: x - x.max()),
    'softmax': (len, lambda s, c, r: {'dim': _dim(s, c)},
                lambda lib, x, dim: x.softmax(dim) + x.log_softmax(dim) * 0.1),
    'transpose': (lambda s: len(s) >= 2, lambda s, c, r: {'a': _dim(s, c), 'b': _dim(s, c >> 3)},
                  lambda lib, x, a, b: x.transpose(a, b)),
    'permute': (len, lambda s, c, r: {'order': list(r.permutation(len(s)))},
                lambda lib, x, order: x.permute(*[int(d) for d in order])),
    'T': (lambda s: len(s) == 2, None, lambda lib, x: x.T),
    'reshape': (None, lambda s, c, r: {'shape': _factor(s, c)},
                lambda lib, x, shape: x.reshape(*shape)),
    'unsqueeze': (lambda s: len(s) < 4, lambda s, c, r: {'dim': c % (len(s) + 1)},
                  lambda lib, x, dim: x.unsqueeze(dim)),
    'squeeze': (None, None, lambda lib, x: x.squeeze()),
    'flatten': (None, None, lambda lib, x: x.flatten()),
    'index': (len, lambda s, c, r: {'k': c % s[0]}, lambda lib, x, k: x[k]),
    'slice': (len, lambda s, c, r: {'step': 1 + c % 2},
              lambda lib, x, step: x[..., ::step]),
    'matmul': (len, lambda s, c, r: {'w': r.standard_normal((s[-1], 1 + c % 3))},
               lambda lib, x, w: x @ _of(lib, w.astype(_numpy_dtype(x)))),
    'matmul_vector': (len, lambda s, c, r: {'w': r.standard_normal(s[-1])},
                      lambda lib, x, w: x @ _of(lib, w.astype(_numpy_dtype(x)))),
    'cat': (len, lambda s, c, r: {'dim': _dim(s, c)},
            lambda lib, x, dim: lib.cat([x, x * 2], dim=dim)),
    'stack': (lambda s: len(s) < 4, lambda s, c, r: {'dim': c % (len(s) + 1)},
              lambda lib, x, dim: lib.stack([x, -x], dim=dim)),
    'chunk': (len, lambda s, c, r: {'chunks': 1 + c % 3},
              lambda lib, x, chunks: x.chunk(chunks, -1)[0]),
}


def _of(lib, values: np.ndarray):
    return gt.from_numpy(values) if lib is gt else torch.from_numpy(values.copy())


def _numpy_dtype(x) -> type:
    return np.float64 if x.dtype == torch.float64 else np.float32


@st.composite
def programs(draw):
    rank = draw(st.integers(0, 3))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank)))
    dtype = draw(st.sampled_from([torch.float32, torch.float64]))
    steps = draw(st.lists(st.tuples(st.sampled_from(sorted(STEPS)), st.integers(0, 1 << 12)),
                          min_size=1, max_size=8))
    return shape, dtype, steps, draw(st.integers(0, 2**31 - 1))


@SETTINGS
@given(programs())
def test_random_program_matches_torch(program):
    shape, dtype, steps, seed = program
    generator = np.random.default_rng(seed)
    start = generator.standard_normal(shape).astype(_numpy_dtype(torch.zeros((), dtype=dtype)))
    got, want = gt.from_numpy(start), torch.from_numpy(start.copy())
    applied = []
    for name, choice in steps:
        applies, extra, run = STEPS[name]
        current = tuple(want.shape)
        if applies is not None and not applies(current):
            continue
        if extra == 'operand':
            values = generator.standard_normal(_operand_shape(current, choice))
            arguments = {'y': values.astype(_numpy_dtype(want))}
        elif extra is not None:
            arguments = extra(current, choice, generator)
        else:
            arguments = {}
        torch_arguments = {k: _of(torch, v) if k == 'y' else v for k, v in arguments.items()}
        gt_arguments = {k: _of(gt, v) if k == 'y' else v for k, v in arguments.items()}
        want = run(torch, want, **torch_arguments)
        got = run(gt, got, **gt_arguments)
        applied.append(name)
        assert got.shape == want.shape and got.dtype == want.dtype, applied
    torch.testing.assert_close(got.data, want, rtol=1e-4, atol=1e-5, equal_nan=True,
                               msg=lambda text: f'{applied}: {text}')
