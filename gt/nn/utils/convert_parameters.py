"""torch.nn.utils' conversions between a model's parameters and one flat vector (for
optimizers and second-order methods that work on a vector): `parameters_to_vector` is
recorded like any op, so it differentiates; `vector_to_parameters` rebinds each parameter
to its slice, as `param.data = ...` does in torch."""

from typing import Iterable

from gt.functional import cat
from gt.tensor import Tensor


def parameters_to_vector(parameters: Tensor | Iterable[Tensor]) -> Tensor:
    """The parameters flattened and concatenated, in order, into one 1-d tensor."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return cat([param.reshape(-1) for param in parameters])


def vector_to_parameters(vec: Tensor, parameters: Tensor | Iterable[Tensor]) -> None:
    """Each parameter takes the next `numel()` values of `vec`, in its own shape. In torch
    the parameters then share `vec`'s memory; GT's tensors are values, so they take copies
    and later changes to `vec` do not reach them."""
    if not isinstance(vec, Tensor):
        raise TypeError(f'expected gt.Tensor, but got: {type(vec).__name__}')
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    pointer = 0
    for param in parameters:
        count = param.numel()
        param.data = vec[pointer:pointer + count].view_as(param)
        pointer += count
