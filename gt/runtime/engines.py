"""Engines: how a worker holds tensors. `torch` (the default; CUDA when present) runs the
op table's torch rows; `numpy` runs its numpy rows, as a reference to test against."""

import contextlib
import json
import math
import os
from typing import Any, Callable

import numpy as np
import torch

from gt.ir.dtypes import DTYPE_NAMES, NUMPY_DTYPES, TORCH_DTYPES
from gt.runtime import environment

LITERALS_CACHED = 256


class SessionContext:
    """The RunContext a session's creation ops see: device, generator, the message's data
    and literals. Literal tensors are cached: loops send the same few numbers."""

    def __init__(self, device: Any, generator: Any, make_literal: Any):
        self.device = device
        self.generator = generator
        self.data: list = []
        self.literals: list = []
        # Moves (see gt.runtime.exchange): who carries them, how to wait, for which run.
        self.exchange: Any = None
        self.wait: Any = None
        self.session = -1
        self.base = 0
        self.moved: dict = {}
        self._make_literal = make_literal
        self._literal_cache: dict = {}

    def literal(self, slot: int, dtype: str) -> Any:
        value = self.literals[slot]
        key = (value, type(value), dtype, math.copysign(1.0, value))  # 0.0 is not -0.0
        tensor = self._literal_cache.get(key)
        if tensor is None:
            if len(self._literal_cache) >= LITERALS_CACHED:
                self._literal_cache.clear()
            tensor = self._literal_cache[key] = self._make_literal(value, dtype)
        return tensor

    def move(self, value: Any, **attrs: Any) -> Any:
        return self.exchange.move(self, value, wait=self.wait, **attrs)

    def sync_generator(self, **attrs: Any) -> None:
        self.exchange.sync_generator(self, wait=self.wait, **attrs)

    def reseed(self, seed: int) -> None:
        self.generator = np.random.default_rng(seed)

    def generator_rewind(self) -> Callable[[], None]:
        """What puts the generator back where it is now: a program whose fast run failed
        runs again op by op from its inputs, and must draw the numbers it drew (a hot
        step with dropout drew a second mask, and the stream ran a step ahead)."""
        generator = self.generator
        if isinstance(generator, torch.Generator):
            state = generator.get_state()
            return lambda: generator.set_state(state)
        state = generator.bit_generator.state
        return lambda: setattr(generator.bit_generator, 'state', state)


def device_problem(name: str) -> str | None:
    """Why this machine cannot run torch ops on device `name` (None if it can): a worker
    refuses such a --device at start, rather than registering and failing every op."""
    try:
        device = torch.device(name)
    except RuntimeError:
        return 'not a torch device (cpu, cuda or cuda:N)'
    if device.type == 'cuda':
        count = torch.cuda.device_count()
        if count == 0:
            return 'this machine has no CUDA device (torch.cuda.is_available() is False)'
        if device.index is not None and device.index >= count:
            return f'this machine has {count} CUDA device(s): cuda:0 to cuda:{count - 1}'
    elif device.type != 'cpu':
        backend = getattr(torch, device.type, None)
        if not getattr(backend, 'is_available', lambda: False)():
            return f'this machine has no {device.type} device'
    return None


