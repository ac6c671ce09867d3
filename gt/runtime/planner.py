"""From a fragment to per-worker programs, once per structure.

Planning decodes the fragment, runs the pass pipeline and lowers the result. Training
loops send the same structure again and again, so plans are cached by the structure's
bytes and the types and placements of its inputs: a repeated fragment costs a lookup.
"""

from collections import OrderedDict
from dataclasses import dataclass

from gt.ir import Graph
from gt.passes import PipelineOptions, lower, run_pipeline
from gt.runtime.fragment import decode_structure
from gt.runtime.program import encode_program

PLAN_CACHE_SIZE = 512


@dataclass(frozen=True)
class WorkerPlan:
    worker: int
    program: bytes
    input_refs: list[int]  # positions in the fragment's externals
    reads_data: bool  # whether the program needs the message's data frames


@dataclass(frozen=True)
class Plan:
    programs: list[WorkerPlan]
    kept: list[tuple]  # (local index, shape, dtype, placement) of values the client holds
    graph: Graph  # after the pipeline, for gt.debug.dump_ir
    worker_graphs: dict  # worker -> its lowered graph, for gt.debug.dump_ir(workers=True)


class Planner:
    def __init__(self) -> None:
        self.cache: OrderedDict[tuple, Plan] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def plan(self, structure: bytes, external_types: list[tuple], options: PipelineOptions) -> Plan:
        key = (structure, tuple(external_types), options)
        plan = self.cache.get(key)
        if plan is not None:
            self.hits += 1
            self.cache.move_to_end(key)
            return plan
        self.misses += 1
        plan = self._build(structure, external_types, options)
        self.cache[key] = plan
        if len(self.cache) > PLAN_CACHE_SIZE:
            self.cache.popitem(last=False)
        return plan

    def _build(
        self, structure: bytes, external_types: list[tuple], options: PipelineOptions
    ) -> Plan:
        fragment = decode_structure(structure, external_types)
        graph = run_pipeline(fragment.graph, options)
        # Passes keep the graph's outputs in order, so they still line up with `kept`.
        programs = []
        lowered = sorted(lower(graph, options).items())
        for worker, program in lowered:
            keep = [(value, fragment.kept[index])
                    for index, value in zip(program.outputs, program.graph.outputs)]
            programs.append(WorkerPlan(
                worker,
                encode_program(program.graph, keep),
                list(program.inputs),
                any(node.op == 'from_numpy' for node in program.graph.nodes),
            ))
        kept_types = [(local, value.shape, value.dtype, value.placement)
                      for value, local in zip(graph.outputs, fragment.kept)]
        return Plan(programs, kept_types, graph, {w: p.graph for w, p in lowered})

