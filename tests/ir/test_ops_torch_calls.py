"""The fallback rows against torch: 'torch_call', 'torch_sizes', 'torch_vjp',
'torch_factory' and 'torch_random' run torch functions by name, with the same values,
types and gradients as calling torch directly; their type rules refuse names off the
allow-list and malformed arguments."""

from unittest import mock

import pytest
import torch
import torch.nn.functional as F
from op_check import check_op, run_source, tensor, torch_context, type_of

from gt.ir import OPS
from gt.ir.ops import torch_call_gradients
from gt.ir.torch_arguments import HostIndices, encode

f32, i64, b8 = torch.float32, torch.int64, torch.bool


def wire_call(fn: str, *args, **kwargs):
    """The attrs and tensor inputs GT's client records for `fn(*args, **kwargs)`."""
    inputs: list = []

    def index(value):
        if not isinstance(value, torch.Tensor):
            return None
        inputs.append(value)
        return len(inputs) - 1
    attrs = {'fn': fn, 'args': [encode(a, index) for a in args],
             'kwargs': {k: encode(v, index) for k, v in kwargs.items()}}
    return inputs, attrs


CALLS = [
    ('torch.sin', lambda: (tensor((3, 4)),), {}),
    ('torch.einsum', lambda: ('ij,kj->ik', tensor((3, 4)), tensor((2, 4))), {}),
    ('Tensor.topk', lambda: (tensor((3, 5)), 2), {'dim': 1, 'largest': False}),
    ('torch.nn.functional.pad', lambda: (tensor((2, 3)), (1, 2)), {'value': 0.5}),
    ('torch.cumsum', lambda: (tensor((3, 4), i64), 1), {'dtype': torch.float32}),
    ('Tensor.__getitem__', lambda: (tensor((5, 3)), (tensor((4,), i64, 0, 5), slice(None, 2))), {}),
    ('torch.tril', lambda: (tensor((4, 4)),), {'diagonal': -1}),
    ('torch.split', lambda: (tensor((5, 2)), [2, 3]), {}),
    ('torch.nn.functional.one_hot', lambda: (tensor((4,), i64, 0, 3), 3), {}),
    ('torch.linalg.norm', lambda: (tensor((3, 4)),), {'ord': 'fro'}),
    ('torch.special.erf', lambda: (tensor((6,)),), {}),
    ('torch.where', lambda: (tensor((3,), b8), tensor((3,)), tensor((3,))), {}),
]


@pytest.mark.parametrize('fn, make, kwargs', CALLS, ids=[c[0] for c in CALLS])
def test_torch_call(fn, make, kwargs):
    args = make()
    inputs, attrs = wire_call(fn, *args, **kwargs)
    expected = _reference(fn)(*args, **kwargs)
    outputs = expected if isinstance(expected, torch.Tensor) else tuple(expected)
    check_op('torch_call', inputs, attrs, outputs)


def _reference(fn: str):
    namespace, _, name = fn.rpartition('.')
    owner = {'torch': torch, 'Tensor': torch.Tensor, 'torch.nn.functional': F,
             'torch.linalg': torch.linalg, 'torch.special': torch.special}[namespace]
    return getattr(owner, name)


def test_host_indices_arrive_as_a_cpu_tensor_and_keep_the_call_out_of_compiled_regions():
    """torch's packed LSTM reads its batch sizes on the host: they travel in the attrs
    and reach the call as a CPU int64 tensor; compilers would trace those reads as
    data-dependent sizes, so such a call runs between compiled regions."""
    lstm = torch.nn.LSTM(3, 4, num_layers=2)
    weights = [weight.detach() for weight in lstm._flat_weights]
    data, states = tensor((6, 3)), (tensor((2, 3, 4)), tensor((2, 3, 4)))
    inputs, attrs = wire_call('torch.lstm', data, HostIndices([3, 2, 1]), states, weights,
                              True, 2, 0.0, True, False)
    assert attrs['args'][1] == ['H', [3, 2, 1]]
    expected = torch.lstm(data, torch.tensor([3, 2, 1]), states, weights, True, 2, 0.0, True,
                          False)
    check_op('torch_call', inputs, attrs, tuple(expected))
    assert not OPS['torch_call'].traces(attrs)
    assert OPS['torch_call'].traces(wire_call('torch.sin', tensor((3,)))[1])


