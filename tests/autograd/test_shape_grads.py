"""Gradients of the shape ops ('reshape', 'transpose', 'permute', 'unsqueeze', 'squeeze',
'expand', 'cat', 'stack', 'split', 'contiguous', 'distribute', 'copy_into',
'untracked_write') against
torch, including chunk and unused pieces."""

import pytest
from check import check_vs_torch, lib

import gt


@pytest.mark.parametrize('name, fn', [
    ('reshape', lambda x: x.reshape(4, 6) * x.reshape(-1, 2, 3).sum(0).reshape(1, 6)),
    ('view', lambda x: x.view(24)),
    ('flatten', lambda x: x.flatten() + x.flatten(1).reshape(-1)),
    ('transpose', lambda x: x.transpose(0, 2)),
    ('transpose negative', lambda x: x.transpose(-1, 1)),
    ('permute', lambda x: x.permute(2, 0, 1)),
    ('permute negative', lambda x: x.permute(-1, -3, -2)),
    ('T', lambda x: x[0].T),
    ('unsqueeze', lambda x: x.unsqueeze(0) * x.unsqueeze(-1).sum(-1)),
    ('squeeze', lambda x: x.reshape(2, 1, 3, 4, 1).squeeze()),
    ('squeeze dim', lambda x: x.unsqueeze(1).squeeze(1)),
    ('squeeze dims', lambda x: x.reshape(1, 2, 1, 12).squeeze((0, 2))),
    ('expand', lambda x: x[:, :1].expand(2, 3, 4)),
    ('expand new dims', lambda x: x.expand(5, 2, 3, 4)),
    ('expand -1', lambda x: x.unsqueeze(1).expand(-1, 3, -1, -1)),
    ('expand_as', lambda x: x[:1].expand_as(x)),
    ('contiguous', lambda x: x.transpose(0, 2).contiguous().view(-1) * 2),
])
def test_shape_ops(name, fn):
    check_vs_torch(fn, (2, 3, 4))


def test_expand_of_0d():
    check_vs_torch(lambda x: x.expand(3, 2), ())


@pytest.mark.parametrize('dim', [0, 1, -1])
def test_cat(dim):
    shapes = [(2, 3), (2, 3), (2, 3)]
    shapes = [tuple(size + k if axis == dim % 2 else size for axis, size in enumerate(shape))
              for k, shape in enumerate(shapes)]
    check_vs_torch(lambda a, b, c: lib(a).cat([a, b * 2, c], dim), *shapes)


def test_cat_of_one_and_of_legacy_empty_tensors():
    check_vs_torch(lambda a: lib(a).cat([a], 1), (2, 3))
    check_vs_torch(lambda a, b: lib(a).cat([a, b], 0), (2, 3), (0,))
    check_vs_torch(lambda a, b: lib(a).cat([a, b.exp()], -1), (3,), (2,))


def test_cat_mixed_dtypes():
    check_vs_torch(lambda a, b: lib(a).cat([a.float(), b], 0), (2,), (3,))


@pytest.mark.parametrize('dim', [0, 1, 2, -1, -3])
def test_stack(dim):
    check_vs_torch(lambda a, b: lib(a).stack([a, b, a * b], dim), (2, 3), (2, 3))


def test_stack_of_0d():
    check_vs_torch(lambda a, b: lib(a).stack([a, b]), (), ())


@pytest.mark.parametrize('dim', [0, 1, -1])
def test_split(dim):
    check_vs_torch(lambda x: x.split(2, dim), (5, 4, 3))
    check_vs_torch(lambda x: x.split([1, 3], dim=-2), (5, 4, 3))


def test_split_with_unused_pieces():
    """Pieces without a gradient count as zeros, as in torch."""
    check_vs_torch(lambda x: x.split(2, 1)[1] * 3, (3, 5))
    check_vs_torch(lambda x: x.split([1, 1, 2])[0] + x.split([1, 1, 2])[2][:1], (4, 2))


def test_chunk():
    check_vs_torch(lambda x: x.chunk(3, 1), (2, 7))
    check_vs_torch(lambda x: x.chunk(2)[1].exp(), (4,))


def test_split_into_one_piece():
    check_vs_torch(lambda x: x.split(5, 0), (3, 2))


@pytest.mark.parametrize('axis', [None, 0, 1])
def test_distribute_copies_and_places_with_the_gradient_of_a_copy(axis):
    """'distribute' is what gt.signal.tensor records; with a config it shards the copy."""
    gt.config.clear_configs()
    if axis is not None:
        gt.register_config('placed', gt.SignalConfig(shard=gt.ShardConfig(axis=axis)))
    try:
        check_vs_torch(lambda x: (gt.signal.tensor(x, name='placed') if isinstance(x, gt.Tensor)
                                  else x.clone()) * x.exp(), (4, 6))
    finally:
        gt.config.clear_configs()


def test_untracked_write_gives_the_old_values_history_the_gradient():
    """A write under no_grad or through detach(): torch keeps the tensor's grad_fn."""
    def fn(a, b):
        c = a * 2
        c.detach().mul_(3)
        d = b * 1
        with lib(b).no_grad():
            d.add_(a)
        return c * a + d * d
    check_vs_torch(fn, (3, 4), (3, 4))


def test_copy_into_gives_the_source_the_gradient_and_the_old_value_none():
    def fn(a, b):
        c = a * 2
        c.copy_(b)
        return c * a
    check_vs_torch(fn, (3, 4), (3, 4))
