"""A torch tensor among a GT function's operands joins GT as data, as it does in
arithmetic: DataLoader batches of numpy arrays, `.data` values and state_dict entries are
torch tensors in a GT script. Each case is computed by torch on torch tensors alone."""

import pytest
import torch

import gt

Q = [1.0, -2.0, 3.0]
BOUND = torch.tensor([0.5, 0.5, 4.0])
MASK = torch.tensor([True, False, True])

CASES = {
    'where condition': lambda lib, q: lib.where(MASK, q, 0.0),
    'where input': lambda lib, q: lib.where(MASK, BOUND, q),
    'masked_fill mask': lambda lib, q: q.masked_fill(MASK, 0.0),
    'masked_fill value': lambda lib, q: q.masked_fill(MASK, torch.tensor(9.0)),
    'clamp min': lambda lib, q: lib.clamp(q, min=BOUND),
    'clamp max': lambda lib, q: q.clamp(max=BOUND),
    'clip': lambda lib, q: q.clip(BOUND, None),
    'max of two': lambda lib, q: lib.max(q, BOUND),
    'min of two': lambda lib, q: lib.min(q, BOUND),
    'zeros_like': lambda lib, q: lib.zeros_like(BOUND),
    'ones_like': lambda lib, q: lib.ones_like(MASK),
    'full_like': lambda lib, q: lib.full_like(BOUND, 2.0, dtype=torch.float64),
}


@pytest.mark.parametrize('case', CASES, ids=str)
def test_a_torch_operand_joins_gt(case):
    want = CASES[case](torch, torch.tensor(Q))
    got = CASES[case](gt, gt.tensor(Q))
    assert isinstance(got, gt.Tensor)
    assert got.dtype == want.dtype and torch.equal(got.cpu(), want)


def test_randn_like_of_a_torch_batch_draws_from_the_sessions_generator():
    """A denoising autoencoder's `x + randn_like(x_batch)`: torch's numbers for the seed."""
    gt.manual_seed(3)
    torch.manual_seed(3)
    got = gt.randn_like(BOUND)
    assert torch.equal(got.cpu(), torch.randn_like(BOUND))


X, W, B = torch.randn(4, 6), torch.randn(5, 6), torch.randn(5)
PROBABILITIES, QKV = torch.rand(4, 6), torch.randn(2, 2, 5, 4)
NN_CASES = {
    'linear input': lambda F, c: F.linear(X, c(W), c(B)),
    'linear all': lambda F, c: F.linear(X, W, B),
    'gelu': lambda F, c: F.gelu(X),
    'batch_norm': lambda F, c: F.batch_norm(X, None, None, training=True),
    'sdpa key and value': lambda F, c: F.scaled_dot_product_attention(c(QKV), QKV, QKV),
    'bce target': lambda F, c: F.binary_cross_entropy(c(PROBABILITIES), PROBABILITIES.round()),
    'bce with logits target': lambda F, c: F.binary_cross_entropy_with_logits(
        c(X), PROBABILITIES.round()),
}


@pytest.mark.parametrize('case', NN_CASES)
def test_a_torch_operand_of_a_functional_joins_gt(case):
    """A DataLoader's labels are torch tensors: these raised AttributeError '_client' or
    "save_for_backward can only save variables" (the losses' own autograd Functions)."""
    got = NN_CASES[case](gt.nn.functional, gt.tensor)
    expected = NN_CASES[case](torch.nn.functional, lambda t: t)
    torch.testing.assert_close(torch.as_tensor(got.tolist()), expected)
