"""Torch functions GT has no op for, through the real runtime: `gt.<fn>`, Tensor methods,
`gt.nn.functional`, `gt.linalg`, `gt.special`, `torch.<fn>(gt_tensor)`, advanced
indexing, in-place methods, data-dependent shapes, factories and random draws, with
torch as the oracle for values and gradients, and clear errors for what GT refuses."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from api_check import array, assert_same, pair, pairs

import gt
import gt.nn.functional as F


def test_functions_methods_and_namespaces_match_torch():
    (x, tx), (y, ty) = pairs((3, 5), (4, 5))
    assert_same(gt.sin(x), torch.sin(tx))
    assert_same(gt.einsum('ij,kj->ik', x, y), torch.einsum('ij,kj->ik', tx, ty))
    assert_same(x.cumsum(1), tx.cumsum(1))
    assert_same(gt.tril(x, diagonal=1), torch.tril(tx, diagonal=1))
    assert_same(F.pad(x, (1, 2), value=0.5), TF.pad(tx, (1, 2), value=0.5))
    assert_same(gt.linalg.norm(x, dim=1), torch.linalg.norm(tx, dim=1))
    assert_same(gt.special.erf(x), torch.special.erf(tx))
    assert_same(x.sort(dim=1, descending=True).values,
                tx.sort(dim=1, descending=True).values)
    assert_same(gt.bmm(x[None], y.T[None]), torch.bmm(tx[None], ty.T[None]), rtol=1e-5,
                atol=1e-5)


def test_results_keep_torchs_structure():
    x, tx = pair(array((4, 6)))
    top = x.topk(2, dim=1)
    assert type(top) is type(tx.topk(2, dim=1))
    values, indices = top
    assert_same(values, tx.topk(2, dim=1).values)
    assert_same(top.indices, tx.topk(2, dim=1).indices)
    pieces = gt.split(x, [1, 3], dim=0)
    assert isinstance(pieces, tuple) and len(pieces) == 2
    for got, want in zip(pieces, torch.split(tx, [1, 3], dim=0)):
        assert_same(got, want)
    assert x.is_floating_point() is True
    assert gt.numel(x) == 24 and x.element_size() == 4


def test_torch_functions_called_on_gt_tensors_record_gt_ops():
    x, tx = pair(array((3, 4)))
    got = torch.sin(x)
    assert isinstance(got, gt.Tensor)
    assert_same(got, torch.sin(tx))
    assert_same(TF.relu(x), TF.relu(tx))  # GT's own relu
    assert_same(torch.matmul(x, x.T), tx @ tx.T, rtol=1e-5, atol=1e-5)
    assert_same(torch.ones(3, 4) + x, torch.ones(3, 4) + tx)
    assert_same(torch.stack([x, x]), torch.stack([tx, tx]))


def test_advanced_indexing_reads_and_writes_like_torch():
    x, tx = pair(array((5, 4)))
    index = np.array([4, 0, 2])
    assert_same(x[gt.from_numpy(index)], tx[torch.from_numpy(index)])
    assert_same(x[[0, 2]], tx[[0, 2]])
    assert_same(x[gt.from_numpy(index), 1:], tx[torch.from_numpy(index), 1:])
    assert_same(x[x > 0], tx[tx > 0])
    assert_same(x[:, torch.tensor([True, False, True, False])],
                tx[:, torch.tensor([True, False, True, False])])
    y, ty = x.clone(), tx.clone()
    y[y < 0] = 0.0
    ty[ty < 0] = 0.0
    assert_same(y, ty)
    y[gt.from_numpy(index)] = gt.ones(3, 4)
    ty[torch.from_numpy(index)] = torch.ones(3, 4)
    assert_same(y, ty)
    assert_same(x, tx)  # the original is untouched


def test_in_place_methods_rebind_and_return_the_tensor():
    x, tx = pair(array((3, 4)))
    alias = x
    assert x.clamp_(-0.5, 0.5) is x
    tx.clamp_(-0.5, 0.5)
    assert alias is x
    assert_same(x, tx)
    x.sin_().mul_(2)
    tx.sin_().mul_(2)
    assert_same(x, tx)
    x.index_add_(0, gt.tensor([0, 2]), gt.ones(2, 4))
    tx.index_add_(0, torch.tensor([0, 2]), torch.ones(2, 4))
    assert_same(x, tx)
    ints = gt.tensor([1, 2, 3])
    with pytest.raises(RuntimeError, match='float32 cannot be cast'):
        ints.sin_()  # torch refuses too
    with pytest.raises(ValueError, match="Tensor.digamma_: .*can't be cast"):
        ints.digamma_()  # the fallback's in-place form refuses it too
    assert_same(ints, torch.tensor([1, 2, 3]))


def test_data_dependent_shapes_fetch_their_sizes_and_go_on_recording():
    x, tx = pair(array((6, 5), low=-3, high=4))
    ints = gt.tensor([3, 1, 3, 0, 1, 3])
    assert_same(gt.nonzero(x > 0), torch.nonzero(tx > 0))
    values, counts = gt.unique(ints, return_counts=True)
    want = torch.unique(torch.tensor([3, 1, 3, 0, 1, 3]), return_counts=True)
    assert_same(values, want[0])
    assert_same(counts, want[1])
    selected = gt.masked_select(x, x > 1) * 2 + 1  # recording goes on after the sizes
    assert_same(selected, torch.masked_select(tx, tx > 1) * 2 + 1)
    empty = x[x > 100]
    assert_same(empty, tx[tx > 100])


def test_results_that_are_not_tensors_are_computed_from_the_values():
    x, tx = pair(array((3, 4)))
    assert gt.equal(x, x.clone()) is True
    assert gt.allclose(x, x + 1e-9) is True
    assert x.equal(x + 1) is False


def test_gradients_match_torchs():
    a = array((4, 6))
    x = gt.from_numpy(a).requires_grad_()
    tx = torch.from_numpy(a.copy()).requires_grad_()
    index = [3, 0]

    def loss(module, t, fn):
        top = t.topk(3, dim=1).values.sum()
        mixed = module.einsum('ij,ij->i', t, t).sum()
        padded = fn.pad(t, (1, 1), mode='reflect').pow(2).sum()
        picked = (t[index] * t[t > 0].sum()).sum()
        return top + mixed * 0.1 + padded + picked + module.special.erf(t).sum()

    loss(gt, x, F).backward()
    loss(torch, tx, TF).backward()
    assert_same(x.grad, tx.grad, rtol=1e-5, atol=1e-5)


def test_factories_and_random_draws():
    assert_same(gt.linspace(0, 1, 7), torch.linspace(0, 1, 7))
    assert_same(gt.eye(3, 4, dtype=gt.int64), torch.eye(3, 4, dtype=torch.int64))
    made = gt.logspace(0, 2, 5, requires_grad=True)
    assert made.requires_grad and made.is_leaf
    gt.manual_seed(5)
    torch.manual_seed(5)
    assert_same(gt.randint(0, 10, (8,)), torch.randint(0, 10, (8,)))
    assert_same(gt.randperm(6), torch.randperm(6))
    assert_same(gt.randn(3), torch.randn(3))  # GT's own draw stays in step
    x, tx = pair(np.full((50,), 0.5, dtype=np.float32))
    assert_same(gt.bernoulli(x), torch.bernoulli(tx))


def test_draws_from_a_torch_generator_are_torchs_and_advance_it():
    """A torch.Generator lives in the script's process (a reproducible data split, say):
    the draw runs there, so values and the generator's next state are torch's; an
    in-place draw rebinds its tensor, so every name for it sees the values."""
    def run(module, generator, probabilities):
        target = module.zeros(2, 3)
        alias = target
        target.normal_(1.0, 2.0, generator=generator)
        return [module.randperm(7, generator=generator),
                module.randint(0, 9, (4,), generator=generator),
                module.multinomial(probabilities, 5, True, generator=generator),
                module.normal(0.0, 1.0, size=(3,), generator=generator), alias]

    mine, theirs = torch.Generator().manual_seed(4), torch.Generator().manual_seed(4)
    p, tp = pair(np.array([0.1, 0.2, 0.7], dtype=np.float32))
    for got, want in zip(run(gt, mine, p), run(torch, theirs, tp)):
        assert_same(got, want, rtol=0, atol=0)
    assert torch.equal(torch.rand(2, generator=mine), torch.rand(2, generator=theirs))
    made = gt.randint(0, 3, (2,), generator=mine, requires_grad=False)
    assert not made.requires_grad and made.dtype == torch.int64


@pytest.mark.parametrize('call, error, message', [
    (lambda x: gt.from_file('x'), AttributeError, 'gt.from_file: GT does not run torch.from_file'),
    (lambda x: gt.set_flush_denormal(True), AttributeError, 'process-wide settings'),
    (lambda x: gt.no_such_function(x), AttributeError, 'no_such_function'),
    (lambda x: x.no_such_method(), AttributeError, 'no_such_method'),
    (lambda x: x.storage(), AttributeError, 'storage'),
    (lambda x: x.to_sparse(), TypeError, 'sparse_coo tensor; GT holds strided tensors only'),
    (lambda x: gt.sin(x, out=gt.zeros(2)), RuntimeError, 'GT does not resize it'),
    (lambda x: gt.add(x, x, out=gt.zeros(3, 4, dtype=gt.int64)), RuntimeError,
     "torch.add: result type torch.float32 can't be cast to the desired output type"),
    (lambda x: gt.randint(0, 3, (2,), generator=7), TypeError, 'torch.Generator'),
    (lambda x: x.requires_grad_().normal_(generator=torch.Generator()), NotImplementedError,
     'no gradient for a draw'),
    (lambda x: gt.view_as_complex(x[:, :2]), TypeError, 'complex64'),
    (lambda x: gt.einsum('ij,jk->ik', x, x), ValueError, 'torch.einsum'),
    (lambda x: gt.cumsum(x, dim=5), IndexError, 'torch.cumsum: Dimension out of range'),
    (lambda x: gt.cumsum(x, lambda v: v), TypeError, 'cannot pass a function'),
    (lambda x: gt.linalg.lstsq(x.requires_grad_(), x), NotImplementedError,
     'torch.linalg.lstsq: GT cannot differentiate a function it has to run outside the '
     'cluster'),
])
def test_refusals_name_the_problem_and_the_session_goes_on(call, error, message):
    x, tx = pair(array((3, 4)))
    with pytest.raises(error, match=message):
        call(x)
    assert_same(gt.cos(x), torch.cos(tx))


def test_to_dense_of_a_strided_tensor_is_the_tensor_as_in_torch():
    x, tx = pair(array((3, 4)))
    assert x.to_dense() is x
    assert_same(x.to_dense(gt.float64), tx.to_dense(torch.float64))


def test_a_call_that_fails_on_the_worker_names_the_function():
    x, tx = pair(array((3, 4)))
    wrong = gt.sort(x, dim=5).values  # torch's shape function lets this through; its kernel not
    with pytest.raises(gt.WorkerError, match='torch.sort: Dimension out of range'):
        wrong.data
    assert_same(x.sort(dim=1).values, tx.sort(dim=1).values)


def test_fallback_ops_run_on_sharded_inputs(four):
    from gt_test_support import connected

    with connected(four.address):
        gt.manual_seed(2)
        x = gt.randn(1024, 256)  # auto-sharded over the 4 workers
        got = (gt.cumsum(x, dim=1), x.topk(3, dim=0).values, x[x > 2.5])
        values = [t.data for t in got]
    torch.manual_seed(2)
    tx = torch.randn(1024, 256)
    torch.testing.assert_close(values[0], torch.cumsum(tx, dim=1))
    torch.testing.assert_close(values[1], tx.topk(3, dim=0).values)
    torch.testing.assert_close(values[2], tx[tx > 2.5])


def test_out_writes_the_result_into_the_given_tensor_as_torchs_tutorial_does():
    x, tx = pair(array((3, 4)))
    y, ty = gt.rand_like(x @ x.T), torch.rand_like(tx @ tx.T)
    assert gt.matmul(x, x.T, out=y) is y
    torch.matmul(tx, tx.T, out=ty)
    z, tz = gt.rand_like(x), torch.rand_like(tx)
    assert gt.mul(x, x, out=z) is z
    torch.mul(tx, tx, out=tz)
    assert gt.sin(x, out=x) is x  # in place, as torch allows
    torch.sin(tx, out=tx)
    for mine, theirs in ((y, ty), (z, tz), (x, tx)):
        assert_same(mine, theirs)


@pytest.mark.parametrize('draw', [
    lambda lib, x: lib.native_dropout(x, 0.5, True)[0],
    lambda lib, x: lib.dropout_(x, 0.5, True),
    lambda lib, x: lib.feature_alpha_dropout_(x, 0.5, True),
], ids=['native_dropout', 'dropout_', 'feature_alpha_dropout_'])
def test_dropouts_by_name_draw_from_the_session_as_torchs_from_its_seed(draw):
    """They are random: manual_seed repeats them, as torch's, and they stay eager."""
    results = []
    for lib in (gt, torch):
        lib.manual_seed(3)
        results.append(draw(lib, lib.ones(4, 6)))
    assert_same(*results)


