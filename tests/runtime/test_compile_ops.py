"""Every pure op of the op table (neither creation, nor a move, nor with effects, nor
untraced: what a compiled program puts in regions) gives the same results in a compiled
worker program as in an uncompiled one, with torch.compile's cheap `eager` and
`aot_eager` backends, in this process, and leaves its inputs as they were.

The samples are the op tests' own: the `check_op` calls of tests/ir/test_ops_*.py,
collected by running those tests (every parametrization) with a recorder in its place,
plus a few for `distribute`, `copy_into`, `detach` and `untracked_write`, whose oracle
tests run them sharded. The
first sample of each input signature (dtypes, ranks, emptiness) whose node is traced (a
call holding host indices is not) is kept. An op's samples make one program: each
sample is the op followed by a cheap pure op on its first output (`neg`, or
`logical_not` for bool), so that the whole program is one region (a lone op is below
MIN_REGION_OPS). The test proves the region compiled and that its compiled code
ran (torch's profiler sees a compiled region; no fallback to interpreting), and compares
every kept value, all outputs of ops with several: exactly with `eager`, within dtype
tolerances with `aot_eager` (its decompositions may round differently).
"""

import importlib.util
import itertools
import sys
from pathlib import Path

import msgpack
import pytest
import torch
from gt_test_support import wait_for_compiles

from gt.ir import OPS
from gt.runtime.compiler import Compiler
from gt.runtime.engines import TorchEngine
from gt.runtime.program import Program
from gt.runtime.regions import Region

IR_TESTS = Path(__file__).parents[1] / 'ir'
if str(IR_TESTS) not in sys.path:
    sys.path.insert(0, str(IR_TESTS))
from op_check import tensor, type_of, wire  # noqa: E402

SAMPLE_MODULES = ['test_ops_elementwise', 'test_ops_indexing', 'test_ops_reductions',
                  'test_ops_shapes', 'test_ops_torch_calls', 'test_ops_normalization',
                  'test_ops_activations', 'test_ops_pooling', 'test_ops_batch_norm',
                  'test_ops_optimizer_steps']
ENGINE = TorchEngine('cpu')
PURE = [name for name, row in OPS.items()
        if row.traced and not (row.source or row.communication or row.effects or row.random)]
BACKENDS = ['eager', 'aot_eager']
# Ops whose traced form is another kernel: a region traces pow_number as torch.pow of the
# 0-d exponent tensor, since the number is an input of the region, not a constant.
TRACED_AS_ANOTHER_KERNEL = {'pow_number'}


def _parameter_sets(test) -> list[dict]:
    """The keyword arguments of each of a test function's parametrizations."""
    axes = []
    for mark in getattr(test, 'pytestmark', []):
        if mark.name == 'parametrize':
            names, values = mark.args[:2]
            names = [n.strip() for n in names.split(',')] if isinstance(names, str) else names
            axes.append([dict(zip(names, v if len(names) > 1 else (v,))) for v in values])
    return [{k: v for axis in combination for k, v in axis.items()}
            for combination in itertools.product(*axes)]


def _collect_samples() -> dict[str, list[tuple[list, dict]]]:
    """(inputs, attrs) per op, from the op tests run with `check_op` recording instead,
    in private copies of their modules; the first sample of each input signature."""
    samples: dict[str, dict[tuple, tuple[list, dict]]] = {}

    def record(op, inputs, attrs, expected, numpy=True):
        signature = tuple((x.dtype, x.dim(), x.numel() == 0) for x in inputs)
        if OPS[op].traces(wire(attrs)):
            samples.setdefault(op, {}).setdefault(signature, (list(inputs), wire(attrs)))

    for name in SAMPLE_MODULES:
        spec = importlib.util.spec_from_file_location(f'_compile_samples_{name}',
                                                      IR_TESTS / f'{name}.py')
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.check_op = record
        # A copy: a warning a test raises adds __warningregistry__ to the module.
        for test_name, test in list(vars(module).items()):
            if test_name.startswith('test_') and callable(test):
                for arguments in _parameter_sets(test):
                    try:
                        test(**arguments)
                    except pytest.skip.Exception:
                        pass
    for dtype in (torch.float32, torch.int64, torch.bool):
        x, y = tensor((8, 6), dtype), tensor((8, 6), dtype)
        record('distribute', [x], {}, None)
        record('copy_into', [x, y], {}, None)
        record('detach', [x], {}, None)
        record('untracked_write', [x, y], {}, None)
    return {op: list(by_signature.values()) for op, by_signature in samples.items()}


