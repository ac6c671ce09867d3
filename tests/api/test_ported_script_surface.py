"""Names an audit of ported scripts found missing, each against torch: Sequential's and
ModuleList's list operations, tensor size properties, Module lookups and `type`,
grouped-query attention, SyncBatchNorm, `asarray`, memory formats and the
determinism and default-device boilerplate."""

import pytest
import torch
from gt_test_support import assert_raises_as_torch

import gt


def edit_lists(lib):
    """Every list operation of ModuleList and Sequential; what each leaves, printed."""
    nn, seen = lib.nn, []
    modules = nn.ModuleList([nn.ReLU()])
    modules.extend([nn.Tanh(), nn.Sigmoid()])
    modules.insert(1, nn.GELU())
    popped = modules.pop(0)
    del modules[0]
    modules[0] = nn.ELU()
    modules += [nn.ReLU()]
    seen += [type(popped).__name__, repr(modules), repr(modules[1:]), len(modules)]
    chain = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    seen.append(repr(chain.insert(1, nn.Tanh()).append(nn.Sigmoid()).extend([nn.ReLU()])))
    chain.pop(1)
    del chain[0]
    seen += [repr(chain), repr(chain + nn.Sequential(nn.ELU()))]
    for bad in (lambda: chain.insert(10, nn.ReLU()), lambda: modules[9]):
        with pytest.raises(IndexError):
            bad()
    return seen


def test_module_lists_edit_as_torchs():
    assert edit_lists(gt) == edit_lists(torch)


def test_tensor_sizes_and_module_lookups_as_torchs():
    answers = []
    for lib in (torch, gt):
        x = lib.ones(3, 2, requires_grad=True)
        y = x * 2
        y.retain_grad()
        model = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.BatchNorm1d(2))
        model.register_module('extra', lib.nn.ReLU())
        errors = []
        for lookup in (lambda: model.get_buffer('0.nope'), lambda: model.get_buffer('1.weight'),
                       lambda: model.get_parameter('1.running_mean')):
            with pytest.raises(AttributeError) as caught:
                lookup()
            errors.append(str(caught.value))
        model.type(lib.float64)
        answers.append([x.nbytes, x.itemsize, y.retains_grad, (x * 3).retains_grad,
                        x.retains_grad, tuple(model.get_parameter('0.weight').shape),
                        tuple(model.get_buffer('1.running_mean').shape),
                        [name for name, _ in model.named_children()], errors,
                        [t.dtype for t in [*model.parameters(), *model.buffers()]]])
    assert answers[1] == answers[0]
    assert not gt.ones(1).is_cpu  # its value is on a worker (torch's CUDA tensors say False)


@pytest.mark.parametrize('causal', [False, True])
def test_grouped_query_attention_as_torchs(causal):
    generator = torch.Generator().manual_seed(0)
    data = [torch.randn(2, 4, 3, 5, generator=generator),
            torch.randn(2, 2, 3, 5, generator=generator),
            torch.randn(2, 2, 3, 5, generator=generator)]
    theirs = [d.clone().requires_grad_() for d in data]
    mine = [gt.tensor(d, requires_grad=True) for d in data]
    expected = torch.nn.functional.scaled_dot_product_attention(*theirs, is_causal=causal,
                                                                 enable_gqa=True)
    got = gt.nn.functional.scaled_dot_product_attention(*mine, is_causal=causal,
                                                        enable_gqa=True)
    expected.pow(2).sum().backward()
    got.pow(2).sum().backward()
    torch.testing.assert_close(got.data, expected.detach())
    for m, t in zip(mine, theirs):
        torch.testing.assert_close(m.grad.data, t.grad)


def test_sync_batch_norm_converts_and_normalizes_as_torchs_batch_norm():
    theirs = torch.nn.Sequential(torch.nn.Conv2d(2, 2, 1), torch.nn.BatchNorm2d(2))
    mine = gt.nn.Sequential(gt.nn.Conv2d(2, 2, 1), gt.nn.BatchNorm2d(2))
    mine.load_state_dict(theirs.state_dict())
    norm = mine[1]
    converted = gt.nn.SyncBatchNorm.convert_sync_batchnorm(mine)
    assert repr(converted) == repr(torch.nn.SyncBatchNorm.convert_sync_batchnorm(
        torch.nn.Sequential(torch.nn.Conv2d(2, 2, 1), torch.nn.BatchNorm2d(2))))
    assert converted[1].weight is norm.weight  # the same parameters, as torch converts
    x = torch.randn(4, 2, 3, 3)
    torch.testing.assert_close(converted(gt.tensor(x)).data, theirs(x).detach())
    torch.testing.assert_close(converted[1].running_mean.data, theirs[1].running_mean)


