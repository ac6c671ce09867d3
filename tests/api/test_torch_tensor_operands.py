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
