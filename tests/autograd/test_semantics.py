"""Autograd behaves as torch's does: accumulation, retain_graph, grad modes, leaves,
retain_grad, detach, and the errors torch raises (each checked against torch itself)."""

import numpy as np
import pytest
import torch
from check import fetch

import gt

DATA = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])


def pair(data=DATA, requires_grad=True):
    """The same leaf in GT and in torch."""
    return (gt.tensor(data, requires_grad=requires_grad),
            torch.tensor(data, requires_grad=requires_grad))


def assert_same(got, want):
    got = got.data if isinstance(got, gt.Tensor) else got
    torch.testing.assert_close(got, want.detach(), rtol=1e-7, atol=0)


def test_a_leafs_gradient_accumulates_in_place_as_torchs():
    """torch's AccumulateGrad adds into the existing .grad (without create_graph), so a
    reference taken before a second backward, and a detach() of it, see the sum; a
    retained non-leaf's is a new tensor each time."""
    seen = []
    for library in (gt, torch):
        w = library.ones(2, requires_grad=True)
        (w * 3).sum().backward()
        g, d = w.grad, w.grad.detach()
        (w * 2).sum().backward()
        seen.append([g.tolist(), d.tolist(), g is w.grad])
        w.grad.zero_()
        seen.append(g.tolist())
        h = w * 2
        h.retain_grad()
        (h * 3).sum().backward(retain_graph=True)
        first = h.grad
        (h * 3).sum().backward()
        seen.append([first.tolist(), h.grad.tolist(), first is h.grad])
    assert seen[:3] == seen[3:]


def test_gradients_accumulate_across_backward_calls():
    (x, xt), (w, wt) = pair(), pair(DATA * 2)
    for _ in range(2):
        (x * w).exp().sum().backward()
        (xt * wt).exp().sum().backward()
    assert_same(x.grad, xt.grad)
    assert_same(w.grad, wt.grad)


def test_a_leaf_used_twice_gets_both_contributions():
    x, xt = pair()
    (x * x + x.exp() - x).sum().backward()
    (xt * xt + xt.exp() - xt).sum().backward()
    assert_same(x.grad, xt.grad)


def test_zero_grad_and_grad_none():
    x, xt = pair()
    for tensor in (x, xt):
        (tensor * 3).sum().backward()
        tensor.grad.zero_()
        (tensor * tensor).sum().backward()
    assert_same(x.grad, xt.grad)
    for tensor in (x, xt):
        tensor.grad = None
        tensor.sum().backward()
    assert_same(x.grad, xt.grad)


def test_grads_of_leaves_are_separate_tensors():
    (a, _), (b, _) = pair(), pair()
    (a + b).sum().backward()
    assert a.grad is not b.grad
    a.grad.zero_()
    assert b.grad.sum().item() == DATA.size


def test_the_callers_gradient_does_not_become_a_grad():
    x, _ = pair()
    gradient = gt.ones(2, 3, dtype=torch.float64)
    x.backward(gradient)
    (x * 1).backward(gradient)
    assert x.grad is not gradient
    x.grad.zero_()
    assert gradient.sum().item() == 6


def test_retain_graph_allows_a_second_backward():
    x, xt = pair()
    y, yt = (x.exp() * x).sum(), (xt.exp() * xt).sum()
    y.backward(retain_graph=True)
    yt.backward(retain_graph=True)
    y.backward()
    yt.backward()
    assert_same(x.grad, xt.grad)


def test_a_second_backward_without_retain_graph_raises():
    x, xt = pair()
    y, yt = (x.exp() * x).sum(), (xt.exp() * xt).sum()
    y.backward()
    yt.backward()
    with pytest.raises(RuntimeError, match='second time'):
        yt.backward()
    with pytest.raises(RuntimeError, match='retain_graph=True'):
        y.backward()


def test_backward_on_a_non_scalar_needs_a_gradient():
    x, xt = pair()
    with pytest.raises(RuntimeError, match='scalar outputs'):
        (xt * 2).backward()
    with pytest.raises(RuntimeError, match=r'shape \[2, 3\]'):
        (x * 2).backward()


