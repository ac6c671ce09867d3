"""Module hooks against torch: forward pre-hooks and forward hooks that read or replace
arguments and outputs, full backward hooks that read or replace the input's gradient,
removal through handles, and get_submodule."""

import pytest
import torch

import gt


def run(lib):
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(4, 3), lib.nn.ReLU(), lib.nn.Linear(3, 2))
    seen, grads, order = {}, [], []
    handle = model[0].register_forward_hook(lambda m, a, o: seen.__setitem__('act', o.tolist()))
    model[2].register_forward_pre_hook(lambda m, a: (a[0] * 2,))
    model[2].register_forward_pre_hook(lambda m, a: order.append('first'), prepend=True)
    model[2].register_forward_hook(lambda m, a, kw, o: o + 1, with_kwargs=True)
    model[2].register_full_backward_hook(
        lambda m, gi, go: grads.append((gi[0].tolist(), go[0].tolist())) or (gi[0] * 3,))
    model[0].register_full_backward_hook(
        lambda m, gi, go: grads.append((gi, go[0].tolist())))  # its input needs no grad
    x = lib.randn(2, 4)
    out = model(x)
    out.sum().backward()
    handle.remove()
    again = model(x)
    return out.tolist(), again.tolist(), seen['act'], grads, model[0].weight.grad.tolist(), order


@pytest.mark.filterwarnings('ignore:Full backward hook is firing')
def test_hooks_see_and_replace_what_torch_s_do():
    assert run(gt) == run(torch)  # the same weights and ops: the same bits


def several_inputs(lib):
    """A module called with several tensors that require grad: its full backward hooks
    see all their gradients at once and may replace them (attention's q, k, v too)."""
    class Three(lib.nn.Module):
        def forward(self, a, n, b, c):
            return (a * b + c * n).sum(-1)

    seen = []
    module = Three()
    module.register_full_backward_hook(
        lambda m, gi, go: seen.append([None if g is None else g.tolist() for g in gi]))
    module.register_full_backward_hook(lambda m, gi, go: (gi[0] * 2, None, gi[2], None))
    a = lib.tensor([[1.0, 2.0]], requires_grad=True)
    b = lib.tensor([[3.0, 4.0]], requires_grad=True)
    module(a, 3, b, lib.tensor([[5.0, 6.0]])).sum().backward()
    lib.manual_seed(0)
    attention = lib.nn.MultiheadAttention(4, 2)
    attention.register_full_backward_hook(
        lambda m, gi, go: seen.append([tuple(g.shape) for g in gi]))
    x = lib.randn(3, 1, 4, requires_grad=True)
    attention(x, x, x)[0].sum().backward()
    return seen, a.grad.tolist(), b.grad.tolist(), round(x.grad.sum().item(), 5)


def test_several_inputs_that_require_grad_are_hooked_as_torchs():
    assert several_inputs(gt) == several_inputs(torch)


def test_get_submodule_walks_dotted_names_as_torch():
    model = gt.nn.Sequential(gt.nn.Sequential(gt.nn.Linear(2, 2)))
    assert model.get_submodule('0.0') is model[0][0] and model.get_submodule('') is model
    with pytest.raises(AttributeError, match='has no attribute `9`'):
        model.get_submodule('0.9')


def test_full_backward_pre_hook_replaces_the_output_gradient_as_torchs():
    """The pre-hook sees the output's gradient first and its replacement is what the
    module's backward (and its full backward hook) get."""
    results = []
    for lib in (gt, torch):
        lib.manual_seed(0)
        layer = lib.nn.Linear(3, 2)
        seen = []
        layer.register_full_backward_pre_hook(
            lambda module, grad_output: (seen.append(grad_output[0].tolist()),
                                         (grad_output[0] * 2,))[1])
        layer.register_full_backward_hook(
            lambda module, grad_input, grad_output: seen.append(grad_output[0].tolist()))
        x = lib.ones(2, 3, requires_grad=True)
        (layer(x) * lib.tensor([1.0, 3.0])).sum().backward()
        results.append([seen, layer.weight.grad.tolist(), x.grad.tolist()])
    assert results[0] == results[1]


def test_hook_registries_have_torchs_layout():
    """Scripts read the registries (the pruning tutorial's
    `for hook in module._forward_pre_hooks.values()`): ordered dicts by handle id, the
    with_kwargs flags beside them, prepend first, handles removing themselves."""
    layouts = []
    for lib in (gt, torch):
        layer = lib.nn.Linear(2, 2)
        first = layer.register_forward_pre_hook(lambda m, args: None)
        second = layer.register_forward_pre_hook(lambda m, args, kwargs: None, prepend=True,
                                                 with_kwargs=True)
        with layer.register_forward_hook(lambda m, args, out: None, always_call=True):
            during = len(layer._forward_hooks)
        layout = [type(layer._forward_pre_hooks).__name__,
                  list(layer._forward_pre_hooks) == [second.id, first.id],
                  dict(layer._forward_pre_hooks_with_kwargs) == {second.id: True},
                  during, len(layer._forward_hooks), dict(layer._forward_hooks_always_called)]
        first.remove()
        layout.append(list(layer._forward_pre_hooks) == [second.id])
        layouts.append(layout)
    assert layouts[0] == layouts[1]