@pytest.mark.parametrize('fn, make, expect', [
    ('Tensor.clamp_', lambda x: (x, -0.5, 0.5), lambda x: x.clamp(-0.5, 0.5)),
    ('Tensor.__setitem__', lambda x: (x, (x > 0), 2.0), lambda x: torch.where(x > 0, 2.0, x)),
    ('Tensor.index_fill_', lambda x: (x, 1, torch.tensor([0, 2]), -1.0),
     lambda x: x.index_fill(1, torch.tensor([0, 2]), -1.0)),
])
def test_in_place_calls_update_a_copy(fn, make, expect):
    x = tensor((3, 4))
    before = x.clone()
    inputs, attrs = wire_call(fn, *make(x))
    check_op('torch_call', inputs, attrs, expect(before))
    assert torch.equal(x, before)


@pytest.mark.parametrize('fn, make', [
    ('torch.nonzero', lambda: (tensor((4, 5), b8),)),
    ('Tensor.__getitem__', lambda: (lambda x: (x, x > 0))(tensor((3, 4)))),
    ('torch.unique', lambda: (tensor((10,), i64, 0, 4),)),
    ('torch.masked_select', lambda: (tensor((3, 4)), tensor((4,), b8))),
])
def test_data_dependent_calls_measure_then_run(fn, make):
    args = make()
    expected = _reference(fn)(*args)
    outputs = expected if isinstance(expected, torch.Tensor) else tuple(expected)
    inputs, attrs = wire_call(fn, *args)
    sizes = [s for out in (outputs if isinstance(outputs, tuple) else (outputs,))
             for s in out.shape]
    check_op('torch_sizes', inputs, attrs, torch.tensor(sizes))
    check_op('torch_call', inputs, dict(attrs, sizes=sizes), outputs)


@pytest.mark.parametrize('fn, make, kwargs', [
    ('torch.sin', lambda: (tensor((3, 4)),), {}),
    ('torch.einsum', lambda: ('ij,kj->ik', tensor((3, 4)), tensor((2, 4))), {}),
    ('Tensor.topk', lambda: (tensor((3, 5)), 2), {}),
    ('torch.nn.functional.pad', lambda: (tensor((2, 3)), (1, 2)), {'mode': 'reflect'}),
    ('torch.cummax', lambda: (tensor((4, 3)), 0), {}),
    ('torch.nn.functional.conv2d', lambda: (tensor((4, 4, 7, 7)), tensor((6, 2, 3, 3)),
                                            tensor((6,))), {'stride': 2, 'padding': 1,
                                                            'groups': 2}),
    ('torch.nn.functional.conv_transpose1d', lambda: (tensor((2, 3, 6)), tensor((3, 2, 3))),
     {'stride': 2, 'output_padding': 1, 'dilation': 2}),
    ('torch.conv3d', lambda: (tensor((2, 2, 4, 4, 4)), tensor((3, 2, 2, 2, 2))), {}),
    ('torch.nn.functional.conv2d', lambda: (tensor((2, 3, 5, 5)), tensor((4, 3, 3, 3))),
     {'padding': 'same'}),
    ('torch.nn.functional.conv1d', lambda: (tensor((3, 7)), tensor((2, 3, 3))), {}),
])
def test_torch_vjp_matches_autograd(fn, make, kwargs):
    args = make()
    leaves = [a.clone().requires_grad_() if isinstance(a, torch.Tensor) else a for a in args]
    result = _reference(fn)(*leaves, **kwargs)
    outputs = [result] if isinstance(result, torch.Tensor) else list(result)
    floating = [i for i, out in enumerate(outputs) if out.dtype.is_floating_point]
    cotangents = [tensor(tuple(outputs[i].shape)) for i in floating]
    tensors = [a for a in leaves if isinstance(a, torch.Tensor)]
    expected = torch.autograd.grad([outputs[i] for i in floating], tensors, cotangents)
    inputs, attrs = wire_call(fn, *args, **kwargs)
    attrs.update(n_inputs=len(inputs), wants=list(range(len(inputs))), differentiable=floating)
    check_op('torch_vjp', [*inputs, *cotangents], attrs,
             expected[0] if len(expected) == 1 else tuple(expected))


