"""RNN, LSTM, GRU and their cells against torch.nn: outputs, final states and the gradients
of inputs, initial states and parameters with torch's weights; repr, state_dict keys and
order, initialization (torch's draws after the same seed), a layer stack recorded as one
call of torch's kernel, dropout between layers, torch's errors, and a small LSTM language
model trained a few steps."""

import numpy as np
import pytest
import torch
from nn_check import assert_close, both, randn

import gt
import gt.nn as nn
import gt.nn.functional as F

# torch's own warning, from its CPU LSTM when proj_size > 0.
pytestmark = pytest.mark.filterwarnings('ignore:LSTM with projections:UserWarning')

# (class name, keyword arguments): each recurrent unit, visible in the case's name.
MODES = [('RNN', {}), ('RNN', {'nonlinearity': 'relu'}), ('LSTM', {}), ('GRU', {})]
LAYOUTS = [
    {},
    {'num_layers': 2},
    {'bidirectional': True},
    {'num_layers': 2, 'bidirectional': True},
    {'batch_first': True},
    {'bias': False},
    {'num_layers': 2, 'bidirectional': True, 'batch_first': True, 'bias': False},
]
TOLERANCE = {'rtol': 1e-4, 'atol': 1e-5}  # torch's CPU LSTM runs oneDNN's kernel
INPUT, HIDDEN, LENGTH, BATCH = 3, 4, 5, 2


def options_id(options: dict) -> str:
    return ','.join(f'{key}={value}' for key, value in options.items()) or 'default'


def mode_id(mode) -> str:
    name, options = mode
    return name + (f'-{options["nonlinearity"]}' if options else '')


def pair(name: str, *args, **kwargs) -> tuple[nn.Module, torch.nn.Module]:
    return getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)


def flat(value) -> list:
    """The tensors of an output, state or (output, state) in order: tuples are flattened."""
    return [t for item in value for t in flat(item)] if isinstance(value, tuple) else [value]


def check_recurrent(mine: nn.Module, theirs: torch.nn.Module, input: torch.Tensor,
                    state=None) -> None:
    """Forward and backward of both with torch's weights: every returned tensor (output,
    h_n, c_n) matches, and so do the gradients of the input, the initial states and the
    parameters, under a random weighting of every returned element."""
    mine.load_state_dict(theirs.state_dict())
    states = [] if state is None else flat(state)
    leaves = [both(t, requires_grad=True) for t in [input, *states]]
    args_mine, args_theirs = [p[0] for p in leaves], [p[1] for p in leaves]
    if state is not None:
        rebuild = tuple if isinstance(state, tuple) else (lambda states: states[0])
        args_mine = [args_mine[0], rebuild(args_mine[1:])]
        args_theirs = [args_theirs[0], rebuild(args_theirs[1:])]
    got, want = flat(mine(*args_mine)), flat(theirs(*args_theirs))
    assert len(got) == len(want)
    total_mine, total_theirs = 0, 0
    for index, (a, b) in enumerate(zip(got, want)):
        assert_close(a, b, **TOLERANCE)
        weights = randn(*b.shape) + index
        total_mine = total_mine + (a * gt.tensor(weights)).sum()
        total_theirs = total_theirs + (b * weights).sum()
    total_mine.backward()
    total_theirs.backward()
    for a, b in leaves:
        assert_close(a.grad, b.grad, **TOLERANCE)
    grads = dict(theirs.named_parameters())
    for name, parameter in mine.named_parameters():
        assert_close(parameter.grad, grads[name].grad, **TOLERANCE)


def initial_state(name: str, depth: int, batch: tuple[int, ...], size: int, cell: int):
    """torch's h_0 (and c_0 for an LSTM): (depth, *batch, size)."""
    hidden = randn(depth, *batch, size)
    return (hidden, randn(depth, *batch, cell) + 1) if name == 'LSTM' else hidden


