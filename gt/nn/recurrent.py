"""torch.nn's recurrent layers `RNN`, `LSTM` and `GRU`: multi-layer, optionally
bidirectional, with torch's arguments, parameter names and order (so state dicts load both
ways), initialization (same seed, same weights), checks and output shapes.

A padded batch runs as one call of torch's kernel by name (`torch.lstm`, `torch.gru`,
`torch.rnn_tanh`, `torch.rnn_relu`), and so does a packed sequence (torch's packed form
of the same kernels, its `batch_sizes` passed as host indices: the kernel reads them on
the CPU, even for a GPU's data). The gradient is the call's vector-Jacobian product
(gt/ir/ops/torch_call_gradients.py), and a padded batch sharded over workers stays
sharded (gt/ir/by_name_sharding.py). Unrolled, a step was a dozen nodes to record, plan
and run; an LSTM language model's training step took 5x torch's time, and now 2-3x.

Dropout between layers in training is unrolled in Python over the steps of
gt/nn/recurrent_cells.py, whose gradients come from the ops' own rules: the masks are
the session generator's draws, so a seed gives torch's. A packed sequence then runs
padded, each sequence's state kept past its end (`where` on a mask), and its output is
packed again.
"""

import numbers
import warnings
from typing import Any

from gt import fallback
from gt.creation import tensor, zeros
from gt.functional import cat, stack, where
from gt.ir.torch_arguments import HostIndices
from gt.nn import functional as F
from gt.nn.module import Module
from gt.nn.parameter import Parameter
from gt.nn.recurrent_cells import GATES, gru_step, lstm_step, reset_uniform, rnn_step
from gt.nn.utils.rnn import PackedSequence, pack_steps, pad_steps
from gt.tensor import Tensor

State = Tensor | tuple[Tensor, Tensor]
# torch's kernel for each mode, run by name on the worker.
FUSED = {'LSTM': 'torch.lstm', 'GRU': 'torch.gru', 'RNN_TANH': 'torch.rnn_tanh',
         'RNN_RELU': 'torch.rnn_relu'}


