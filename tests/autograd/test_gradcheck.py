"""gt.autograd.gradcheck and gradgradcheck against torch's on the same functions (a
right one, a custom Function with a right and with a wrong backward, a double
backward), and torch.autograd's submodule paths under gt.autograd."""

import warnings

import pytest
import torch
from torch.autograd.gradcheck import GradcheckError

import gt


def functions(lib):
    class Cube(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 3 * x ** 2

    class Wrong(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 3
    return Cube, Wrong


def checks(lib):
    Cube, Wrong = functions(lib)
    lib.manual_seed(0)
    x = lib.randn(3, 2, dtype=torch.float64, requires_grad=True)
    y = lib.randn(2, dtype=torch.float64, requires_grad=True)
    seen = [lib.autograd.gradcheck(lambda a, b: (a * b.exp(), a.sum() * b), (x, y)),
            lib.autograd.gradcheck(Cube.apply, (x,)),
            lib.autograd.gradgradcheck(Cube.apply, (x,)),
            lib.autograd.gradgradcheck(lambda a: (a.sin() * a).sum(), (x,)),
            lib.autograd.gradcheck(Wrong.apply, (x,), raise_exception=False)]
    with pytest.raises(GradcheckError) as error:
        lib.autograd.gradcheck(Wrong.apply, (x,))
    seen.append(str(error.value).splitlines()[0])
    with pytest.raises(ValueError) as error:
        lib.autograd.gradcheck(lambda a: a * 2, (x.detach(),))
    seen.append(str(error.value))
    return seen


def test_checks_are_torchs():
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        assert checks(gt) == checks(torch)


def test_torchs_autograd_submodule_paths_import():
    from gt.autograd.function import once_differentiable
    from gt.autograd.functional import jacobian
    from gt.autograd.grad_mode import no_grad
    from gt.autograd.gradcheck import GradcheckError as Error

    assert callable(once_differentiable) and callable(jacobian) and no_grad is gt.no_grad
    assert Error is GradcheckError and gt.autograd.gradcheck.__name__ == 'gradcheck'
    import gt.autograd.forward_ad as forward_ad
    with pytest.raises(AttributeError, match='GT has no forward-mode AD'):
        forward_ad.dual_level  # noqa: B018
    import gt.autograd.graph as graph
    with pytest.raises(AttributeError, match='saved-tensor hooks'):
        graph.saved_tensors_hooks  # noqa: B018
    with pytest.warns(UserWarning, match='nothing is moved'), graph.save_on_cpu():
        assert (gt.ones(2) * 2).tolist() == [2.0, 2.0]