def test_convolution_gradients_are_torchs_backward_kernel_not_a_rerun():
    """gt.ir.direct_gradients: a convolution's gradient never reruns the call; one it
    does not cover (padding='same') does."""
    def rerun(*args, **kwargs):
        raise AssertionError('the call was rerun')
    x, weight = tensor((2, 3, 6, 6)), tensor((4, 3, 3, 3))
    leaf = weight.clone().requires_grad_()
    out = F.conv2d(x, leaf, None, 1, 1)
    cotangent = tensor(tuple(out.shape))
    (expected,) = torch.autograd.grad(out, leaf, cotangent)
    with mock.patch.object(torch_call_gradients, 'call', rerun):
        for padding in (1, 'same'):
            inputs, attrs = wire_call('torch.nn.functional.conv2d', x, weight, None, 1, padding)
            attrs.update(n_inputs=2, wants=[1], differentiable=[0])
            if padding == 'same':
                with pytest.raises(AssertionError, match='rerun'):
                    OPS['torch_vjp'].torch(*inputs, cotangent, **attrs)
            else:
                assert torch.equal(OPS['torch_vjp'].torch(*inputs, cotangent, **attrs),
                                   expected)


@pytest.mark.parametrize('fn, make, kwargs', [
    ('torch.nn.functional.softsign', lambda: (tensor((3, 4)),), {}),
    ('torch.nn.functional.conv1d', lambda: (tensor((2, 3, 6)), tensor((4, 3, 3))),
     {'padding': 1}),
    ('torch.cumprod', lambda: (tensor((2, 5)), 1), {}),
])
def test_torch_vjp_grad_matches_double_backward(fn, make, kwargs):
    """'torch_vjp_grad': the gradient of a 'torch_vjp', for its primals and its cotangent,
    against torch's double backward."""
    args = make()
    leaves = [a.clone().requires_grad_() if isinstance(a, torch.Tensor) else a for a in args]
    tensors = [a for a in leaves if isinstance(a, torch.Tensor)]
    output = _reference(fn)(*leaves, **kwargs)
    cotangent = tensor(tuple(output.shape)).requires_grad_()
    grads = torch.autograd.grad(output, tensors, cotangent, create_graph=True)
    second_cotangents = [tensor(tuple(g.shape)) for g in grads]
    expected = torch.autograd.grad(grads, [*tensors, cotangent], second_cotangents,
                                   allow_unused=True)
    expected = [torch.zeros_like(t) if e is None else e
                for e, t in zip(expected, [*tensors, cotangent])]
    inputs, attrs = wire_call(fn, *args, **kwargs)
    attrs.update(n_inputs=len(inputs), wants=list(range(len(inputs))), differentiable=[0],
                 second=list(range(len(inputs) + 1)))
    got = OPS['torch_vjp_grad'].torch(*inputs, cotangent.detach(), *second_cotangents, **attrs)
    for a, b in zip(got, expected):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_torch_vjp_for_some_inputs_only():
    x, index = tensor((4, 3)), torch.tensor([2, 0])
    leaf = x.clone().requires_grad_()
    out = torch.index_select(leaf, 0, index)
    cotangent = tensor((2, 3))
    (expected,) = torch.autograd.grad(out, leaf, cotangent)
    inputs, attrs = wire_call('torch.index_select', x, 0, index)
    attrs.update(n_inputs=2, wants=[0], differentiable=[0])
    check_op('torch_vjp', [*inputs, cotangent], attrs, expected)


