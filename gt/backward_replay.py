"""Replaying a backward pass GT has seen before, instead of running its gradient rules.

A training loop builds the same tape every step, and `backward()` runs the same gradient
rules on it every step: that Python is the largest part of what a step costs the client.
So the first backward of a tape records the ops its rules emitted, keyed by the tape's
signature (each node's op, attrs and types, how values connect, which inputs require
grad, which leaves already hold a `.grad`), and a later backward of a tape with that
signature records the same ops on the new tape's values without running a rule. The
rules read nothing else (no values: those are on the workers), so the ops are the same.
A signature is recorded the second time it is seen, not the first: recording costs
about as much again as the rules, which a loop whose every step has new shapes (batches
of varying length) would pay on every backward for nothing.

Tapes with hooks, retained gradients, a freed or modified node, or ops GT cannot name
again (data attached to a fragment, random ops) run the rules every time, as does
`create_graph`. `GT_BACKWARD_REPLAY=0` turns replaying off.
"""

import copy
from collections import OrderedDict
from typing import Any, Callable, NamedTuple

from gt import post_accumulate_hooks
from gt.ir import OPS
from gt.runtime import environment
from gt.runtime.fragment import NO_ATTRS
from gt.runtime.locations import user_location
from gt.signal import current_scope

ENABLED = environment.switch('GT_BACKWARD_REPLAY', True)
CACHE_SIZE = 32  # tapes recorded; a loop needs one or two (grads empty, or not)
SEEN_SIZE = 1024  # signatures seen once, by hash: the next sight records


class Recorded(NamedTuple):
    """What one backward pass emitted. An operand `r >= 0` is the r-th value the pass
    made; `r < 0` is source `-1 - r` (a tape value, a leaf's old `.grad`, the given
    gradient). `literal` is the number of a `scalar` op, re-attached on each replay."""

    ops: list[tuple[str, tuple[int, ...], dict, int, str | None, Any]]
    grads: list[tuple[int, int, Any]]  # (leaf, value made, its type): the new .grads
    # per op, the values made that nothing later reads: released right after it, so they
    # die inside their own fragment (as the rules' temporaries do) even when it is sent
    # in the middle of the pass
    done: list[tuple[int, ...]]


class Tape(NamedTuple):
    key: tuple  # what decides the ops the rules emit
    sources: list[int]  # value ids in the order the key numbers them
    leaves: list  # the leaf tensors, in the order the key met them


_recorded: 'OrderedDict[tuple, Recorded]' = OrderedDict()
_seen: 'OrderedDict[int, None]' = OrderedDict()
counts = {'recorded': 0, 'replayed': 0, 'ran_rules': 0}  # backward passes, for gt.debug


def backward(root: Any, gradient: Any, nodes: list, run_rules: Callable[[], Any]) -> bool:
    """`root.backward(gradient)` over `nodes` (the reachable tape, latest first): a
    replay when this tape was recorded, else `run_rules()` (recording what they emit on
    the second sight). True when it replayed: the rules did not run, so freeing the tape
    is the caller's."""
    tape = _describe(root, gradient, nodes)
    recorded = None if tape is None else _recorded.get(tape.key)
    if tape is None or (recorded is None and _first_sight(hash(tape.key))):
        counts['ran_rules'] += 1
        run_rules()
        return False
    if recorded is None:
        recorded = _record(tape, root._client, run_rules)
        counts['recorded' if recorded is not None else 'ran_rules'] += 1
        if recorded is not None:
            _recorded[tape.key] = recorded
            if len(_recorded) > CACHE_SIZE:
                _recorded.popitem(last=False)
        return False
    _recorded.move_to_end(tape.key)
    counts['replayed'] += 1
    _replay(recorded, tape, root._client)
    return True


def _first_sight(digest: int) -> bool:
    """Whether no signature of this hash was seen lately; remember it either way."""
    if digest in _seen:
        _seen.move_to_end(digest)
        return False
    _seen[digest] = None
    if len(_seen) > SEEN_SIZE:
        _seen.popitem(last=False)
    return True


