"""torch.autograd's entry points with torch's signatures: backward over several tensors
with grad_tensors, backward(inputs=...) into chosen tensors only, and grad with
is_grads_batched and only_inputs. torch is the oracle."""

import pytest
import torch

import gt


def entry_points(lib):
    x = lib.ones(3, requires_grad=True)
    w = lib.full((3,), 2.0, requires_grad=True)
    results = []
    lib.autograd.backward([(x * 2).sum(), (x * w).sum()])  # summed into the leaves
    results += [x.grad.tolist(), w.grad.tolist()]
    x.grad = w.grad = None
    lib.autograd.backward([x * 2, x * w], grad_tensors=[lib.ones(3), lib.full((3,), 0.5)])
    results += [x.grad.tolist(), w.grad.tolist()]
    x.grad = w.grad = None
    hidden = x * w
    (hidden * 3).sum().backward(inputs=[w, hidden])  # not x; a non-leaf gets .grad too
    results += [x.grad, w.grad.tolist(), hidden.grad.tolist()]
    (x * w).sum().backward(inputs=w)  # accumulates
    results.append(w.grad.tolist())
    jacobian = lib.autograd.grad(x ** 3, x, lib.eye(3), is_grads_batched=True,
                                 only_inputs=True)
    results.append(jacobian[0].tolist())
    return results


def test_entry_points_give_torchs_gradients():
    assert entry_points(gt) == entry_points(torch)


def test_backward_with_empty_inputs_is_refused_as_in_torch():
    for lib in (torch, gt):
        x = lib.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError, match=r'`inputs` argument to `backward\(\)` cannot'):
            (x * 2).sum().backward(inputs=[])


ITERABLES = {
    'parameters()': lambda model: model.parameters(),
    'a generator': lambda model: (p for p in [model.weight, model.bias]),
    'dict values': lambda model: dict(model.named_parameters()).values(),
}


@pytest.mark.parametrize('kind', ITERABLES, ids=str)
def test_any_iterable_of_tensors_is_taken_as_torch_takes_it(kind):
    """`grad(loss, model.parameters())` (MAML, gradient penalties) raised, and
    `loss.backward(inputs=model.parameters())` did nothing, in silence."""
    results = []
    for lib in (gt, torch):
        lib.manual_seed(0)
        model = lib.nn.Linear(3, 1)
        x = lib.randn(4, 3)
        found = lib.autograd.grad(model(x).pow(2).mean(), ITERABLES[kind](model),
                                  grad_outputs=iter([lib.tensor(2.0)]))
        model(x).pow(2).mean().backward(inputs=ITERABLES[kind](model))
        results.append([torch.tensor(value.tolist())
                        for value in (*found, model.weight.grad, model.bias.grad)])
    torch.testing.assert_close(results[0], results[1])


def test_one_grad_output_for_two_outputs_is_refused_as_in_torch():
    for lib in (gt, torch):
        x = lib.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError, match='2'):
            lib.autograd.grad([x.sum(), x.mean()], [x], grad_outputs=lib.tensor(1.0))