@pytest.mark.parametrize('fn, args, kwargs', [
    ('torch.linspace', (0.0, 1.0, 7), {}),
    ('torch.eye', (3, 4), {'dtype': torch.int64}),
    ('torch.tril_indices', (4, 4), {}),
    ('torch.logspace', (0, 2, 5), {'base': 2.0}),
])
def test_torch_factory(fn, args, kwargs):
    _, attrs = wire_call(fn, *args, **kwargs)
    (got,) = run_source('torch_factory', attrs, torch_context())
    torch.testing.assert_close(got, _reference(fn)(*args, **kwargs), rtol=0, atol=0)
    (array,) = run_source('torch_factory', attrs, None, engine='numpy')
    torch.testing.assert_close(torch.from_numpy(array), _reference(fn)(*args, **kwargs))


def test_torch_random_draws_from_the_session_generator_as_torch_does():
    _, attrs = wire_call('torch.randint', 0, 10, (6,))
    context = torch_context(seed=7)
    first = run_source('torch_random', attrs, context)[0]
    second = run_source('torch_random', attrs, context)[0]
    generator = torch.Generator().manual_seed(7)
    assert torch.equal(first, torch.randint(0, 10, (6,), generator=generator))
    assert torch.equal(second, torch.randint(0, 10, (6,), generator=generator))


def test_a_draw_that_takes_a_generator_never_lends_it_the_global_one():
    """Dynamo saves torch's global generator state before each compile and puts it back
    after, in the worker's compile thread: a draw that borrowed that state meanwhile
    drew the wrong numbers (29 of 300 steps, measured). Here a thread does what Dynamo
    does, again and again, while the draws run."""
    import threading

    _, attrs = wire_call('torch.randint', 0, 1000, (50,))
    context, expected = torch_context(seed=11), torch.Generator().manual_seed(11)
    stop, state = threading.Event(), torch.get_rng_state()

    def restore_again_and_again():
        while not stop.is_set():
            torch.set_rng_state(state)

    restorer = threading.Thread(target=restore_again_and_again)
    restorer.start()
    try:
        for _ in range(200):
            got = run_source('torch_random', attrs, context)[0]
            assert torch.equal(got, torch.randint(0, 1000, (50,), generator=expected))
    finally:
        stop.set()
        restorer.join()


def test_a_draw_lent_the_global_generator_is_kept_from_a_compiles_restores():
    """rrelu takes no `generator=`: it draws from torch's global generator, lent the
    session's state for the call. Dynamo sets that global state back after each compile
    (torch.random.set_rng_state, in the worker's compile thread), which used to land
    inside lent draws (without the guard this fails at one of the first few draws); the
    worker's compiler makes those sets wait for the draw."""
    import threading

    from gt.runtime import generator_guard

    x = torch.randn(20000)
    inputs, attrs = wire_call('torch.nn.functional.rrelu', x, training=True)
    torch.manual_seed(11)
    expected = [torch.nn.functional.rrelu(x, training=True) for _ in range(100)]
    context, stop, state = torch_context(seed=11), threading.Event(), torch.get_rng_state()
    generator_guard.guard_restores()

    def restore_again_and_again():
        while not stop.is_set():
            torch.random.set_rng_state(state)  # as Dynamo calls it

    restorer = threading.Thread(target=restore_again_and_again)
    restorer.start()
    try:
        for want in expected:
            assert torch.equal(_run_random(inputs, attrs, context=context), want)
    finally:
        stop.set()
        restorer.join()


