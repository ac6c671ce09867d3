"""gt.nn.utils.rnn against torch.nn.utils.rnn: the same sequences give the same padded
batch for every layout, side and padding value, the same packed data, batch sizes and
permutations, and unpack to the same batch and lengths; gradients reach the sequences.
GT's RNN, LSTM and GRU take packed sequences as torch's do: the same packed output and
final states (in the order the sequences were given) and gradients, within the
recurrent layers' tolerance."""

import pytest
import torch
from nn_check import assert_close, both, randn

import gt
import gt.nn as nn
from gt.nn.utils.rnn import (
    PackedSequence,
    pack_padded_sequence,
    pack_sequence,
    pad_packed_sequence,
    pad_sequence,
    unpack_sequence,
    unpad_sequence,
)

LENGTHS = [3, 1, 5, 0, 5]
PACKED_LENGTHS = [2, 5, 1, 5, 3]
RECURRENT_TOLERANCE = {'rtol': 1e-4, 'atol': 1e-5}  # as tests/nn/test_nn_recurrent.py


@pytest.mark.parametrize('padding_side', ['right', 'left'])
@pytest.mark.parametrize('batch_first', [False, True], ids=['time-first', 'batch-first'])
@pytest.mark.parametrize('trailing', [(), (2,), (2, 3)], ids=['1d', '2d', '3d'])
def test_pad_sequence_matches_torch(trailing, batch_first, padding_side):
    pairs = [both(randn(length, *trailing), requires_grad=True) for length in LENGTHS]
    mine = pad_sequence([p[0] for p in pairs], batch_first, -1.5, padding_side)
    theirs = torch.nn.utils.rnn.pad_sequence([p[1] for p in pairs], batch_first, -1.5,
                                             padding_side)
    assert torch.equal(mine.data, theirs)
    weights = randn(*theirs.shape)
    (mine * gt.tensor(weights)).sum().backward()
    (theirs * weights).sum().backward()
    for gt_leaf, torch_leaf in pairs:
        assert_close(gt_leaf.grad, torch_leaf.grad)


@pytest.mark.parametrize('dtype', [torch.int64, torch.float64, torch.bfloat16], ids=str)
def test_dtypes_and_a_tensor_of_sequences(dtype):
    sequences = [torch.tensor([1, 2, 3]).to(dtype), torch.tensor([4]).to(dtype)]
    mine = pad_sequence([gt.tensor(s) for s in sequences], padding_value=7.6)
    theirs = torch.nn.utils.rnn.pad_sequence(sequences, padding_value=7.6)
    assert mine.dtype == theirs.dtype and torch.equal(mine.data, theirs)
    rows = randn(3, 4)  # a tensor is a sequence of its rows
    assert torch.equal(pad_sequence(gt.tensor(rows), batch_first=True).data,
                       torch.nn.utils.rnn.pad_sequence(rows, batch_first=True))


@pytest.mark.parametrize('batch_first', [False, True], ids=['time-first', 'batch-first'])
def test_unpad_sequence_undoes_padding(batch_first):
    sequences = [randn(length, 2) for length in LENGTHS]
    padded = pad_sequence([gt.tensor(s) for s in sequences], batch_first)
    for lengths in (LENGTHS, gt.tensor(LENGTHS)):
        pieces = unpad_sequence(padded, lengths, batch_first)
        assert [torch.equal(p.data, s) for p, s in zip(pieces, sequences)] == [True] * 5


def test_errors_as_in_torch():
    with pytest.raises(RuntimeError, match='padding_side to be one of left or right'):
        pad_sequence([gt.ones(2)], padding_side='middle')
    with pytest.raises(RuntimeError, match='empty list of sequences'):
        pad_sequence([])
    with pytest.raises(RuntimeError, match='Expected iterable'):
        pad_sequence(3)
    with pytest.raises(RuntimeError, match='trailing shape'):
        pad_sequence([gt.ones(2, 3), gt.ones(2, 2)])
    assert nn.utils.rnn.pad_sequence is pad_sequence


