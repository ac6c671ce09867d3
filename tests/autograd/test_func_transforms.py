"""gt.func's transforms against torch.func: grad (argnums, has_aux, pytrees, nested),
grad_and_value, vjp, jvp, jacrev, jacfwd, hessian, vmap (in_dims, out_dims, nested,
over grad for per-sample gradients) and stack_module_state for ensembling, with
torch's errors."""

import pytest
import torch
import torch.func as torch_func

import gt
from gt import func as gt_func


def flat(value):
    if isinstance(value, dict):
        return [item for key in sorted(value) for item in flat(value[key])]
    if isinstance(value, (tuple, list)):
        return [item for part in value for item in flat(part)]
    return [value]


def f(a):
    return (a.sin() * a).sum()


def per_sample(F, lib):
    lib.manual_seed(0)
    model = lib.nn.Linear(3, 2)
    params = {name: value.detach() for name, value in model.named_parameters()}

    def loss(p, x, y):
        return ((F.functional_call(model, p, (x.unsqueeze(0),)) - y) ** 2).mean()
    return F.vmap(F.grad(loss), in_dims=(None, 0, 0))(params, lib.randn(5, 3),
                                                      lib.randn(5, 2))


def ensemble(F, lib):
    lib.manual_seed(0)
    models = [lib.nn.Linear(3, 2) for _ in range(4)]
    params, buffers = F.stack_module_state(models)

    def run(p, b, x):
        return F.functional_call(models[0], (p, b), (x,))
    return params, F.vmap(run, in_dims=(0, 0, None))(params, buffers, lib.randn(5, 3))


CASES = {
    'grad': lambda F, lib, x, y: F.grad(f)(x),
    'grad-of-grad': lambda F, lib, x, y: F.grad(lambda a: F.grad(f)(a).sum())(x),
    'grad-of-grad-scalar': lambda F, lib, x, y: F.grad(F.grad(lambda a: a ** 3))(x[0]),
    'grad-argnums': lambda F, lib, x, y: F.grad(lambda a, b: (a * b.exp()).sum(),
                                               argnums=(0, 1))(x, y),
    'grad-has-aux': lambda F, lib, x, y: F.grad(lambda a: ((a ** 2).sum(), a.mean()),
                                               has_aux=True)(x),
    'grad-of-a-dict': lambda F, lib, x, y: F.grad(lambda p: (p['w'] * p['b']).sum())(
        {'w': x, 'b': y}),
    'grad_and_value': lambda F, lib, x, y: F.grad_and_value(f)(x),
    'vjp': lambda F, lib, x, y: (lambda out, fn: (out, fn(lib.ones(3))))(
        *F.vjp(lambda a: a.exp() * 2, x)),
    'jvp': lambda F, lib, x, y: F.jvp(lambda a: a.exp() * a, (x,), (lib.ones(3),)),
    'jacrev': lambda F, lib, x, y: F.jacrev(lambda a: a.exp() * a.sum())(x),
    'jacrev-two-by-two': lambda F, lib, x, y: F.jacrev(lambda a, b: (a * b, a.sum()),
                                                       argnums=(0, 1))(x, y),
    'jacfwd': lambda F, lib, x, y: F.jacfwd(lambda a: a.tanh())(x),
    'hessian': lambda F, lib, x, y: F.hessian(f)(x),
    'vmap': lambda F, lib, x, y: F.vmap(lambda a: a.sum() * a)(lib.stack([x, y, x * y])),
    'vmap-in-dims': lambda F, lib, x, y: F.vmap(lambda a, b: a @ b, in_dims=(0, None))(
        lib.stack([x, y]), y),
    'vmap-out-dims': lambda F, lib, x, y: F.vmap(lambda a: a * 2, in_dims=1, out_dims=1)(
        lib.stack([x, y])),
    'vmap-nested': lambda F, lib, x, y: F.vmap(F.vmap(lambda a: a.exp().sum()))(
        lib.stack([lib.stack([x, y]), lib.stack([y, x])])),
    'per-sample-gradients': per_sample,
    'ensembling': ensemble,
}


@pytest.mark.parametrize('case', CASES)
def test_transforms_give_torchs_results(case):
    torch.manual_seed(0)
    x, y = torch.randn(3), torch.randn(3)
    if case in ('per-sample-gradients', 'ensembling'):
        mine, theirs = CASES[case](gt_func, gt), CASES[case](torch_func, torch)
    else:
        mine = CASES[case](gt_func, gt, gt.tensor(x), gt.tensor(y))
        theirs = CASES[case](torch_func, torch, x, y)
    got, want = flat(mine), flat(theirs)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert a.requires_grad == b.requires_grad
        torch.testing.assert_close(a.data, b.detach(), rtol=1e-5, atol=1e-6)


ERRORS = {
    'grad-of-a-vector': lambda F, lib: F.grad(lambda a: a * 2)(lib.ones(3)),
    'vmap-sizes-differ': lambda F, lib: F.vmap(lambda a, b: a + b)(lib.ones(2, 3),
                                                                  lib.ones(3, 3)),
    'vmap-in-dims-none': lambda F, lib: F.vmap(lambda a: a, in_dims=None)(lib.ones(3)),
    'vmap-nothing-mapped': lambda F, lib: F.vmap(lambda a: a, in_dims=(None,))(lib.ones(3)),
}


@pytest.mark.parametrize('case', ERRORS)
def test_errors_are_torchs(case):
    with pytest.raises(Exception) as theirs:
        ERRORS[case](torch_func, torch)
    with pytest.raises(type(theirs.value)) as mine:
        ERRORS[case](gt_func, gt)
    assert str(mine.value) == str(theirs.value)


CLOSED_OVER = {
    'grad': lambda lib, w, x: lib.func.grad(lambda xi: (w * xi).sin().sum())(x),
    'grad_and_value': lambda lib, w, x: lib.func.grad_and_value(
        lambda xi: (w * xi).sin().sum())(x)[1],
    'jacrev': lambda lib, w, x: lib.func.jacrev(lambda xi: (w * xi).sin())(x),
    'vjp': lambda lib, w, x: lib.func.vjp(lambda xi: (w * xi).sin(), x)[1](lib.ones(2))[0],
    'jvp': lambda lib, w, x: lib.func.jvp(lambda xi: (w * xi).sin(), (x,), (lib.ones(2),))[1],
    'hessian': lambda lib, w, x: lib.func.hessian(lambda xi: (w * xi).sin().sum())(x),
    'vmap of grad': lambda lib, w, x: lib.func.vmap(
        lib.func.grad(lambda xi: (w[0] * xi).sin()))(x),
}


@pytest.mark.parametrize('case', CLOSED_OVER, ids=str)
def test_results_differentiate_through_the_tensors_the_function_closes_over(case):
    """torch's transforms keep the outer graph: a PINN's residual from
    `vmap(hessian(lambda x: net(x)))` trains the net. GT's results came back detached
    when only a captured tensor required grad: no gradient reached it, in silence."""
    results = []
    for lib in (gt, torch):
        w = lib.tensor([0.5, 2.0], requires_grad=True)
        result = CLOSED_OVER[case](lib, w, lib.tensor([1.0, 3.0]))
        assert result.requires_grad
        result.pow(2).sum().backward()
        results.append(torch.tensor(w.grad.tolist()))
    torch.testing.assert_close(results[0], results[1])


def test_a_transform_of_a_function_of_its_inputs_alone_stays_detached():
    x = gt.tensor([1.0, 3.0])
    assert not gt.func.grad(lambda xi: (xi * xi).sum())(x).requires_grad