def test_torch_random_without_a_generator_argument_uses_the_session_generator():
    x = torch.ones(200)
    inputs, attrs = wire_call('torch.nn.functional.dropout', x, 0.5)
    graph_out = _run_random(inputs, attrs, seed=3)
    default_state = torch.get_rng_state()
    torch.manual_seed(3)
    expected = F.dropout(x, 0.5)
    torch.set_rng_state(default_state)
    assert torch.equal(graph_out, expected)
    assert torch.equal(torch.get_rng_state(), default_state)  # the process's is untouched


def _run_random(inputs, attrs, seed=0, context=None):
    from op_check import wire

    from gt.ir import Graph, Node, Value, interpret, verify
    attrs = wire(attrs)
    values = tuple(Value(t.shape, t.dtype) for t in map(type_of, inputs))
    outputs = tuple(Value(t.shape, t.dtype)
                    for t in OPS['torch_random'].infer(tuple(v.type for v in values), **attrs))
    graph = verify(Graph(values, (Node('torch_random', values, outputs, attrs),), outputs))
    return interpret(graph, list(inputs), context or torch_context(seed=seed))[0]


@pytest.mark.parametrize('op, types, attrs, error, message', [
    ('torch_call', (), {'fn': 'torch.load', 'args': ['x'], 'kwargs': {}}, ValueError,
     'does not run torch.load'),
    ('torch_call', (), {'fn': 'os.system', 'args': ['ls'], 'kwargs': {}}, ValueError,
     'not in a namespace'),
    ('torch_call', (), {'fn': 'torch.Tensor', 'args': [], 'kwargs': {}}, ValueError,
     'not a torch function'),
    ('torch_call', (), {'fn': 'torch._C', 'args': [], 'kwargs': {}}, ValueError,
     'does not run'),
    ('torch_call', ((3,), 'float32'), {'fn': 'torch.sin', 'args': [['T', 1]], 'kwargs': {}},
     ValueError, 'names no tensor input'),
    ('torch_call', ((3,), 'float32'), {'fn': 'torch.sin', 'args': [['X', 0]], 'kwargs': {}},
     ValueError, 'unknown argument tag'),
    ('torch_call', ((3,), 'float32'), {'fn': 'torch.sin', 'args': [['T', 0]],
                                       'kwargs': {1: 2}}, ValueError, 'not a string'),
    ('torch_call', ((3,), 'float32'), {'fn': 'torch.sin', 'args': [['T', 0], ['H', [1.5]]],
                                       'kwargs': {}}, ValueError, 'host indices must be'),
    ('torch_call', ((3,), 'float32'), {'fn': 'torch.sin', 'args': [['T', 0], ['H', 3]],
                                       'kwargs': {}}, ValueError, 'host indices must be'),
    ('torch_call', ((3,), 'float32'), {'fn': 'torch.add', 'args': [['T', 0], ['T', 0]],
                                       'kwargs': {'alpha': 'x'}}, TypeError, 'torch.add'),
    ('torch_call', ((3,), 'float32'), {'fn': 'torch.view_as_complex', 'args': [['T', 0]],
                                       'kwargs': {}}, ValueError, 'torch.view_as_complex'),
    ('torch_call', ((3, 2), 'float32'), {'fn': 'torch.view_as_complex', 'args': [['T', 0]],
                                         'kwargs': {}}, TypeError, 'complex64'),
    ('torch_call', ((3,), 'bool'), {'fn': 'torch.nonzero', 'args': [['T', 0]], 'kwargs': {}},
     ValueError, 'depends on the values'),
    ('torch_call', ((3,), 'bool'), {'fn': 'torch.nonzero', 'args': [['T', 0]], 'kwargs': {},
                                    'sizes': [1]}, ValueError, 'do not fit'),
    ('torch_call', ((3,), 'float32'), {'fn': 'torch.equal', 'args': [['T', 0], ['T', 0]],
                                       'kwargs': {}}, ValueError, 'only where the values are'),
    ('torch_call', ((3,), 'float32'), {'fn': 'Tensor.add_', 'args': [1.0, ['T', 0]],
                                       'kwargs': {}}, ValueError, 'must update a tensor'),
    ('torch_random', ((3,), 'float32'), {'fn': 'torch.sin', 'args': [['T', 0]], 'kwargs': {}},
     ValueError, 'draws no random numbers'),
    ('torch_factory', (), {'fn': 'torch.randperm', 'args': [4], 'kwargs': {}}, ValueError,
     'draw nothing'),
    ('torch_vjp', ((3,), 'float32'), {'fn': 'torch.sin', 'args': [['T', 0]], 'kwargs': {},
                                      'n_inputs': 1, 'wants': [0], 'differentiable': [0]},
     ValueError, 'cotangents do not match'),
    ('torch_vjp', ((3,), 'float32', (3,), 'float32'),
     {'fn': 'torch.sin', 'args': [['T', 0]], 'kwargs': {}, 'n_inputs': 1, 'wants': [1],
      'differentiable': [0]}, ValueError, 'names no inputs'),
    ('torch_vjp_grad', ((3,), 'float32', (3,), 'float32', (3,), 'float32'),
     {'fn': 'torch.sin', 'args': [['T', 0]], 'kwargs': {}, 'n_inputs': 1, 'wants': [0],
      'differentiable': [0], 'second': [2]}, ValueError, r'second \[2\] names no inputs'),
    ('torch_vjp_grad', ((3,), 'float32', (3,), 'float32', (2,), 'float32'),
     {'fn': 'torch.sin', 'args': [['T', 0]], 'kwargs': {}, 'n_inputs': 1, 'wants': [0],
      'differentiable': [0], 'second': [0]}, ValueError, 'do not match the gradients'),
])
def test_type_rules_refuse(op, types, attrs, error, message):
    from gt.ir import TensorType
    pairs = [TensorType(tuple(types[i]), types[i + 1]) for i in range(0, len(types), 2)]
    with pytest.raises(error, match=message):
        OPS[op].infer(tuple(pairs), **attrs)