def test_backward_with_a_gradient_on_non_scalars():
    x, xt = pair()
    gradient = np.arange(6.0).reshape(2, 3)
    (x * x).backward(gt.tensor(gradient))
    (xt * xt).backward(torch.tensor(gradient))
    assert_same(x.grad, xt.grad)
    with pytest.raises(RuntimeError, match=r'\[3\].*\[2, 3\]'):
        (x * x).backward(gt.ones(3, dtype=torch.float64))


def test_backward_of_a_leaf_and_of_a_one_element_tensor():
    x, xt = pair(np.array([2.0]))
    x.backward()
    xt.backward()
    (x * 3).backward()
    (xt * 3).backward()
    assert_same(x.grad, xt.grad)


def test_backward_on_a_tensor_without_grad_raises():
    x, _ = pair(requires_grad=False)
    with pytest.raises(RuntimeError, match='does not require grad'):
        (x * 2).sum().backward()


def test_detach():
    x, xt = pair()
    for tensor in (x, xt):
        detached = tensor.detach()
        assert not detached.requires_grad and detached.is_leaf and detached.grad_fn is None
        (tensor * 2 + detached * tensor.detach()).sum().backward()
    assert_same(x.grad, xt.grad)


@pytest.mark.parametrize('library', [gt, torch], ids=['gt', 'torch'])
def test_grad_modes(library):
    x = library.tensor(DATA, requires_grad=True)
    with library.no_grad():
        assert not (x * 2).requires_grad
        with library.enable_grad():
            assert (x * 2).requires_grad
        assert not (x * 2).requires_grad
    with library.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert (x * 2).requires_grad
    library.set_grad_enabled(False)
    try:
        assert not (x * 2).requires_grad
    finally:
        library.set_grad_enabled(True)
    assert (x * 2).requires_grad


@pytest.mark.parametrize('library', [gt, torch], ids=['gt', 'torch'])
def test_grad_modes_as_decorators(library):
    x = library.tensor(DATA, requires_grad=True)

    @library.no_grad()
    def without(tensor):
        return tensor * 2

    @library.enable_grad()
    def with_grad(tensor):
        return tensor * 2

    @library.set_grad_enabled(False)
    def disabled(tensor):
        return tensor * 2

    assert (x * 2).requires_grad
    assert not without(x).requires_grad and not disabled(x).requires_grad
    with library.no_grad():
        assert with_grad(x).requires_grad
    assert without.__name__ == 'without' and (x * 2).requires_grad


@pytest.mark.parametrize('library', [gt, torch], ids=['gt', 'torch'])
def test_grad_modes_decorate_without_the_call(library):
    """`@torch.no_grad` and `@torch.inference_mode` without parentheses: GT's bare
    inference_mode returned a wrapper without running the body, and no_grad refused."""
    x = library.tensor(DATA, requires_grad=True)

    @library.no_grad
    def without(tensor):
        return tensor * 2

    @library.inference_mode
    def inferring(tensor):
        return (tensor * 2).requires_grad, library.is_inference_mode_enabled()

    @library.enable_grad
    def with_grad(tensor):
        return tensor * 2

    assert not without(x).requires_grad
    assert inferring(x) == (False, True)
    with library.no_grad():
        assert with_grad(x).requires_grad
    assert (x * 2).requires_grad and not library.is_inference_mode_enabled()


@pytest.mark.parametrize('library', [gt, torch], ids=['gt', 'torch'])
def test_a_decorated_generator_runs_each_resumption_in_the_mode(library):
    """A sampling loop that yields its tokens (streaming generation) under
    `@torch.no_grad()`: GT left the mode once the generator object was made, so every
    step recorded its tape; values sent and exceptions thrown in reach the body."""
    x = library.tensor(DATA, requires_grad=True)

    @library.no_grad()
    def stream(steps):
        for _ in range(steps):
            try:
                sent = yield (x * 2).requires_grad, library.is_grad_enabled()
            except ValueError as error:
                sent = str(error)
            if sent is not None:
                yield 'got ' + sent, library.is_grad_enabled()
        return 'done'

    steps = stream(2)
    assert next(steps) == (False, False) and library.is_grad_enabled()
    assert steps.send('a token') == ('got a token', False)
    assert next(steps) == (False, False)
    assert steps.throw(ValueError('stop')) == ('got stop', False)
    with pytest.raises(StopIteration) as ended:
        next(steps)
    assert ended.value.value == 'done' and library.is_grad_enabled()
    assert (x * 2).requires_grad


