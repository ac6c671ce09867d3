"""From a fragment to per-worker programs, once per structure.

Planning decodes the fragment, runs the pass pipeline and lowers the result. Training
loops send the same structure again and again, so plans are cached by the structure's
bytes and the types and placements of its inputs: a repeated fragment costs a lookup.

A cached plan keeps what the dispatcher sends (the programs as bytes), not the graphs it
was made from: `graphs` makes them again for gt.debug.dump_ir. Kept, a loop whose every
fragment is new (a sequence growing by a token a step) filled the cache with hundreds of
graphs of thousands of nodes, and the interpreter's full collections, which walk every
object held, took 40% of the dispatcher's time (measured: 3.3 ms of CPU a token, 1.9
with collections off).
"""

from collections import Counter, OrderedDict
from dataclasses import dataclass

from gt.ir import OPS, Graph, Partial, Replicate, Value
from gt.ir.dtypes import default_float_as
from gt.ir.placement import Placement
from gt.ir.type_rules import numel
from gt.passes import PipelineOptions, generator_holders_after, lower, run_pipeline
from gt.runtime.compile_settings import CompileSettings
from gt.runtime.fragment import decode_structure
from gt.runtime.program import encode_program

PLAN_CACHE_SIZE = 512


@dataclass(frozen=True)
class WorkerPlan:
    worker: int
    program: bytes
    input_refs: list[int]  # positions in the fragment's externals: inputs, then replicas
    reads_data: bool  # whether the program needs the message's data frames
    ops: int  # its nodes, for the instruction log and per-session accounting


@dataclass(frozen=True)
class Plan:
    programs: list[WorkerPlan]
    kept: list[tuple]  # (local index, shape, dtype, placement) of values the client holds
    upgrades: list  # (external position, placement): inputs the workers now hold more of
    generator_holders: tuple | None  # workers whose random generator is in step afterwards
    ops: dict  # op name -> how many the fragment has (after the passes)
    largest: int = 0  # elements of its largest value (the scheduler's guess of its weight)


class Planner:
    def __init__(self) -> None:
        self.cache: OrderedDict[tuple, Plan] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def plan(self, structure: bytes, external_types: list[tuple], options: PipelineOptions,
             compile_settings: CompileSettings = CompileSettings()) -> Plan:
        key = (structure, tuple(external_types), options, compile_settings)
        plan = self.cache.get(key)
        if plan is not None:
            self.hits += 1
            self.cache.move_to_end(key)
            return plan
        self.misses += 1
        plan = self._build(structure, external_types, options, compile_settings)
        self.cache[key] = plan
        if len(self.cache) > PLAN_CACHE_SIZE:
            self.cache.popitem(last=False)
        return plan

    def graphs(self, structure: bytes, external_types: list[tuple],
               options: PipelineOptions) -> tuple[Graph, dict[int, Graph]]:
        """The fragment's graph after the pipeline, and each worker's lowered graph: what
        its plan was made from (gt.debug.dump_ir)."""
        _, graph, _, lowered = _planned(structure, external_types, options)
        return graph, {worker: program.graph for worker, program in lowered}

    def _build(self, structure: bytes, external_types: list[tuple], options: PipelineOptions,
               compile_settings: CompileSettings) -> Plan:
        fragment, graph, replicas, lowered = _planned(structure, external_types, options)
        kept_count = len(graph.outputs)
        programs = []
        for worker, program in lowered:
            inputs = list(program.inputs)
            keep = []
            for index, value in zip(program.outputs, program.graph.outputs):
                replica = replicas[index - kept_count] if index >= kept_count else None
                if replica is None:
                    keep.append((value, fragment.kept[index]))
                elif replica.kept:  # a value this fragment made: kept under its own index
                    keep.append((value, fragment.kept[replica.position]))
                else:  # an input's copy, kept under the input's id: `-1 - k` names it
                    keep.append((value, -1 - len(inputs)))
                    inputs.append(replica.position)
            programs.append(WorkerPlan(
                worker,
                encode_program(program.graph, keep, _compile_spec(compile_settings, options,
                                                                   program.graph),
                               options.default_dtype),
                inputs,
                any(node.op == 'from_numpy' for node in program.graph.nodes),
                len(program.graph.nodes),
            ))
        placements = [value.placement for value in graph.outputs]
        for replica in replicas:
            if replica.kept:
                placements[replica.position] = replica.placement
        kept_types = [(local, value.shape, value.dtype, placement)
                      for value, local, placement in zip(graph.outputs, fragment.kept, placements)]
        upgrades = [(r.position, r.placement) for r in replicas if not r.kept]
        values = [*graph.inputs, *(value for node in graph.nodes for value in node.outputs)]
        return Plan(programs, kept_types, upgrades, generator_holders_after(graph, options),
                    dict(Counter(node.op for node in graph.nodes).most_common()),
                    max((numel(value.shape) for value in values), default=0))


def _compile_spec(settings: CompileSettings, options: PipelineOptions, graph: Graph
                  ) -> list | None:
    """What to compile of a worker program: nothing under a default dtype other than
    float32, since compiles run beside the worker's loop (a thread, a helper process)
    and torch's default dtype, which such a program runs under, is the whole process's."""
    return settings.program_spec(graph) if options.default_dtype == 'float32' else None


def _planned(structure: bytes, external_types: list[tuple], options: PipelineOptions) -> tuple:
    """The decoded fragment, its graph after the pipeline, the moves worth remembering
    (`find_replicas`) and each worker's lowered program, by worker; types are worked out
    under the session's default dtype."""
    with default_float_as(options.default_dtype):
        fragment = decode_structure(structure, external_types)
        graph = run_pipeline(fragment.graph, options)
        # Passes keep the graph's outputs in order, so they still line up with `kept`.
        replicas = find_replicas(graph)
        lowered = sorted(lower(graph.replace(
            outputs=graph.outputs + tuple(r.moved for r in replicas)), options).items())
    return fragment, graph, replicas, lowered


@dataclass(frozen=True)
class Replica:
    kept: bool  # a value the fragment made and the client keeps (else one of its inputs)
    position: int  # in the graph's outputs, or its inputs
    moved: Value
    placement: Placement  # the value's placement with the copies


def find_replicas(graph: Graph) -> list[Replica]:
    """Moves worth remembering: a whole copy sent to more workers, or partial sums
    all-reduced, is the same value, so the workers keep it under the value's id and later
    fragments need not move it again (values never change: a copy cannot go stale). For
    the fragment's inputs and for the values it keeps."""
    places = {id(value): (False, index) for index, value in enumerate(graph.inputs)}
    places.update({id(value): (True, index) for index, value in enumerate(graph.outputs)})
    found: dict[tuple[bool, int], Replica] = {}
    for node in graph.nodes:
        if not (OPS[node.op].communication and node.inputs) or id(node.inputs[0]) not in places:
            continue
        (source,), (moved,) = node.inputs, node.outputs
        before, after = source.placement, moved.placement
        place = places[id(source)]
        if place in found or not isinstance(after, Replicate):
            continue
        if isinstance(before, Replicate):
            placement = Replicate(tuple(dict.fromkeys(before.workers + after.workers)))
        elif isinstance(before, Partial) and before.workers == after.workers:
            placement = after
        else:
            continue
        found[place] = Replica(place[0], place[1], moved, placement)
    return list(found.values())
