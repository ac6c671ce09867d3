"""Views alias their base, as torch's share its storage: a write through a view reaches the
base and its other views, a write to the base shows through its views, and gradients
flow through such writes; each case runs the same lines in torch and compares every
tensor it returns (gt/views.py)."""

import pytest
import torch

import gt
import gt.nn as nn


def write_view(lib, x):
    x.view(-1)[0] = 1.0
    return [x]


def fill_diagonal(lib, x):
    x.diagonal().fill_(7.0)
    return [x]


def zero_rows(lib, x):
    x[1:3].zero_()
    return [x]


def scale_chunk(lib, x):
    x.chunk(2, dim=1)[0].mul_(10)
    return [x]


def relu_through_view(lib, x):
    lib.nn.functional.relu_(x.view(-1))
    return [x]


def write_transposed(lib, x):
    x.t()[0, 1] = 5.0
    return [x]


def add_narrowed(lib, x):
    x.narrow(1, 1, 2).add_(1.0)
    return [x]


def fill_selected(lib, x):
    x.select(1, 0).fill_(3.0)
    return [x]


def negate_unbound(lib, x):
    x.unbind(1)[2].mul_(-1)
    return [x]


def zero_permuted_row(lib, x):
    x.permute(1, 0)[0].zero_()
    return [x]


def add_into_transposed_block(lib, x):
    view = x.transpose(0, 1)
    view[1:, :1] += 1.0
    return [x, view]


def fill_view_of_view(lib, x):
    x.t()[0][1:2].fill_(9.0)
    return [x]


def base_write_shows_through(lib, x):
    row, transposed, flat = x[1], x.t(), x.view(-1)
    x.mul_(2)
    return [row, transposed, flat]


def sibling_views(lib, x):
    first, second = x[0:2], x[1:3]
    first.fill_(5.0)
    return [second, x]


def write_unsqueezed(lib, x):
    x.unsqueeze(0)[0, 1].fill_(4.0)
    return [x]


def write_squeezed(lib, x):
    x.unsqueeze(1).squeeze(1)[0].fill_(1.0)
    return [x]


def zero_moved(lib, x):
    cube = x.reshape(2, 2, 3)
    cube.movedim(0, 2)[..., 0].zero_()
    return [x, cube]


def copy_into_split(lib, x):
    x.split([1, 3], dim=0)[1].copy_(lib.ones(3, 3))
    return [x]


def write_flattened(lib, x):
    x.flatten()[5] = 8.0
    return [x]


def swapaxes_write(lib, x):
    x.swapaxes(0, 1)[2].fill_(-2.0)
    return [x]


def reshape_of_transpose_copies(lib, x):
    copy = x.t().reshape(-1)
    copy.fill_(0.0)
    return [x, copy]


def contiguous_of_transpose_copies(lib, x):
    copy = x.t().contiguous()
    copy.fill_(0.0)
    return [x, copy]


def clone_copies(lib, x):
    copy = x[1:3].clone()
    copy.fill_(0.0)
    return [x, copy]


def write_with_index_put(lib, x):
    x[1].index_add_(0, lib.tensor([0, 2]), lib.tensor([10.0, 20.0]))
    return [x]


def write_through_detached(lib, x):
    x.detach()[0].fill_(9.0)
    return [x]


def detached_follows_its_base(lib, x):
    alias = x.detach()
    x[2] = 4.0
    x.t()[0].mul_(3)
    return [x, alias]


def detached_then_cloned_copies(lib, x):
    copy = x.detach().clone()
    copy.zero_()
    return [x, copy]


def write_tensor_split(lib, x):
    left, right = lib.tensor_split(x, [1], dim=1)
    left.fill_(1.0)
    right[0] = 7.0
    return [x]


def write_overlapping_tensor_split(lib, x):
    pieces = x.tensor_split([3, 1])  # x[:3], x[3:1] (empty), x[1:]: the first and last overlap
    pieces[2].mul_(2)
    pieces[0].add_(1)
    assert pieces[1].shape == (0, 3)
    return [x, pieces[0], pieces[2]]


def write_hsplit_vsplit(lib, x):
    lib.hsplit(x, 3)[1].add_(5)
    lib.vsplit(x, [2])[0].neg_()
    return [x]


def base_write_shows_in_vsplit(lib, x):
    piece = lib.vsplit(x, 2)[1]
    x.add_(1)
    return [piece]


def write_ravel_adjoint_atleast(lib, x):
    x.ravel()[4] = 9.0
    x.adjoint()[2, 1] = -9.0
    lib.atleast_3d(x)[3, 0, 0] = 3.0
    lib.atleast_2d(x[1])[0, 2] = 2.0
    return [x]


