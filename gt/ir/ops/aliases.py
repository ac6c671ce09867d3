"""Aliases: a value under a second name on the worker, with no copy.

Worker values are never written in place (gt.runtime.buffer_reuse overwrites only memory
no other value can reach), so two values may share one tensor, as a reshape's view
already does. `detach` is torch's `x.detach()`: the same values with no history.
`untracked_write` is a write autograd does not see (an in-place op under no_grad, or
through `x.detach()` or `x.data`): the source's values, with the destination's history,
as torch keeps a tensor's grad_fn then; the gradient goes to the old value's history.
"""

import torch

from gt.ir.ops.communication import destination_type, like_destination
from gt.ir.ops.opdef import OpDef
from gt.ir.sharding import pointwise
from gt.ir.type_rules import same_types


def _source(destination, source):
    return source


def _untracked_write_grad(emit, inputs, grads):
    return [grads[0], None]


ROWS = [
    OpDef('detach', same_types, torch.detach, lambda x: x, shard=pointwise()),
    OpDef('untracked_write', destination_type('untracked_write'), _source, _source,
          grad=_untracked_write_grad, shard=like_destination),
]