def test_is_leaf_and_requires_grad():
    x, xt = pair()
    c, ct = pair(requires_grad=False)
    for leaf, constant in ((x, c), (xt, ct)):
        assert leaf.is_leaf and constant.is_leaf and leaf.requires_grad
        y = leaf * constant
        assert not y.is_leaf and y.requires_grad and y.grad_fn is not None
        z = constant * 2
        assert z.is_leaf and not z.requires_grad
        assert not (leaf > 0).requires_grad and not leaf.argmax().requires_grad
        assert not leaf.long().requires_grad


def test_requires_grad_():
    c, ct = pair(requires_grad=False)
    for constant in (c, ct):
        assert constant.requires_grad_() is constant and constant.requires_grad
        (constant * 2).sum().backward()
    assert_same(c.grad, ct.grad)
    for library in (gt, torch):
        with pytest.raises(RuntimeError, match='floating point'):
            library.tensor([1, 2]).requires_grad_()
        with pytest.raises(RuntimeError, match='requires_grad'):
            (library.tensor(DATA, requires_grad=True) * 2).requires_grad_(False)


def test_retain_grad_fills_the_grad_of_a_non_leaf():
    x, xt = pair()
    results = []
    for tensor in (x, xt):
        hidden = tensor * 2
        hidden.retain_grad()
        out = hidden.exp() * hidden
        out.retain_grad()
        (out * 3).sum().backward(retain_graph=True)
        (hidden.sum() * 2).backward()  # accumulates, as in torch
        results.append((hidden.grad, out.grad))
    (hidden, out), (hidden_t, out_t) = results
    assert_same(hidden, hidden_t)
    assert_same(out, out_t)


def test_retain_grad_on_the_root():
    x, xt = pair()
    for tensor in (x, xt):
        y = (tensor * 2).sum()
        y.retain_grad()
        y.backward()
        assert y.grad.item() == 1


def test_reading_the_grad_of_a_non_leaf_warns():
    x, xt = pair()
    for tensor in (x, xt):
        y = tensor * 2
        y.sum().backward()
        with pytest.warns(UserWarning, match='retain_grad'):
            assert y.grad is None


def test_in_place_update_of_a_leaf_that_requires_grad():
    x, xt = pair()
    for tensor in (x, xt):
        with pytest.raises(RuntimeError, match='leaf'):
            tensor += 1
        (tensor * tensor).sum().backward()
        with torch.no_grad(), gt.no_grad():
            tensor -= 0.1 * tensor.grad  # an optimizer step
        assert tensor.is_leaf and tensor.requires_grad
    assert_same(x, xt)


def test_a_tensor_changed_in_place_after_use_keeps_the_value_the_tape_read():
    """torch raises where a rule saved the changed tensor (mul) and not where none did
    (add); GT's tape keeps the old value either way, the gradient torch gives where it
    does not raise, and a leaf's gradient still reaches the leaf."""
    (x, xt), (w, wt) = pair(), pair(DATA * 2)
    y, t_y = (x * w).sum(), (xt * wt).sum()
    with torch.no_grad(), gt.no_grad():
        w += 1
        wt += 1
    with pytest.raises(RuntimeError, match='modified by an inplace operation'):
        t_y.backward()
    y.backward()
    assert_same(x.grad, wt - 1)
    assert_same(w.grad, xt)
    (x, xt), (w, wt) = pair(), pair()
    for leaf, weight, library in ((x, w, gt), (xt, wt, torch)):
        y = (leaf + weight).sum()
        with library.no_grad():
            weight.mul_(2)
        y.backward()
    assert_same(w.grad, wt.grad)
    (x, xt), (w, wt) = pair(), pair()
    hidden, t_hidden = x.tanh(), xt.tanh()
    (t_hidden * wt).sum().backward(retain_graph=True)  # the gradient before the change
    y, t_y = (hidden * w).sum(), (t_hidden * wt).sum()
    hidden += 1
    t_hidden += 1
    with pytest.raises(RuntimeError, match='modified by an inplace operation'):
        t_y.backward()  # torch saved hidden for mul
    y.backward()  # GT's tape kept the value mul read
    assert_same(x.grad, xt.grad)