def _describe(root: Any, gradient: Any, nodes: list) -> Tape | None:
    """The tape's key and sources, or None when its backward must run the rules."""
    client = root._client
    numbers = {root._id: 0}  # value id -> its number, in order of first sight
    holders = {root._id: root}  # one tensor per value id, or replaying could mix them up
    leaves: list = []
    leaf_grads: list[int] = []
    parts: list = [root._type, current_scope()]
    if gradient is not None:
        if type(gradient) is not type(root) or gradient._type != root._type or \
                gradient._client is not client:
            return None  # a number, an array or a cast: the rules' path converts it
        parts.append('given')
    for node in nodes:
        # Not a row (a gt.autograd.Function's node): its rule is the user's Python, which
        # may read anything (numbers on ctx, globals), so what it emits is not the tape's.
        if node.freed or node.hooks or node.retained or node.op not in OPS:
            return None
        attrs = _attrs_key(node.attrs)
        if attrs is None:
            return None
        inputs = []
        for tensor, value_id in zip(node.inputs, node.input_ids):
            if tensor._id != value_id or tensor._client is not client:
                return None
            if tensor._leaf_of is not None:
                # The value a leaf had when it was used, before a write under no_grad: its
                # gradient is the leaf's, which the rules' path routes there.
                return None
            number = numbers.get(value_id)
            first_sight = number is None
            if first_sight:
                number = numbers[value_id] = len(numbers)
                holders[value_id] = tensor
            elif holders[value_id] is not tensor:
                return None
            if not tensor.requires_grad:
                inputs.append((number, tensor._type))
            elif tensor.grad_fn is not None:
                inputs.append(number)
            else:
                if tensor._hooks or post_accumulate_hooks.has_hooks(tensor):
                    return None
                grad = tensor._grad
                if first_sight:
                    leaves.append(tensor)
                    if grad is not None:
                        leaf_grads.append(grad._id)
                inputs.append((number, tensor._type, None if grad is None else grad._type))
        outputs = []
        for value_id in node.output_ids:
            number = numbers.get(value_id)
            if number is None:
                number = numbers[value_id] = len(numbers)
            outputs.append(number)
        parts.append((node.op, attrs, tuple(inputs), tuple(outputs), tuple(node.output_types),
                      node.backward_signal))
    sources = list(numbers)
    sources += leaf_grads
    if gradient is not None:
        sources.append(gradient._id)
    if len(set(sources)) != len(sources):
        return None  # a .grad that is also a tape value: no single name for it
    return Tape(tuple(parts), sources, leaves)


_PLAIN = frozenset({int, bool, str, type(None)})  # equal only when the same


def _attrs_key(attrs: dict) -> Any:
    """`_frozen(attrs)`, sooner for the usual attrs: plain numbers, flags and names."""
    types = tuple(map(type, attrs.values()))
    if _PLAIN.issuperset(types):
        return tuple(attrs.items()), types
    return _frozen(attrs)


def _frozen(value: Any) -> Any:
    """`value` as a hashable key that tells 1, 1.0 and True apart; None if it has none."""
    if isinstance(value, dict):
        items = tuple((name, _frozen(item)) for name, item in value.items())
        return None if any(item is None for _, item in items) else ('dict', items)
    if isinstance(value, (list, tuple)):
        items = tuple(_frozen(item) for item in value)
        return None if any(item is None for item in items) else (type(value), items)
    if isinstance(value, float):  # 0.0 == -0.0, and nan is no key: hex tells them apart
        return (type(value), value.hex())
    if isinstance(value, complex):
        return (complex, value.real.hex(), value.imag.hex())
    try:
        hash(value)
    except TypeError:
        return None
    return (type(value), value)


