"""Sharding rules: for one op, which input placements it can run on and what it makes.

A rule sees the *kinds* of its inputs' placements over the worker set the op runs on:
`'R'` (replicated), `'P'` (partial sums) or an int `axis` (sharded on that axis), with
the inputs' and outputs' global types and the op's attrs. It returns the kinds it needs
its inputs in (the move-insertion pass makes them so), the kinds of its outputs and,
if it needs them, attrs to run that way; or None when it has no sharded way to run:
then every input is gathered and the op runs replicated. Slower, never wrong. Like
DTensor's per-op strategies, the rules live in the op table's rows; this module holds
the families the rows share.
"""

from typing import Any, Callable

from gt.ir.graph import TensorType
from gt.ir.type_rules import normalize_dim, normalize_dims

Kind = str | int
Decision = tuple | None  # (input kinds, output kinds[, attrs to run with])
Rule = Callable[..., Decision]


def replicated(inputs: tuple, outputs: tuple) -> tuple[tuple[Kind, ...], tuple[Kind, ...]]:
    """The fallback every op supports: all inputs whole on every worker."""
    return ('R',) * len(inputs), ('R',) * len(outputs)


def _partial_inputs_allowed(linearity: str | None, kinds: tuple[Kind, ...]) -> bool:
    """Whether `kinds` (some 'P', the rest 'R' or partial) keep a sum of terms a sum of
    terms: `all` (add: every input partial), `one` (mul: exactly one partial, the rest
    replicated), `first` (div: the dividend partial, the divisor replicated)."""
    partial = [kind == 'P' for kind in kinds]
    others_replicated = all(kind in ('P', 'R') for kind in kinds)
    if linearity == 'all':
        return all(partial)
    if linearity == 'one':
        return sum(partial) == 1 and others_replicated
    if linearity == 'first':
        return partial[0] and sum(partial) == 1 and others_replicated
    return False


def pointwise(linearity: str | None = None) -> Rule:
    """Broadcasting elementwise ops: a shard on an output axis is kept by every input that
    spans that axis (broadcast inputs come replicated)."""
    def rule(kinds, inputs, outputs, **attrs):
        out = outputs[0].shape
        axis = None
        for kind, value in zip(kinds, inputs):
            if isinstance(kind, int):
                mapped = kind + len(out) - len(value.shape)
                if value.shape[kind] == out[mapped]:
                    axis = mapped
                    break
        if axis is None:
            if 'P' in kinds and _partial_inputs_allowed(linearity, kinds):
                return kinds, ('P',) * len(outputs)
            return None
        required = []
        for value in inputs:
            own = axis - (len(out) - len(value.shape))
            spans = own >= 0 and value.shape[own] == out[axis]
            required.append(own if spans else 'R')
        return tuple(required), (axis,) * len(outputs)
    return rule


def reduction(sums: bool = False, linear: bool = False, averages: bool = False) -> Rule:
    """Reductions over `dim` (None: all) with `keepdim`. A shard on a kept axis stays a
    shard; on a reduced axis a sum leaves partial sums, and so does a mean, told the
    whole count to divide by (each worker's term is its sum over all the elements);
    other reductions gather. A linear one (sum, mean) of partial sums is a partial sum."""
    def rule(kinds, inputs, outputs, keepdim=False, **attrs):
        (kind,), (value,) = kinds, inputs
        if kind == 'P':
            return (('P',), ('P',) * len(outputs)) if linear else None
        if not isinstance(kind, int):
            return None
        dims = normalize_dims('', attrs.get('dim'), len(value.shape))
        if kind in dims:
            if averages:
                count = 1
                for axis in dims:
                    count *= value.shape[axis]
                return (kind,), ('P',) * len(outputs), {'count': count}
            return ((kind,), ('P',) * len(outputs)) if sums else None
        mapped = kind if keepdim else kind - sum(d < kind for d in dims)
        return (kind,), (mapped,) * len(outputs)
    return rule


def along(dim_attr: str = 'dim') -> Rule:
    """Ops that work along one axis (softmax, and its gradient of several inputs of one
    shape): a shard elsewhere is kept, by every input."""
    def rule(kinds, inputs, outputs, **attrs):
        kind = next((kind for kind in kinds if isinstance(kind, int)), None)
        if kind is None or kind == normalize_dim('', attrs[dim_attr], len(inputs[0].shape)):
            return None
        return (kind,) * len(inputs), (kind,) * len(outputs)
    return rule


def axis_map(mapping: Callable[..., int | None]) -> Rule:
    """Shape ops that move axes around; they are linear, so partial sums stay partial.
    `mapping(axis, input, output, **attrs)` is where input axis goes, or None."""
    def rule(kinds, inputs, outputs, **attrs):
        (kind,) = kinds[:1]
        if kind == 'P' and all(k == 'P' for k in kinds):
            return kinds, ('P',) * len(outputs)
        if not isinstance(kind, int) or any(k != kind for k in kinds):
            return None
        mapped = mapping(kind, inputs[0], outputs[0], **attrs)
        return None if mapped is None else (kinds, (mapped,) * len(outputs))
    return rule


def reshape_axis(axis: int, value: TensorType, out: TensorType, **attrs: Any) -> int | None:
    """An axis survives a reshape when the same number of elements precede it and it keeps
    its size: then each worker's rows reshape on their own."""
    before = 1
    for size in value.shape[:axis]:
        before *= size
    count = 1
    for position, size in enumerate(out.shape):
        if count == before and size == value.shape[axis]:
            return position
        count *= size
    return None


