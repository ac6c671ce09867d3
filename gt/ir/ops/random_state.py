"""The session's random generator state as a tensor: `gt.get_rng_state()` and
`gt.set_rng_state(state)`, torch's way to save and restore where the draws are.

GT's draws come from a generator per session on the workers (kept in step by
keep_generators_in_step), and a DataLoader shuffles with torch's generator in the client,
so a state holds both: `[worker state length, client state length]` as two
little-endian 8-byte counts, then the worker generator's own state (a CPU worker's is
torch's 5056 bytes, which equal `torch.get_rng_state()` after the same seed and draws;
a GPU's is shorter), then the client's, zero-padded to STATE_BYTES, so the type is known
before any worker answers. Both rows are `random`: they run where the session's state
is (a worker is brought up to date first), and are never merged, moved or compiled.
"""

import json

import numpy as np
import torch

from gt.ir.graph import TensorType
from gt.ir.ops.opdef import OpDef

STATE_BYTES = 12288
HEADER = 16
STATE_TYPE = TensorType((STATE_BYTES,), 'uint8')


def _state_type(name: str):
    def infer(types: tuple) -> tuple[TensorType, ...]:
        (state,) = types
        if state.dtype != 'uint8' or len(state.shape) != 1:
            raise ValueError(f'{name}: a state is a 1-D uint8 tensor, not {state.dtype} of '
                             f'shape {list(state.shape)}')
        if name == 'set_rng_state' and tuple(state.shape) != STATE_TYPE.shape:
            raise ValueError(f'set_rng_state: a GT random state has {STATE_BYTES} bytes (what '
                             f'gt.get_rng_state() returns), not {state.shape[0]}')
        return (STATE_TYPE,) if name == 'rng_state' else (TensorType((), 'uint8'),)
    return infer


def pack(worker: bytes, client: bytes) -> np.ndarray:
    """The state tensor's bytes for a worker state and a client one."""
    if HEADER + len(worker) + len(client) > STATE_BYTES:
        raise ValueError(f'a random state of {len(worker) + len(client)} bytes does not fit '
                         f'in {STATE_BYTES}')
    packed = np.zeros(STATE_BYTES, np.uint8)
    packed[:HEADER] = np.frombuffer(np.array([len(worker), len(client)], '<u8').tobytes(),
                                    np.uint8)
    packed[HEADER:HEADER + len(worker)] = np.frombuffer(worker, np.uint8)
    packed[HEADER + len(worker):HEADER + len(worker) + len(client)] = np.frombuffer(
        client, np.uint8)
    return packed


def unpack(packed: np.ndarray) -> tuple[bytes, bytes]:
    """The worker state and the client state in a state tensor's bytes."""
    worker, client = (int(n) for n in np.frombuffer(packed[:HEADER].tobytes(), '<u8'))
    if HEADER + worker + client > STATE_BYTES:
        raise ValueError('this is not a GT random state (its lengths do not fit)')
    return (packed[HEADER:HEADER + worker].tobytes(),
            packed[HEADER + worker:HEADER + worker + client].tobytes())


def _torch_rng_state(ctx, client):
    worker = ctx.generator.get_state().numpy().tobytes()
    client_bytes = client.cpu().numpy().tobytes()
    return torch.from_numpy(pack(worker, client_bytes)).to(client.device)


def _torch_set_rng_state(ctx, state):
    worker, _ = unpack(state.cpu().numpy())
    ctx.generator.set_state(torch.frombuffer(bytearray(worker), dtype=torch.uint8))
    return torch.zeros((), dtype=torch.uint8, device=state.device)


def _numpy_rng_state(ctx, client):
    worker = json.dumps(ctx.generator.bit_generator.state).encode()
    return pack(worker, np.asarray(client).tobytes())


def _numpy_set_rng_state(ctx, state):
    worker, _ = unpack(np.asarray(state))
    ctx.generator.bit_generator.state = json.loads(worker.decode())
    return np.zeros((), np.uint8)


ROWS = [
    # The client's own generator state goes in as the input: the result holds both.
    OpDef('rng_state', _state_type('rng_state'), _torch_rng_state, _numpy_rng_state,
          context=True, random=True, traced=False),
    OpDef('set_rng_state', _state_type('set_rng_state'), _torch_set_rng_state,
          _numpy_set_rng_state, context=True, random=True, effects=True, traced=False),
]
