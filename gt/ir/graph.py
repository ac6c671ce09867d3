"""The SSA graph: values defined once, nodes in topological order, frozen throughout.

Values carry no names; the printer numbers them, so dumps are deterministic. A pass
never mutates a graph: it builds a new one (`Graph.replace` helps).
"""

from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from gt.ir.placement import Placement


class TensorType(NamedTuple):
    shape: tuple[int, ...]
    dtype: str


@dataclass(frozen=True, slots=True, eq=False)
class Value:
    """One SSA value. Identity is the object itself (two values may share a type)."""

    shape: tuple[int, ...]
    dtype: str
    placement: Placement | None = None

    @property
    def type(self) -> TensorType:
        return TensorType(self.shape, self.dtype)

    def placed(self, placement: Placement) -> 'Value':
        return Value(self.shape, self.dtype, placement)


@dataclass(frozen=True, slots=True, eq=False)
class Node:
    """`outputs = op(*inputs, **attrs)`, recorded under signal `scope`."""

    op: str
    inputs: tuple[Value, ...]
    outputs: tuple[Value, ...]
    attrs: dict[str, Any] = field(default_factory=dict)
    scope: str | None = None
    note: str | None = None  # why a pass inserted this node; printed as a comment
    location: int | None = None  # which client op this node came from (its fragment position)
    # The placements the node's sharding rule needs its inputs in (propagate_placements
    # decides, insert_moves makes it so); None before propagation.
    input_placements: tuple[Placement, ...] | None = None


@dataclass(frozen=True, slots=True)
class Graph:
    inputs: tuple[Value, ...]
    nodes: tuple[Node, ...]
    outputs: tuple[Value, ...]
    name: str = 'fragment'

    def replace(self, **changes: Any) -> 'Graph':
        return replace(self, **changes)

    def __str__(self) -> str:
        from gt.ir.printer import format_graph

        return format_graph(self)