@pytest.mark.parametrize('use, change', [
    (lambda h: h.sum(), lambda h: h.add_(1)),
    (lambda h: (h + 1).sum(), lambda h: h.mul_(2)),
    (lambda h: h.reshape(-1, 1).sum(), lambda h: h.zero_()),
    (lambda h: h[1:].exp().sum(), lambda h: h.__setitem__(0, 7.0)),
    (lambda h: gt.cat([h, h]).mean() if isinstance(h, gt.Tensor) else torch.cat([h, h]).mean(),
     lambda h: h.clamp_(max=1.0)),
], ids=['sum', 'add', 'reshape', 'slice_exp', 'cat'])
def test_changing_a_non_leaf_that_no_rule_saved_is_allowed_as_in_torch(use, change):
    """torch checks only the tensors a rule saved; GT's tape keeps the old value of any
    input changed in place after use, so these give torch's gradients."""
    (x, xt) = pair()
    for leaf in (x, xt):
        hidden = leaf * 2
        used = use(hidden)
        change(hidden)
        (used + hidden.sum()).backward()
    assert_same(x.grad, xt.grad)


def test_in_place_updates_of_non_leaves():
    """`h += x`, `h *= w` and `h[i] = v` on a non-leaf: backward sees the new value."""
    (x, xt), (w, wt) = pair(), pair(DATA + 1)
    for leaf, weight in ((x, w), (xt, wt)):
        hidden = leaf * 2
        hidden += weight
        hidden *= weight
        hidden[0] = weight[1] * 3
        hidden /= 2
        (hidden * hidden).sum().backward()
    assert_same(x.grad, xt.grad)
    assert_same(w.grad, wt.grad)


def test_gradients_stay_lazy_until_read():
    x, _ = pair()
    (x * 2).sum().backward()
    assert isinstance(x.grad, gt.Tensor) and not x.grad.requires_grad
    assert x.grad.dtype == torch.float64 and x.grad.shape == (2, 3)
    (grad,) = fetch([x.grad])
    assert torch.equal(grad, torch.full((2, 3), 2.0, dtype=torch.float64))


def test_materialized_gradients_of_unused_inputs_are_zeros_as_torchs():
    for lib in (gt, torch):
        a, b = lib.ones(2, requires_grad=True), lib.ones(3, requires_grad=True)
        grads = lib.autograd.grad((a * 2).sum(), [a, b], materialize_grads=True)
        assert grads[0].tolist() == [2.0, 2.0] and grads[1].tolist() == [0.0, 0.0, 0.0]
        with pytest.raises(ValueError, match='allow_unused'):
            lib.autograd.grad((a * 2).sum(), [a, b], allow_unused=False,
                              materialize_grads=True)


@pytest.mark.parametrize('library', [gt, torch], ids=['gt', 'torch'])
def test_the_grad_mode_submodule_holds_the_modes(library):
    """`torch.autograd.grad_mode.no_grad()` as model code writes it (GT's attribute was
    its grad-mode state, which has no `no_grad`)."""
    x = library.tensor(DATA, requires_grad=True)
    with library.autograd.grad_mode.no_grad():
        assert not (x * 2).requires_grad
    with library.autograd.grad_mode.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert (x * 2).requires_grad


@pytest.mark.parametrize('library', [gt, torch], ids=['gt', 'torch'])
def test_retain_grad_refuses_what_needs_no_grad_and_keeps_a_leafs_flag(library):
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has "
                                           'requires_grad=False'):
        library.tensor(DATA).retain_grad()
    x = library.tensor(DATA, requires_grad=True)
    x.retain_grad()
    assert not x.retains_grad  # a leaf's .grad is kept anyway


@pytest.mark.parametrize('library', [gt, torch], ids=['gt', 'torch'])
def test_grad_of_no_inputs_raises_and_a_hook_handle_is_a_context(library):
    x = library.tensor(DATA, requires_grad=True)
    with pytest.raises(RuntimeError, match='`inputs` argument to `grad\\(\\)` cannot be empty'):
        library.autograd.grad((x * 2).sum(), [])
    with x.register_hook(lambda grad: grad * 0):
        pass  # removed on leaving
    (x * 2).sum().backward()
    assert x.grad.tolist() == [[2.0] * 3] * 2