def transpose_axis(axis: int, value: TensorType, out: TensorType, dim0: int, dim1: int):
    first, second = (normalize_dim('', d, len(value.shape)) for d in (dim0, dim1))
    return second if axis == first else first if axis == second else axis


def permute_axis(axis: int, value: TensorType, out: TensorType, dims: list[int]):
    return [normalize_dim('', d, len(value.shape)) for d in dims].index(axis)


def unsqueeze_axis(axis: int, value: TensorType, out: TensorType, dim: int):
    return axis + (axis >= normalize_dim('', dim, len(out.shape)))


def squeeze_axis(axis: int, value: TensorType, out: TensorType, dim: Any = None):
    removed = [d for d in range(len(value.shape)) if value.shape[d] == 1
               and (dim is None or d in normalize_dims('', dim, len(value.shape)))]
    return None if axis in removed else axis - sum(d < axis for d in removed)


def expand_axis(axis: int, value: TensorType, out: TensorType, shape: list[int]):
    mapped = axis + len(out.shape) - len(value.shape)
    return mapped if out.shape[mapped] == value.shape[axis] else None


def concatenation_axis(axis: int, value: TensorType, out: TensorType, dim: int, **attrs: Any):
    """cat and split: a shard on any axis but the one they cut along stays."""
    return None if axis == normalize_dim('', dim, len(value.shape)) else axis


def stack_axis(axis: int, value: TensorType, out: TensorType, dim: int):
    return axis + (axis >= normalize_dim('', dim, len(out.shape)))


def index_axis(axis: int, value: TensorType, out: TensorType, index: list):
    """Basic indexing keeps a shard on an axis it takes whole (`x[:, 3]`, `x[..., :2]`)."""
    items = list(index)
    if ['ellipsis'] in items:
        at = items.index(['ellipsis'])
        used = sum(item[0] in ('int', 'slice') for item in items)
        items[at:at + 1] = [['slice', None, None, None]] * (len(value.shape) - used)
    items += [['slice', None, None, None]] * (len(value.shape)
                                              - sum(i[0] in ('int', 'slice') for i in items))
    source = output = 0
    for item in items:
        if item[0] == 'none':
            output += 1
            continue
        if source == axis:
            whole = item[0] == 'slice' and item[1] in (None, 0) and item[3] in (None, 1) and (
                item[2] is None or item[2] >= value.shape[axis])
            return output if whole else None
        source += 1
        output += item[0] == 'slice'
    return None


def matmul(kinds, inputs, outputs, **attrs) -> Decision:
    """Row (and batch) shards of the left operand run against the whole right one; column
    shards of the right against the whole left; shards of the contracted axis on both
    sides leave partial sums."""
    (left, right), (a, b), (out,) = kinds, inputs, outputs
    rank_a, rank_b, rank_out = len(a.shape), len(b.shape), len(out.shape)
    if rank_a < 2 or rank_b < 2:
        return None
    if 'P' in kinds:
        return (kinds, ('P',)) if kinds in (('P', 'R'), ('R', 'P')) else None
    if isinstance(left, int) and left < rank_a - 1:
        if left == rank_a - 2:
            return (left, 'R'), (rank_out - 2,)
        partner = left - (rank_a - rank_b)
        if partner < 0 or b.shape[partner] == 1:
            return (left, 'R'), (left + rank_out - rank_a,)
        if b.shape[partner] == a.shape[left]:
            return (left, partner), (left + rank_out - rank_a,)
        return None
    if isinstance(right, int) and right == rank_b - 1 and left == 'R':
        return ('R', right), (rank_out - 1,)
    if left == rank_a - 1 or right == rank_b - 2:
        return (rank_a - 1, rank_b - 2), ('P',)
    return None


def folded_mm(kinds, inputs, outputs, **attrs) -> Decision:
    """a^T b over every leading position: shards of a leading axis on both sides leave
    partial sums; a's last axis sharded gives the rows of the result, b's its columns."""
    (left, right), (a, _) = kinds, inputs
    last = len(a.shape) - 1
    if 'P' in kinds:
        return (kinds, ('P',)) if kinds in (('P', 'R'), ('R', 'P')) else None
    leading = next((kind for kind in kinds if isinstance(kind, int) and kind < last), None)
    if leading is not None:
        return (leading, leading), ('P',)
    if left == last:
        return (last, 'R'), (0,)
    if right == last:
        return ('R', last), (1,)
    return None


def indexed_along(kinds, inputs, outputs, dim: int, **attrs) -> Decision:
    """gather and scatter_add along `dim`: with every operand sharded alike on another axis,
    each worker indexes its own rows."""
    axis = next((kind for kind in kinds if isinstance(kind, int)), None)
    if axis is None or axis == normalize_dim('', dim, len(inputs[0].shape)):
        return None
    if any(value.shape[axis] != inputs[0].shape[axis] for value in inputs):
        return None  # an index shorter than the input on that axis: its rows differ
    return (axis,) * len(inputs), (axis,)


def embedding(kinds, inputs, outputs, **attrs) -> Decision:
    """Looking up sharded indices in a whole table gives rows sharded the same way."""
    weight, indices = kinds
    if isinstance(indices, int):
        return ('R', indices), (indices,)
    return None
