"""Fragments: the pending ops a client sends in one message, in canonical form.

A fragment's structure names no client ids: an operand is `k >= 0` for the k-th value
the fragment defines, or `-1 - k` for its k-th external input. So a training loop sends
byte-identical structures, and the dispatcher can key its compiled plans on the bytes.
"""

from dataclasses import dataclass
from typing import Any

import msgpack
import numpy as np

from gt.ir import OPS, Graph, Node, Value
from gt.ir.placement import Placement

# The attrs of every op recorded without any: one shared dict, since recorded ops are
# never changed after, rather than one allocation per op in elementwise loops.
NO_ATTRS: dict = {}


class PendingFragment:
    """The fragment a client is recording: its ops in canonical form, the client ids of its
    external inputs, and what travels with it (data, literals, values dropped before the
    flush, and where the user recorded each op)."""

    __slots__ = ('base', 'records', 'externals', 'external_index', 'dropped', 'data',
                 'data_headers', 'literals', 'locations', 'outputs')

    def __init__(self, base: int):
        self.base = base
        self.records: list = []
        self.externals: list[int] = []
        self.external_index: dict[int, int] = {}
        self.dropped: set[int] = set()
        self.data: list = []
        self.data_headers: list = []
        self.literals: list = []
        self.locations: list = []
        self.outputs: dict[int, int] = {}  # position -> ids made, for records not making one

    def add_external(self, value_id: int) -> int:
        """Name a value from outside the fragment as its next external input."""
        index = self.external_index[value_id] = len(self.externals)
        self.externals.append(value_id)
        return index

    def head(self, records: int) -> 'PendingFragment':
        """The fragment of its first `records` ops alone. Externals are listed in the order
        ops first read them, so its own are a prefix; it keeps every data frame and
        literal, which ops read by slot."""
        head = PendingFragment(self.base)
        head.records, head.locations = self.records[:records], self.locations[:records]
        read = [-1 - ref for record in head.records for ref in record[1] if ref < 0]
        head.externals = self.externals[:max(read, default=-1) + 1]
        head.dropped, head.literals = self.dropped, self.literals
        head.data, head.data_headers = self.data, self.data_headers
        head.outputs = {at: count for at, count in self.outputs.items() if at < records}
        return head


class FragmentError(ValueError):
    """A fragment the dispatcher cannot build: bad op, bad operand or ill-typed."""


@dataclass(frozen=True)
class DecodedFragment:
    graph: Graph
    defined: list[Value]  # by fragment-local index
    kept: list[int]  # fragment-local indices the client still holds


def encode_structure(records: list, kept: list[int]) -> bytes:
    """`records` are `[op, operands, attrs, scope]` lists."""
    return msgpack.packb((records, kept), use_bin_type=True, default=_numpy_scalar)


def _numpy_scalar(value: Any) -> Any:
    """msgpack's hook for what it cannot pack: a NumPy scalar among an op's arguments
    (`gt.full((2,), np.float32(1.5))`) goes as the Python number it holds."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, int):  # what msgpack raises for one without this hook
        raise OverflowError('Integer value out of range')
    raise TypeError(f'can not serialize {type(value).__name__!r} object')


def decode_structure(
    structure: bytes, external_types: list[tuple[tuple[int, ...], str, Placement | None]]
) -> DecodedFragment:
    """Rebuild the fragment as a Graph, re-deriving every type from the op table."""
    try:
        records, kept = msgpack.unpackb(structure, raw=False, strict_map_key=False)
    except Exception:
        raise FragmentError('fragment is not valid msgpack') from None
    inputs = tuple(Value(tuple(shape), dtype, placement)
                   for shape, dtype, placement in external_types)
    defined: list[Value] = []
    nodes = []
    for position, record in enumerate(records):
        try:
            op, operands, attrs, scope = record
            row = OPS[op]
            values = tuple(defined[k] if k >= 0 else inputs[-1 - k] for k in operands)
            types = row.infer(tuple(v.type for v in values), **attrs)
        except (KeyError, IndexError, TypeError, ValueError) as error:
            raise FragmentError(f'fragment node {position}: {error}') from None
        outputs = tuple(Value(tuple(t.shape), t.dtype) for t in types)
        defined.extend(outputs)
        nodes.append(Node(op, values, outputs, attrs, scope, location=position))
    try:
        outputs = tuple(defined[k] for k in kept)
    except (IndexError, TypeError):
        raise FragmentError('fragment keeps a value it does not define') from None
    return DecodedFragment(Graph(inputs, tuple(nodes), outputs), defined, list(kept))