@pytest.mark.parametrize('batch_first', [False, True], ids=['time-first', 'batch-first'])
@pytest.mark.parametrize('lengths, enforce_sorted', [([5, 5, 3, 2, 1], True),
                                                     (PACKED_LENGTHS, False)],
                         ids=['sorted', 'unsorted'])
def test_packing_round_trips_as_in_torch(lengths, enforce_sorted, batch_first):
    mine, theirs = both(randn(*((5, 6) if batch_first else (6, 5)), 2), requires_grad=True)
    packed = pack_padded_sequence(mine, gt.tensor(lengths), batch_first, enforce_sorted)
    expected = torch.nn.utils.rnn.pack_padded_sequence(theirs, lengths, batch_first,
                                                       enforce_sorted)
    assert isinstance(packed, PackedSequence)
    assert torch.equal(packed.data.data, expected.data)
    assert torch.equal(packed.batch_sizes, expected.batch_sizes)
    for got, want in [(packed.sorted_indices, expected.sorted_indices),
                      (packed.unsorted_indices, expected.unsorted_indices)]:
        assert (got is None and want is None) or torch.equal(got.data, want)
    padded, padded_lengths = pad_packed_sequence(packed, batch_first, -2.0, total_length=7)
    want, want_lengths = torch.nn.utils.rnn.pad_packed_sequence(expected, batch_first, -2.0,
                                                                total_length=7)
    assert torch.equal(padded.data, want) and torch.equal(padded_lengths.data, want_lengths)
    weights = randn(*want.shape)
    (padded * gt.tensor(weights)).sum().backward()
    (want * weights).sum().backward()
    assert torch.equal(mine.grad.data, theirs.grad)


def test_pack_sequence_and_unpack_sequence():
    sequences = [randn(length, 3) for length in PACKED_LENGTHS]
    packed = pack_sequence([gt.tensor(s) for s in sequences], enforce_sorted=False)
    expected = torch.nn.utils.rnn.pack_sequence(sequences, enforce_sorted=False)
    assert torch.equal(packed.data.data, expected.data)
    assert [torch.equal(p.data, s) for p, s in zip(unpack_sequence(packed), sequences)] == [
        True] * len(sequences)
    assert packed.to(torch.float64).data.dtype == torch.float64


@pytest.mark.parametrize('with_state', [False, True], ids=['zeros', 'h0'])
@pytest.mark.parametrize('name, options', [
    ('LSTM', {}), ('GRU', {'num_layers': 2, 'bidirectional': True}),
    ('RNN', {'bidirectional': True}),
    ('LSTM', {'num_layers': 2, 'bidirectional': True, 'batch_first': True})],
    ids=['LSTM', 'GRU-2-bidirectional', 'RNN-bidirectional', 'LSTM-2-bidirectional-bf'])
def test_recurrent_layers_take_packed_sequences(name, options, with_state):
    theirs = getattr(torch.nn, name)(3, 4, **options)
    mine = getattr(nn, name)(3, 4, **options)
    mine.load_state_dict(theirs.state_dict())
    x_mine, x_theirs = both(randn(5, 5, 3), requires_grad=True)
    batch_first = options.get('batch_first', False)
    packed = pack_padded_sequence(x_mine, PACKED_LENGTHS, batch_first, enforce_sorted=False)
    expected = torch.nn.utils.rnn.pack_padded_sequence(x_theirs, PACKED_LENGTHS, batch_first,
                                                       enforce_sorted=False)
    args_mine, args_theirs = [], []
    if with_state:
        depth = options.get('num_layers', 1) * (2 if options.get('bidirectional') else 1)
        states = [both(randn(depth, 5, 4)) for _ in range(2 if name == 'LSTM' else 1)]
        args_mine = [tuple(s[0] for s in states) if name == 'LSTM' else states[0][0]]
        args_theirs = [tuple(s[1] for s in states) if name == 'LSTM' else states[0][1]]
    output, state = mine(packed, *args_mine)
    want_output, want_state = theirs(expected, *args_theirs)
    assert isinstance(output, PackedSequence)
    assert torch.equal(output.batch_sizes, want_output.batch_sizes)
    got = [output.data, *(state if isinstance(state, tuple) else (state,))]
    want = [want_output.data, *(want_state if isinstance(want_state, tuple) else (want_state,))]
    total_mine, total_theirs = 0, 0
    for index, (a, b) in enumerate(zip(got, want)):
        assert_close(a, b, **RECURRENT_TOLERANCE)
        weights = randn(*b.shape) + index
        total_mine = total_mine + (a * gt.tensor(weights)).sum()
        total_theirs = total_theirs + (b * weights).sum()
    total_mine.backward()
    total_theirs.backward()
    assert_close(x_mine.grad, x_theirs.grad, **RECURRENT_TOLERANCE)
    grads = dict(theirs.named_parameters())
    for parameter_name, parameter in mine.named_parameters():
        assert_close(parameter.grad, grads[parameter_name].grad, **RECURRENT_TOLERANCE)