def test_asarray_memory_formats_and_boilerplate_settings():
    x = gt.asarray([1, 2])
    assert x.tolist() == [1, 2] and x.dtype == torch.int64
    assert gt.asarray(x) is x and gt.asarray(x, copy=True) is not x
    assert gt.asarray(x, dtype=gt.float32).dtype == torch.float32
    assert gt.asarray([1.0], requires_grad=True).requires_grad
    images = gt.ones(1, 2, 3, 3)
    conv = gt.nn.Conv2d(2, 2, 3).to(memory_format=gt.channels_last)
    assert conv(images.contiguous(memory_format=gt.channels_last)).shape == (1, 2, 1, 1)
    assert gt.contiguous_format is torch.contiguous_format
    gt.use_deterministic_algorithms(True, warn_only=True)
    assert gt.are_deterministic_algorithms_enabled()
    assert gt.is_deterministic_algorithms_warn_only_enabled()
    gt.use_deterministic_algorithms(False)
    assert not gt.are_deterministic_algorithms_enabled()
    gt.set_default_device('cuda')  # GT places tensors itself
    assert not gt.is_autocast_enabled('cpu')
    assert (gt.ones(2) + 1).tolist() == [2.0, 2.0]


def test_rrelu_draws_and_differentiates_as_torchs():
    results = []
    for lib in (torch, gt):
        lib.manual_seed(0)
        module = lib.nn.RReLU(0.1, 0.3)
        x = lib.randn(16, requires_grad=True)
        y = module(x)
        (y * lib.arange(16.0)).sum().backward()
        module.eval()
        results.append([repr(module), y.tolist(), x.grad.tolist(),
                        module(lib.tensor([-1.0, 2.0])).tolist()])
    assert results[1] == results[0]


def lazy_models(lib):
    """Lazy layers before and after their first call, seeded: reprs, values, keys."""
    lib.manual_seed(0)
    linear = lib.nn.LazyLinear(3)
    conv = lib.nn.LazyConv2d(4, 3, padding=1, bias=False)
    seen = [repr(linear), repr(conv)]
    x, images = lib.randn(2, 5), lib.randn(1, 2, 5, 5)
    y, z = linear(x), conv(images)
    seen += [repr(linear), repr(conv), type(conv).__name__, y.tolist(), z.sum().item(),
             list(linear.state_dict()), list(conv.state_dict())]
    return seen


def test_lazy_layers_become_torchs_layers_with_torchs_draws():
    got, expected = lazy_models(gt), lazy_models(torch)
    assert got[:5] == expected[:5] and got[7:] == expected[7:]
    torch.testing.assert_close(torch.tensor(got[5]), torch.tensor(expected[5]))
    torch.testing.assert_close(got[6], expected[6], rtol=1e-5, atol=1e-5)


LAZY_MORE = [
    ('LazyConvTranspose1d', (3, 2), {'stride': 2}, (2, 4, 5)),
    ('LazyConvTranspose2d', (3, 3), {'output_padding': 1, 'stride': 2}, (1, 2, 4, 4)),
    ('LazyConvTranspose3d', (2, 2), {'bias': False}, (1, 2, 3, 3, 3)),
    ('LazyBatchNorm1d', (), {}, (4, 3)), ('LazyBatchNorm2d', (), {'momentum': 0.5}, (2, 3, 4, 4)),
    ('LazyBatchNorm3d', (), {'affine': False}, (2, 3, 2, 2, 2)),
    ('LazyInstanceNorm1d', (), {}, (2, 3, 5)),
    ('LazyInstanceNorm2d', (), {'affine': True, 'track_running_stats': True}, (2, 3, 4, 4)),
    ('LazyInstanceNorm3d', (), {}, (1, 3, 2, 2, 2)),
]


def lazy_steps(lib, name, args, kwargs, shape):
    """A lazy layer's first calls and a training step, seeded: reprs, values, state."""
    lib.manual_seed(0)
    layer = getattr(lib.nn, name)(*args, **kwargs)
    before = repr(layer)
    x = lib.randn(*shape)
    out = layer(x)
    parameters = list(layer.parameters())
    if parameters:
        optimizer = lib.optim.SGD(parameters, lr=0.1)
        out.pow(2).mean().backward()
        optimizer.step()
    out = layer(x * 2)
    state = {key: value.tolist() for key, value in layer.state_dict().items()}
    return before, repr(layer), type(layer).__name__, out.tolist(), state


