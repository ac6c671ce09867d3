"""Answering a fetch as soon as its values exist, before the rest of their program runs.

A training loop that prints its loss each step fetches a value made early in the step's
program: the forward pass makes the loss, and the backward pass and the optimizer's
update follow in the same program. Answered at the program's end, the client waits for
all of it, then records the next step while the worker idles. Answered as soon as the
loss exists, the client records the next step while the worker runs the rest.

So the worker splits a hot program after the step that makes the last fetched value: it
runs the first part, sends the values, then runs the rest. The reply says the program
has not ended (no seconds), and the program's Done follows. The split is kept per
program and fetched slots; it is taken only when a quarter of the steps or more are
left, since each split costs a second reply. A failure in the rest is reported at the
session's next fetch, as a failure of an op recorded after the fetch would be (torch
would have raised it before the fetch; an asynchronous CUDA error comes late the same
way); if the script fetches nothing more, it goes unreported, as the failures of work
recorded after its last fetch do.
"""

from typing import Any, Callable

from gt.runtime.codegen import generate

MIN_REST = 0.25  # the share of a program's steps that must be left after the split


class Split:
    """A program's two generated halves: `first(inputs)` returns the `carried` slots (the
    ones the rest reads or keeps), `rest(carried)` the program's results."""

    def __init__(self, program: Any, at: int):
        steps = program.steps
        boundary = program.n_inputs + sum(len(step.out_slots) for step in steps[:at])
        read_later = {slot for step in steps[at:] for slot in step.in_slots}
        self.carried = sorted(slot for slot in read_later | set(program.result_slots)
                              if slot < boundary)
        self.at = at
        self.first = generate(steps[:at], list(range(program.n_inputs)), self.carried,
                              reuse_buffers=True)
        self.rest = generate(steps[at:], self.carried, program.result_slots,
                             reuse_buffers=True, consume_inputs=True)


def split_for(program: Any, fetched_slots: list[int]) -> Split | None:
    """The split that answers a fetch of `fetched_slots` early, or None where the program
    is not hot yet, runs compiled, moves data, runs under another default dtype, or
    would leave too little to overlap."""
    if (program.generated is None or program.compiled is not None or program.moves
            or program.default_dtype is not None):
        return None
    key = tuple(fetched_slots)
    if key in program.splits:
        return program.splits[key]
    makers = program.maker_of_slot
    at = 1 + max((makers[slot] for slot in fetched_slots if slot in makers), default=-1)
    split = None
    if len(program.steps) - at >= max(1, MIN_REST * len(program.steps)):
        split = Split(program, at)
    program.splits[key] = split
    return split


def run_split(program: Any, split: Split, inputs: list, context: Any, base: int,
              answer: Callable[[dict], None]) -> tuple[list, list]:
    """Run `program` in its two halves, calling `answer({slot: value})` with the carried
    values between them. A failure in either half runs the whole program again op by op
    from its inputs, as a failure of the one generated function does (the rest may
    have reused a carried value's memory): in the first, the caller answers at the end,
    errors included; in the rest, its failures are reported with the next fetch."""
    program.runs += 1
    program.ran_compiled = False
    try:
        carried = split.first(inputs, context)
        answer(dict(zip(split.carried, carried)))
        return split.rest(carried, context), []  # which lets go of each carried value
    except Exception:
        env, errors = program.interpret(inputs, context, base)
        return [env[slot] for slot in program.result_slots], errors
