"""Straight-line Python for hot programs.

A program the worker has run before is turned into one Python function: each op becomes
one line calling the op table's implementation, and each intermediate is deleted after
its last use, as eager PyTorch would free it. This removes the interpreter's per-op
bookkeeping; the numbers are the same because the same functions run in the same order.
The same generator writes a compiled program's driver, where a line may call a whole
compiled region instead of one op (see gt.runtime.regions).
"""

from typing import Any, Callable, NamedTuple

from gt.runtime.buffer_reuse import IN_PLACE


class Step(NamedTuple):
    """One call: `function(ctx?, *slots[in_slots], **attrs)` defining `out_slots`."""

    function: Callable
    takes_context: bool
    in_slots: tuple
    attrs: dict
    out_slots: tuple
    op: str
    returns_sequence: bool  # a list or tuple of outputs (else the one output itself)
    reuse: int | None = None  # the operand whose memory the result may take


def generate(steps: list[Step], input_slots: list[int], result_slots: list[int],
             reuse_buffers: bool = False, consume_inputs: bool = False) -> Callable:
    """Return `run(inputs, context) -> [value of each result slot]`, where `inputs` are
    the values of `input_slots` in order. With `reuse_buffers`, a step marked `reuse`
    calls its function's in-place twin on that operand (gt.runtime.buffer_reuse). With
    `consume_inputs`, `run` empties `inputs`, so that each is freed after its last use
    (intermediates handed over from another function, gt.runtime.early_reply)."""
    kept = set(result_slots)
    last_use: dict[int, int] = {}
    for index, step in enumerate(steps):
        for slot in step.in_slots:
            last_use[slot] = index
    namespace: dict[str, Any] = {}
    lines = ['def run(inputs, ctx):']
    if input_slots:
        lines.append(f'    {", ".join(f"s{i}" for i in input_slots)}, = inputs')
        if consume_inputs:
            lines.append('    inputs.clear()')
    for index, step in enumerate(steps):
        namespace[f'f{index}'] = step.function
        args = [f's{i}' for i in step.in_slots]
        in_place = IN_PLACE.get(step.function) if reuse_buffers and step.reuse is not None \
            else None
        if in_place is not None:
            namespace[f'f{index}'] = in_place
            args.insert(0, args.pop(step.reuse))
        if step.takes_context:
            args.insert(0, 'ctx')
        if step.attrs:
            namespace[f'a{index}'] = step.attrs
            args.append(f'**a{index}')
        call = f'f{index}({", ".join(args)})'
        outputs = [f's{slot}' for slot in step.out_slots]
        if not outputs:
            lines.append(f'    {call}')
        elif step.returns_sequence:
            lines.append(f'    {", ".join(outputs)}, = {call}')
        else:
            lines.append(f'    {outputs[0]} = {call}')
        dead = [f's{i}' for i in sorted(set(step.in_slots))
                if last_use[i] == index and i not in kept]
        dead += [f's{slot}' for slot in step.out_slots
                 if slot not in last_use and slot not in kept]
        if dead:
            lines.append(f'    del {", ".join(dead)}')
    lines.append(f'    return [{", ".join(f"s{s}" for s in result_slots)}]')
    source = '\n'.join(lines)
    exec(compile(source, '<gt program>', 'exec'), namespace)
    run = namespace['run']
    run.source = source  # for debugging and tests
    return run