@pytest.mark.parametrize('case', LAZY_MORE, ids=[case[0] for case in LAZY_MORE])
def test_lazy_transposed_convolutions_and_norms_are_torchs(case):
    got, expected = lazy_steps(gt, *case), lazy_steps(torch, *case)
    assert got[:3] == expected[:3]
    torch.testing.assert_close(torch.tensor(got[3]), torch.tensor(expected[3]),
                               rtol=1e-5, atol=1e-5)
    assert list(got[4]) == list(expected[4])
    for key in expected[4]:
        torch.testing.assert_close(torch.tensor(got[4][key]), torch.tensor(expected[4][key]),
                                   rtol=1e-5, atol=1e-5)


def test_an_optimizer_made_before_a_lazy_layers_first_call_trains_it():
    model = gt.nn.Sequential(gt.nn.LazyLinear(1))
    optimizer = gt.optim.SGD(model.parameters(), lr=0.1)  # torch's would hold placeholders
    x, y = gt.randn(16, 4), gt.randn(16, 1)
    losses = []
    for _ in range(20):
        loss = (model(x) - y).pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    assert model[0].weight.shape == (1, 4) and losses[-1] < losses[0] * 0.9
    wide = gt.nn.LazyLinear(2, dtype=gt.float64, device='cuda')
    wide(gt.ones(3, 5, dtype=gt.float64))
    assert wide.weight.dtype == wide.bias.dtype == torch.float64


@pytest.mark.parametrize('mistake', [
    lambda lib: lib.nn.Sequential([lib.nn.Linear(1, 1)]),  # a list, not *list
    lambda lib: lib.nn.ModuleList([3]),
    lambda lib: lib.cat(lib.ones(2), lib.ones(2)),  # the list forgotten
], ids=['Sequential of a list', 'ModuleList of an int', 'cat of two tensors'])
def test_tutorial_slips_raise_torchs_type_error_at_the_line(mistake):
    assert_raises_as_torch(TypeError, mistake)


def test_optimizers_print_torchs_defaults_and_numpy_takes_force():
    for name in ('SGD', 'Adam', 'RMSprop', 'Adagrad', 'ASGD'):
        mine = getattr(gt.optim, name)([gt.nn.Parameter(gt.ones(1))], lr=0.1)
        theirs = getattr(torch.optim, name)([torch.nn.Parameter(torch.ones(1))], lr=0.1)
        assert repr(mine) == repr(theirs)  # 'momentum: 0', not 0.0
    assert gt.ones(2).numpy(force=True).tolist() == torch.ones(2).numpy(force=True).tolist()


LAZY_LOADS = [('LazyLinear', (2,), (4, 3)), ('LazyConv2d', (4, 3), (1, 2, 5, 5)),
              ('LazyConvTranspose1d', (3, 2), (2, 4, 5)), ('LazyBatchNorm1d', (), (4, 3))]


@pytest.mark.parametrize('case', LAZY_LOADS, ids=[case[0] for case in LAZY_LOADS])
def test_a_lazy_layer_takes_its_size_from_a_checkpoint_its_dtype_from_a_cast_and_keeps_hooks(
        case):
    """Loading before the first call sized it in torch and failed here with a size
    mismatch; `.double()` before it left GT's weights float32; and its hooks were lost
    when it became the real layer (the pre-hook ran once, the forward hook never)."""
    name, args, shape = case
    torch.manual_seed(0)
    saved = getattr(torch.nn, name.replace('Lazy', ''))(shape[1], *args).state_dict()
    seen = {}
    for lib in (gt, torch):
        calls = seen[lib] = []
        loaded = getattr(lib.nn, name)(*args)
        loaded.load_state_dict(saved)
        cast = getattr(lib.nn, name)(*args).double()
        cast.register_forward_pre_hook(lambda module, inputs: calls.append('pre'))
        cast.register_forward_hook(lambda module, inputs, output: calls.append('post'))
        for _ in range(2):
            cast(lib.randn(*shape, dtype=lib.float64))
        assert {key: value.tolist() for key, value in loaded.state_dict().items()} == \
            {key: value.tolist() for key, value in saved.items()}
        assert {p.dtype for p in cast.parameters()} <= {torch.float64}
    assert seen[gt] == seen[torch] == ['pre', 'post'] * 2