def test_nested_backward_pre_hooks_run_outer_first_and_registries_start_empty():
    results = []
    for lib in (gt, torch):
        inner = lib.nn.Linear(2, 2)
        outer = lib.nn.Sequential(inner)
        log = []
        outer.register_full_backward_pre_hook(lambda m, grad_output: (grad_output[0] * 10,))
        inner.register_full_backward_pre_hook(
            lambda m, grad_output: log.append(grad_output[0].sum().item()))
        inner.register_full_backward_hook(
            lambda m, grad_input, grad_output: log.append(grad_output[0].sum().item()))
        outer(lib.ones(1, 2, requires_grad=True)).sum().backward()
        fresh = lib.nn.Linear(2, 2)
        fresh._forward_hooks.clear()
        results.append([log, len(fresh._forward_pre_hooks), type(fresh._backward_hooks).__name__,
                        len(fresh._state_dict_hooks)])
    assert results[0] == results[1]


@pytest.mark.parametrize('kind', ['pre-hook', 'hook'])
def test_a_hook_on_the_modules_output_runs_before_the_modules_backward_hooks(kind):
    """torch hands the caller its BackwardHook's outputs, so a tensor hook the caller
    puts there changes the gradient the module's hooks see (GT's ran after them)."""
    results = []
    for lib in (gt, torch):
        layer = lib.nn.Linear(2, 2, bias=False)
        with lib.no_grad():
            layer.weight.fill_(1.0)
        seen = []
        if kind == 'pre-hook':
            layer.register_full_backward_pre_hook(lambda m, go: (go[0] * 3,))
        else:
            layer.register_full_backward_hook(lambda m, gi, go: seen.append(go[0].tolist()))
        x = lib.ones(1, 2, requires_grad=True)
        y = layer(x)
        y.register_hook(lambda g: g + 100)
        (y * lib.tensor([[0.0, 1.0]])).sum().backward()
        results.append((x.grad.tolist(), seen))
    assert results[0] == results[1]


def hooked_arguments(lib):
    """grad_input as torch gives it: an entry per argument, zeros for a tensor that needs
    no grad, None for a number; a replacement of that length changes the gradient."""
    class Scaled(lib.nn.Module):
        def forward(self, a, n, b):
            return a * b * n + a

    seen = []
    module = Scaled()
    module.register_full_backward_hook(lambda m, gi, go: seen.append(
        [None if g is None else g.tolist() for g in gi]))
    module.register_full_backward_hook(lambda m, gi, go: (None, None, gi[2] * 10))
    b = lib.tensor([3.0, 4.0], requires_grad=True)
    module(lib.tensor([1.0, 2.0]), 2, b).sum().backward()
    module.register_full_backward_hook(lambda m, gi, go: (gi[2],))
    with pytest.raises(RuntimeError) as error:
        module(lib.tensor([1.0, 2.0]), 2, b).sum().backward()
    return seen, b.grad.tolist(), str(error.value)


def test_grad_input_has_an_entry_per_argument_as_torchs():
    assert hooked_arguments(gt) == hooked_arguments(torch)


def test_a_backward_hook_without_input_gradients_warns_as_torchs():
    layer = gt.nn.Linear(2, 2)
    seen = []
    layer.register_full_backward_hook(lambda m, gi, go: seen.append(gi))
    with pytest.warns(UserWarning, match='no inputs require gradients') as caught:
        layer(gt.ones(2)).sum().backward()
    assert caught[0].filename == __file__
    assert seen == [(None,)]


def hooked_everywhere(lib):
    """torch.nn.modules.module's hooks on every module: run before each module's own,
    forward and full backward, replacing outputs, and gone once removed."""
    import importlib

    module_module = importlib.import_module(f'{lib.__name__}.nn.modules.module')
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(4, 3), lib.nn.ReLU(), lib.nn.Linear(3, 2))
    seen = []
    handles = [
        module_module.register_module_forward_pre_hook(
            lambda m, a: seen.append(('pre', type(m).__name__))),
        module_module.register_module_forward_hook(
            lambda m, a, o: seen.append(('forward', type(m).__name__, tuple(o.shape)))),
        module_module.register_module_full_backward_hook(
            lambda m, gi, go: seen.append(('backward', type(m).__name__, len(gi)))),
        module_module.register_module_full_backward_pre_hook(
            lambda m, go: seen.append(('before backward', type(m).__name__))),
        module_module.register_module_forward_hook(
            lambda m, a, kw, o: o * 2 if isinstance(m, lib.nn.ReLU) else None,
            with_kwargs=True)]
    try:
        model[0].register_forward_hook(lambda m, a, o: seen.append(('own', type(m).__name__)))
        x = lib.randn(5, 4, requires_grad=True)
        out = model(x)
        out.sum().backward()
    finally:
        for handle in handles:
            handle.remove()
    after = len(seen)
    model(x)
    return seen, seen[after:], out.tolist(), x.grad.tolist()


def test_hooks_on_every_module_run_as_torchs():
    assert hooked_everywhere(gt) == hooked_everywhere(torch)


@pytest.mark.parametrize('library', [gt, torch], ids=['gt', 'torch'])
def test_always_call_hooks_run_when_forward_raises(library):
    """GT kept the flag but ran no hook when forward raised (a profiling hook that closes
    what its pre-hook opened must run)."""
    seen = []

    class Failing(library.nn.Module):
        def forward(self, x):
            raise ValueError('bad batch')

    module = Failing()
    handles = [
        library.nn.modules.module.register_module_forward_hook(
            lambda m, args, out: seen.append(('global', out)), always_call=True),
        module.register_forward_hook(lambda m, args, out: seen.append(('module', out)),
                                     always_call=True),
        module.register_forward_hook(lambda m, args, out: seen.append(('not always', out)))]
    try:
        with pytest.raises(ValueError, match='bad batch'):
            module(library.ones(2))
    finally:
        for handle in handles:
            handle.remove()
    assert seen == [('global', None), ('module', None)]
