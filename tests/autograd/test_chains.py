"""Property: random chains of differentiable ops on random shapes give torch's values and
gradients. Each step maps (x, y) to a new x of the same shape; y broadcasts against x."""

import torch
from check import check_vs_torch, lib
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def _gelu(x):
    return torch.nn.functional.gelu(x) if isinstance(x, torch.Tensor) else x.gelu()


def _assigned(x, key, value):
    out = x * 1  # torch refuses to write into a leaf that requires grad
    out[key] = value
    return out


STEPS = {
    'add': lambda x, y: x + y,
    'sub': lambda x, y: y - x,
    'mul': lambda x, y: x * y,
    'div': lambda x, y: x / (y * y + 1),
    'pow': lambda x, y: (x * x + 0.5) ** (y.tanh() + 1),
    'square': lambda x, y: x ** 2,
    'tanh': lambda x, y: x.tanh(),
    'sigmoid': lambda x, y: x.sigmoid() * 2,
    'relu': lambda x, y: x.relu() - 0.3 * x,
    'abs': lambda x, y: x.abs(),
    'exp': lambda x, y: x.tanh().exp(),
    'log': lambda x, y: (x * x + 1).log(),
    'sqrt': lambda x, y: (x * x + 0.5).sqrt(),
    'gelu': lambda x, y: _gelu(x),
    'clamp': lambda x, y: x.clamp(-0.8, 0.8) + 0.1 * x,
    'maximum': lambda x, y: x.maximum(y),
    'minimum': lambda x, y: x.minimum(y * 0.5),
    'where': lambda x, y: lib(x).where(x > y, x, y * 0.5),
    'sum': lambda x, y: x - x.sum(-1, keepdim=True) * 0.1,
    'mean': lambda x, y: x * x.mean(0, keepdim=True),
    'amax': lambda x, y: x - x.amax(-1, keepdim=True),
    'var': lambda x, y: x / (x.var(-1, keepdim=True, correction=0) + 1),
    'std': lambda x, y: x * x.std(0, keepdim=True, correction=0),
    'max_dim': lambda x, y: x - x.max(-1, keepdim=True).values,
    'softmax': lambda x, y: x.softmax(-1) * 3,
    'log_softmax': lambda x, y: x.log_softmax(0),
    'reshape': lambda x, y: x.reshape(-1).reshape(x.shape) * 1.5,
    'transpose': lambda x, y: x.transpose(0, -1).transpose(-1, 0),
    'unsqueeze': lambda x, y: x.unsqueeze(0).squeeze(0),
    'getitem': lambda x, y: x[..., :1] * x,
    'setitem': lambda x, y: _assigned(x, (Ellipsis, slice(0, 1)), x[..., -1:] * 2),
    'cat': lambda x, y: lib(x).cat([x, y.expand_as(x)], -1)[..., ::2][..., :x.shape[-1]] + x,
    'stack': lambda x, y: lib(x).stack([x, x * y]).sum(0),
    'split': lambda x, y: lib(x).cat(x.split(1, -1)[::-1], -1),
    'matmul': lambda x, y: (x.unsqueeze(-1) @ y.expand_as(x).unsqueeze(-2)).sum(-1),
}


@st.composite
def chains(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    y_shape = tuple(size if draw(st.booleans()) else 1
                    for size in shape[len(shape) - draw(st.integers(0, len(shape))):])
    steps = draw(st.lists(st.sampled_from(sorted(STEPS)), min_size=1, max_size=6))
    return shape, y_shape, steps


@settings(max_examples=100, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(chains(), st.sampled_from([torch.float64, torch.float32]))
def test_random_chains(chain, dtype):
    shape, y_shape, steps = chain

    def fn(x, y):
        for step in steps:
            x = STEPS[step](x, y)
        return x

    check_vs_torch(fn, shape, y_shape, dtype=dtype)


def test_a_long_chain_with_shared_values():
    def fn(x, y):
        h = x
        for step in sorted(STEPS):
            h = STEPS[step](h, y) * 0.5 + h * 0.5
        return h + x

    check_vs_torch(fn, (2, 3), (3,))


def test_half_precision():
    """float16 runs the same rules in half precision, as torch does."""
    steps = ['mul', 'div', 'tanh', 'gelu', 'softmax', 'var', 'mean', 'amax', 'matmul', 'exp']

    def fn(x, y):
        for step in steps:
            x = STEPS[step](x, y)
        return x

    check_vs_torch(fn, (3, 4), (4,), dtype=torch.float16)


def test_steps_keep_the_shape():
    x, y = torch.randn(2, 3, dtype=torch.float64), torch.randn(3, dtype=torch.float64)
    for name, step in STEPS.items():
        assert step(x, y).shape == x.shape, name
