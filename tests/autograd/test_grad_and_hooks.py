"""`gt.autograd.grad` (several outputs and inputs, non-leaf inputs, unused inputs,
create_graph for second derivatives) and `Tensor.register_hook`, against torch."""

import numpy as np
import pytest
import torch
from check import fetch, rng

import gt


def pair(shape):
    data = rng().standard_normal(shape).astype(np.float32)
    return (gt.from_numpy(data).requires_grad_(),
            torch.from_numpy(data.copy()).requires_grad_())


def close(got, want):
    got = fetch([g for g in got if g is not None])
    want = [w for w in want if w is not None]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w.detach(), rtol=1e-4, atol=1e-5)


def test_grad_returns_gradients_and_leaves_dot_grad_alone():
    (x, tx), (w, tw) = pair((4, 3)), pair((3, 2))

    def loss(lib, a, b):
        hidden = (a @ b).tanh()
        return hidden.sum(), (hidden * hidden).mean(), hidden

    out, other, hidden = loss(gt, x, w)
    t_out, t_other, t_hidden = loss(torch, tx, tw)
    got = gt.autograd.grad([out, other], [x, w, hidden], retain_graph=True)
    want = torch.autograd.grad([t_out, t_other], [tx, tw, t_hidden], retain_graph=True)
    close(got, want)
    assert x.grad is None and w.grad is None
    seeded = gt.autograd.grad(out, x, grad_outputs=gt.tensor(2.0))
    close(seeded, torch.autograd.grad(t_out, tx, grad_outputs=torch.tensor(2.0)))


def test_unused_inputs_raise_unless_allowed():
    (x, tx), (y, ty) = pair((3,)), pair((3,))
    out = (x * 2).sum()
    with pytest.raises(RuntimeError, match='not used'):
        gt.autograd.grad(out, [x, y], retain_graph=True)
    got = gt.autograd.grad(out, [x, y], allow_unused=True)
    assert got[1] is None
    close(got, torch.autograd.grad((tx * 2).sum(), [tx, ty], allow_unused=True))


@pytest.mark.filterwarnings('ignore:Using backward\\(\\) with create_graph')
def test_create_graph_gives_second_derivatives():
    x, tx = pair((5,))
    (first,) = gt.autograd.grad((x ** 3).sum(), x, create_graph=True)
    assert first.requires_grad
    (second,) = gt.autograd.grad(first.sum(), x)
    (t_first,) = torch.autograd.grad((tx ** 3).sum(), tx, create_graph=True)
    (t_second,) = torch.autograd.grad(t_first.sum(), tx)
    close([first, second], [t_first, t_second])
    y, ty = pair((4,))
    (y.tanh().exp().sum()).backward(create_graph=True)
    (ty.tanh().exp().sum()).backward(create_graph=True)
    y.grad.sum().backward()
    ty.grad.sum().backward()
    close([y.grad], [ty.grad])
    # A function run by name differentiates twice, and again.
    (first,) = gt.autograd.grad(y.cumprod(0).sum(), y, create_graph=True)
    (t_first,) = torch.autograd.grad(ty.cumprod(0).sum(), ty, create_graph=True)
    (second,) = gt.autograd.grad((first * first).sum(), y)
    (t_second,) = torch.autograd.grad((t_first * t_first).sum(), ty)
    close([first, second], [t_first, t_second])
    orders, t_orders = [y.cumprod(0).sum()], [ty.cumprod(0).sum()]
    for _ in range(4):
        orders += gt.autograd.grad(orders[-1].pow(2).sum(), y, create_graph=True)
        t_orders += torch.autograd.grad(t_orders[-1].pow(2).sum(), ty, create_graph=True)
    close(orders, t_orders)


def test_hooks_see_and_may_replace_gradients():
    (x, tx), (w, tw) = pair((3, 4)), pair((4,))
    seen, t_seen = [], []
    for leaf, record in ((x, seen), (tx, t_seen)):
        leaf.register_hook(lambda g, record=record: record.append(g))
    handle = w.register_hook(lambda g: g * 10)
    tw.register_hook(lambda g: g * 10)

    def run(a, b, record):
        hidden = a * b
        hidden.register_hook(lambda g: g + 1)
        hidden.register_hook(lambda g: record.append(g))  # None: the gradient stays
        return (hidden.relu() ** 2).sum()

    run(x, w, seen).backward()
    run(tx, tw, t_seen).backward()
    close([x.grad, w.grad, *seen], [tx.grad, tw.grad, *t_seen])
    handle.remove()
    x.grad = w.grad = None
    (x * w).sum().backward()
    assert torch.equal(w.grad.data, tx.detach().sum(0))
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        gt.ones(2).register_hook(print)