class RNNBase(Module):
    """What RNN, LSTM and GRU share: torch's argument checks, the parameters
    `weight_ih_l{k}`, `weight_hh_l{k}`, `bias_ih_l{k}`, `bias_hh_l{k}` (and `weight_hr_l{k}`
    for a projected LSTM), `_reverse` for the second direction, registered in torch's
    order, and the unrolled layers. `mode` is torch's: RNN_TANH, RNN_RELU, LSTM or GRU."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        _check_arguments(input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         proj_size)
        if mode not in GATES:
            raise ValueError('Unrecognized RNN mode: ' + mode)
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional = float(dropout), bidirectional
        self.proj_size = proj_size
        gate_size = GATES[mode] * hidden_size
        real_hidden_size = proj_size if proj_size > 0 else hidden_size
        directions = 2 if bidirectional else 1
        self._flat_weights_names: list[str] = []
        self._all_weights: list[list[str]] = []
        for layer in range(num_layers):
            for direction in range(directions):
                layer_input_size = input_size if layer == 0 else real_hidden_size * directions
                shapes = {'weight_ih': (gate_size, layer_input_size),
                          'weight_hh': (gate_size, real_hidden_size)}
                if bias:
                    shapes.update(bias_ih=(gate_size,), bias_hh=(gate_size,))
                if proj_size > 0:
                    shapes['weight_hr'] = (proj_size, hidden_size)
                suffix = '_reverse' if direction == 1 else ''
                names = []
                for kind, shape in shapes.items():
                    name = f'{kind}_l{layer}{suffix}'
                    setattr(self, name, Parameter(zeros(*shape, dtype=dtype)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        reset_uniform(self, self.hidden_size)

    def flatten_parameters(self) -> None:
        """A no-op, as torch's is off cuDNN: GT keeps no flat weight buffer."""

    @property
    def all_weights(self) -> list[list[Parameter]]:
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def extra_repr(self) -> str:
        text = f'{self.input_size}, {self.hidden_size}'
        if self.proj_size != 0:
            text += f', proj_size={self.proj_size}'
        if self.num_layers != 1:
            text += f', num_layers={self.num_layers}'
        if self.bias is not True:
            text += f', bias={self.bias}'
        if self.batch_first is not False:
            text += f', batch_first={self.batch_first}'
        if self.dropout != 0:
            text += f', dropout={self.dropout}'
        if self.bidirectional is not False:
            text += f', bidirectional={self.bidirectional}'
        return text

    # ---- checks, as torch makes them -----------------------------------------------------
    def _batched(self, input: Tensor, states: list[Tensor | None], name: str
                 ) -> tuple[bool, Tensor, list[Tensor | None]]:
        """The input with a batch dim (torch's unbatched form gets one) and the states as
        (layers * directions, batch, size); torch's dim checks and exception types."""
        if input.dim() not in (2, 3):
            noun = ' tensor' if name == 'RNN' else ''
            raise ValueError(f'{name}: Expected input to be 2D or 3D, got {input.dim()}D'
                             f'{noun} instead')
        is_batched = input.dim() == 3
        given = [state for state in states if state is not None]
        want = 3 if is_batched else 2
        if given and any(state.dim() != want for state in given):
            form = 'batched 3-D' if is_batched else 'unbatched 2-D'
            if len(states) == 1:
                raise RuntimeError(f'For {form} input, hx should also be {want}-D but got '
                                   f'{given[0].dim()}-D tensor')
            raise RuntimeError(f'For {form} input, hx and cx should also be {want}-D but got '
                               f'({states[0].dim()}-D, {states[1].dim()}-D) tensors')
        if not is_batched:
            input = input.unsqueeze(0 if self.batch_first else 1)
            states = [None if state is None else state.unsqueeze(1) for state in states]
        return is_batched, input, states

    def _state_sizes(self) -> tuple[int, list[int]]:
        """(layers * directions, [h size, c size]): a state's first and last dims."""
        depth = self.num_layers * (2 if self.bidirectional else 1)
        return depth, [self.proj_size or self.hidden_size, self.hidden_size]

    def _check_forward_args(self, input: Tensor, batch: int,
                            states: list[Tensor | None]) -> None:
        weight_dtype = self.weight_ih_l0.dtype
        if input.dtype != weight_dtype:
            raise ValueError(f'RNN input dtype ({input.dtype}) does not match weight dtype '
                             f'({weight_dtype}). Convert input: input.to({weight_dtype}), or '
                             f'convert model: model.to({input.dtype})')
        if input.size(-1) != self.input_size:
            raise RuntimeError(f'input.size(-1) must be equal to input_size. Expected '
                               f'{self.input_size}, got {input.size(-1)}')
        depth, sizes = self._state_sizes()
        for index, state in enumerate(states):
            expected = (depth, batch, sizes[index])
            if state is not None and tuple(state.shape) != expected:
                label = 'hidden' if len(states) == 1 else f'hidden[{index}]'
                raise RuntimeError(f'Expected {label} size {expected}, got {list(state.shape)}')

    # ---- the unrolled layers -------------------------------------------------------------
    def _step(self, input_gates: Tensor, state: State, weights: list[Tensor | None]
              ) -> State:
        _, weight_hh, _, bias_hh, weight_hr = weights
        if self.mode == 'LSTM':
            return lstm_step(input_gates, state, weight_hh, bias_hh, weight_hr)
        if self.mode == 'GRU':
            return gru_step(input_gates, state, weight_hh, bias_hh)
        return rnn_step(input_gates, state, weight_hh, bias_hh,
                        'tanh' if self.mode == 'RNN_TANH' else 'relu')

    def _run(self, input: Tensor, initial: list[State], batch_sizes: Any = None
             ) -> tuple[Tensor, list[State]]:
        """Each layer over the whole (time, batch, features) sequence, both directions,
        dropout between layers when training; the output and each (layer, direction)'s
        last state, in torch's order. With `batch_sizes` (a packed sequence's, sorted by
        length) a row's state changes only while its sequence lasts, so the last state is
        each sequence's own, and the reverse direction starts at each one's end."""
        directions = 2 if self.bidirectional else 1
        length = input.shape[0]
        masks = _step_masks(batch_sizes, input.shape[1], length)
        finals = []
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                suffix = '_reverse' if direction == 1 else ''
                weights = [getattr(self, f'{kind}_l{layer}{suffix}', None) for kind in
                           ('weight_ih', 'weight_hh', 'bias_ih', 'bias_hh', 'weight_hr')]
                # One matmul projects every step's input; the steps add the hidden's.
                projected = F.linear(input, weights[0], weights[2]).split(1, 0)
                state = initial[layer * directions + direction]
                hiddens: list[Any] = [None] * length
                steps = range(length) if direction == 0 else reversed(range(length))
                for t in steps:
                    new = self._step(projected[t].squeeze(0), state, weights)
                    state = new if masks[t] is None else _kept(masks[t], new, state)
                    hiddens[t] = state[0] if isinstance(state, tuple) else state
                outputs.append(stack(hiddens, 0))
                finals.append(state)
            input = outputs[0] if directions == 1 else cat(outputs, -1)
            if layer < self.num_layers - 1:
                input = self._dropped(input, batch_sizes)
        return input, finals

    def _dropped(self, output: Tensor, batch_sizes: Any) -> Tensor:
        """Dropout between layers; a packed sequence's on its packed data, in packed
        order, as torch's kernel draws it (padded, the mask would be another draw)."""
        if batch_sizes is None:
            return F.dropout(output, self.dropout, self.training)
        packed = F.dropout(pack_steps(output, batch_sizes), self.dropout, self.training)
        return pad_steps(packed, batch_sizes, output.shape[0])

    def _forward(self, input: Tensor, states: list[Tensor | None], name: str
                 ) -> tuple[Tensor, list[Tensor]]:
        """The output and the final states, stacked as torch's h_n (and c_n)."""
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, states)
        is_batched, input, states = self._batched(input, states, name)
        sequence = input.transpose(0, 1) if self.batch_first else input
        output, final_states = self._forward_sequence(sequence, states)
        output = output.transpose(0, 1) if self.batch_first else output
        if not is_batched:
            output = output.squeeze(0 if self.batch_first else 1)
            final_states = [state.squeeze(1) for state in final_states]
        return output, final_states

    def _forward_sequence(self, sequence: Tensor, states: list[Tensor | None],
                          batch_sizes: Any = None) -> tuple[Tensor, list[Tensor]]:
        """A time-first batched sequence: its output and the final states."""
        if batch_sizes is None and not self._drops_between_layers():
            if self.mode != 'LSTM' and any(
                    getattr(self, name).requires_grad for name in self._flat_weights_names):
                # torch's GRU and RNN kernels fold a transposed (batch-first) input into
                # one product only when the weights require grad, as they never do on a
                # worker: laid out as that fold copies it, the bits are torch's.
                sequence = sequence.contiguous()
            return self._fused(sequence, states)
        batch = sequence.size(1)
        self._check_forward_args(sequence, batch, states)
        depth, sizes = self._state_sizes()
        per_layer = []
        for index, state in enumerate(states):
            if state is None:
                per_layer.append([zeros(batch, sizes[index], dtype=sequence.dtype)] * depth)
            else:
                per_layer.append([state[k] for k in range(depth)])
        initial = list(zip(*per_layer)) if len(states) == 2 else per_layer[0]
        output, finals = self._run(sequence, initial, batch_sizes)
        if len(states) == 2:
            return output, [stack([state[index] for state in finals], 0) for index in (0, 1)]
        return output, [stack(finals, 0)]

    def _drops_between_layers(self) -> bool:
        return self.training and self.dropout > 0 and self.num_layers > 1

    def _fused(self, input: Tensor, states: list[Tensor | None], batch_sizes: Any = None
               ) -> tuple[Tensor, list[Tensor]]:
        """The whole layer stack as one call of torch's own kernel (`torch.lstm` and kin),
        whose gradient is its vector-Jacobian product: one node for what unrolled is
        dozens per step. `input` is a time-first sequence, or with `batch_sizes` a packed
        sequence's data for torch's packed kernel, the sizes passed as host indices. It
        never drops (`train` only enables dropout, and cuDNN's backward refuses to run
        after an evaluation-mode forward)."""
        batch = input.size(1) if batch_sizes is None else int(batch_sizes[0])
        self._check_forward_args(input, batch, states)
        depth, sizes = self._state_sizes()
        states = [zeros(depth, batch, size, dtype=input.dtype) if state is None else state
                  for state, size in zip(states, sizes)]
        initial = tuple(states) if len(states) == 2 else states[0]
        weights = [getattr(self, name) for name in self._flat_weights_names]
        settings = (self.bias, self.num_layers, 0.0, True, self.bidirectional)
        if batch_sizes is None:
            args = (input, initial, weights, *settings, False)
        else:
            args = (input, HostIndices(batch_sizes.tolist()), initial, weights, *settings)
        output, *finals = fallback.call(FUSED[self.mode], args, {})
        return output, finals

    def _forward_packed(self, packed: PackedSequence, states: list[Tensor | None]
                        ) -> tuple[PackedSequence, list[Tensor]]:
        """torch's packed forward: the states given and returned are in the order of the
        sequences given (batch_first does not apply)."""
        data, batch_sizes, sorted_indices, unsorted_indices = packed
        if sorted_indices is not None:
            states = [None if state is None else state.index_select(1, sorted_indices)
                      for state in states]
        if self._drops_between_layers():
            sequence = pad_steps(data, batch_sizes, len(batch_sizes))
            output, final_states = self._forward_sequence(sequence, states, batch_sizes)
            data = pack_steps(output, batch_sizes)
        else:
            data, final_states = self._fused(data, states, batch_sizes)
        if unsorted_indices is not None:
            final_states = [state.index_select(1, unsorted_indices) for state in final_states]
        return packed._replace(data=data), final_states


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(W_ih x_t + b_ih + W_hh h_(t-1) + b_hh), or relu.
    forward(input, hx=None) -> (output, h_n)."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 nonlinearity: str = 'tanh', bias: bool = True, batch_first: bool = False,
                 dropout: float = 0.0, bidirectional: bool = False, device: Any = None,
                 dtype: Any = None, **kwargs: Any) -> None:
        _no_projection(kwargs)
        self.nonlinearity = nonlinearity
        if nonlinearity not in ('tanh', 'relu'):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             "'relu'.")
        super().__init__('RNN_TANH' if nonlinearity == 'tanh' else 'RNN_RELU', input_size,
                         hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         0, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> tuple[Tensor, Tensor]:
        output, (hidden,) = self._forward(input, [hx], 'RNN')
        return output, hidden


class LSTM(RNNBase):
    """Long short-term memory, torch's gates i, f, g, o; `proj_size` > 0 projects each
    hidden state through `weight_hr_l{k}`. forward(input, (h_0, c_0)=None) ->
    (output, (h_n, c_n))."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__('LSTM', input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, proj_size, device, dtype)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None
                ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        output, (hidden, cell) = self._forward(input, [None, None] if hx is None else
                                               list(hx), 'LSTM')
        return output, (hidden, cell)


class GRU(RNNBase):
    """Gated recurrent unit, torch's gates r, z, n with
    n = tanh(W_in x + b_in + r * (W_hn h + b_hn)). forward(input, hx=None) -> (output, h_n)."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, device: Any = None, dtype: Any = None,
                 **kwargs: Any) -> None:
        _no_projection(kwargs)
        super().__init__('GRU', input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, 0, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> tuple[Tensor, Tensor]:
        output, (hidden,) = self._forward(input, [hx], 'GRU')
        return output, hidden


def _step_masks(batch_sizes: Any, batch: int, length: int) -> list[Tensor | None]:
    """Per step, which rows of a length-sorted batch still run ((batch, 1) booleans), or
    None when all do (every step of a padded batch, which has no `batch_sizes`)."""
    masks: list[Tensor | None] = [None] * length
    sizes = [] if batch_sizes is None else batch_sizes.tolist()
    if any(size < batch for size in sizes):
        running = tensor([[row < size for row in range(batch)] for size in sizes])
        for step, size in enumerate(sizes):
            if size < batch:
                masks[step] = running[step].unsqueeze(1)
    return masks


def _kept(mask: Tensor, new: State, old: State) -> State:
    """The new state in the rows of `mask`, the old one elsewhere."""
    if isinstance(new, tuple):
        return tuple(where(mask, a, b) for a, b in zip(new, old))
    return where(mask, new, old)


def _no_projection(kwargs: dict) -> None:
    """torch's RNN and GRU refuse `proj_size` with a ValueError, not a TypeError."""
    if 'proj_size' in kwargs:
        raise ValueError('proj_size argument is only supported for LSTM, not RNN or GRU')
    if kwargs:
        raise TypeError(f'unexpected keyword argument(s): {", ".join(kwargs)}')


def _check_arguments(input_size: Any, hidden_size: Any, num_layers: int, bias: Any,
                     batch_first: Any, dropout: Any, proj_size: int) -> None:
    """torch's RNNBase checks, in its order, with its exception types and warning."""
    if (not isinstance(dropout, numbers.Number) or isinstance(dropout, bool)
            or not 0 <= dropout <= 1):
        raise ValueError('dropout should be a number in range [0, 1] representing the '
                         'probability of an element being zeroed')
    if dropout > 0 and num_layers == 1:
        warnings.warn('dropout option adds dropout after all but last recurrent layer, so '
                      'non-zero dropout expects num_layers greater than 1, but got '
                      f'dropout={dropout} and num_layers={num_layers}', stacklevel=4)
    for name, value, kind in (('bias', bias, bool), ('batch_first', batch_first, bool),
                              ('input_size', input_size, int)):
        if not isinstance(value, kind):
            raise TypeError(f'{name} should be of type {kind.__name__}, got: '
                            f'{type(value).__name__}')
    if input_size <= 0:
        raise ValueError('input_size must be greater than zero')
    if not isinstance(hidden_size, int):
        raise TypeError(f'hidden_size should be of type int, got: {type(hidden_size).__name__}')
    if hidden_size <= 0:
        raise ValueError('hidden_size must be greater than zero')
    if num_layers <= 0:
        raise ValueError('num_layers must be greater than zero')
    if proj_size < 0:
        raise ValueError('proj_size should be a positive integer or zero to disable '
                         'projections')
    if proj_size >= hidden_size:
        raise ValueError('proj_size has to be smaller than hidden_size')