@pytest.mark.parametrize('with_state', [False, True], ids=['zeros', 'h0'])
@pytest.mark.parametrize('layout', LAYOUTS, ids=options_id)
@pytest.mark.parametrize('mode', MODES, ids=mode_id)
def test_layers(mode, layout, with_state):
    name, options = mode
    mine, theirs = pair(name, INPUT, HIDDEN, **options, **layout)
    batch_first = layout.get('batch_first', False)
    input = randn(BATCH, LENGTH, INPUT) if batch_first else randn(LENGTH, BATCH, INPUT)
    depth = layout.get('num_layers', 1) * (2 if layout.get('bidirectional') else 1)
    state = initial_state(name, depth, (BATCH,), HIDDEN, HIDDEN) if with_state else None
    check_recurrent(mine, theirs, input, state)


@pytest.mark.parametrize('with_state', [False, True], ids=['zeros', 'h0'])
@pytest.mark.parametrize('batch_first', [False, True], ids=['time_first', 'batch_first'])
@pytest.mark.parametrize('mode', MODES, ids=mode_id)
def test_unbatched_input(mode, batch_first, with_state):
    name, options = mode
    mine, theirs = pair(name, INPUT, HIDDEN, num_layers=2, bidirectional=True,
                        batch_first=batch_first, **options)
    state = initial_state(name, 4, (), HIDDEN, HIDDEN) if with_state else None
    check_recurrent(mine, theirs, randn(LENGTH, INPUT), state)


@pytest.mark.parametrize('with_state', [False, True], ids=['zeros', 'h0'])
@pytest.mark.parametrize('layout', [{}, {'num_layers': 2, 'bidirectional': True},
                                    {'batch_first': True, 'bias': False}], ids=options_id)
def test_lstm_with_projection(layout, with_state):
    mine, theirs = pair('LSTM', INPUT, HIDDEN, proj_size=2, **layout)
    batch_first = layout.get('batch_first', False)
    input = randn(BATCH, LENGTH, INPUT) if batch_first else randn(LENGTH, BATCH, INPUT)
    depth = 4 if layout.get('bidirectional') else 1
    state = initial_state('LSTM', depth, (BATCH,), 2, HIDDEN) if with_state else None
    check_recurrent(mine, theirs, input, state)


@pytest.mark.parametrize('mode', MODES, ids=mode_id)
def test_a_layer_stack_is_one_call_of_torchs_kernel_unless_it_drops(mode):
    """However long the sequence, the stack records one node that runs torch's kernel
    (`torch.lstm` and kin) and one for its gradient, not ops per step. With dropout in
    training it is unrolled: the masks between layers are the session generator's draws
    (test_training_dropout_draws_torchs_mask_after_the_same_seed)."""
    name, options = mode
    layer = getattr(nn, name)(INPUT, HIDDEN, num_layers=2, dropout=0.5, **options).eval()
    x = gt.tensor(randn(40, BATCH, INPUT), requires_grad=True)
    output = layer(x)[0]
    (output * 2).sum().backward()
    ir = gt.debug.dump_ir(show=False)
    kernel = 'torch.' + (name.lower() if name != 'RNN' else
                         'rnn_' + options.get('nonlinearity', 'tanh'))
    assert ir.count('= torch_call(') == 1 and ir.count('= torch_vjp(') == 1, ir
    assert ir.count(f'fn={kernel},') == 2, ir
    assert ir.count(' = ') < 40, ir  # unrolled, 40 steps would be hundreds of nodes
    layer.train()(x)[0].sum().backward()
    assert 'torch_call(' not in gt.debug.dump_ir(show=False)


CELLS = [('RNNCell', {}), ('RNNCell', {'nonlinearity': 'relu'}), ('LSTMCell', {}),
         ('GRUCell', {})]


@pytest.mark.parametrize('bias', [True, False], ids=['bias', 'no_bias'])
@pytest.mark.parametrize('batched', [True, False], ids=['batched', 'unbatched'])
@pytest.mark.parametrize('with_state', [False, True], ids=['zeros', 'hx'])
@pytest.mark.parametrize('cell', CELLS, ids=mode_id)
def test_cells(cell, with_state, batched, bias):
    name, options = cell
    mine, theirs = pair(name, INPUT, HIDDEN, bias=bias, **options)
    batch = (BATCH,) if batched else ()
    state = None
    if with_state:
        state = (randn(*batch, HIDDEN), randn(*batch, HIDDEN) + 1) if name == 'LSTMCell' \
            else randn(*batch, HIDDEN)
    check_recurrent(mine, theirs, randn(*batch, INPUT), state)


