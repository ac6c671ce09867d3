"""Straight-line Python for hot programs.

A program the worker has run before is turned into one Python function: each op becomes
one line calling the op table's implementation, and each intermediate is deleted after
its last use, as eager PyTorch would free it. This removes the interpreter's per-op
bookkeeping; the numbers are the same because the same functions run in the same order.
"""

from typing import Any, Callable


def generate(steps: list, n_inputs: int, keep: list[tuple[int, int]]) -> Callable:
    """`steps` are the program's `(function, source, in_slots, attrs, n_outputs, op)`;
    returns `run(inputs, context) -> [value of each kept slot]`."""
    kept_slots = {slot for slot, _ in keep}
    last_use: dict[int, int] = {}
    for index, (_, _, in_slots, _, _, _) in enumerate(steps):
        for slot in in_slots:
            last_use[slot] = index
    namespace: dict[str, Any] = {}
    lines = ['def run(inputs, ctx):']
    if n_inputs:
        lines.append(f'    {", ".join(f"s{i}" for i in range(n_inputs))}, = inputs')
    slot = n_inputs
    for index, (function, source, in_slots, attrs, n_outputs, _) in enumerate(steps):
        namespace[f'f{index}'] = function
        args = [f's{i}' for i in in_slots]
        if source:
            args.insert(0, 'ctx')
        if attrs:
            namespace[f'a{index}'] = attrs
            args.append(f'**a{index}')
        call = f'f{index}({", ".join(args)})'
        outputs = [f's{slot + k}' for k in range(n_outputs)]
        if n_outputs == 0:
            lines.append(f'    {call}')
        elif n_outputs == 1:
            lines.append(f'    {outputs[0]} = {call}')
        else:
            lines.append(f'    {", ".join(outputs)}, = {call}')
        dead = [f's{i}' for i in sorted(set(in_slots))
                if last_use[i] == index and i not in kept_slots]
        dead += [name for k, name in enumerate(outputs)
                 if slot + k not in last_use and slot + k not in kept_slots]
        if dead:
            lines.append(f'    del {", ".join(dead)}')
        slot += n_outputs
    lines.append(f'    return [{", ".join(f"s{s}" for s, _ in keep)}]')
    source = '\n'.join(lines)
    exec(compile(source, '<gt program>', 'exec'), namespace)
    run = namespace['run']
    run.source = source  # for debugging and tests
    return run