CASES = [write_through_detached, detached_follows_its_base, detached_then_cloned_copies,
         write_view, fill_diagonal, zero_rows, scale_chunk, relu_through_view,
         write_transposed, add_narrowed, fill_selected, negate_unbound, zero_permuted_row,
         add_into_transposed_block, fill_view_of_view, base_write_shows_through,
         sibling_views, write_unsqueezed, write_squeezed, zero_moved, copy_into_split,
         write_flattened, swapaxes_write, reshape_of_transpose_copies,
         contiguous_of_transpose_copies, clone_copies, write_with_index_put, write_tensor_split,
         write_overlapping_tensor_split, write_hsplit_vsplit, base_write_shows_in_vsplit,
         write_ravel_adjoint_atleast]


@pytest.mark.parametrize('case', CASES, ids=[case.__name__ for case in CASES])
def test_writes_through_views_as_torch(case):
    start = torch.arange(12.0).reshape(4, 3) - 5
    theirs = case(torch, start.clone())
    mine = case(gt, gt.tensor(start))
    assert len(mine) == len(theirs)
    for got, expected in zip(mine, theirs):
        torch.testing.assert_close(torch.as_tensor(got.tolist()), expected, rtol=0, atol=0)


@pytest.mark.parametrize('make', [
    lambda x: x, lambda x: x.t(), lambda x: x[1:3], lambda x: x[:, 1], lambda x: x[1],
    lambda x: x.permute(1, 0), lambda x: x.view(12), lambda x: x.t().t(),
    lambda x: x[:, 0:2], lambda x: x.expand(2, 4, 3), lambda x: x.unsqueeze(0),
], ids=['base', 't', 'rows', 'column', 'row', 'permute', 'view', 't_t', 'columns', 'expand',
        'unsqueeze'])
def test_layout_as_torch(make):
    """is_contiguous(), stride() and storage_offset(), as torch's view would have them."""
    start = torch.zeros(4, 3)
    mine, theirs = make(gt.tensor(start)), make(start)
    assert mine.is_contiguous() == theirs.is_contiguous()
    assert mine.stride() == theirs.stride() and mine.stride(-1) == theirs.stride(-1)
    assert mine.storage_offset() == theirs.storage_offset()


@pytest.mark.parametrize('make, viewable', [
    (lambda x: x.t().view(-1), False), (lambda x: x[:, :2].view(4), False),
    (lambda x: x.t().view(3, 2), True), (lambda x: x[:, :2].view(2, 1, 2), True),
    (lambda x: x.t().contiguous().view(-1), True)],
    ids=['t flat', 'columns flat', 't', 'columns', 'contiguous'])
def test_view_of_a_view_its_strides_cannot_give_is_refused_as_in_torch(make, viewable):
    """GT gave a copy that writes went back through; torch raises (use reshape)."""
    for lib in (torch, gt):
        x = lib.arange(6.).view(2, 3)
        if viewable:
            assert make(x).tolist() == make(torch.arange(6.).view(2, 3)).tolist()
        else:
            with pytest.raises(RuntimeError, match='view size is not compatible'):
                make(x)


@pytest.mark.parametrize('write', [
    lambda e: e.add_(1.0), lambda e: e.mul_(2.0), lambda e: e.copy_(e * 0 + 1)],
    ids=['add_', 'mul_', 'copy_'])
def test_writing_through_an_expanded_view_is_refused_as_in_torch(write):
    for lib in (torch, gt):
        x = lib.zeros(1, 3)
        with pytest.raises(RuntimeError, match='more than one element of the written-to'):
            write(x.expand(2, 3))
        assert x.tolist() == [[0.0, 0.0, 0.0]]


def test_filling_an_expanded_view_fills_its_base_as_in_torch():
    for lib in (torch, gt):
        x = lib.zeros(1, 3)
        x.expand(4, 2, 3).fill_(5.0)
        x.expand(2, 3)[:, 1:].zero_()
        assert x.tolist() == [[5.0, 0.0, 0.0]], lib


@pytest.mark.parametrize('write', [
    lambda y: y[0].mul_(2),
    lambda y: y.t()[1].mul_(3),
    lambda y: y.diagonal().mul_(-1),
    lambda y: y.narrow(1, 0, 2).add_(y.narrow(1, 1, 2).detach()),
    lambda y: y[1:].copy_(y[:-1] * 2),
], ids=['row', 'column', 'diagonal', 'narrow', 'shifted_copy'])
def test_gradients_flow_through_writes_into_views(write):
    start = torch.arange(9.0).reshape(3, 3) / 4 - 1
    theirs = start.clone().requires_grad_()
    mine = gt.tensor(start, requires_grad=True)
    for x in (theirs, mine):
        y = x * 1
        write(y)
        (y * y).sum().backward()
    torch.testing.assert_close(torch.as_tensor(mine.grad.tolist()), theirs.grad)


