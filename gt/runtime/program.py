"""Worker programs: how the dispatcher encodes one worker's graph, and how the worker runs it.

Slots number the program's values: its inputs first, then each instruction's results in
order. A program names no client ids, so one encoding serves every fragment with the
same structure; the worker decodes it once and keeps it by id.
"""

import os
from typing import Any

import msgpack

from gt.ir import OPS, Graph, Value
from gt.runtime.codegen import generate

# A program run this often is worth turning into a Python function (GT_HOTPATH_THRESHOLD).
HOT_RUNS = int(os.environ.get('GT_HOTPATH_THRESHOLD', '2'))


def encode_program(graph: Graph, keep: list[tuple[Value, int]]) -> bytes:
    """`keep` pairs values with the fragment-local indices they are stored under (two
    indices may share a value). Each instruction carries its node's location, so that
    an error can name the client op."""
    slot: dict[int, int] = {id(value): index for index, value in enumerate(graph.inputs)}
    instructions = []
    for node in graph.nodes:
        instructions.append((node.op, [slot[id(v)] for v in node.inputs], node.attrs,
                             len(node.outputs), node.location))
        for value in node.outputs:
            slot[id(value)] = len(slot)
    kept = [(slot[id(value)], local) for value, local in keep]
    return msgpack.packb((instructions, len(graph.inputs), kept), use_bin_type=True)


class Failed:
    """Stands in for a value whose op raised, so that only its dependents fail.

    `report` is `[base, location, op, message]`: the fragment and position of the client
    op that failed, which the client turns back into the user's file and line.
    """

    __slots__ = ('report',)

    def __init__(self, report: list):
        self.report = report


class Program:
    """A decoded program, ready to run many times with different inputs."""

    def __init__(self, encoded: bytes, implementation: Any):
        instructions, self.n_inputs, keep = msgpack.unpackb(
            encoded, raw=False, strict_map_key=False)
        self.keep = [tuple(pair) for pair in keep]
        self.runs = 0
        self.generated = None
        self.steps = []
        self.first_output_slot = []
        self.locations = []
        self.moves = set()  # steps that move data: they run even on failed inputs
        slot = self.n_inputs
        for op, in_slots, attrs, n_outputs, location in instructions:
            row = OPS[op]
            if row.communication:
                self.moves.add(len(self.steps))
            takes_context = row.source or row.communication
            self.steps.append((implementation(row), takes_context, in_slots, attrs, n_outputs, op))
            self.first_output_slot.append(slot)
            self.locations.append(location)
            slot += n_outputs

    def run(self, inputs: list, context: Any, base: int) -> tuple[list, list]:
        """Return the kept values (in `keep` order) and the reports of ops that failed.

        The first runs are interpreted; from the `HOT_RUNS`-th on, a generated function
        runs the program. Any failure reruns it interpreted, op by op, to find the culprit
        (moves that ran already are not repeated: the context remembers their results).
        """
        self.runs += 1
        if self.generated is None and self.runs >= HOT_RUNS:
            self.generated = generate(self.steps, self.n_inputs, self.keep)
        if self.generated is not None:
            try:
                return self.generated(inputs, context), []
            except Exception:
                pass
        env, errors = self._interpret(inputs, context, base)
        return [env[slot] for slot, _ in self.keep], errors

    def _interpret(self, inputs: list, context: Any, base: int) -> tuple[list, list]:
        env = list(inputs)
        try:
            for index, (run, source, in_slots, attrs, n_outputs, op) in enumerate(self.steps):
                args = [env[s] for s in in_slots]
                result = run(context, *args, **attrs) if source else run(*args, **attrs)
                if n_outputs == 1:
                    env.append(result)
                elif n_outputs:
                    env.extend(result)
        except Exception:
            return self._run_guarded(env, index, context, base)
        return env, []

    def _run_guarded(self, env: list, start: int, context: Any, base: int) -> tuple[list, list]:
        """The slow path after a failure: a failed input makes its dependents fail too."""
        del env[self.first_output_slot[start]:]
        errors = []
        for index in range(start, len(self.steps)):
            run, source, in_slots, attrs, n_outputs, op = self.steps[index]
            args = [env[s] for s in in_slots]
            failed = next((a for a in args if isinstance(a, Failed)), None)
            if failed is None or index in self.moves:  # a move tells its peers of failures
                try:
                    result = run(context, *args, **attrs) if source else run(*args, **attrs)
                    results = [result] if n_outputs == 1 else list(result or ())
                    env.extend(results)
                    continue
                except Exception as error:
                    message = f'{type(error).__name__}: {error}'
                    failed = Failed([base, self.locations[index], op, message])
                    errors.append(failed.report)
            env.extend([failed] * n_outputs)
        return env, errors