@pytest.mark.parametrize('mode', ['LSTM', 'GRU', 'RNN_TANH', 'RNN_RELU'])
@pytest.mark.parametrize('options', [dict(), dict(batch_first=True, bidirectional=True),
                                     dict(num_layers=2, proj_size=3), dict(packed=True),
                                     dict(packed=True, bidirectional=True, num_layers=2)],
                         ids=str)
def test_recurrent_kernels_are_typed_without_running_the_recurrence(mode, options):
    """The shapes the client gives torch's recurrent kernels (without the meta kernels'
    step-by-step recurrence) are those the kernels return."""
    from gt.ir.ops.torch_calls import META_RESULTS

    options = dict(options)
    packed = options.pop('packed', False)
    if options.get('proj_size') and mode != 'LSTM':
        options.pop('proj_size')
    module = torch.nn.RNNBase(mode, 4, 5, **options)
    directions = 2 if module.bidirectional else 1
    state_size = module.proj_size or module.hidden_size
    shape = (3, 6, 4) if module.batch_first else (6, 3, 4)
    hidden = torch.randn(directions * module.num_layers, 3, state_size)
    hx = (hidden, torch.randn(directions * module.num_layers, 3, 5)) if mode == 'LSTM' \
        else hidden
    name = f'torch.{mode.lower()}'
    common = (module._flat_weights, module.bias, module.num_layers, 0.0, False,
              module.bidirectional)
    if packed:
        sequence = torch.nn.utils.rnn.pack_sequence([torch.randn(n, 4) for n in (6, 4, 2)])
        args = (sequence.data, sequence.batch_sizes, hx, *common)
    else:
        args = (torch.randn(shape), hx, *common, module.batch_first)
    kernel = getattr(torch, mode.lower())
    expected = kernel(*args)
    got = META_RESULTS[name](*args)
    assert [tuple(t.shape) for t in got] == [tuple(t.shape) for t in expected]
    assert all(t.dtype == e.dtype and t.device.type == 'meta' for t, e in zip(got, expected))