class _Tap:
    """Stands in for the client's `record`, `record_binary`, `add_literal` and `add_data`
    while the rules run, noting each op in terms of the tape's sources and the values made
    before it."""

    def __init__(self, client: Any, tape: Tape):
        self.client = client
        self.sources = {value_id: index for index, value_id in enumerate(tape.sources)}
        self.made: dict[int, int] = {}  # value id -> its index among the values made
        self.ops: list = []
        self.literals: dict[int, Any] = {}  # slot -> number, for the `scalar` op after it
        self.replayable = True

    def record(self, op: str, operands: list[int], attrs: dict, n_outputs: int = 1,
               scope: str | None = None) -> int:
        first = type(self.client).record(self.client, op, operands, attrs, n_outputs, scope)
        refs = []
        for value_id in operands:
            made = self.made.get(value_id)
            if made is None:
                source = self.sources.get(value_id)
                if source is None:
                    self.replayable = False  # a value from elsewhere: not nameable again
                    source = 0
                made = -1 - source
            refs.append(made)
        literal = None
        if op == 'scalar':
            literal = self.literals[attrs['slot']]
        elif 'slot' in attrs or OPS[op].random:
            self.replayable = False
        # A copy: a rule may pass on a list of the user's, who may change it later.
        self.ops.append((op, tuple(refs), copy.deepcopy(attrs), n_outputs, scope, literal))
        for offset in range(n_outputs):
            self.made[first + offset] = len(self.made)
        return first

    def record_binary(self, op: str, left: int, right: int, scope: str | None) -> int:
        return self.record(op, [left, right], NO_ATTRS, 1, scope)

    def add_literal(self, value: Any) -> int:
        slot = type(self.client).add_literal(self.client, value)
        self.literals[slot] = value
        return slot

    def add_data(self, array: Any, dtype: str) -> int:
        self.replayable = False
        return type(self.client).add_data(self.client, array, dtype)


def _record(tape: Tape, client: Any, run_rules: Callable[[], Any]) -> Recorded | None:
    tap = _Tap(client, tape)
    before = [None if leaf._grad is None else leaf._grad._id for leaf in tape.leaves]
    client.record, client.record_binary = tap.record, tap.record_binary
    client.add_literal, client.add_data = tap.add_literal, tap.add_data
    try:
        run_rules()
    finally:
        del client.record, client.record_binary, client.add_literal, client.add_data
    grads = []
    for index, (leaf, old) in enumerate(zip(tape.leaves, before)):
        if (None if leaf._grad is None else leaf._grad._id) == old:
            continue
        made = tap.made.get(leaf._grad._id)
        if made is None:
            return None
        grads.append((index, made, leaf._grad._type))
    if not tap.replayable:
        return None
    return Recorded(tap.ops, grads, _last_uses(tap.ops, {made for _, made, _ in grads}))


def _last_uses(ops: list, kept: set[int]) -> list[tuple[int, ...]]:
    """For each op, the values made (not `kept`) whose last reader, or maker, it is."""
    last: dict[int, int] = {}
    made = 0
    for position, (_, refs, _, n_outputs, _, _) in enumerate(ops):
        for ref in refs:
            if ref >= 0:
                last[ref] = position
        for value in range(made, made + n_outputs):
            last.setdefault(value, position)
        made += n_outputs
    done: list[list[int]] = [[] for _ in ops]
    for value, position in last.items():
        if value not in kept:
            done[position].append(value)
    return [tuple(values) for values in done]


def _replay(recorded: Recorded, tape: Tape, client: Any) -> None:
    from gt import autograd  # which imports this
    from gt.tensor import wrap  # gt.tensor imports gt.autograd, which imports this

    # Nothing else records on this client meanwhile (GT's recording is one thread's at a
    # time), so the values made get consecutive ids.
    sources = tape.sources
    location = user_location()  # every op is the user's backward() call
    record = client.record
    start = client.next_id  # the r-th value made is start + r
    release = client.release
    for (op, refs, attrs, n_outputs, scope, literal), done in zip(recorded.ops, recorded.done):
        if literal is not None:
            attrs = {'dtype': attrs['dtype'], 'slot': client.add_literal(literal)}
        record(op, [start + r if r >= 0 else sources[-1 - r] for r in refs], attrs,
               n_outputs, scope, location)
        for value in done:
            release(start + value)
    for leaf, index, value_type in recorded.grads:
        tensor, grad = tape.leaves[leaf], wrap(start + index, value_type, client)
        if tensor._grad is None:
            autograd.first_grad(tensor, grad)
        else:  # added in place, as the rules' pass does (autograd._accumulate)
            tensor._grad._rebind(grad)
