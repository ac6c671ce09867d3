"""propagate_placements: give every value a placement, and every node the placements it
needs its inputs in.

Requires a verified graph whose inputs carry placements. Ensures every node output has a
placement and every node has `input_placements`; where an input's placement differs from
what its node needs, insert_moves adds the move.

Seeds: a creation op recorded under a signal whose config shards on `axis` over workers
W makes `S(axis)@W` (or `R@W` when the axis is too short); outside any signal, a created
tensor of 2 or more dims whose first dimension divides by the worker count, and that is
at least `auto_shard_elements` big, is sharded on axis 0 over every worker (the seeds'
auto-shard rule; `from_numpy` data is not); anything else lives on the session's home
worker. Numbers (`scalar`), zeros and other uniform fills, and what is computed from
numbers alone, are made wherever they are used, unless recorded under a signal with a
config: those go to its workers like the rest of its ops (backward's seed, and a bias
gradient summed from it, run on the backward config's workers, as the seeds promise).

Then each op runs on a worker set: its signal's workers, or else those of the input for
which the fewest elements move, less the work that running there spreads out. Inputs
from elsewhere keep their kind (a shard stays a shard) on the new set, except that under
a signal, one that spans the op's output along the signal's axis arrives split on it
(the seeds' `pred = model(X_train)` in a data-parallel scope); the op's sharding rule
(gt.ir.sharding) says what it needs and what it makes.

    before:  %0: f32[8,4] = randn()                   after:  %0: f32[8,4]<S0@w0,w1> = randn()
             %1: f32[8,4] = relu(%0)                          %1: f32[8,4]<S0@w0,w1> = relu(%0)
             %2: f32[] = sum(%1)                              %2: f32[]<P:sum@w0,w1> = sum(%1)
"""

from gt.ir import OPS, Graph, Node, Partial, Replicate, Shard, Value
from gt.ir.sharding import replicated
from gt.ir.type_rules import numel
from gt.passes.options import PipelineOptions


def _anywhere(node: Node, inputs: tuple[Value, ...]) -> bool:
    """A number or other one-element constant, or a function of such (backward's seed
    `ones(()).expand(shape)`, say): cheaper to make on each worker that uses it than to
    move. Such values have no placement until their users are placed."""
    row = OPS[node.op]
    if row.random or row.effects or row.placed_by_signal or len(node.outputs) != 1:
        return False
    if inputs:
        return all(value.placement is None for value in inputs)
    return row.source and node.op != 'from_numpy' and numel(node.outputs[0].shape) <= 1


def kind_of(placement) -> str | int:
    if isinstance(placement, Shard):
        return placement.axis
    return 'P' if isinstance(placement, Partial) else 'R'


def placement_of(kind: str | int, workers: tuple[int, ...]):
    if isinstance(kind, int):
        return Shard(kind, workers)
    return Partial(workers) if kind == 'P' else Replicate(workers)


def _seed(node: Node, scope, options: PipelineOptions):
    """The placement of a created value."""
    (value,) = node.outputs
    if node.op == 'torch_factory' and node.attrs.get('fn') == 'torch.empty_strided':
        # A layout for draws to fill in memory order (gt.creation.empty_laid_out_like):
        # made whole on every worker, since a move or a gather lays a value out afresh.
        return Replicate(options.workers)
    if scope is not None:
        axis, workers = scope
        fits = axis < len(value.shape) and value.shape[axis] >= len(workers)
        return Shard(axis, workers) if fits else Replicate(workers)
    count = len(options.workers)
    if (options.auto_shard_elements is not None and count > 1 and node.op != 'from_numpy'
            and len(value.shape) >= 2 and value.shape[0] % count == 0
            and numel(value.shape) >= options.auto_shard_elements):
        return Shard(0, options.workers)
    return Replicate((options.home_worker,))


def _choose_workers(known: list[Value], outputs: tuple[Value, ...]) -> tuple[int, ...]:
    """Where an op with no signal runs: on the worker set of one of its inputs, the one
    that moves the fewest elements less the work it spreads (an output element computed
    on n workers costs each 1/n): big operands stay put, and spread-out work stays spread
    out unless that means moving more than it saves."""
    work = sum(numel(value.shape) for value in outputs)

    def cost(workers: tuple[int, ...]) -> tuple[float, int]:
        moved = sum(numel(value.shape) for value in known
                    if not _holds(value.placement, workers))
        return moved - work * (1 - 1 / len(workers)), -len(workers)
    return min(dict.fromkeys(value.placement.workers for value in known), key=cost)


def _holds(placement, workers: tuple[int, ...]) -> bool:
    return placement.workers == workers or (
        isinstance(placement, Replicate) and set(workers) <= set(placement.workers))


def _carried(placement, value: Value, workers: tuple[int, ...], axis: int | None,
             output: Value | None) -> str | int:
    """The kind an input keeps when its op runs on `workers`. Under a signal that shards
    on `axis`, an input from elsewhere that spans the op's output along it (a batch
    brought into a data-parallel scope, `pred - targets`) arrives split on it: the
    signal shards compute, not only what it creates. Others arrive whole (a weight)."""
    if placement is None or placement.workers == workers:
        return 'R' if placement is None else kind_of(placement)
    if axis is not None and output is not None and len(value.shape) == len(output.shape) \
            and axis < len(value.shape) and value.shape[axis] == output.shape[axis] \
            >= len(workers):
        return axis
    if isinstance(placement, Shard) and value.shape[placement.axis] >= len(workers):
        return placement.axis
    return 'R'


