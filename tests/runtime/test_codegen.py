"""Hot programs run as generated Python: same results as the interpreter, intermediates
freed after their last use, and failures still reported op by op."""

import msgpack
import torch

from gt.runtime.codegen import generate
from gt.runtime.engines import TorchEngine
from gt.runtime.program import Failed, Program

ENGINE = TorchEngine('cpu')


def program(instructions: list, n_inputs: int, keep: list) -> Program:
    """A program from `(op, in_slots, attrs, n_outputs, location)`s, none marked to reuse
    an operand's memory."""
    instructions = [(*instruction, None) for instruction in instructions]
    return Program(msgpack.packb((instructions, n_inputs, keep, None, 'float32')),
                   ENGINE.implementation)


def test_generated_code_matches_the_interpreter_with_attrs_sources_and_multiple_outputs():
    instructions = [
        ('matmul', [0, 1], {}, 1, 0),                                  # s2
        ('split', [2], {'sizes': [1, 2], 'dim': 1}, 2, 1),             # s3, s4
        ('sum', [4], {'dim': [1], 'keepdim': True}, 1, 2),             # s5
        ('scalar', [], {'dtype': 'float32', 'slot': 0}, 1, 3),         # s6
        ('mul', [3, 6], {}, 1, 4),                                     # s7
        ('add', [7, 5], {}, 1, 5),                                     # s8
    ]
    keep = [(8, 5), (2, 0)]
    interpreted, generated = program(instructions, 2, keep), program(instructions, 2, keep)
    generated.generated = generate(generated.steps, [0, 1], generated.result_slots)
    x, w = torch.randn(4, 5), torch.randn(5, 3)
    context = ENGINE.new_context(0)
    context.literals = [2.5]
    expected, errors = interpreted.run([x, w], context, base=0)
    assert errors == [] and interpreted.generated is None  # first run: interpreted
    got, errors = generated.run([x, w], context, base=0)
    assert errors == []
    for a, b in zip(got, expected):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    torch.testing.assert_close(expected[0], (x @ w)[:, :1] * 2.5 + (x @ w)[:, 1:].sum(1, True))


def test_programs_become_generated_once_hot():
    p = program([('relu', [0], {}, 1, 0)], 1, [(1, 0)])
    context = ENGINE.new_context(0)
    p.run([torch.randn(3)], context, 0)
    assert p.generated is None
    p.run([torch.randn(3)], context, 0)
    assert p.generated is not None


def test_intermediates_are_deleted_after_their_last_use():
    p = program([('exp', [0], {}, 1, 0), ('neg', [1], {}, 1, 1), ('relu', [2], {}, 1, 2)],
                1, [(3, 2)])
    run = generate(p.steps, [0], p.result_slots)
    lines = run.source.splitlines()
    assert lines[2:] == [
        '    s1 = f0(s0)', '    del s0',
        '    s2 = f1(s1)', '    del s1',
        '    s3 = f2(s2)', '    del s2',
        '    return [s3]',
    ]
    torch.testing.assert_close(run([torch.zeros(2)], None)[0], torch.zeros(2))


def test_a_failure_in_generated_code_is_reported_for_the_failing_op():
    p = program([('floor_divide', [0, 1], {}, 1, 7), ('neg', [2], {}, 1, 8)], 2, [(3, 1)])
    context = ENGINE.new_context(0)
    ones, zeros = torch.ones(2, dtype=torch.int64), torch.zeros(2, dtype=torch.int64)
    p.run([ones, ones], context, 0)
    p.run([ones, ones], context, 0)
    assert p.generated is not None
    kept, errors = p.run([ones, zeros], context, base=100)
    assert isinstance(kept[0], Failed)
    assert len(errors) == 1 and errors[0][:3] == [100, 7, 'floor_divide']