def test_a_random_draw_reads_a_one_element_integer_tensor_as_its_count():
    """`multinomial(p, lengths[0])`: torch reads the count through __index__; GT refused
    it, a draw's result shape being unknown until its values are (a draw cannot be run
    twice to measure it)."""
    draws = []
    for library in (gt, torch):
        library.manual_seed(1)
        lengths = library.tensor([3, 5])
        rows = library.multinomial(library.ones(2, 6), lengths[0])
        picked = library.multinomial(library.tensor([0.1, 0.2, 0.7]), num_samples=lengths[1],
                                     replacement=True)
        draws.append((tuple(rows.shape), picked.tolist()))
    assert draws[0] == draws[1] and draws[0][0] == (2, 3)


def test_methods_run_by_name_are_found_on_the_class_as_torchs():
    """`torch.Tensor.add` is a function of a tensor and the arguments, which code passes
    around; GT's class had only the methods it defines (found porting research code)."""
    import functools

    values = [array((3,)), array((3,)) * 2]
    mine, theirs = [gt.tensor(v) for v in values], [torch.tensor(v) for v in values]
    assert_same(functools.reduce(gt.Tensor.add, mine), functools.reduce(torch.Tensor.add, theirs))
    assert_same(gt.Tensor.flip(mine[0], [0]), torch.Tensor.flip(theirs[0], [0]))
    assert_same(gt.Tensor.det(gt.eye(3) * 2), torch.Tensor.det(torch.eye(3) * 2))
    for name in ('inverse', 'roll', 'argsort', 'kthvalue', 'index_add', 'sin_', 'sum'):
        assert hasattr(gt.Tensor, name) and hasattr(torch.Tensor, name), name
    assert gt.Tensor.roll.__name__ == 'roll'
    with pytest.raises(AttributeError, match="type object 'Tensor' has no attribute"):
        gt.Tensor.no_such_method