SAMPLES = _collect_samples()


@pytest.fixture(scope='module')
def compiler():
    made = Compiler()
    yield made
    made.close()


def encode(op: str, samples: list[tuple[list, dict]], spec: list | None) -> bytes:
    """Each sample's op, then `neg` (or `logical_not`) of its first output; all kept."""
    instructions = []
    n_inputs = sum(len(inputs) for inputs, _ in samples)
    slot, next_input = n_inputs, 0
    for location, (inputs, attrs) in enumerate(samples):
        in_slots = list(range(next_input, next_input + len(inputs)))
        next_input += len(inputs)
        outputs = OPS[op].infer(tuple(type_of(x) for x in inputs), **attrs)
        instructions.append((op, in_slots, attrs, len(outputs), location, None))
        then = 'logical_not' if outputs[0].dtype == 'bool' else 'neg'
        instructions.append((then, [slot], {}, 1, location, None))
        slot += len(outputs) + 1
    keep = [(s, s - n_inputs) for s in range(n_inputs, slot)]
    return msgpack.packb((instructions, n_inputs, keep, spec, 'float32'), use_bin_type=True)


def run(program: Program, inputs: list) -> list:
    with torch.inference_mode():
        kept, errors = program.run(inputs, ENGINE.new_context(0), base=0)
    assert errors == []
    return kept



def assert_same(got: list, expected: list, exact: bool) -> None:
    assert len(got) == len(expected)
    for index, (a, b) in enumerate(zip(got, expected)):
        tolerance = {'rtol': 0, 'atol': 0} if exact else {}
        torch.testing.assert_close(a, b, equal_nan=True, **tolerance,
                                   msg=lambda m, i=index: f'kept value {i}: {m}')


def _no_fallback(*args, **kwargs):
    raise AssertionError('the compiled run failed and fell back to interpreting')


def test_every_pure_op_has_compile_samples():
    missing = [op for op in PURE if not SAMPLES.get(op)]
    assert not missing, f'pure ops without compile samples: {missing}'


@pytest.mark.parametrize('backend', BACKENDS)
@pytest.mark.parametrize('op', PURE)
def test_the_compiled_op_matches_the_uncompiled_program(compiler, op, backend):
    samples = SAMPLES.get(op)
    assert samples, f'no compile samples for {op}'
    inputs = [x for sample_inputs, _ in samples for x in sample_inputs]
    originals = [x.clone() for x in inputs]
    expected = run(Program(encode(op, samples, None), ENGINE.implementation), inputs)

    program = Program(encode(op, samples, ['always', backend, None]), ENGINE.implementation,
                      compiler)
    assert all(isinstance(item, Region) for item in program.compiled.order), 'eager steps'
    failures = compiler.failures
    assert_same(run(program, inputs), expected, exact=True)  # eager while it compiles
    wait_for_compiles(compiler)
    (layout,) = program.compiled.layouts.values()
    errors = [future.exception() for future in layout.futures.values()]
    assert compiler.failures == failures and errors == [None] * len(errors), errors

    program._interpret = _no_fallback
    runs = compiler.compiled_runs
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profiler:
        got = run(program, inputs)
    assert compiler.compiled_runs == runs + 1
    assert any(e.name.startswith('Torch-Compiled Region') for e in profiler.events()), \
        'the compiled code did not run (a guard failed?)'
    assert_same(got, expected, exact=backend == 'eager' and op not in TRACED_AS_ANOTHER_KERNEL)
    assert_same(inputs, originals, exact=True)
