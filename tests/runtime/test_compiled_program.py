"""A program marked for compiling, run in this process with a real Compiler and torch's
cheap `eager` and `aot_eager` backends: same results as the uncompiled program, a switch
to the compiled form only once it is ready, one compiled form per input layout up to the
cap, and only marked steps in regions."""


import msgpack
import pytest
import torch
from gt_test_support import wait_for_compiles

from gt.runtime.compiled_program import MAX_LAYOUTS
from gt.runtime.compiler import Compiler
from gt.runtime.engines import TorchEngine
from gt.runtime.program import HOT_RUNS, Program
from gt.runtime.regions import Region

ENGINE = TorchEngine('cpu')

# s0 = x, s1 = w: y = relu(x @ w) * 2.5 + sum(x @ w, 1, keepdim); a draw between
INSTRUCTIONS = [
    ('matmul', [0, 1], {}, 1, 0),                                 # s2
    ('relu', [2], {}, 1, 1),                                      # s3
    ('scalar', [], {'dtype': 'float32', 'slot': 0}, 1, 2),        # s4
    ('mul', [3, 4], {}, 1, 3),                                    # s5
    ('sum', [2], {'dim': [1], 'keepdim': True}, 1, 4),            # s6
    ('add', [5, 6], {}, 1, 5),                                    # s7
    ('randn', [], {'shape': [4, 3], 'dtype': 'float32'}, 1, 6),   # s8
    ('mul', [7, 8], {}, 1, 7),                                    # s9
    ('tanh', [9], {}, 1, 8),                                      # s10
]
KEEP = [(7, 5), (10, 8)]


@pytest.fixture
def compiler():
    made = Compiler()
    yield made
    made.close()


def program(spec: list | None, compiler: Compiler | None) -> Program:
    encoded = msgpack.packb(([(*i, None) for i in INSTRUCTIONS], 2, KEEP, spec, 'float32'))
    return Program(encoded, ENGINE.implementation, compiler)


def run(p: Program, x: torch.Tensor, w: torch.Tensor, seed: int = 0, session: int = -1,
        base: int = 0) -> list:
    context = ENGINE.new_context(seed)
    context.session = session
    context.literals = [2.5]
    with torch.inference_mode():
        kept, errors = p.run([x, w], context, base=base)
    assert errors == []
    return kept



@pytest.mark.parametrize('backend', ['eager', 'aot_eager'])
def test_compiled_runs_match_the_uncompiled_program(compiler, backend):
    x, w = torch.randn(4, 5), torch.randn(5, 3)
    plain, compiled = program(None, None), program(['always', backend, None], compiler)
    expected = run(plain, x, w)
    first = run(compiled, x, w)  # starts the compile; runs eagerly meanwhile
    for a, b in zip(first, expected):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    wait_for_compiles(compiler)
    runs_before = compiler.compiled_runs
    for _ in range(2):
        for a, b in zip(run(compiled, x, w), expected):
            torch.testing.assert_close(a, b)  # the draw is the same: seeded, and eager
    assert compiler.compiled_runs == runs_before + 2
    assert compiler.regions_compiled == 2 and compiler.programs_compiled == 1
    assert compiler.failures == 0


def test_the_draw_stays_eager_and_splits_the_program_in_two_regions(compiler):
    p = program(['always', 'eager', None], compiler)
    regions = [item for item in p.compiled.order if isinstance(item, Region)]
    ops = [[p.steps[i].op for i in region.steps] for region in regions]
    assert ops == [['matmul', 'relu', 'mul', 'sum', 'add'], ['mul', 'tanh']]


def test_hot_programs_start_compiling_only_once_hot(compiler):
    p = program(['hot', 'eager', None], compiler)
    x, w = torch.randn(4, 5), torch.randn(5, 3)
    for _ in range(HOT_RUNS - 1):
        run(p, x, w)
    assert p.compiled.layouts == {}
    run(p, x, w)
    assert len(p.compiled.layouts) == 1


