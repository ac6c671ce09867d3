"""Names older or library-style scripts reach for, from the vision and generative-model
audits: torch's deprecated init and clipping names (same numbers, torch's FutureWarning),
`nn.modules.utils._pair`, `torch.compiler`, `torch.vmap`, `torch.version`, the amp
decorators of custom Functions, and a tensor's `layout` and `is_pinned()`. Each against
torch run the same way."""

import pytest
import torch

import gt

OLD_INITS = ['uniform', 'normal', 'constant', 'xavier_uniform', 'xavier_normal',
             'kaiming_uniform', 'kaiming_normal', 'orthogonal', 'eye']


@pytest.mark.parametrize('name', OLD_INITS)
def test_deprecated_init_names_warn_and_draw_as_torchs(name):
    values = []
    for lib in (gt, torch):
        lib.manual_seed(4)
        weight = lib.empty(3, 5)
        arguments = (0.5,) if name == 'constant' else ()
        with pytest.warns(FutureWarning, match=f'nn.init.{name}` is now deprecated'):
            getattr(lib.nn.init, name)(weight, *arguments)
        values.append(torch.tensor(weight.tolist()))
    torch.testing.assert_close(values[0], values[1])


def test_deprecated_clip_grad_norm_clips_as_torchs():
    norms, grads = [], []
    for lib in (gt, torch):
        weight = lib.nn.Parameter(lib.tensor([3.0, 4.0]))
        (weight * weight).sum().backward()
        with pytest.warns(FutureWarning, match='clip_grad_norm` is now deprecated'):
            norms.append(float(lib.nn.utils.clip_grad_norm([weight], 1.0)))
        grads.append(weight.grad.tolist())
    assert norms[0] == pytest.approx(norms[1]) and grads[0] == pytest.approx(grads[1])


def test_helpers_and_flags():
    from gt.nn.modules.utils import _pair, _triple

    assert _pair(3) == (3, 3) and _triple((1, 2, 3)) == (1, 2, 3)
    assert gt.version.cuda == torch.version.cuda and gt.version.__version__ == torch.__version__
    assert gt.compiler.is_compiling() is torch.compiler.is_compiling() is False
    x = gt.ones(2)
    assert x.layout == torch.strided and x.is_pinned() is False

    @gt.compiler.disable(recursive=False)
    def double(t):
        return t * 2

    assert gt.compiler.disable(double) is double and double(x).tolist() == [2.0, 2.0]
    assert gt.vmap(lambda row: row.sum())(gt.ones(3, 2)).tolist() == [2.0, 2.0, 2.0]


def test_a_custom_function_with_the_amp_decorators_runs_as_outside_autocast():
    class Scale(gt.autograd.Function):
        @staticmethod
        @gt.amp.custom_fwd(device_type='cuda', cast_inputs=torch.float16)
        def forward(ctx, x):
            return x * 3

        @staticmethod
        @gt.cuda.amp.custom_bwd
        def backward(ctx, grad):
            return grad * 3

    x = gt.ones(2, requires_grad=True)
    y = Scale.apply(x)
    y.sum().backward()
    assert y.dtype == torch.float32 and x.grad.tolist() == [3.0, 3.0]
    assert gt.amp.is_autocast_available('cuda') is False
