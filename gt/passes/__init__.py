"""GT's compiler passes, in the order the dispatcher runs them.

Each pass is a function `(graph, options) -> graph` in a file of its own name. `lower`
runs after the pipeline and returns one graph per worker.
"""

from gt.ir import Graph, verify, verify_placements
from gt.passes.eliminate_common_subexpressions import eliminate_common_subexpressions
from gt.passes.eliminate_dead_code import eliminate_dead_code
from gt.passes.fold_transposes import fold_transposes
from gt.passes.insert_moves import insert_moves
from gt.passes.keep_generators_in_step import (
    generator_holders_after,
    keep_generators_in_step,
)
from gt.passes.lower import WorkerProgram, lower
from gt.passes.options import PipelineOptions
from gt.passes.propagate_placements import propagate_placements

PIPELINE = [eliminate_common_subexpressions, fold_transposes, eliminate_dead_code,
            propagate_placements, insert_moves, keep_generators_in_step]


def run_pipeline(
    graph: Graph, options: PipelineOptions, dump: bool = False, check: bool = False
) -> Graph:
    """Run every pass; `check` verifies after each, `dump` prints the graph between them."""
    for compiler_pass in PIPELINE:
        graph = compiler_pass(graph, options)
        if check:
            moved = PIPELINE.index(compiler_pass) >= PIPELINE.index(insert_moves)
            (verify_placements if moved else verify)(graph)
        if dump:
            print(f'// after {compiler_pass.__name__}\n{graph}')
    return graph


__all__ = ['PIPELINE', 'PipelineOptions', 'WorkerProgram', 'generator_holders_after', 'lower',
           'run_pipeline']
