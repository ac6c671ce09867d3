"""torch's names for the nodes of GT's tape (`loss.grad_fn.name()`, and what
`print(loss)` shows after `grad_fn=`), which ported scripts print and graph printers walk.

An op's node is named from the op (`mul` is `MulBackward0`); an index from its key, as
torch names the last view it takes (`x[:, 1]` is `SelectBackward0`, `x[1:3]`
`SliceBackward0`, `x[None]` `UnsqueezeBackward0`, a key that takes nothing
`AliasBackward0`); a torch function run by name from the function (`torch.cumsum` is
`CumsumBackward0`, advanced indexing `IndexBackward0`). A loss whose last op is a
reduction carries its own name (`NllLossBackward0`, `MseLossBackward0`): `name_loss`.
"""

from typing import Any

BY_NAME = {'Tensor.__getitem__': 'IndexBackward0'}
# torch numbers the backward of each overload of an op; where GT has a row per overload.
OVERLOADS = {'pow_number': 'PowBackward0', 'pow': 'PowBackward1'}


def backward_name(op: str, attrs: dict, inputs: list) -> str:
    if op == 'getitem' and inputs:
        return _index_name(attrs.get('index', ()), inputs[0]._type.shape)
    function = attrs.get('fn') if op.startswith('torch_') else None
    if isinstance(function, str):
        return BY_NAME.get(function) or _camel(function.rsplit('.', 1)[-1]) + 'Backward0'
    return OVERLOADS.get(op) or _camel(op) + 'Backward0'


def name_loss(loss: Any, name: str) -> Any:
    """Show `loss`'s node as torch's loss kernel's (`NllLoss`): GT makes the loss of
    several ops, and the last (a mean, a division) named it."""
    if loss.grad_fn is not None:
        loss.grad_fn.shown_as = name + 'Backward0'
    return loss


def _camel(name: str) -> str:
    return ''.join(part.capitalize() for part in name.strip('_').split('_'))


def _index_name(index: Any, shape: tuple) -> str:
    if list(index) == [['slice', None, None, None]]:
        return 'SliceBackward0'  # torch's x[:], where x[0:len(x)] is an alias
    taken = sum(1 for item in index if item[0] in ('int', 'slice'))
    last, dim = 'Alias', 0
    for item in index:
        kind = item[0]
        if kind == 'ellipsis':
            dim += len(shape) - taken
        elif kind == 'none':
            last = 'Unsqueeze'
        elif kind == 'int':
            last, dim = 'Select', dim + 1
        elif kind == 'slice':
            if not _whole(item, shape[dim] if dim < len(shape) else 0):
                last = 'Slice'
            dim += 1
    return last + 'Backward0'


def _whole(item: list, size: int) -> bool:
    _, start, stop, step = item
    return (start in (None, 0) and step in (None, 1)
            and (stop is None or stop >= size))
