"""Buffers as torch.nn has them: `register_buffer(..., persistent=False)` and `nn.Buffer`
assignment register state that `named_buffers` lists and `state_dict` leaves out when not
persistent; loading checks only persistent names; bad names fail as in torch. Every case
is run on a torch module built the same way, the oracle."""

import pytest
import torch

import gt
import gt.nn as nn


def build(library, make):
    """A Linear with a persistent and a non-persistent buffer, each way of registering."""
    module = library.nn.Linear(3, 2) if library is torch else nn.Linear(3, 2)
    buffer = torch.nn.Buffer if library is torch else nn.Buffer
    module.register_buffer('mask', make(library, [1.0, 0.0, 1.0]), persistent=False)
    module.register_buffer('count', make(library, [0.0]))
    module.position = buffer(make(library, [0.0, 1.0, 2.0]), persistent=False)
    module.scale = buffer(make(library, [2.0]))
    return module


def make(library, values):
    return library.tensor(values)


def test_named_buffers_and_state_dict_keys_are_torchs():
    mine, theirs = build(gt, make), build(torch, make)
    assert [name for name, _ in mine.named_buffers()] == \
        [name for name, _ in theirs.named_buffers()] == ['mask', 'count', 'position', 'scale']
    assert list(mine.state_dict()) == list(theirs.state_dict()) == \
        ['weight', 'bias', 'count', 'scale']
    assert mine._non_persistent_buffers_set == theirs._non_persistent_buffers_set == \
        {'mask', 'position'}
    assert mine.position.tolist() == [0.0, 1.0, 2.0]


def test_persistence_changes_when_a_name_is_registered_again_or_deleted():
    for library in (gt, torch):
        module = build(library, make)
        module.register_buffer('mask', make(library, [0.0, 0.0, 0.0]))  # persistent now
        assert 'mask' in module.state_dict()
        del module.position
        assert 'position' not in module._non_persistent_buffers_set
        module.scale = make(library, [3.0])  # a plain tensor keeps the buffer's persistence
        assert 'scale' in module.state_dict() and module.scale.tolist() == [3.0]


def test_loading_ignores_non_persistent_buffers_both_ways():
    mine, theirs = build(gt, make), build(torch, make)
    with torch.no_grad():
        theirs.count.fill_(5.0)
        theirs.mask.fill_(7.0)
    result = mine.load_state_dict(theirs.state_dict())
    assert list(result.missing_keys) == [] and list(result.unexpected_keys) == []
    assert mine.count.tolist() == [5.0] and mine.mask.tolist() == [1.0, 0.0, 1.0]
    with pytest.raises(RuntimeError, match='Unexpected key.*"mask"'):
        mine.load_state_dict(dict(theirs.state_dict(), mask=torch.zeros(3)))
    back = theirs.load_state_dict(mine.state_dict())
    assert list(back.missing_keys) == [] and list(back.unexpected_keys) == []


def test_a_buffer_keeps_requires_grad_as_torchs_does():
    for library, buffer in ((gt, nn.Buffer), (torch, torch.nn.Buffer)):
        assert buffer(library.ones(2, requires_grad=True)).requires_grad
        assert not buffer(library.ones(2)).requires_grad
        assert buffer().shape == (0,)


@pytest.mark.parametrize('register, error, message', [
    (lambda m, lib: m.register_buffer('a.b', lib.ones(1)), KeyError, 'contain "\\."'),
    (lambda m, lib: m.register_buffer('', lib.ones(1)), KeyError, 'empty string'),
    (lambda m, lib: m.register_buffer(3, lib.ones(1)), TypeError, 'should be a string'),
    (lambda m, lib: m.register_buffer('weight', lib.ones(1)), KeyError, 'already exists'),
    (lambda m, lib: m.register_buffer('b', [1.0]), TypeError, 'cannot assign'),
], ids=['dot', 'empty', 'not-a-string', 'a-parameter', 'not-a-tensor'])
def test_bad_registrations_fail_as_in_torch(register, error, message):
    for library, module in ((gt, nn.Linear(3, 2)), (torch, torch.nn.Linear(3, 2))):
        with pytest.raises(error, match=message):
            register(module, library)


def test_a_torch_tensor_registers_as_a_gt_buffer():
    """PixelCNN's `register_buffer('mask', self.weight.data.clone())`, and a buffer set to
    a torch tensor later: a GT copy, with the values torch's module holds."""
    conv = nn.Conv2d(1, 2, 3)
    conv.register_buffer('mask', conv.weight.data.clone().fill_(1.0))
    assert isinstance(conv.mask, gt.Tensor)
    assert conv.mask.tolist() == torch.ones(2, 1, 3, 3).tolist()
    conv.mask = torch.zeros(2, 1, 3, 3)
    assert isinstance(conv.mask, gt.Tensor) and conv.mask.sum().item() == 0.0
    assert set(conv.state_dict()) == {'weight', 'bias', 'mask'}
