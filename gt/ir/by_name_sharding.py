"""Sharding rules for torch functions run by name (`torch_call`, and `torch_vjp` for
their gradients) whose rows of a batch are independent: the other calls have no rule,
and gather their inputs.

- `one_hot`: each element of the input makes a row of the output, at any rank.

- Convolutions, poolings, `interpolate`, `group_norm`, `pixel_shuffle`, `unfold`... on a
  batched input (batch first, N, C, ...): the input's batch shards stay where they are,
  other tensors (weights, biases) come whole, and every output is rows too.
- torch's recurrent kernels (`torch.lstm`, `torch.gru`, `torch.rnn_tanh`,
  `torch.rnn_relu`), which gt.nn's RNN, LSTM and GRU call, in the padded form (input,
  hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first) and
  without dropout in training (each worker would draw its own): the input's batch axis
  and the states' (axis 1) are sharded, and so are the output and the final states. The
  packed form's `batch_sizes` orders rows across the whole batch, so it has no rule.

In a gradient (`torch_vjp` of the same call) the primals and cotangents come as in the
forward; the gradients of batch-carrying inputs are rows, and each worker's gradient of a
weight is its rows' share of the sum: partial sums, as a batched matmul's are.
"""

from typing import Any

from gt.ir.sharding import Decision
from gt.ir.torch_arguments import is_tensor_input

F = 'torch.nn.functional.'
RECURRENT = frozenset({'torch.lstm', 'torch.gru', 'torch.rnn_tanh', 'torch.rnn_relu'})
STATE_BATCH_AXIS = 1  # h_0 and c_0 are (layers * directions, batch, size)
# Batch-first functions: the rank of a batched first input (None: any rank from 3 on).
BATCHED_RANK = {
    **{f'{prefix}{name}{n}d': n + 2 for n in (1, 2, 3) for prefix in (F, 'torch.')
       for name in ('conv', 'conv_transpose')},
    **{f'{F}{name}{n}d': n + 2 for n in (1, 2, 3)
       for name in ('max_pool', 'avg_pool', 'adaptive_avg_pool', 'adaptive_max_pool',
                    'lp_pool')},
    **{f'{F}max_pool{n}d_with_indices': n + 2 for n in (1, 2, 3)},
    f'{F}interpolate': None, f'{F}upsample': None, f'{F}group_norm': None,
    f'{F}pixel_shuffle': 4, f'{F}pixel_unshuffle': 4, f'{F}unfold': 4, f'{F}fold': 3,
    f'{F}local_response_norm': None,
}
# Functions whose output rows are the input's rows, at any rank from 1 on.
ANY_RANK_ROWS = frozenset({f'{F}one_hot'})


class Layout:
    """Which axis of each tensor input and output carries the batch ('R': none)."""

    def __init__(self, inputs: list[Any], output_axis: Any) -> None:
        self.inputs = inputs
        self.output_axis = output_axis  # index -> axis

    def sharded(self, kinds: tuple) -> bool:
        """Whether some batch-carrying input arrives sharded on its batch axis."""
        return any(isinstance(role, int) and kind == role
                   for kind, role in zip(kinds, self.inputs))


def _layout(fn: str, args: list, types: tuple) -> Layout | None:
    if fn in RECURRENT:
        return _recurrent_layout(args, len(types))
    if (fn not in BATCHED_RANK and fn not in ANY_RANK_ROWS) or not args or not \
            is_tensor_input(args[0]):
        return None
    first = args[0][1]
    ndim = len(types[first].shape)
    if fn in ANY_RANK_ROWS:
        if ndim < 1:
            return None
    elif ndim < 3 if BATCHED_RANK[fn] is None else ndim != BATCHED_RANK[fn]:
        return None  # unbatched: axis 0 is channels
    roles: list[Any] = ['R'] * len(types)
    roles[first] = 0
    return Layout(roles, lambda index: 0)


def _recurrent_layout(args: list, n_inputs: int) -> Layout | None:
    if len(args) != 9 or not isinstance(args[3], bool):
        return None  # not the padded form (the packed form has batch_sizes second)
    dropout, train, batch_first = args[5], args[6], args[8]
    if train and dropout:
        return None
    roles: list[Any] = ['R'] * n_inputs
    states = args[1][1] if args[1][0] in ('L', 'U') else [args[1]]
    output_axis = 1 - int(batch_first)
    for item, axis in [(args[0], output_axis)] + [(s, STATE_BATCH_AXIS) for s in states]:
        if not is_tensor_input(item):
            return None
        roles[item[1]] = axis
    return Layout(roles, lambda index: output_axis if index == 0 else STATE_BATCH_AXIS)


def call_rule(kinds: tuple, inputs: tuple, outputs: tuple, fn: str, args: list,
              **attrs: Any) -> Decision:
    """The forward: rows in, rows out."""
    layout = _layout(fn, args, inputs)
    if layout is None or not layout.sharded(kinds):
        return None
    return tuple(layout.inputs), tuple(layout.output_axis(i) for i in range(len(outputs)))


def vjp_rule(kinds: tuple, inputs: tuple, outputs: tuple, fn: str, args: list,
             n_inputs: int, wants: list, differentiable: list, **attrs: Any) -> Decision:
    """The gradient: the primals as in the forward, the cotangents as the outputs they
    belong to; rows of the batch-carrying inputs' gradients, partial sums of the rest."""
    layout = _layout(fn, args, inputs[:n_inputs])
    if layout is None or not layout.sharded(kinds[:n_inputs]):
        return None
    cotangents = tuple(layout.output_axis(index) for index in differentiable)
    made = tuple('P' if layout.inputs[index] == 'R' else layout.inputs[index]
                 for index in wants)
    return tuple(layout.inputs) + cotangents, made
