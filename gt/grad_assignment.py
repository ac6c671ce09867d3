"""What a script may assign to a tensor's `.grad` (`p.grad = g`): torch's checks, so that
a wrong gradient is refused at the assignment, not at the optimizer's step on a worker."""

from typing import Any

import torch


def checked(tensor: Any, value: Any) -> Any:
    """`value` (not None) as the gradient of `tensor`: a GT tensor of its shape and dtype.
    A torch tensor (a gradient computed on the host) is uploaded."""
    from gt.tensor import Tensor, as_tensor

    if isinstance(value, torch.Tensor):
        value = as_tensor(value)
    elif not isinstance(value, Tensor):
        raise TypeError('assigned grad expected to be a Tensor or None but got grad of type '
                        f'{type(value).__name__}')
    if tuple(value.shape) != tuple(tensor.shape):
        raise RuntimeError(f'attempting to assign a gradient of size {list(value.shape)} to '
                           f'a tensor of size {list(tensor.shape)}')
    if value.dtype != tensor.dtype:
        raise RuntimeError(f'attempting to assign a gradient with dtype {value.dtype} to a '
                           f'tensor with dtype {tensor.dtype}')
    return value
