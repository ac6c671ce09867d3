"""Partitioning a program into compiled regions and eager steps: every step runs once,
after what it reads; eager steps keep their order; regions are as few as the eager steps
between them allow."""

from hypothesis import given
from hypothesis import strategies as st

from gt.runtime.codegen import Step
from gt.runtime.regions import Region, partition


def step(op: str, in_slots: tuple, out_slot: int) -> Step:
    return Step(None, False, in_slots, {}, (out_slot,), op, False)


# kinds: 'c' compilable, 'h' hoistable creation (no inputs), 'e' eager (moves, draws)
def program(kinds_and_inputs: list[tuple[str, tuple]], n_inputs: int = 2):
    steps = [step(kind, inputs, n_inputs + index)
             for index, (kind, inputs) in enumerate(kinds_and_inputs)]
    compilable = [kind == 'c' for kind, _ in kinds_and_inputs]
    hoistable = [kind == 'h' for kind, _ in kinds_and_inputs]
    return steps, compilable, hoistable


def test_the_docstring_example():
    # s2 = scalar; s3 = mul(s0, s2); s4 = randn; s5 = add(s3, s4); s6 = relu(s3)
    steps, compilable, hoistable = program(
        [('h', ()), ('c', (0, 2)), ('e', ()), ('c', (3, 4)), ('c', (3,))], n_inputs=2)
    order = partition(steps, compilable, hoistable, [5, 6], min_ops=1)
    assert order == [0, Region((1, 4), (0, 2), (3, 6)), 2, Region((3,), (3, 4), (5,))]


def test_a_training_step_without_moves_is_one_region_after_its_literals():
    steps, compilable, hoistable = program(
        [('c', (0, 1)), ('h', ()), ('c', (2, 3)), ('h', ()), ('c', (4, 5)), ('c', (6, 0))])
    order = partition(steps, compilable, hoistable, [7], min_ops=2)
    assert order == [1, 3, Region((0, 2, 4, 5), (0, 1, 3, 5), (7,))]


def test_moves_split_regions_and_keep_their_order():
    # grad = mul(x, w); g = all_reduce(grad); w2 = sub(w, g); h = relu(x)
    steps, compilable, hoistable = program(
        [('c', (0, 1)), ('c', (2,)), ('e', (3,)), ('c', (1, 4)), ('c', (0,)), ('c', (6,))])
    order = partition(steps, compilable, hoistable, [5, 7], min_ops=2)
    assert order == [Region((0, 1, 4, 5), (0, 1), (3, 7)), 2, 3]  # sub alone stays eager


def test_groups_smaller_than_min_ops_stay_eager():
    steps, compilable, hoistable = program([('c', (0, 1)), ('c', (2,))])
    assert partition(steps, compilable, hoistable, [3], min_ops=3) == [0, 1]
    assert partition(steps, compilable, hoistable, [3], min_ops=2) == [
        Region((0, 1), (0, 1), (3,))]


def test_values_read_after_a_region_or_kept_are_its_outputs_and_dead_ones_are_not():
    steps, compilable, hoistable = program([('c', (0,)), ('c', (2,)), ('c', (3,)), ('e', (2,))])
    (region, move) = partition(steps, compilable, hoistable, [4], min_ops=1)
    assert move == 3 and region.outputs == (2, 4)


@st.composite
def random_programs(draw):
    n_inputs = draw(st.integers(1, 3))
    records = []
    for index in range(draw(st.integers(1, 14))):
        kind = draw(st.sampled_from('ccce' + 'h'))
        available = n_inputs + index
        inputs = () if kind == 'h' else tuple(
            draw(st.lists(st.integers(0, available - 1), min_size=1, max_size=3)))
        records.append((kind, inputs))
    results = draw(st.lists(st.integers(0, n_inputs + len(records) - 1), max_size=3))
    return n_inputs, records, results, draw(st.integers(1, 3))


@given(random_programs())
def test_any_program_runs_every_step_once_after_its_inputs(case):
    n_inputs, records, results, min_ops = case
    steps, compilable, hoistable = program(records, n_inputs)
    order = partition(steps, compilable, hoistable, results, min_ops)
    defined = set(range(n_inputs))
    ran = []
    for item in order:
        if isinstance(item, Region):
            assert len(item.steps) >= min_ops
            assert all(compilable[i] for i in item.steps)
            assert set(item.inputs) <= defined  # everything it reads from outside exists
            inside = set()
            for index in item.steps:
                assert set(steps[index].in_slots) <= defined | inside
                inside.update(steps[index].out_slots)
            used_later = {s for i, st_ in enumerate(steps) if i not in item.steps
                          for s in st_.in_slots} | set(results)
            assert set(item.outputs) == inside & used_later
            defined.update(item.outputs)
            ran.extend(item.steps)
        else:
            assert set(steps[item].in_slots) <= defined
            defined.update(steps[item].out_slots)
            ran.append(item)
    assert sorted(ran) == list(range(len(steps)))
    assert set(results) <= defined
    eager = [i for i in ran if records[i][0] == 'e']
    assert eager == sorted(eager)  # moves and draws keep the program's order
