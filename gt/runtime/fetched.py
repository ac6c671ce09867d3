"""Fetched values as the client receives them: a tensor from its wire header and frame
(or shared-memory file), and the pieces of a sharded or partial value joined."""

import numpy as np
import torch

from gt.ir.dtypes import NUMPY_DTYPES
from gt.runtime import shared_memory


def assemble(header: list | dict, frames) -> torch.Tensor:
    """A fetched value: one tensor, or the pieces of a sharded or partial one, joined in
    worker order (partial sums are added, as an all_reduce would)."""
    if not isinstance(header, dict):
        return tensor_from_wire(header, None if len(header) == 3 else next(frames))
    pieces = [tensor_from_wire(piece, None if len(piece) == 3 else next(frames))
              for piece in header['pieces']]
    if header['axis'] is not None:
        return torch.cat(pieces, header['axis'])
    total = pieces[0]
    for piece in pieces[1:]:
        total = total + piece
    return total


def tensor_from_wire(header: list, frame) -> torch.Tensor:
    dtype, shape = header[:2]
    if frame is None:  # written to a shared-memory file: map it
        array = shared_memory.adopt(header[2], NUMPY_DTYPES[dtype], shape)
    else:
        # No copy: the received message belongs to this process alone, and the array
        # keeps it alive for as long as the tensor lives.
        array = np.frombuffer(frame.buffer, dtype=NUMPY_DTYPES[dtype]).reshape(shape)
    tensor = torch.from_numpy(array)
    return tensor.view(torch.bfloat16) if dtype == 'bfloat16' else tensor
