"""The op table: every op GT knows, defined once, in one row.

A row (`OpDef`) holds the op's type rule, its torch implementation (which is also the
interpreter and the test oracle), its numpy implementation, its gradient rule (built
from ops of the table; see gradients.py) and room for its sharding rule. The rows live
in one file per family (creation, elementwise, fused, unary, activations, reductions,
normalization, batch norm, losses, max pooling, shapes, indexing, linear algebra,
optimizer steps, communication, aliases, the torch fallback and its gradients, the random
state, value checks) only to keep files
short; `OPS` is the one table.
"""

from gt.ir.ops import (
    activations,
    aliases,
    batch_norm,
    checks,
    communication,
    creation,
    elementwise,
    fused,
    indexing,
    linalg,
    losses,
    normalization,
    optimizer_steps,
    pooling,
    random_state,
    reductions,
    shapes,
    torch_call_gradients,
    torch_calls,
    unary,
    unary_math,
)
from gt.ir.ops.opdef import OpDef, RunContext

OPS: dict[str, OpDef] = {}
for _family in (creation, elementwise, fused, unary, unary_math, activations, reductions,
                normalization, batch_norm, losses, pooling, shapes, indexing, linalg,
                optimizer_steps, communication, aliases, torch_calls, torch_call_gradients,
                random_state, checks):
    for _row in _family.ROWS:
        assert _row.name not in OPS, f'op {_row.name} defined twice'
        OPS[_row.name] = _row

__all__ = ['OPS', 'OpDef', 'RunContext']