def test_views_with_history_follow_their_bases_writes_with_torchs_gradients():
    results = []
    for lib in (torch, gt):
        x = lib.arange(6.0).requires_grad_()
        y = x * 2
        row, columns = y[1:3], y.view(2, 3).t()
        read_before = row.sum() + columns.sum()  # their old values, which no rule saves
        y.mul_(10)
        y[0] = 5
        (read_before + row.sum() * 3 + (columns * columns).sum()).backward()
        results.append([row.tolist(), columns.tolist(), x.grad.tolist()])
    assert results[1] == results[0]


def test_a_view_of_a_leaf_that_requires_grad_is_written_only_under_no_grad():
    mine, theirs = nn.Linear(3, 2), torch.nn.Linear(3, 2)
    mine.load_state_dict(theirs.state_dict())
    for model, lib in ((mine, gt), (theirs, torch)):
        with pytest.raises(RuntimeError, match='leaf'):
            model.weight[0].fill_(2.0)
        with lib.no_grad():
            model.weight[0].fill_(1.0)
            model.bias[:1].zero_()
            model.weight.t()[2].mul_(10)
    for name, value in theirs.state_dict().items():
        torch.testing.assert_close(torch.as_tensor(mine.state_dict()[name].tolist()), value)


@pytest.mark.parametrize('initialize', [
    lambda p: p.data[3:6].fill_(1.0),
    lambda p: p.data[0].zero_(),
    lambda p: p.data.t()[1].mul_(2),
    lambda p: p.data.chunk(2)[1].add_(5),
    lambda p: p.data.view(-1)[::2].fill_(-1.0),
    lambda p: p.data[2:4].__setitem__(0, 3.0),
], ids=['forget_gate_bias', 'padding_row', 'transposed', 'chunk', 'strided', 'setitem'])
def test_in_place_changes_of_a_view_of_data_reach_the_tensor(initialize):
    start = torch.arange(12.0).reshape(6, 2)
    theirs, mine = torch.nn.Parameter(start.clone()), nn.Parameter(gt.tensor(start))
    initialize(theirs)
    initialize(mine)
    torch.testing.assert_close(torch.as_tensor(mine.tolist()), theirs.detach())


def test_a_view_whose_base_is_gone_is_a_tensor_of_its_own():
    row = gt.arange(6.0).reshape(2, 3)[1]
    row.fill_(1.0)
    assert row.tolist() == [1.0, 1.0, 1.0]


def test_views_made_and_dropped_in_a_loop_do_not_pile_up_on_their_base():
    data = gt.arange(12.0).reshape(4, 3)
    for step in range(1000):
        row = data[step % 4]
    assert len(data._views) < 64
    row.fill_(0.0)  # the live one still writes through
    assert data.tolist()[3] == [0.0, 0.0, 0.0]


def untracked_writes(lib):
    """Writes autograd does not see (through detach(), under no_grad, through .data):
    torch keeps the tensor's history, so the gradient goes to what it was made from."""
    lib.manual_seed(0)
    a = lib.randn(2, 3, requires_grad=True)
    b = lib.randn(2, 3, requires_grad=True)
    x, y, z = a * 3, a.exp() * 1, b * 2
    x.detach().add_(5)
    with lib.no_grad():
        y.zero_()
    z.data.mul_(4)
    (x * b + y * b + z * z).sum().backward()
    return [x, y, z, a.grad, b.grad]


def test_writes_autograd_does_not_see_keep_the_history_as_torch():
    for got, expected in zip(untracked_writes(gt), untracked_writes(torch)):
        torch.testing.assert_close(torch.as_tensor(got.tolist()), expected, rtol=1e-6,
                                   atol=1e-6)


def test_a_leaf_written_through_detach_stays_a_leaf_that_requires_grad():
    """torch allows it with grad mode on: a detached tensor carries no history."""
    parameter = nn.Parameter(gt.ones(3))
    parameter.detach().mul_(0.5)
    assert parameter.is_leaf and parameter.requires_grad
    (parameter * parameter).sum().backward()
    assert parameter.grad.tolist() == [1.0, 1.0, 1.0]


