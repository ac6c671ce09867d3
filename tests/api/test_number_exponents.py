"""A Python-number exponent gives torch's bits: torch computes `x ** 2` as x * x,
`x ** 0.5` as sqrt(x), `x ** -1` as 1 / x and so on, and only for a number exponent;
GT's numbers reach the worker as 0-d tensors, whose general kernel rounded otherwise
(`x ** 2` differed in 166 of 10000 elements; found porting tutorials). Gradients too:
torch's is `exponent * x ** (exponent - 1)`, again with a number exponent."""

import pytest
import torch

import gt

EXPONENTS = [2, 3, 4, 0.5, -0.5, -1, -2, 1.5, 0, 1, 2.0, -3]


def same_bits(mine: gt.Tensor, theirs: torch.Tensor) -> bool:
    return torch.equal(torch.from_numpy(mine.detach().numpy()), theirs.detach())


@pytest.mark.parametrize('shape', [(1000,), ()], ids=['vector', 'scalar'])
@pytest.mark.parametrize('exponent', EXPONENTS)
def test_a_number_exponent_gives_torchs_bits_and_gradient(exponent, shape):
    base = torch.rand(shape, generator=torch.Generator().manual_seed(0)) * 3 + 0.1
    weights = torch.linspace(0.5, 2.0, base.numel()).reshape(shape)
    theirs = base.clone().requires_grad_()
    mine = gt.tensor(base).requires_grad_()
    expected, got = theirs ** exponent, mine ** exponent
    assert same_bits(got, expected)
    (expected * weights).sum().backward()
    (got * gt.tensor(weights)).sum().backward()
    assert same_bits(mine.grad, theirs.grad)


@pytest.mark.parametrize('exponent', [2, 3, 0.5, -1])
def test_pow_in_place_and_by_function_give_torchs_bits(exponent):
    base = torch.rand(500, generator=torch.Generator().manual_seed(1)) + 0.5
    assert same_bits(gt.pow(gt.tensor(base), exponent), torch.pow(base, exponent))
    assert same_bits(gt.tensor(base).pow(exponent), base.pow(exponent))
    # pow_ rebinds a GT tensor; a chain lets the worker reuse the operand's memory
    mine, theirs = gt.tensor(base) + 1, base + 1
    mine.pow_(exponent)
    theirs.pow_(exponent)
    assert same_bits(mine, theirs)


def test_integer_and_mixed_exponents_keep_torchs_dtypes():
    integers = torch.arange(10)
    for exponent in (2, 3, 0.5):
        expected = integers ** exponent
        got = gt.arange(10) ** exponent
        assert got.dtype == expected.dtype
        assert same_bits(got, expected)
    halves = torch.rand(100, generator=torch.Generator().manual_seed(2)).half() + 0.5
    assert same_bits(gt.tensor(halves) ** 2, halves ** 2)
    # A tensor exponent is not a number: torch's general kernel, as before
    exponents = torch.full((100,), 2.0)
    assert same_bits(gt.tensor(halves.float()) ** gt.tensor(exponents),
                     halves.float() ** exponents)


@pytest.mark.parametrize('exponent', [2.0, 3.0, 0.5, -1.0])
def test_a_scripts_0d_tensor_exponent_is_torchs_tensor_form(exponent):
    """`x.pow(torch.tensor(0.5))` is torch's tensor kernel, not sqrt: GT took any 0-d
    exponent for a number (199 of 1000 elements differed; Weibull's rsample uses it).
    torch names the two backwards PowBackward0 and PowBackward1."""
    base = torch.rand(1000, generator=torch.Generator().manual_seed(3)) + 0.1
    theirs = base.clone().requires_grad_()
    mine = gt.tensor(base).requires_grad_()
    expected = theirs.pow(torch.tensor(exponent))
    got = mine.pow(gt.tensor(exponent))
    assert same_bits(got, expected)
    assert got.grad_fn.name() == expected.grad_fn.name() == 'PowBackward1'
    assert (mine ** exponent).grad_fn.name() == 'PowBackward0'
    assert (2 ** mine).grad_fn.name() == (2 ** theirs).grad_fn.name() == 'PowBackward2'
    expected.sum().backward()
    got.sum().backward()
    assert same_bits(mine.grad, theirs.grad)
