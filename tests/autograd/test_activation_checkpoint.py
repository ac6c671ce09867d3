"""gt.utils.checkpoint against torch.utils.checkpoint: the same outputs, gradients (input,
parameters, second derivatives), warnings and errors, the same dropout masks in the
rerun, and the workers holding none of the function's intermediates between forward and
backward (the dispatcher's count of the bytes the session holds)."""

import warnings

import pytest
import torch
import torch.utils.checkpoint

import gt
import gt.utils.checkpoint
from gt.ir.ops.random_state import STATE_BYTES


def models():
    """The same seeded model in both libraries, dropout included."""
    def build(lib):
        return lib.nn.Sequential(lib.nn.Linear(6, 16), lib.nn.Tanh(), lib.nn.Dropout(0.5),
                                 lib.nn.Linear(16, 16), lib.nn.GELU(), lib.nn.Linear(16, 3))
    theirs, mine = build(torch), build(gt)
    mine.load_state_dict(theirs.state_dict())
    return theirs, mine


def as_torch(value):
    return None if value is None else torch.as_tensor(value.tolist())


@pytest.mark.parametrize('inputs_require_grad', [True, False])
@pytest.mark.parametrize('reentrant', [True, False])
def test_outputs_gradients_and_warnings_are_torchs(reentrant, inputs_require_grad):
    theirs, mine = models()
    data = torch.randn(5, 6)
    results = []
    for lib, model in ((torch, theirs), (gt, mine)):
        lib.manual_seed(7)  # GT's dropout masks are torch's: the rerun must repeat them
        x = lib.tensor(data.numpy(), requires_grad=inputs_require_grad)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            out = lib.utils.checkpoint.checkpoint(model, x, use_reentrant=reentrant)
        if out.requires_grad:
            out.pow(2).sum().backward()
        results.append(dict(out=as_torch(out), requires_grad=out.requires_grad,
                            warnings=[str(w.message) for w in caught
                                      if 'use_reentrant' not in str(w.message)],
                            x=as_torch(x.grad),
                            grads=[as_torch(p.grad) for p in model.parameters()]))
    expected, got = results
    assert got['requires_grad'] == expected['requires_grad']
    assert got['warnings'] == expected['warnings']
    torch.testing.assert_close(got['out'], expected['out'].detach())
    torch.testing.assert_close(got['x'], expected['x'])
    for mine_grad, their_grad in zip(got['grads'], expected['grads']):
        torch.testing.assert_close(mine_grad, their_grad)


def test_the_workers_keep_no_intermediates_between_forward_and_backward():
    def held():
        return sum(gt.debug.get_dispatcher_stats()['session']['bytes'].values())

    block = gt.nn.Sequential(*[gt.nn.Sequential(gt.nn.Linear(128, 128), gt.nn.ReLU())
                               for _ in range(4)])
    x = gt.randn(256, 128, requires_grad=True)
    output_bytes = 256 * 128 * 4
    before = held()
    out = gt.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
    assert held() - before == output_bytes + STATE_BYTES  # the output and the random state
    out.sum().backward()
    del out
    before = held()
    out = block(x)
    assert held() - before >= 8 * output_bytes  # each layer's output, and ReLU's
    reference = [p.grad.clone() for p in block.parameters()]
    for p in block.parameters():
        p.grad = None
    out.sum().backward()
    for p, expected in zip(block.parameters(), reference):
        torch.testing.assert_close(as_torch(p.grad), as_torch(expected))


def test_the_random_stream_after_backward_is_as_without_checkpoint():
    dropout = gt.nn.Dropout(0.5)

    def noisy(v):  # draws on the workers, and from torch's generator in this process
        return dropout(v) * float(torch.rand(()))

    draws = []
    for checkpointed in (False, True):
        gt.manual_seed(1)
        x = gt.ones(64, requires_grad=True)
        out = (gt.utils.checkpoint.checkpoint(noisy, x, use_reentrant=False)
               if checkpointed else noisy(x))
        between = (gt.rand(3), torch.rand(1))  # the rerun's draws must not repeat these
        out.sum().backward()
        draws.append((x.grad.tolist(), between[0].tolist(), between[1].tolist(),
                      gt.rand(4).tolist(), torch.rand(2).tolist()))
    assert draws[0] == draws[1]