def test_each_input_layout_compiles_separately_up_to_the_cap(compiler):
    p = program(['always', 'eager', None], compiler)
    plain = program(None, None)
    for inner in range(1, MAX_LAYOUTS + 3):
        x, w = torch.randn(4, inner), torch.randn(inner, 3)
        for a, b in zip(run(p, x, w), run(plain, x, w)):
            torch.testing.assert_close(a, b)
    assert len(p.compiled.layouts) == MAX_LAYOUTS
    wait_for_compiles(compiler)
    assert compiler.regions_compiled == 2 * MAX_LAYOUTS


def test_a_transposed_input_is_a_layout_of_its_own(compiler):
    p = program(['always', 'eager', None], compiler)
    x, w = torch.randn(4, 5), torch.randn(5, 3)
    run(p, x, w)
    run(p, x, torch.randn(3, 5).t())
    assert len(p.compiled.layouts) == 2


def test_only_steps_marked_by_a_compile_signal_join_regions(compiler):
    p = program(['hot', 'eager', [0, 1, 3]], compiler)  # matmul, relu, mul
    regions = [item for item in p.compiled.order if isinstance(item, Region)]
    assert [region.steps for region in regions] == [(0, 1, 3)]


def test_an_op_failing_in_a_compiled_region_is_reported_for_that_op(compiler):
    instructions = [('floor_divide', [0, 1], {}, 1, 7, None), ('neg', [2], {}, 1, 8, None)]
    encoded = msgpack.packb((instructions, 2, [(3, 1)], ['always', 'eager', None], 'float32'))
    p = Program(encoded, ENGINE.implementation, compiler)
    ones, zeros = torch.ones(2, dtype=torch.int64), torch.zeros(2, dtype=torch.int64)
    context = ENGINE.new_context(0)
    with torch.inference_mode():
        p.run([ones, ones], context, 0)
        wait_for_compiles(compiler)
        p.run([ones, ones], context, 0)
        assert compiler.compiled_runs == 1
        kept, errors = p.run([ones, zeros], context, base=100)
    assert len(errors) == 1 and errors[0][:3] == [100, 7, 'floor_divide']


# s0 = g, s1 = x: relu's gradient masked with a zero, plus tensors made from attrs alone;
# the `scalar` reads the message's literals, so it stays out of the region.
MADE = [
    ('zeros', [], {'shape': [], 'dtype': 'float32'}, 1, 0),                          # s2
    ('gt', [1, 2], {}, 1, 1),                                                        # s3
    ('where', [3, 0, 2], {}, 1, 2),                                                  # s4
    ('ones', [], {'shape': [6], 'dtype': 'float32'}, 1, 3),                          # s5
    ('full', [], {'shape': [6], 'dtype': 'float32', 'value': 0.5}, 1, 4),            # s6
    ('arange', [], {'shape': [6], 'dtype': 'float32', 'start': 0.0, 'step': 0.1}, 1, 5),  # s7
    ('scalar', [], {'dtype': 'float32', 'slot': 0}, 1, 6),                           # s8
    ('mul', [6, 8], {}, 1, 7),                                                       # s9
    ('add', [4, 9], {}, 1, 8),                                                       # s10
    ('add', [5, 7], {}, 1, 9),                                                       # s11
    ('add', [10, 11], {}, 1, 10),                                                    # s12
]


@pytest.mark.parametrize('backend', ['eager', 'aot_eager'])
def test_tensors_made_from_attrs_join_regions_on_the_workers_device(compiler, backend):
    """A gradient's `where(keep, g, zeros)` compiles whole: the zeros is made in the
    region (where the compiler folds it), not allocated before each call."""
    encoded = msgpack.packb(([(*i, None) for i in MADE], 2, [(12, 10), (7, 5)],
                             ['always', backend, None], 'float32'))
    p = Program(encoded, ENGINE.implementation, compiler)
    plain = Program(msgpack.packb(([(*i, None) for i in MADE], 2, [(12, 10), (7, 5)], None,
                                   'float32')),
                    ENGINE.implementation)
    (region,) = [item for item in p.compiled.order if isinstance(item, Region)]
    ops = [p.steps[i].op for i in region.steps]
    assert {'zeros', 'ones', 'full', 'arange'} <= set(ops) and 'scalar' not in ops
    g, x = torch.randn(6), torch.randn(6)
    expected = run(plain, g, x)
    for _ in range(2):
        for a, b in zip(run(p, g, x), expected):
            torch.testing.assert_close(a, b, rtol=0, atol=0)
        wait_for_compiles(compiler)
    assert compiler.compiled_runs == 1 and compiler.failures == 0
    torch.testing.assert_close(expected[1], torch.arange(0, 0.55, 0.1)[:6])