def test_a_packed_sequence_is_one_call_of_torchs_packed_kernel_unless_it_drops():
    """The packed kernel takes the batch sizes as host indices: one node for the layer
    stack and one for its gradient. With dropout in training it is unrolled, padded."""
    layer = nn.GRU(3, 4, num_layers=2, dropout=0.5).eval()
    x = gt.tensor(randn(5, 5, 3), requires_grad=True)
    packed = pack_padded_sequence(x, PACKED_LENGTHS, enforce_sorted=False)
    output = layer(packed)[0].data
    output.sum().backward()
    ir = gt.debug.dump_ir(show=False)
    # PACKED_LENGTHS sorted are 5, 5, 3, 2, 1: 5 sequences run 1 step, 4 the second...
    assert ir.count('fn=torch.gru, args=[[T,0],[H,[5,4,3,2,2]],') == 2, ir
    packed = pack_padded_sequence(x, PACKED_LENGTHS, enforce_sorted=False)
    layer.train()(packed)[0].data.sum().backward()
    assert 'fn=torch.gru' not in gt.debug.dump_ir(show=False)


def test_packing_errors_as_in_torch():
    padded = gt.randn(4, 3, 2)
    for lengths, enforce_sorted, problem in [
            ([2, 3, 1], True, 'must be sorted in decreasing order'),
            ([3, 2, 0], True, 'has to be greater than 0'),
            ([3, 2], True, r'Expected `len\(lengths\)` to be equal to batch_size'),
            ([5, 2, 1], True, 'longer than the input')]:
        with pytest.raises(RuntimeError, match=problem):
            pack_padded_sequence(padded, lengths, enforce_sorted=enforce_sorted)
    with pytest.raises(ValueError, match='Expected total_length to be at least'):
        pad_packed_sequence(pack_padded_sequence(padded, [3, 2, 1]), total_length=2)


def test_a_packed_sequence_converts_as_torchs():
    """Ported code moves and casts packed batches (`packed.cuda()`, `.double()`)."""
    values = torch.arange(12.0).reshape(3, 2, 2)
    conversions = [lambda p: p.cuda(), lambda p: p.cpu(), lambda p: p.pin_memory(),
                   lambda p: p.double(), lambda p: p.half(), lambda p: p.long(),
                   lambda p: p.int(), lambda p: p.short(), lambda p: p.char(),
                   lambda p: p.byte(), lambda p: p.float()]
    ours = gt.nn.utils.rnn.pack_padded_sequence(gt.tensor(values), [3, 2])
    theirs = torch.nn.utils.rnn.pack_padded_sequence(values, [3, 2])
    for convert in conversions[3:]:
        got, want = convert(ours), convert(theirs)
        assert type(got) is type(ours)
        assert got.data.dtype == want.data.dtype and torch.equal(got.data.data, want.data)
        assert torch.equal(got.batch_sizes, want.batch_sizes)
    for convert in conversions[:3]:
        assert convert(ours) is ours or convert(ours) == ours
    assert ours.is_cuda is False and ours.is_pinned() is False