class TorchEngine:
    name = 'torch'

    def __init__(self, device: str | None = None):
        if device is None:
            device = 'cuda' if torch.cuda.is_available() else 'cpu'
        self.device = torch.device(device)
        if self.device.type == 'cuda' and self.device.index is None:
            self.device = torch.device('cuda', torch.cuda.current_device())  # say which GPU
        if self.device.type == 'cpu' and 'GT_WORKER_THREADS' in os.environ:
            torch.set_num_threads(environment.integer('GT_WORKER_THREADS'))

    def implementation(self, row: Any) -> Any:
        return row.torch

    def running(self) -> Any:
        """GT differentiates by itself: torch's autograd bookkeeping is only overhead."""
        return torch.inference_mode()

    def new_context(self, seed: int) -> SessionContext:
        generator = torch.Generator(device=self.device)
        generator.manual_seed(seed)
        return SessionContext(self.device, generator, _torch_literal)

    def from_wire(self, dtype: str, shape: list[int], buffer: memoryview) -> torch.Tensor:
        array = np.frombuffer(buffer, dtype=NUMPY_DTYPES[dtype]).reshape(shape).copy()
        tensor = torch.from_numpy(array)
        if dtype == 'bfloat16':
            tensor = tensor.view(torch.bfloat16)
        return tensor.to(self.device)

    def adopt(self, dtype: str, shape: list[int], buffer: memoryview) -> torch.Tensor:
        """A tensor over a received buffer, not a copy of it (on the CPU): the message
        belongs to this worker alone, and the tensor keeps it alive."""
        tensor = torch.from_numpy(np.frombuffer(buffer, dtype=NUMPY_DTYPES[dtype]).reshape(shape))
        if dtype == 'bfloat16':
            tensor = tensor.view(torch.bfloat16)
        return tensor.to(self.device)

    def to_wire(self, tensor: torch.Tensor) -> tuple[str, list[int], Any]:
        dtype = DTYPE_NAMES[tensor.dtype]
        tensor = tensor.detach().to('cpu').contiguous()
        if dtype == 'bfloat16':
            tensor = tensor.view(torch.uint16)
        return dtype, list(tensor.shape), tensor.numpy()

    def nbytes(self, tensor: torch.Tensor) -> int:
        return tensor.element_size() * tensor.numel()

    def copy(self, tensor: torch.Tensor) -> torch.Tensor:
        return tensor.clone()

    def generator_state(self, generator: torch.Generator) -> torch.Tensor:
        return generator.get_state()

    def set_generator_state(self, generator: torch.Generator, state: torch.Tensor) -> None:
        generator.set_state(state.cpu())

    def empty(self, shape: tuple[int, ...], dtype: str) -> torch.Tensor:
        return torch.empty(shape, dtype=TORCH_DTYPES[dtype], device=self.device)

    def concatenate(self, parts: list, axis: int) -> torch.Tensor:
        return torch.cat(parts, axis)

    def describe(self) -> str:
        return str(self.device)

    def synchronize(self) -> None:
        """Wait for the kernels queued on this worker's GPU (a CPU runs each op to the end)."""
        if self.device.type == 'cuda':
            torch.cuda.synchronize(self.device)

class NumpyEngine:
    name = 'numpy'
    device = 'cpu'

    def implementation(self, row: Any) -> Any:
        return row.numpy

    def running(self) -> Any:
        return contextlib.nullcontext()

    def new_context(self, seed: int) -> SessionContext:
        return SessionContext(None, np.random.default_rng(seed), _numpy_literal)

    def from_wire(self, dtype: str, shape: list[int], buffer: memoryview) -> np.ndarray:
        if dtype == 'bfloat16':
            raise TypeError('the numpy engine has no bfloat16')
        return np.frombuffer(buffer, dtype=NUMPY_DTYPES[dtype]).reshape(shape).copy()

    def adopt(self, dtype: str, shape: list[int], buffer: memoryview) -> np.ndarray:
        return np.frombuffer(buffer, dtype=NUMPY_DTYPES[dtype]).reshape(shape)

    def to_wire(self, array: Any) -> tuple[str, list[int], Any]:
        array = np.require(np.asarray(array), requirements='C')  # keeps 0-d arrays 0-d
        return array.dtype.name, list(array.shape), array

    def nbytes(self, array: Any) -> int:
        return int(np.asarray(array).nbytes)

    def copy(self, array: Any) -> np.ndarray:
        return np.array(array)

    def generator_state(self, generator: np.random.Generator) -> np.ndarray:
        return np.frombuffer(json.dumps(generator.bit_generator.state).encode(), np.uint8)

    def set_generator_state(self, generator: np.random.Generator, state: np.ndarray) -> None:
        generator.bit_generator.state = json.loads(bytes(state).decode())

    def empty(self, shape: tuple[int, ...], dtype: str) -> np.ndarray:
        return np.empty(shape, dtype=NUMPY_DTYPES[dtype])

    def concatenate(self, parts: list, axis: int) -> np.ndarray:
        return np.concatenate(parts, axis)

    def describe(self) -> str:
        return 'cpu (numpy)'

    def synchronize(self) -> None:
        """numpy runs each op to the end."""


def _torch_literal(value: Any, dtype: str) -> torch.Tensor:
    """A number operand stays a 0-d CPU tensor on every device, as torch keeps a Python
    number: a CUDA kernel then reads it by value in its own precision. On the GPU a float32
    number beside half tensors would otherwise be rounded to half first (a 0-d CUDA tensor
    takes part in the dtype the kernel loads), and `x * 0.9` would not be torch's bits."""
    return torch.tensor(value, dtype=TORCH_DTYPES[dtype])


def _numpy_literal(value: Any, dtype: str) -> np.ndarray:
    return np.array(value, dtype=NUMPY_DTYPES[dtype])


def make_engine(name: str, device: str | None = None) -> TorchEngine | NumpyEngine:
    if name in ('torch', 'pytorch'):  # the seeds call it pytorch
        return TorchEngine(device)
    if name == 'numpy':
        return NumpyEngine()
    raise ValueError(f'unknown engine {name!r}: choose torch or numpy')
