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