def propagate_placements(graph: Graph, options: PipelineOptions) -> Graph:
    home = (options.home_worker,)
    if not options.scope_workers() and options.workers == home and all(
            value.placement == Replicate(home) for value in graph.inputs):
        return _all_at(graph, Replicate(home))
    return searched(graph, options)


def searched(graph: Graph, options: PipelineOptions) -> Graph:
    """Each op's placement, from its inputs' and its signal's (the module's docstring)."""
    scopes = options.scope_workers()
    home = (options.home_worker,)
    placed: dict[int, Value] = {id(value): value for value in graph.inputs}
    nodes = []
    for node in graph.nodes:
        inputs = tuple(placed[id(value)] for value in node.inputs)
        scope = scopes.get(node.scope)
        row = OPS[node.op]
        needed: tuple = ()
        attrs = node.attrs
        if scope is None and _anywhere(node, inputs):
            outputs = node.outputs  # placed below, where its users are
        elif row.source:
            placement = _seed(node, scope, options) if node.outputs else None
            if row.uniform and scope is None and placement == Replicate(home):
                outputs = node.outputs  # zeros and the like: made where they are used
            else:
                outputs = tuple(value.placed(placement) for value in node.outputs)
        elif row.placed_by_signal and scope is not None:
            outputs = (node.outputs[0].placed(_seed(node, scope, options)),)
            needed = (outputs[0].placement,)
        else:
            known = [value for value in inputs if value.placement is not None]
            if scope is not None:
                workers = scope[1]
            elif known:
                workers = _choose_workers(known, node.outputs)
            else:
                workers = home
            axis = scope[0] if scope is not None else None
            output = node.outputs[0] if node.outputs else None
            kinds = tuple(_carried(value.placement, value, workers, axis, output)
                          for value in inputs)
            types = tuple(value.type for value in inputs)
            out_types = tuple(value.type for value in node.outputs)
            decision = row.shard(kinds, types, out_types, **node.attrs) if row.shard else None
            wanted, made, *changed = decision or replicated(inputs, node.outputs)
            if changed:
                attrs = {**node.attrs, **changed[0]}
            needed = tuple(placement_of(kind, workers) for kind in wanted)
            outputs = tuple(value.placed(placement_of(kind, workers))
                            for value, kind in zip(node.outputs, made))
        placed.update((id(old), new) for old, new in zip(node.outputs, outputs))
        nodes.append(Node(node.op, inputs, outputs, attrs, node.scope, node.note,
                          node.location, needed))
    return _place_anywhere_values(graph.replace(
        nodes=tuple(nodes), outputs=tuple(placed[id(value)] for value in graph.outputs)),
        home)


def _all_at(graph: Graph, placement: Replicate) -> Graph:
    """One worker, no signal that shards, every input on it: every value is placed there,
    as `searched` would place it, without the search (a fragment of new shapes, a
    sequence growing by a token a step, is planned afresh each time: 0.48 against 1.6 ms
    for a 256-op fragment of a small transformer, measured)."""
    placed: dict[int, Value] = {id(value): value for value in graph.inputs}
    nodes = []
    for node in graph.nodes:
        inputs = tuple(placed[id(value)] for value in node.inputs)
        outputs = tuple(value.placed(placement) for value in node.outputs)
        placed.update(zip(map(id, node.outputs), outputs))
        nodes.append(Node(node.op, inputs, outputs, node.attrs, node.scope, node.note,
                          node.location, (placement,) * len(inputs)))
    return graph.replace(nodes=tuple(nodes),
                         outputs=tuple(placed[id(value)] for value in graph.outputs))


def _place_anywhere_values(graph: Graph, home: tuple[int, ...]) -> Graph:
    """Constants live on every worker that uses them (the home worker if none does); a
    constant made from constants, on every worker that uses it."""
    users: dict[int, set[int]] = {}
    for node in reversed(graph.nodes):
        if node.outputs and node.outputs[0].placement is None:
            workers = users.setdefault(id(node.outputs[0]), set()) or set(home)
            for value in node.inputs:
                users.setdefault(id(value), set()).update(workers)
            continue
        for value, needed in zip(node.inputs, node.input_placements):
            if value.placement is None:
                users.setdefault(id(value), set()).update(needed.workers)
    renamed: dict[int, Value] = {}
    nodes = []
    for node in graph.nodes:
        inputs = tuple(renamed.get(id(value), value) for value in node.inputs)
        outputs, needed = node.outputs, node.input_placements
        if outputs and outputs[0].placement is None:
            placement = Replicate(tuple(sorted(users.get(id(outputs[0])) or home)))
            outputs = (outputs[0].placed(placement),)
            renamed[id(node.outputs[0])] = outputs[0]
            needed = (placement,) * len(inputs)
        nodes.append(Node(node.op, inputs, outputs, node.attrs, node.scope, node.note,
                          node.location, needed))
    return graph.replace(nodes=tuple(nodes),
                         outputs=tuple(renamed.get(id(v), v) for v in graph.outputs))