@pytest.mark.parametrize('hook, words', [
    (lambda g: g.sum(), 'changed the size'),
    (lambda g: g[0], 'changed the size'),
    (lambda g: g.double(), 'changed the type'),
], ids=['a sum', 'a row', 'double'])
@pytest.mark.parametrize('leaf', [True, False], ids=['leaf', 'non-leaf'])
def test_a_hook_that_changes_the_gradients_size_or_dtype_is_refused(hook, words, leaf):
    """As torch refuses it; GT broadcast a summed gradient into the leaf."""
    for library in (torch, gt):
        x = library.ones(3, 4, requires_grad=True)
        hooked = x if leaf else x * 2
        hooked.register_hook(hook)
        with pytest.raises(RuntimeError, match=words):
            (hooked * 2).sum().backward()
    assert gt.ones(2).sum().item() == 2.0  # the session goes on


def test_an_assigned_grad_is_checked_and_a_host_tensor_uploaded():
    """torch's checks at `p.grad = ...`; a torch tensor (computed on the host) is stored
    as a GT tensor, which the optimizer's step uses as torch's does."""
    model, reference = gt.nn.Linear(4, 2), torch.nn.Linear(4, 2)
    model.load_state_dict(reference.state_dict())
    for mine, theirs in ((model.weight, reference.weight), (model.bias, reference.bias)):
        mine.grad = theirs.grad = torch.full(tuple(theirs.shape), 0.5)
        assert isinstance(mine.grad, gt.Tensor)
    gt.optim.SGD(model.parameters(), lr=0.1).step()
    torch.optim.SGD(reference.parameters(), lr=0.1).step()
    assert torch.equal(model.weight.data, reference.weight.detach())
    for wrong, error, words in ((gt.ones(2, 4, dtype=gt.float64), RuntimeError, 'dtype'),
                                (gt.ones(4, 2), RuntimeError, 'size'),
                                ([1.0], TypeError, 'expected to be a Tensor')):
        with pytest.raises(error, match=words):
            model.weight.grad = wrong
        with pytest.raises(error, match=words):
            reference.weight.grad = wrong if isinstance(wrong, list) else torch.tensor(
                wrong.numpy())


def test_a_leaf_hook_sees_the_leaf_s_whole_gradient_once():
    """A leaf used twice gets two gradient parts; torch sums them, then calls its hooks
    once, then accumulates into an existing .grad (in backward and in grad())."""
    (x, tx), (w, tw) = pair((3,)), pair((3,))
    calls, t_calls = [], []
    x.register_hook(lambda g: calls.append(g) or g ** 2)
    tx.register_hook(lambda g: t_calls.append(g) or g ** 2)
    for _ in range(2):  # the second pass adds to the .grad the first left
        (x * x * w + x).sum().backward()
        (tx * tx * tw + tx).sum().backward()
    assert len(calls) == len(t_calls) == 2
    close([x.grad, w.grad, *calls], [tx.grad, tw.grad, *t_calls])
    close(gt.autograd.grad((x * x).sum(), [x]), torch.autograd.grad((tx * tx).sum(), [tx]))
    assert len(calls) == len(t_calls) == 3


def test_a_retained_grad_is_taken_after_hooks_and_follows_in_place_updates():
    """As torch: the .grad of a tensor that called retain_grad() is its gradient after
    its hooks ran, and an in-place update moves the retention to the new value."""
    def grads(lib):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        hooked = x * 2
        hooked.retain_grad()
        hooked.register_hook(lambda grad: grad * 10)
        updated = x * 3
        updated.retain_grad()
        updated += 1
        (hooked * hooked + updated * updated).sum().backward()
        return [hooked.grad, updated.grad, x.grad]

    close(grads(gt), grads(torch))


def optimizer_in_backward(lib):
    """Each parameter stepped by its own optimizer as its gradient is accumulated (the
    post-accumulate hook's use); what the hooks saw and the weights after."""
    lib.manual_seed(0)
    model = lib.nn.Linear(3, 2)
    optimizers = {p: lib.optim.SGD([p], lr=0.1) for p in model.parameters()}
    seen = []

    def step(parameter):
        seen.append(tuple(parameter.grad.shape))
        optimizers[parameter].step()
        optimizers[parameter].zero_grad()

    handles = [p.register_post_accumulate_grad_hook(step) for p in model.parameters()]
    for scale in range(1, 4):  # the tape repeats: it must not be replayed past the hooks
        model(lib.ones(4, 3) * scale).pow(2).sum().backward()
    handles[0].remove()
    model(lib.ones(4, 3)).sum().backward()
    with pytest.raises(RuntimeError, match='non-leaf'):
        (model.weight * 2).register_post_accumulate_grad_hook(step)
    return seen, model.weight.tolist(), model.bias.grad is None, model.weight.grad is None


def test_post_accumulate_grad_hooks_run_as_torchs():
    expected, got = optimizer_in_backward(torch), optimizer_in_backward(gt)
    assert got[0] == expected[0] and got[2:] == expected[2:]
    torch.testing.assert_close(torch.tensor(got[1]), torch.tensor(expected[1]))