def test_a_failed_compile_warns_each_session_running_the_program_once(compiler, monkeypatch):
    """The session whose run started the compile, and another running the same program
    (they share it on a worker), each hear of the failure once, at their next fetch,
    with where the region's ops are in the fragment the session ran last."""
    def refuse(*_):
        raise RuntimeError('the backend refuses\nmore lines that stay in the worker\'s log')

    monkeypatch.setattr(compiler, '_compile', refuse)
    x, w = torch.randn(4, 5), torch.randn(5, 3)
    p = program(['always', 'eager', None], compiler)
    expected = run(program(None, None), x, w)
    run(p, x, w, session=1, base=100)
    wait_for_compiles(compiler)
    text = ('a region of 5 ops did not compile with eager (RuntimeError: the backend '
            'refuses); it runs eagerly, with the same results (GT_DEBUG_COMPILE=1 in the '
            "worker's environment prints the whole error)")
    # The region: matmul (location 0) to add (location 5), the scalar hoisted out; in the
    # fragment the session ran last, while it is the program's last run.
    for session, bases in ((1, (110, 120)), (2, (200, 210))):
        for base in bases:
            for a, b in zip(run(p, x, w, session=session, base=base), expected):
                torch.testing.assert_close(a, b, rtol=0, atol=0)  # eager, the same results
        assert compiler.take_warnings(session) == [[bases[-1], [0, 5], 'warning', text]]
        run(p, x, w, session=session)
        assert compiler.take_warnings(session) == []
    assert compiler.failures == 2 and compiler.compiled_runs == 0
    run(p, x, w, session=3, base=300)
    run(p, x, w, session=1, base=130)  # another session's run is the program's last
    assert compiler.take_warnings(3) == [[None, [0, 5], 'warning', text]]
    compiler.end_session(2)
    assert 2 not in compiler.sessions_warned


def test_gt_debug_compile_names_each_regions_ops(compiler, monkeypatch, capfd):
    monkeypatch.setenv('GT_DEBUG_COMPILE', '1')
    x, w = torch.randn(4, 5), torch.randn(5, 3)
    p = program(['always', 'eager', None], compiler)
    run(p, x, w)
    wait_for_compiles(compiler)
    said = capfd.readouterr().err
    assert ('compiling a region of 5 ops (1 matmul, 1 relu, 1 mul, 1 sum, 1 add) with eager'
            in said), said
    assert 'compiled a region of 2 ops (1 mul, 1 tanh) with eager in ' in said, said


@pytest.mark.parametrize('meanwhile', ['the session ended', 'the dispatcher restarted'])
def test_a_compile_failing_after_its_session_is_gone_warns_nobody(compiler, monkeypatch,
                                                                   meanwhile):
    """A restarted dispatcher numbers sessions from 0 again: a failure of an old session's
    compile was handed to the new session 0, and one of an ended session's was kept."""
    import threading

    release = threading.Event()

    def refuse_later(*_):
        release.wait(10)
        raise RuntimeError('the backend refuses')

    monkeypatch.setattr(compiler, '_compile', refuse_later)
    x, w = torch.randn(4, 5), torch.randn(5, 3)
    run(program(['always', 'eager', None], compiler), x, w, session=0)
    if meanwhile == 'the session ended':
        compiler.end_session(0)
    else:
        compiler.forget_sessions()
    release.set()
    wait_for_compiles(compiler)
    assert compiler.failures == 2
    assert compiler.take_warnings(0) == [] and not compiler.sessions_warned
    assert not compiler.layouts_pending.get(0)
