"""One time step of torch.nn's recurrent units, and the cell modules `RNNCell`,
`LSTMCell`, `GRUCell` built on it. The steps are GT ops (linear, sigmoid, tanh, chunk),
so their gradients come from the ops' rules; gt/nn/recurrent.py unrolls the same steps
over a sequence. Each step takes its input's gates already projected (`x @ W_ih.T + b_ih`),
as torch's CPU kernel does, so a layer projects a whole sequence in one matmul.
"""

import math
from typing import Any

from gt.creation import zeros
from gt.nn import functional as F
from gt.nn import init
from gt.nn.module import Module
from gt.nn.parameter import Parameter
from gt.tensor import Tensor

GATES = {'RNN_TANH': 1, 'RNN_RELU': 1, 'LSTM': 4, 'GRU': 3}


def rnn_step(input_gates: Tensor, hidden: Tensor, weight_hh: Tensor, bias_hh: Tensor | None,
             nonlinearity: str) -> Tensor:
    """Elman: h' = act(W_ih x + b_ih + W_hh h + b_hh)."""
    pre = F.linear(hidden, weight_hh, bias_hh) + input_gates
    return pre.tanh() if nonlinearity == 'tanh' else pre.relu()


def lstm_step(input_gates: Tensor, state: tuple[Tensor, Tensor], weight_hh: Tensor,
              bias_hh: Tensor | None, weight_hr: Tensor | None = None
              ) -> tuple[Tensor, Tensor]:
    """torch's gate order i, f, g, o; with a projection, h' = W_hr (o * tanh(c'))."""
    hidden, cell = state
    gates = F.linear(hidden, weight_hh, bias_hh) + input_gates
    i, f, g, o = gates.chunk(4, -1)
    cell = f.sigmoid() * cell + i.sigmoid() * g.tanh()
    hidden = o.sigmoid() * cell.tanh()
    if weight_hr is not None:
        hidden = F.linear(hidden, weight_hr)
    return hidden, cell


def gru_step(input_gates: Tensor, hidden: Tensor, weight_hh: Tensor,
             bias_hh: Tensor | None) -> Tensor:
    """torch's gate order r, z, n with n = tanh(W_in x + b_in + r * (W_hn h + b_hn)), and
    h' = (h - n) * z + n, torch's arrangement of (1 - z) * n + z * h."""
    x_r, x_z, x_n = input_gates.chunk(3, -1)
    h_r, h_z, h_n = F.linear(hidden, weight_hh, bias_hh).chunk(3, -1)
    reset = (h_r + x_r).sigmoid()
    update = (h_z + x_z).sigmoid()
    new = (x_n + h_n * reset).tanh()
    return (hidden - new) * update + new


def reset_uniform(module: Module, hidden_size: int) -> None:
    """torch's `reset_parameters` for recurrent modules: every parameter, in registration
    order, from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)); same seed, same weights."""
    bound = 1.0 / math.sqrt(hidden_size) if hidden_size > 0 else 0
    for parameter in module.parameters():
        init.uniform_(parameter, -bound, bound)


class RNNCellBase(Module):
    """Parameters `weight_ih` (gates * hidden, input), `weight_hh` (gates * hidden, hidden),
    `bias_ih`, `bias_hh`, and the checks torch makes of an input and its state."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        gates = num_chunks * hidden_size
        self.weight_ih = Parameter(zeros(gates, input_size, dtype=dtype))
        self.weight_hh = Parameter(zeros(gates, hidden_size, dtype=dtype))
        self.register_parameter('bias_ih', Parameter(zeros(gates, dtype=dtype)) if bias else None)
        self.register_parameter('bias_hh', Parameter(zeros(gates, dtype=dtype)) if bias else None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        reset_uniform(self, self.hidden_size)

    def extra_repr(self) -> str:
        text = f'{self.input_size}, {self.hidden_size}'
        if self.bias is not True:
            text += f', bias={self.bias}'
        if getattr(self, 'nonlinearity', 'tanh') != 'tanh':
            text += f', nonlinearity={self.nonlinearity}'
        return text

    def _batched(self, input: Tensor, states: list[Tensor | None], label: str
                 ) -> tuple[bool, Tensor, list[Tensor]]:
        """torch's checks, in its order and with its exception types; the input and states
        as (batch, features), zeros for absent states."""
        if input.dim() not in (1, 2):
            raise ValueError(f'{type(self).__name__}: Expected input to be 1D or 2D, got '
                             f'{input.dim()}D instead')
        for index, state in enumerate(states):
            if state is not None and state.dim() not in (1, 2):
                name = f'hx[{index}]' if label == 'hx' else 'hidden'
                raise ValueError(f'{type(self).__name__}: Expected {name} to be 1D or 2D, got '
                                 f'{state.dim()}D instead')
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if input.shape[1] != self.input_size:
            raise RuntimeError(f'input has inconsistent input_size: got {input.shape[1]} '
                               f'expected {self.input_size}')
        batch = input.shape[0]
        absent = zeros(batch, self.hidden_size, dtype=input.dtype)
        result = []
        for index, state in enumerate(states):
            if state is None:
                result.append(absent)
                continue
            state = state if is_batched else state.unsqueeze(0)
            if state.shape[0] != batch:
                raise RuntimeError(f"Input batch size {batch} doesn't match hidden{index} "
                                   f'batch size {state.shape[0]}')
            if state.shape[1] != self.hidden_size:
                raise RuntimeError(f'hidden{index} has inconsistent hidden_size: got '
                                   f'{state.shape[1]}, expected {self.hidden_size}')
            result.append(state)
        return is_batched, input, result


class RNNCell(RNNCellBase):
    """h' = tanh(W_ih x + b_ih + W_hh h + b_hh), or relu."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = 'tanh', device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        is_batched, input, (hx,) = self._batched(input, [hx], 'hidden')
        if self.nonlinearity not in ('tanh', 'relu'):
            raise RuntimeError(f'Unknown nonlinearity: {self.nonlinearity}')
        hidden = rnn_step(F.linear(input, self.weight_ih, self.bias_ih), hx, self.weight_hh,
                          self.bias_hh, self.nonlinearity)
        return hidden if is_batched else hidden.squeeze(0)


class LSTMCell(RNNCellBase):
    """(h', c') from (h, c); hx=None starts both at zeros."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None
                ) -> tuple[Tensor, Tensor]:
        states = [None, None] if hx is None else list(hx)
        is_batched, input, states = self._batched(input, states, 'hx')
        hidden, cell = lstm_step(F.linear(input, self.weight_ih, self.bias_ih), tuple(states),
                                 self.weight_hh, self.bias_hh)
        return (hidden, cell) if is_batched else (hidden.squeeze(0), cell.squeeze(0))


class GRUCell(RNNCellBase):
    """h' from h through torch's reset (r), update (z) and new (n) gates."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        is_batched, input, (hx,) = self._batched(input, [hx], 'hidden')
        hidden = gru_step(F.linear(input, self.weight_ih, self.bias_ih), hx, self.weight_hh,
                          self.bias_hh)
        return hidden if is_batched else hidden.squeeze(0)
