"""What torch's `grad_fn.next_functions` shows of GT's tape, for graph printers such as
torchviz's `make_dot`: for each input of a tape node, the node that made it and which of
its outputs, an `AccumulateGrad` (with `.variable`) for a leaf that requires grad, or
(None, 0) for an input that takes no gradient."""

from typing import Any


class AccumulateGrad:
    """What torch's `next_functions` names for a leaf that requires grad."""

    next_functions = ()

    def __init__(self, variable: Any) -> None:
        self.variable = variable

    def name(self) -> str:
        return 'torch::autograd::AccumulateGrad'

    def __repr__(self) -> str:
        return f'<AccumulateGrad object at {id(self):#x}>'


def next_function(tensor: Any) -> tuple:
    if tensor.grad_fn is not None:
        return tensor.grad_fn, tensor.grad_fn.output_ids.index(tensor._id) \
            if tensor._id in tensor.grad_fn.output_ids else 0
    if tensor.requires_grad:
        return AccumulateGrad(tensor if tensor._leaf_of is None else tensor._leaf_of), 0
    return None, 0
