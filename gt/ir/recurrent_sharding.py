"""Sharding rules for torch's recurrent kernels run by name (`torch.lstm`, `torch.gru`,
`torch.rnn_tanh`, `torch.rnn_relu`), which gt.nn's RNN, LSTM and GRU call: the other
`torch_call`s have none, and gather.

A batch's sequences are independent, so a batch sharded over workers runs where it
lives: each worker runs the kernel on its rows with the whole weights, and its output and
final states are its rows of torch's. In the gradient (`torch_vjp` of the same call) the
input's and the initial states' gradients are rows too, and each worker's weight
gradients are its rows' share of the sum: partial sums, as a batched matmul's are.

Only the padded form is covered (input, hx, params, has_biases, num_layers, dropout,
train, bidirectional, batch_first), without dropout in training, which would draw on
each worker: the packed form's `batch_sizes` orders the rows across the whole batch.
"""

from typing import Any

from gt.ir.sharding import Decision, Kind

RECURRENT = frozenset({'torch.lstm', 'torch.gru', 'torch.rnn_tanh', 'torch.rnn_relu'})
STATE_BATCH_AXIS = 1  # h_0 and c_0 are (layers * directions, batch, size)


def _roles(fn: str, args: list, n_inputs: int) -> list[Any] | None:
    """Each tensor input's batch axis, or 'R' for a weight; None for a call not covered."""
    if fn not in RECURRENT or len(args) != 9 or not isinstance(args[3], bool):
        return None  # not the padded form (the packed form has batch_sizes second)
    dropout, train, batch_first = args[5], args[6], args[8]
    if train and dropout:
        return None
    roles: list[Any] = ['R'] * n_inputs
    states = args[1][1] if args[1][0] in ('L', 'U') else [args[1]]
    for item, axis in [(args[0], 1 - int(batch_first))] + [(s, STATE_BATCH_AXIS)
                                                            for s in states]:
        if item[0] != 'T':
            return None
        roles[item[1]] = axis
    return roles


def _sharded(kinds: tuple, roles: list) -> bool:
    """Whether some batch-carrying input arrives sharded on its batch axis."""
    return any(isinstance(role, int) and kind == role for kind, role in zip(kinds, roles))


def call_rule(kinds: tuple, inputs: tuple, outputs: tuple, fn: str, args: list,
              **attrs: Any) -> Decision:
    """The forward: rows in, rows out (output on the input's batch axis, then h_n, c_n)."""
    roles = _roles(fn, args, len(inputs))
    if roles is None or not _sharded(kinds, roles):
        return None
    output_axis = 1 - int(args[8])
    made: tuple[Kind, ...] = (output_axis,) + (STATE_BATCH_AXIS,) * (len(outputs) - 1)
    return tuple(roles), made


def vjp_rule(kinds: tuple, inputs: tuple, outputs: tuple, fn: str, args: list,
             n_inputs: int, wants: list, differentiable: list, **attrs: Any) -> Decision:
    """The gradient: the primals as in the forward, the cotangents as the outputs they
    belong to; rows of the input's and states' gradients, partial sums of the weights'."""
    roles = _roles(fn, args, n_inputs)
    if roles is None or not _sharded(kinds[:n_inputs], roles):
        return None
    output_axis = 1 - int(args[8])
    cotangents = [output_axis if index == 0 else STATE_BATCH_AXIS for index in differentiable]
    made = tuple('P' if roles[index] == 'R' else roles[index] for index in wants)
    return tuple(roles) + tuple(cotangents), made
