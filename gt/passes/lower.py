"""lower: split a placed graph into one program per worker, with local (per-shard) types.

Requires a graph after the pipeline. Ensures each worker's graph holds exactly the nodes
that worker runs, on the parts of values it holds: a node runs on the workers of its
output's placement; attrs that spell a shape spell the worker's part of it. A sharded
random draw is made whole on each of its workers, which keep their parts (their
generators are in step: see keep_generators_in_step), so it equals torch's draw; other
creation ops whose elements differ (arange, data) are made whole and cut too. A move
runs on the workers of its source and target placements, with those placements, the
global shape and its place among the graph's moves (`tag`, which pairs up the pieces
sent between workers) as attrs. Every worker's program keeps the global order of the
graph, so moves meet in the same order everywhere and no two workers wait on each other.

    before:  %0: f32[6,4]<S0@w0,w1> = zeros(shape=[6,4], dtype=float32)
    after:   {0: %0: f32[3,4]<S0@w0,w1> = zeros(shape=[3,4], dtype=float32),
              1: the same on w1}
"""

from dataclasses import dataclass

from gt.ir import OPS, Graph, Node, Replicate, Shard, Value
from gt.ir.placement import encode_placement, local_shape
from gt.passes.options import PipelineOptions


@dataclass(frozen=True)
class WorkerProgram:
    graph: Graph  # the worker's nodes, on local values
    inputs: tuple[int, ...]  # which of the global graph's inputs it reads, in order
    outputs: tuple[int, ...]  # which of the global graph's outputs it holds, in order


def _move_attrs(source, target, value: Value, tag: int) -> dict:
    return {'source': encode_placement(source), 'target': encode_placement(target),
            'shape': list(value.shape), 'dtype': value.dtype, 'tag': tag}


class _Split:
    def __init__(self, graph: Graph):
        self.position = {id(value): index for index, value in enumerate(graph.inputs)}
        self.local: dict[int, dict[int, Value]] = {}
        self.inputs: dict[int, list[tuple[int, Value]]] = {}
        self.nodes: dict[int, list[Node]] = {}

    def read(self, worker: int, value: Value) -> Value:
        values = self.local.setdefault(worker, {})
        if id(value) not in values:
            if id(value) not in self.position:
                raise ValueError(f'lower: worker {worker} reads a value it does not hold '
                                 f'({value.placement}); was insert_moves run?')
            local = Value(local_shape(value.shape, value.placement, worker), value.dtype,
                          value.placement)
            values[id(value)] = local
            self.inputs.setdefault(worker, []).append((self.position[id(value)], local))
        return values[id(value)]

    def define(self, worker: int, value: Value) -> Value:
        local = Value(local_shape(value.shape, value.placement, worker), value.dtype,
                      value.placement)
        self.local.setdefault(worker, {})[id(value)] = local
        return local

    def add(self, worker: int, node: Node, inputs: tuple, outputs: tuple, attrs: dict) -> None:
        self.nodes.setdefault(worker, []).append(
            Node(node.op, inputs, outputs, attrs, node.scope, node.note, node.location))


def lower(graph: Graph, options: PipelineOptions) -> dict[int, WorkerProgram]:
    split = _Split(graph)
    tag = 0
    for node in graph.nodes:
        row = OPS[node.op]
        if row.communication and not node.inputs:
            # sync_generator moves state, not a value, between the workers its attrs name.
            for worker in (node.attrs['source'], *node.attrs['targets']):
                split.add(worker, node, (), (), dict(node.attrs, tag=tag))
            tag += 1
        elif row.communication:
            _lower_move(split, node, tag)
            tag += 1
        elif row.source:
            _lower_creation(split, node, options)
        else:
            placed = node.outputs[0] if node.outputs else node.inputs[0]  # a check: its input's
            for worker in placed.placement.workers:
                inputs = tuple(split.read(worker, value) for value in node.inputs)
                outputs = tuple(split.define(worker, value) for value in node.outputs)
                attrs = node.attrs
                if 'shape' in attrs and len(outputs) == 1:
                    attrs = dict(attrs, shape=list(outputs[0].shape))
                split.add(worker, node, inputs, outputs, attrs)
    programs = {}
    for worker, nodes in split.nodes.items():
        reads = split.inputs.get(worker, [])
        held = [(index, split.local[worker][id(value)]) for index, value in
                enumerate(graph.outputs) if id(value) in split.local.get(worker, {})]
        local_graph = Graph(tuple(value for _, value in reads), tuple(nodes),
                            tuple(value for _, value in held), f'worker{worker}')
        programs[worker] = WorkerProgram(local_graph, tuple(index for index, _ in reads),
                                         tuple(index for index, _ in held))
    return programs


def _lower_move(split: _Split, node: Node, tag: int) -> None:
    (value,), (moved,) = node.inputs, node.outputs
    source, target = value.placement, moved.placement
    attrs = _move_attrs(source, target, value, tag)
    for worker in dict.fromkeys(source.workers + target.workers):
        inputs = (split.read(worker, value),) if worker in source.workers else ()
        outputs = (split.define(worker, moved),) if worker in target.workers else ()
        split.add(worker, node, inputs, outputs, attrs)


def _lower_creation(split: _Split, node: Node, options: PipelineOptions) -> None:
    row = OPS[node.op]
    if not node.outputs:  # manual_seed: every worker's generator
        for worker in options.workers:
            split.add(worker, node, (), (), node.attrs)
        return
    (value,) = node.outputs
    placement = value.placement
    for worker in placement.workers:
        if not isinstance(placement, Shard):
            split.add(worker, node, (), (split.define(worker, value),), node.attrs)
        elif row.uniform:
            local = split.define(worker, value)
            split.add(worker, node, (), (local,), dict(node.attrs, shape=list(local.shape)))
        else:
            whole = Value(value.shape, value.dtype, Replicate(placement.workers))
            split.add(worker, node, (), (whole,), node.attrs)
            cut = Node('shard', (whole,), (value,), {}, node.scope, node.note, node.location)
            split.add(worker, cut, (whole,), (split.define(worker, value),),
                      _move_attrs(whole.placement, placement, value, -1))
