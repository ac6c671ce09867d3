"""Communication ops: the moves that `insert_moves` puts where a value's placement is not
the one its consumer needs. Each names a pattern (all_gather: shards to whole copies,
all_reduce: partial sums to whole copies, ...), but all run the same way: the worker's
RunContext carries out `gt.ir.exchange_plan.plan_exchange` between source and target
placement, peer to peer. In the global graph a move is `y = all_gather(x)`, its source
and target placements being the types of x and y; lowering adds them as attrs for the
workers, where a worker that only sends has no output and one that only receives has no
input.
"""

import numpy as np
import torch

from gt.ir.ops.creation import no_outputs
from gt.ir.ops.gradients import passed_through
from gt.ir.ops.opdef import OpDef
from gt.ir.sharding import pointwise
from gt.ir.type_rules import same_types


def _move(ctx, *value, **attrs):
    return ctx.move(value[0] if value else None, **attrs)


# Moves between the same workers, by pattern; `transfer` between different worker sets.
MOVES = ('shard', 'all_gather', 'all_reduce', 'reduce_scatter', 'all_to_all', 'transfer')


def _sync_generator(ctx, **attrs):
    ctx.sync_generator(**attrs)
    return ()


def destination_type(name: str):
    """The type rule of an op whose result replaces its first operand with its second's
    values (`copy_into`, `untracked_write`): both must have one type."""
    def infer(types):
        destination, source = types
        if tuple(source) != tuple(destination):
            raise ValueError(f'{name}: the source {source} must already have the type of the '
                             f'destination {destination}')
        return (destination,)
    return infer


def like_destination(kinds, inputs, outputs, **attrs):
    """`copy_`: the new value is placed as the one it replaces (as torch keeps the device)."""
    if kinds[0] == 'P':
        return None
    return (kinds[0], kinds[0]), (kinds[0],)


def _copy_into_grad(emit, inputs, grads):
    return [None, grads[0]]


ROWS = [
    *(OpDef(name, same_types, _move, _move, effects=True, communication=True)
      for name in MOVES),
    # The copy gt.signal.tensor makes: placed by its signal's config, as a created tensor
    # is; without one, an ordinary copy.
    OpDef('distribute', same_types, torch.clone, lambda x: np.array(x), grad=passed_through,
          shard=pointwise(), placed_by_signal=True),
    # The session's random generator state, from worker `source` to `targets`, so that a
    # draw on them continues the session's sequence (see keep_generators_in_step).
    OpDef('sync_generator', no_outputs, _sync_generator, _sync_generator, effects=True,
          communication=True),
    # `x.copy_(y)` and load_state_dict: y's values where x was.
    OpDef('copy_into', destination_type('copy_into'), lambda destination, source: source.clone(),
          lambda destination, source: np.array(source), grad=_copy_into_grad,
          shard=like_destination),
]