def test_detach_in_place():
    a = gt.ones(3, requires_grad=True)
    b = a * 2
    assert b.detach_() is b and not b.requires_grad and b.is_leaf
    with pytest.raises(RuntimeError, match="Can't detach views in-place"):
        (a * 2)[1:].detach_()


def unfolded_and_reinterpreted(lib):
    """Windows (`unfold`) and a dtype's view of the bits alias their base as torch's."""
    seen = []
    x = lib.arange(6.0)
    windows, bits = x.unfold(0, 2, 2), x.view(lib.int32)
    x.add_(100)
    seen += [windows.tolist(), bits[:2].tolist()]
    y = lib.zeros(2)
    y.view(lib.int32).fill_(1065353216)
    z = lib.arange(7.0)
    gapped = z.unfold(0, 2, 3)
    gapped[1] = 9
    grid = lib.arange(12.0).reshape(3, 4)
    grid.unfold(1, 2, 2).mul_(10)
    wide = lib.zeros(2, dtype=lib.float64)
    halves = wide.view(lib.int32)
    halves[1] = 1072693248
    seen += [y.tolist(), z.tolist(), gapped.tolist(), grid.tolist(), wide.tolist(),
             list(halves.shape), halves.stride()]
    batched = lib.arange(18.0).reshape(2, 3, 3)
    diagonal = lib.linalg.diagonal(batched)
    batched.add_(1)
    diagonal.mul_(0)
    seen += [diagonal.tolist(), batched.tolist()]
    leaf = lib.zeros(3, requires_grad=True)
    (leaf.clone().unfold(0, 1, 1) * 2).sum().backward()
    return seen + [leaf.grad.tolist(), list(lib.nn.functional.unfold(grid[None, None], 2).shape)]


def test_unfold_and_a_dtype_view_alias_their_base_as_torchs():
    assert unfolded_and_reinterpreted(gt) == unfolded_and_reinterpreted(torch)


def test_a_write_through_overlapping_windows_is_refused():
    """Overlapping windows share elements, so a write through them is refused, as through
    an expanded view (torch writes some of them twice)."""
    x = gt.arange(6.0)
    with pytest.raises(RuntimeError, match='more than one element'):
        x.unfold(0, 2, 1).add_(1)
    assert x.tolist() == list(range(6))


def test_real_is_the_tensor_and_imag_is_refused_as_in_torch():
    x = gt.zeros(3)
    x.real[1] = 5.0
    assert x.tolist() == [0.0, 5.0, 0.0]
    for library in (torch, gt):
        with pytest.raises(RuntimeError, match='imag is not implemented'):
            library.zeros(3).imag


@pytest.mark.parametrize('make', ['randn', 'rand', 'zeros', 'ones'])
def test_a_creation_without_a_size_is_refused_as_in_torch(make):
    """`randn()` made a 0-d tensor; torch refuses it (`randn(())` is the 0-d one)."""
    for library in (torch, gt):
        with pytest.raises(TypeError):
            getattr(library, make)()
        assert getattr(library, make)(()).shape == ()


@pytest.mark.parametrize('call', [
    lambda lib: lib.tensor(1.0).tensor_split(2),
    lambda lib: lib.zeros(4).tensor_split(lib.tensor([1.5])),
    lambda lib: lib.zeros(4).tensor_split(lib.tensor([[1]])),
    lambda lib: lib.atleast_1d(3.0),
], ids=['0-d', 'float indices', '2-d indices', 'a number'])
def test_tensor_split_and_atleast_refuse_as_torch(call):
    with pytest.raises((RuntimeError, TypeError)) as expected:
        call(torch)
    with pytest.raises(type(expected.value)):
        call(gt)


def test_tensor_split_takes_torchs_keywords():
    for keywords in ({'sections': 2}, {'indices': [1]}, {'sections': 3, 'dim': -1}):
        got = [t.shape for t in gt.zeros(4).tensor_split(**keywords)]
        assert got == [t.shape for t in torch.zeros(4).tensor_split(**keywords)]


def test_memory_formats_are_accepted_and_answered_for_the_default_layout():
    """GT keeps torch's default layout: asked whether a fresh NCHW tensor is channels-last
    contiguous it said True; torch says False (True where C or H*W is 1)."""
    for library in (gt, torch):
        x = library.randn(2, 3, 4, 4)
        assert x.is_contiguous() and x.contiguous(memory_format=library.channels_last).shape \
            == (2, 3, 4, 4)
        assert not x.is_contiguous(memory_format=library.channels_last)
        assert library.randn(2, 1, 4, 4).is_contiguous(memory_format=library.channels_last)
