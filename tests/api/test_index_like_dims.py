"""Dims given as NumPy integers or one-element integer tensors, which torch takes wherever
it takes an int (through `__index__`): a dim taken from a NumPy result, or a loop over
`np.arange`. GT refused them, and `squeeze` took `np.int64(0)` for no dims at all."""

import numpy as np
import pytest
import torch

import gt

CASES = {
    'squeeze': lambda m, x: x.squeeze(np.int64(0)),
    'squeeze by a 0-d tensor': lambda m, x: x.squeeze(m.tensor(0)),
    'torch.squeeze': lambda m, x: m.squeeze(x, np.int64(0)),
    'sum': lambda m, x: x.sum(np.int32(2)),
    'sum over a tuple': lambda m, x: x.sum((np.int64(1), np.int64(2))),
    'sum by a 0-d tensor': lambda m, x: x.sum(m.tensor(2)),
    'mean': lambda m, x: x.mean(np.int64(1)),
    'max with indices': lambda m, x: x.max(dim=np.int64(2)).indices,
    'argmax': lambda m, x: x.argmax(np.int64(2)),
    'amax': lambda m, x: x.amax(np.int64(1)),
    'std': lambda m, x: x.std(np.int64(2)),
    'any': lambda m, x: (x > 3).any(np.int64(1)),
    'softmax': lambda m, x: x.softmax(np.int64(2)),
    'log_softmax': lambda m, x: m.nn.functional.log_softmax(x, dim=np.int64(1)),
    'cat': lambda m, x: m.cat([x, x], np.int64(1)),
    'cat by a 0-d tensor': lambda m, x: m.cat([x, x], m.tensor(0)),
    'stack': lambda m, x: m.stack([x, x], np.int64(0)),
    'transpose': lambda m, x: x.transpose(np.int64(1), np.int64(2)),
    'unsqueeze': lambda m, x: x.unsqueeze(np.int64(0)),
    'flatten': lambda m, x: x.flatten(np.int64(1)),
    'chunk': lambda m, x: x.chunk(2, np.int64(1))[1],
    'gather': lambda m, x: x.gather(np.int64(2), m.zeros(1, 2, 3, 1, dtype=m.long)),
}


@pytest.mark.parametrize('name', CASES)
def test_an_index_like_dim_is_taken_as_torch_takes_it(name):
    results = []
    for module in (torch, gt):
        x = module.arange(24.0).reshape(1, 2, 3, 4)
        result = CASES[name](module, x)
        results.append((tuple(result.shape), result.tolist()))
    assert results[0] == results[1]
    assert (gt.ones(2) * 3).tolist() == [3.0, 3.0]  # nothing left unsendable behind it
