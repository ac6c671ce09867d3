"""What the gt.autograd.Function tests share: each Function is written once, as a body
both libraries' Function classes are made from, and run on torch and on GT leaves
holding the same data."""

import pytest
import torch
from check import fetch, rng

import gt


def both(body: type) -> dict:
    """The Function `body` defines, as torch's and as GT's (same name, same methods)."""
    name = body.__name__.removesuffix('Body')
    return {library: type(name, (body, library.autograd.Function), {}) for library in (torch, gt)}


def compare(got: list, want: list) -> None:
    """Tensors (GT's fetched in one round trip) match torch's; anything else is equal."""
    assert len(got) == len(want)
    tensors = [(g, w) for g, w in zip(got, want) if isinstance(w, torch.Tensor)]
    for g, w in zip(got, want):
        if not isinstance(w, torch.Tensor):
            assert not isinstance(g, gt.Tensor) and g == w, (g, w)
        else:
            assert isinstance(g, gt.Tensor), (g, w)
    values = fetch([g for g, _ in tensors])
    for index, (value, (_, w)) in enumerate(zip(values, tensors)):
        assert value.dtype == w.dtype and value.shape == w.shape, (index, value, w)
        torch.testing.assert_close(value, w.detach(), msg=lambda m: f'tensor {index}: {m}')


def check(step, *shapes: tuple, runs: int = 3) -> None:
    """`step(library, *leaves)` on torch and on GT leaves of the same random data: the
    list it returns (it backpropagates itself) and the leaves' grads must match. GT runs
    `runs` times on fresh leaves, as a training loop would."""
    data = [rng().standard_normal(shape) for shape in shapes]
    want_leaves = [torch.tensor(array, requires_grad=True) for array in data]
    want = list(step(torch, *want_leaves)) + [leaf.grad for leaf in want_leaves]
    for _ in range(runs):
        got_leaves = [gt.tensor(array, requires_grad=True) for array in data]
        got = list(step(gt, *got_leaves)) + [leaf.grad for leaf in got_leaves]
        compare(got, want)


def grad_fn_name(tensor) -> str | None:
    if tensor.grad_fn is None:
        return None
    return tensor.grad_fn.name()


class InPlaceBody:
    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


InPlace = both(InPlaceBody)


class ReLUBody:  # the example of the task, and of torch's documentation
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        x, = ctx.saved_tensors
        return grad_output * (x > 0)


ReLU = both(ReLUBody)


def same_error(step, kind=RuntimeError) -> None:
    """`step(library, x)` raises `kind` with the same message in torch and in GT."""
    messages = []
    for library in (torch, gt):
        x = library.tensor(rng().standard_normal((2, 3)), requires_grad=True)
        with pytest.raises(kind) as raised:
            step(library, x)
        messages.append(str(raised.value))
    assert messages[0] == messages[1]