def test_cell_unrolled_over_a_sequence_equals_the_layer():
    """A script that steps an LSTMCell by hand gets the LSTM's output, as in torch."""
    cell, layer = nn.LSTMCell(INPUT, HIDDEN), nn.LSTM(INPUT, HIDDEN)
    layer.load_state_dict({f'{key}_l0': value for key, value in cell.state_dict().items()})
    x = gt.tensor(randn(LENGTH, BATCH, INPUT))
    state, outputs = None, []
    for t in range(LENGTH):
        state = cell(x[t], state)
        outputs.append(state[0])
    output, (hidden, memory) = layer(x)
    assert_close(gt.stack(outputs), output.data)
    assert_close(hidden[0], state[0].data)
    assert_close(memory[0], state[1].data)


# ---- construction: repr, parameters, initialization ----------------------------------------
CONSTRUCTIONS = [
    ('RNN', (3, 4), {}),
    ('RNN', (3, 4, 2, 'relu', False, True, 0.25, True), {}),
    ('LSTM', (3, 4), {'num_layers': 2, 'bidirectional': True, 'proj_size': 2}),
    ('LSTM', (3, 4), {'bias': False, 'batch_first': True, 'dropout': 0.5, 'num_layers': 3}),
    ('GRU', (3, 4), {'num_layers': 2, 'bidirectional': True}),
    ('GRU', (3, 4, 1, False), {}),
    ('RNNCell', (3, 4), {'nonlinearity': 'relu', 'bias': False}),
    ('LSTMCell', (3, 4), {}),
    ('GRUCell', (3, 4), {'bias': False}),
]


def construction_id(case) -> str:
    name, args, options = case
    return '-'.join([name, *map(str, args)]) + (f'-{options_id(options)}' if options else '')