def test_structured_outputs_keyword_arguments_and_second_derivatives():
    def attend(lib, query, keys, scale=1.0):
        weights = (query @ keys.T * scale).softmax(-1)
        return {'mixed': (weights @ keys, 'note'), 'best': weights.argmax(-1)}

    data = [torch.randn(3, 4), torch.randn(5, 4)]
    results = []
    for lib in (torch, gt):
        query, keys = (lib.tensor(d.numpy(), requires_grad=True) for d in data)
        out = lib.utils.checkpoint.checkpoint(lambda q, k, scale: attend(lib, q, k, scale=scale),
                                              query, keys, use_reentrant=False, scale=0.5)
        mixed, note = out['mixed']
        assert note == 'note' and not out['best'].requires_grad
        (grad,) = lib.autograd.grad(mixed.sum(), query, create_graph=True)
        grad.pow(2).sum().backward()  # a gradient penalty: through the rerun's tape
        results.append([as_torch(mixed), as_torch(out['best']), as_torch(query.grad),
                        as_torch(keys.grad)])
    for got, expected in zip(results[1], results[0]):
        torch.testing.assert_close(got, expected.detach())


def test_checkpoint_sequential_is_torchs():
    theirs, mine = models()
    theirs.eval(), mine.eval()
    data = torch.randn(4, 6)
    results = []
    for lib, model in ((torch, theirs), (gt, mine)):
        x = lib.tensor(data.numpy(), requires_grad=True)
        out = lib.utils.checkpoint.checkpoint_sequential(model, 3, x, use_reentrant=False)
        out.sum().backward()
        results.append([as_torch(out), as_torch(x.grad), as_torch(model[0].weight.grad)])
    for got, expected in zip(results[1], results[0]):
        torch.testing.assert_close(got, expected.detach())


def test_misuse_raises_as_torch_does():
    x = gt.randn(3, requires_grad=True)
    with pytest.raises(ValueError, match='Unexpected keyword arguments: scale'):
        gt.utils.checkpoint.checkpoint(lambda v, scale: v * scale, x, use_reentrant=True,
                                       scale=2)
    with pytest.raises(ValueError, match='determinism_check'):
        gt.utils.checkpoint.checkpoint(gt.sin, x, use_reentrant=False,
                                       determinism_check='strict')
    with gt.no_grad():  # nothing to save: a plain call
        assert not gt.utils.checkpoint.checkpoint(gt.sin, x, use_reentrant=False).requires_grad

    calls = []

    def changing(v):  # returns a different shape when run again
        calls.append(1)
        return v[:len(calls) + 1].exp()

    out = gt.utils.checkpoint.checkpoint(changing, x, use_reentrant=False)
    with pytest.raises(RuntimeError, match='different metadata than during the forward'):
        out.sum().backward()



def test_an_input_changed_in_place_after_the_call_reruns_on_its_old_value():
    leaf = gt.randn(3, requires_grad=True)
    y = leaf * 1
    before = y.tolist()
    out = gt.utils.checkpoint.checkpoint(gt.sin, y, use_reentrant=False)
    with gt.no_grad():
        y.add_(1)  # torch raises here at backward; GT kept the value the call read
    out.sum().backward()
    torch.testing.assert_close(as_torch(leaf.grad), torch.tensor(before).cos())


@pytest.mark.parametrize('call', [
    lambda lib, x: lib.utils.checkpoint.checkpoint(lambda t: t * 2, x),
    lambda lib, x: lib.utils.checkpoint.checkpoint_sequential(
        lib.nn.Sequential(lib.nn.Tanh(), lib.nn.Tanh()), 2, x)])
def test_a_checkpoint_without_use_reentrant_warns_as_torchs(call):
    messages = []
    for lib in (gt, torch):
        x = lib.ones(1, 2, requires_grad=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            call(lib, x)
        messages.append([(str(w.message), w.filename) for w in caught
                         if 'use_reentrant' in str(w.message)])
    assert messages[0] and messages[0] == [(text, __file__) for text, _ in messages[1]]
