"""Worker programs: how the dispatcher encodes one worker's graph, and how the worker runs it.

Slots number the program's values: its inputs first, then each instruction's results in
order. A program names no client ids, so one encoding serves every fragment with the
same structure; the worker decodes it once and keeps it by id.
"""

from collections import Counter
from typing import Any

import msgpack

from gt.ir import OPS, Graph, Value
from gt.ir.dtypes import default_float_as
from gt.runtime import environment
from gt.runtime.buffer_reuse import reusable_operands
from gt.runtime.codegen import Step, generate
from gt.runtime.compiled_program import CompiledProgram
from gt.runtime.compiler import Compiler

# A program run this often is hot: worth turning into a Python function, and compiling
# when the session asked for that (GT_HOTPATH_THRESHOLD).
HOT_RUNS = environment.integer('GT_HOTPATH_THRESHOLD')


def encode_program(graph: Graph, keep: list[tuple[Value, int]], compile_spec: list | None = None,
                   default_dtype: str = 'float32') -> bytes:
    """`keep` pairs values with the fragment-local indices they are stored under (two
    indices may share a value). Each instruction carries its node's location, so that
    an error can name the client op, and the operand whose memory its result may take
    (gt.runtime.buffer_reuse). `compile_spec` is None or `[when, backend, steps]` (see
    gt.runtime.compiled_program); `default_dtype` is the session's, which it runs under."""
    slot: dict[int, int] = {id(value): index for index, value in enumerate(graph.inputs)}
    instructions = []
    reusable = reusable_operands(graph, [value for value, _ in keep])
    for node, reuse in zip(graph.nodes, reusable):
        instructions.append((node.op, [slot[id(v)] for v in node.inputs], node.attrs,
                             len(node.outputs), node.location, reuse))
        for value in node.outputs:
            slot[id(value)] = len(slot)
    kept = [(slot[id(value)], local) for value, local in keep]
    return msgpack.packb((instructions, len(graph.inputs), kept, compile_spec, default_dtype),
                         use_bin_type=True)


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

    def __init__(self, encoded: bytes, implementation: Any, compiler: Compiler | None = None):
        instructions, self.n_inputs, keep, compile_spec, default_dtype = msgpack.unpackb(
            encoded, raw=False, strict_map_key=False)
        # Run under the session's default dtype, when it is not the worker's own.
        self.default_dtype = None if default_dtype == 'float32' else default_dtype
        self.keep = [tuple(pair) for pair in keep]
        self.runs = 0
        self.session_runs: dict[int, int] = {}  # by session, for compiling
        self.generated = None
        self.steps: list[Step] = []
        self.locations = []
        self.moves = set()  # steps that move data: they run even on failed inputs
        self.draws = False  # whether a step draws random numbers (a run advances the generator)
        self.same_bits_on_one = None  # its one-thread check (gt.runtime.thread_tuning), once run
        slot = self.n_inputs
        for op, in_slots, attrs, n_outputs, location, reuse in instructions:
            row = OPS[op]
            if row.communication:
                self.moves.add(len(self.steps))
            self.draws = self.draws or row.random
            takes_context = row.takes_context
            self.steps.append(Step(implementation(row), takes_context, tuple(in_slots), attrs,
                                   tuple(range(slot, slot + n_outputs)), op, n_outputs != 1,
                                   reuse))
            self.locations.append(location)
            slot += n_outputs
        self.result_slots = [slot for slot, _ in self.keep]
        self.slot_of_local = {local: slot for slot, local in self.keep}
        self.maker_of_slot = {slot: index for index, step in enumerate(self.steps)
                              for slot in step.out_slots}
        self.splits: dict = {}  # fetched slots -> gt.runtime.early_reply.Split, or None
        self.op_counts = dict(Counter(step.op for step in self.steps))
        self.ran_compiled = False  # whether the last run used the compiled form
        self.threads = None  # its thread count's timings (gt.runtime.thread_tuning), once hot
        self.compiled = None
        if compile_spec is not None and compiler is not None:
            self.compiled = CompiledProgram(self.steps, list(range(self.n_inputs)),
                                            self.result_slots, compile_spec, compiler, HOT_RUNS,
                                            self.locations)

    @property
    def compiles(self) -> bool:
        """Whether it is to run compiled, now or once ready (gt.runtime.thread_tuning
        treats the rest, failed compiles included, as eager)."""
        return self.compiled is not None and self.compiled.may_compile()

    def run(self, inputs: list, context: Any, base: int) -> tuple[list, list]:
        """Return the kept values (in `keep` order) and the reports of ops that failed."""
        if self.default_dtype is None:
            return self._run(inputs, context, base)
        with default_float_as(self.default_dtype):
            return self._run(inputs, context, base)

    def _run(self, inputs: list, context: Any, base: int) -> tuple[list, list]:
        """`run`, under the process's default dtype.

        The first runs are interpreted; from the `HOT_RUNS`-th on, a generated function
        runs the program, or its compiled form once ready (when it is to be compiled).
        Any failure reruns it interpreted, op by op, to find the culprit (moves that ran
        already are not repeated: the context remembers their results).
        """
        self.runs += 1
        if self.generated is None and self.runs >= HOT_RUNS:
            self.generated = generate(self.steps, list(range(self.n_inputs)), self.result_slots,
                                      reuse_buffers=True)
        fast, is_compiled = self.generated, False
        if self.compiled is not None:
            # Hot for compiling by one session's runs: two clients of one script each
            # running a setup program once (making the model, loading its state) made it
            # hot, and its compile queued ahead of the training step's.
            session = context.session
            runs = self.session_runs[session] = self.session_runs.get(session, 0) + 1
            if runs >= self.compiled.first_run:
                runner, is_compiled = self.compiled.runner(inputs, runs, session, base)
                fast = runner or fast
        if fast is not None:
            rewind = context.generator_rewind() if self.draws else None
            try:
                results = fast(inputs, context)
            except Exception:
                if rewind is not None:
                    rewind()
            else:
                if is_compiled:
                    self.compiled.compiler.compiled_runs += 1
                self.ran_compiled = is_compiled
                return results, []
        self.ran_compiled = False
        env, errors = self.interpret(inputs, context, base)
        return [env[slot] for slot in self.result_slots], errors

    def interpret(self, inputs: list, context: Any, base: int) -> tuple[list, list]:
        env = list(inputs)
        try:
            for index, step in enumerate(self.steps):
                args = [env[s] for s in step.in_slots]
                result = (step.function(context, *args, **step.attrs) if step.takes_context
                          else step.function(*args, **step.attrs))
                if not step.returns_sequence:
                    env.append(result)
                elif step.out_slots:
                    env.extend(result)
        except Exception:
            return self._run_guarded(env, index, context, base)
        return env, []

    def _run_guarded(self, env: list, start: int, context: Any, base: int) -> tuple[list, list]:
        """The slow path after a failure: a failed input makes its dependents fail too."""
        step = self.steps[start]
        del env[step.out_slots[0] if step.out_slots else len(env):]
        errors = []
        for index in range(start, len(self.steps)):
            step = self.steps[index]
            args = [env[s] for s in step.in_slots]
            failed = next((a for a in args if isinstance(a, Failed)), None)
            if failed is None or index in self.moves:  # a move tells its peers of failures
                try:
                    result = (step.function(context, *args, **step.attrs) if step.takes_context
                              else step.function(*args, **step.attrs))
                    env.extend(list(result or ()) if step.returns_sequence else [result])
                    continue
                except Exception as error:
                    message = f'{type(error).__name__}: {error}'
                    failed = Failed([base, self.locations[index], step.op, message])
                    errors.append(failed.report)
            env.extend([failed] * len(step.out_slots))
        return env, errors