@pytest.mark.parametrize('case', CONSTRUCTIONS, ids=construction_id)
def test_repr_parameters_and_seeded_initialization(case):
    """Same repr, same state_dict names, shapes and order; after the same seed, the same
    weights bit for bit (torch draws every parameter from U(-1/sqrt(hidden), ..) in order)."""
    name, args, options = case
    gt.manual_seed(5)
    mine = getattr(nn, name)(*args, **options)
    torch.manual_seed(5)
    theirs = getattr(torch.nn, name)(*args, **options)
    assert repr(mine) == repr(theirs)
    got, want = mine.state_dict(), theirs.state_dict()
    assert list(got) == list(want)
    assert [n for n, _ in mine.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    for key in want:
        assert torch.equal(got[key], want[key]), key
    if hasattr(theirs, 'all_weights'):
        mine.flatten_parameters()  # a no-op that ported scripts call
        assert [[tuple(p.shape) for p in group] for group in mine.all_weights] == \
            [[tuple(p.shape) for p in group] for group in theirs.all_weights]


def test_dtype_argument_and_no_data_sent(monkeypatch):
    """float64 modules run on float64 inputs; making one draws on the worker, sending
    nothing from the client."""
    client = gt.runtime.client.current()
    sent = []
    monkeypatch.setattr(client, 'add_data', lambda array: sent.append(array) or 0)
    mine = nn.GRU(INPUT, HIDDEN, num_layers=2, device='cpu', dtype=torch.float64)
    assert sent == [] and mine.weight_hh_l1.dtype == torch.float64
    monkeypatch.undo()
    theirs = torch.nn.GRU(INPUT, HIDDEN, num_layers=2, dtype=torch.float64)
    check_recurrent(mine, theirs, randn(LENGTH, BATCH, INPUT).double())


def test_weights_load_both_ways():
    mine, theirs = pair('LSTM', INPUT, HIDDEN, num_layers=2, bidirectional=True)
    theirs.load_state_dict(mine.state_dict())
    mine.load_state_dict({key: value * 2 for key, value in theirs.state_dict().items()})
    for key, value in theirs.state_dict().items():
        assert torch.equal(mine.state_dict()[key], value * 2)


# ---- dropout between layers -----------------------------------------------------------------
@pytest.mark.parametrize('mode', MODES, ids=mode_id)
def test_dropout_between_layers_only_in_training(mode):
    name, options = mode
    mine, theirs = pair(name, INPUT, HIDDEN, num_layers=3, dropout=0.5, **options)
    check_recurrent(mine.eval(), theirs.eval(), randn(LENGTH, BATCH, INPUT))
    mine.train()
    x = gt.tensor(randn(LENGTH, BATCH, INPUT))
    trained, evaluated = mine(x)[0].data, mine.eval()(x)[0].data
    assert not torch.allclose(trained, evaluated)  # the mask changes the last layer's input


@pytest.mark.parametrize('mode', MODES, ids=mode_id)
def test_training_dropout_draws_torchs_mask_after_the_same_seed(mode):
    """torch's CPU kernels drop with `bernoulli_(1 - p) / (1 - p)` between layers, as
    F.dropout does, so after the same seed the training outputs are torch's."""
    name, options = mode
    mine, theirs = pair(name, INPUT, HIDDEN, num_layers=2, dropout=0.4, **options)
    mine.load_state_dict(theirs.state_dict())
    data = randn(LENGTH, BATCH, INPUT)
    gt.manual_seed(7)
    got = mine(gt.tensor(data))
    torch.manual_seed(7)
    want = theirs(data)
    for a, b in zip(flat(got), flat(want)):
        assert_close(a, b)


@pytest.mark.parametrize('mode, bidirectional', [('LSTM', False), ('GRU', True),
                                                 ('RNN', False)])
def test_packed_training_dropout_is_torchs_and_keeps_the_stream_in_step(mode, bidirectional):
    """torch's packed kernel drops the packed data between layers (fewer elements than
    the padded batch, in packed order): outputs, gradients and the next draw are torch's."""
    results = []
    for lib in (gt, torch):
        lib.manual_seed(0)
        net = getattr(lib.nn, mode)(4, 5, num_layers=3, dropout=0.5,
                                    bidirectional=bidirectional)
        x = lib.randn(6, 3, 4, requires_grad=True)
        packed = lib.nn.utils.rnn.pack_padded_sequence(x, torch.tensor([6, 4, 2]))
        out, state = net(packed)
        last = state[0] if mode == 'LSTM' else state
        (out.data.sum() + (last * last).sum()).backward()
        results.append([out.data, x.grad, net.weight_hh_l0.grad, lib.rand(3)])
    for got, want in zip(*results):
        assert_close(got, want)


def test_dropout_with_one_layer_warns_as_torch():
    with pytest.warns(UserWarning, match='num_layers greater than 1'):
        nn.GRU(INPUT, HIDDEN, dropout=0.2)


# ---- errors ----------------------------------------------------------------------------------
def raised(call) -> tuple[type, str]:
    with pytest.raises(Exception) as info:
        call()
    return info.type, str(info.value)


def assert_raises_alike(make, call) -> None:
    """`call(module, library)` raises the same exception type and message with GT's
    module and gt tensors as with torch's."""
    mine, theirs = make(nn), make(torch.nn)
    assert raised(lambda: call(mine, gt)) == raised(lambda: call(theirs, torch))


LAYER_ERRORS = {
    'four_dims': lambda m, lib: m(lib.zeros(2, 2, 2, INPUT)),
    'input_size': lambda m, lib: m(lib.zeros(LENGTH, BATCH, INPUT + 1)),
    'dtype': lambda m, lib: m(lib.zeros(LENGTH, BATCH, INPUT, dtype=torch.float64)),
    'h0_dims': lambda m, lib: m(lib.zeros(LENGTH, BATCH, INPUT), lib.zeros(BATCH, HIDDEN)),
    'h0_unbatched_dims': lambda m, lib: m(lib.zeros(LENGTH, INPUT), lib.zeros(1, 1, HIDDEN)),
    'h0_batch': lambda m, lib: m(lib.zeros(LENGTH, BATCH, INPUT), lib.zeros(1, 3, HIDDEN)),
    'h0_layers': lambda m, lib: m(lib.zeros(LENGTH, BATCH, INPUT), lib.zeros(2, 2, HIDDEN)),
    'h0_size': lambda m, lib: m(lib.zeros(LENGTH, BATCH, INPUT), lib.zeros(1, 2, HIDDEN + 1)),
}
LSTM_ERRORS = {
    'c0_size': lambda m, lib: m(lib.zeros(LENGTH, BATCH, INPUT),
                                (lib.zeros(1, BATCH, HIDDEN), lib.zeros(1, BATCH, 1))),
    'hx_dims': lambda m, lib: m(lib.zeros(LENGTH, BATCH, INPUT),
                                (lib.zeros(1, BATCH, HIDDEN), lib.zeros(BATCH, HIDDEN))),
    'h0_size': lambda m, lib: m(lib.zeros(LENGTH, BATCH, INPUT),
                                (lib.zeros(1, BATCH, 1), lib.zeros(1, BATCH, HIDDEN))),
    'four_dims': LAYER_ERRORS['four_dims'],
    'input_size': LAYER_ERRORS['input_size'],
}


@pytest.mark.parametrize('error', list(LAYER_ERRORS))
@pytest.mark.parametrize('name', ['RNN', 'GRU'])
def test_layer_errors_are_torchs(name, error):
    assert_raises_alike(lambda lib: getattr(lib, name)(INPUT, HIDDEN), LAYER_ERRORS[error])


@pytest.mark.parametrize('error', list(LSTM_ERRORS))
def test_lstm_errors_are_torchs(error):
    assert_raises_alike(lambda lib: lib.LSTM(INPUT, HIDDEN), LSTM_ERRORS[error])


CELL_ERRORS = {
    'three_dims': lambda m, lib: m(lib.zeros(1, BATCH, INPUT)),
    'input_size': lambda m, lib: m(lib.zeros(BATCH, INPUT + 1)),
    'hidden_batch': lambda m, lib: m(lib.zeros(BATCH, INPUT), lib.zeros(BATCH + 1, HIDDEN)),
    'hidden_size': lambda m, lib: m(lib.zeros(BATCH, INPUT), lib.zeros(BATCH, HIDDEN + 1)),
    'hidden_dims': lambda m, lib: m(lib.zeros(BATCH, INPUT), lib.zeros(1, BATCH, HIDDEN)),
}


@pytest.mark.parametrize('error', list(CELL_ERRORS))
@pytest.mark.parametrize('name', ['RNNCell', 'GRUCell', 'LSTMCell'])
def test_cell_errors_are_torchs(name, error):
    call = CELL_ERRORS[error]
    if name == 'LSTMCell':
        def call(m, lib, plain=CELL_ERRORS[error]):  # (h, c): the wrong h with a right c
            def cell(input, hx=None):
                return m(input, None if hx is None else (hx, lib.zeros(*hx.shape)))
            return plain(cell, lib)
    assert_raises_alike(lambda lib: getattr(lib, name)(INPUT, HIDDEN), call)


@pytest.mark.parametrize('name,args,options', [
    ('RNN', (3, 4), {'nonlinearity': 'sigmoid'}),
    ('GRU', (3, 4), {'proj_size': 2}),
    ('RNN', (3, 4), {'proj_size': 2}),
    ('LSTM', (3, 4), {'proj_size': 4}),
    ('LSTM', (3, 4), {'proj_size': -1}),
    ('LSTM', (3, 4), {'dropout': 1.5}),
    ('LSTM', (3, 4), {'dropout': True}),
    ('GRU', (3, 0), {}),
    ('GRU', (0, 4), {}),
    ('GRU', (3, 4.0), {}),
    ('RNN', (3, 4), {'num_layers': 0}),
    ('RNN', (3, 4), {'bias': 1}),
])
def test_argument_errors_are_torchs(name, args, options):
    assert raised(lambda: getattr(nn, name)(*args, **options))[0] is \
        raised(lambda: getattr(torch.nn, name)(*args, **options))[0]


# ---- training --------------------------------------------------------------------------------
def language_model(library, vocabulary: int = 7, width: int = 6):
    """Embedding -> 2-layer LSTM -> Linear over the vocabulary, from gt.nn or torch.nn."""
    class LanguageModel(library.Module):
        def __init__(self):
            super().__init__()
            self.embedding = library.Embedding(vocabulary, width)
            self.lstm = library.LSTM(width, width, num_layers=2, batch_first=True)
            self.head = library.Linear(width, vocabulary)

        def forward(self, tokens):
            self.lstm.flatten_parameters()
            output, _ = self.lstm(self.embedding(tokens))
            return self.head(output)

    return LanguageModel()


def test_lstm_language_model_trains_as_torch():
    mine, theirs = language_model(nn), language_model(torch.nn)
    mine.load_state_dict(theirs.state_dict())
    tokens = torch.randint(0, 7, (3, 6), generator=torch.Generator().manual_seed(0))
    optimizer = gt.optim.SGD(mine.parameters(), lr=0.5)
    expected = torch.optim.SGD(theirs.parameters(), lr=0.5)
    x, y = gt.tensor(tokens[:, :-1]), gt.tensor(tokens[:, 1:])
    losses = []
    for step in range(3):
        loss = F.cross_entropy(mine(x).reshape(-1, 7), y.reshape(-1))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        torch_loss = torch.nn.functional.cross_entropy(
            theirs(tokens[:, :-1]).reshape(-1, 7), tokens[:, 1:].reshape(-1))
        torch_loss.backward()
        expected.step()
        expected.zero_grad()
        assert_close(loss, torch_loss, rtol=1e-4, atol=0), f'step {step}'
        losses.append(loss.item())
    assert losses[-1] < losses[0]


@pytest.mark.parametrize('grad_enabled', [True, False], ids=['training', 'no_grad'])
def test_stacked_lstm_forward_is_torchs_bit_for_bit_in_either_grad_mode(grad_enabled):
    """torch's CPU LSTM of two layers gives other bits in grad mode than under no_grad
    (oneDNN's training path against its inference one); GT's worker runs in inference
    mode, so a training step's output differed in the last bits from torch's."""
    def run(library):
        library.manual_seed(0)
        lstm = library.nn.LSTM(16, 32, 2)
        x = library.randn(7, 4, 16)
        with library.set_grad_enabled(grad_enabled):
            output, (hidden, cell) = lstm(x)
        return [t.detach().numpy() for t in (output, hidden, cell)]
    exact = len(gt.runtime.client.current().workers) == 1
    for got, expected in zip(run(gt), run(torch)):
        assert (got == expected).all() if exact else np.allclose(got, expected, atol=1e-5)


@pytest.mark.parametrize('mode', ['GRU', 'RNN'])
@pytest.mark.parametrize('frozen', [False, True], ids=['trained', 'frozen'])
def test_a_batch_first_gru_or_rnn_is_torchs_bit_for_bit(mode, frozen):
    """torch's GRU and RNN kernels fold a batch-first input into one product only when the
    weights require grad, which on a worker they never do: outputs were 1e-7 off."""
    if len(gt.runtime.client.current().workers) > 1:
        pytest.skip('several workers run the layer from sharded inputs: bits of their own')
    results = []
    for library in (torch, gt):
        library.manual_seed(0)
        layer = getattr(library.nn, mode)(6, 8, num_layers=2, bidirectional=True,
                                          batch_first=True)
        layer.requires_grad_(not frozen)
        x = library.randn(3, 7, 6).requires_grad_()
        output, final = layer(x)
        (output.pow(2).sum() + final.sum()).backward()
        results.append([torch.as_tensor(t.tolist()) for t in (output, final, x.grad)])
    for theirs, mine in zip(*results):
        assert torch.equal(mine, theirs)
