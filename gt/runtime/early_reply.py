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
left, since each split costs a second reply, and only when nothing in the rest can fail
on the values it reads (`FALLIBLE`: index ops, integer division, checks, and torch
functions run by name that read indices or factor matrices, `FALLIBLE_WORDS`), unless it
reads values a step before the split found valid (a loss's backward reads the targets
its forward read): a fetch raises the failures of the work recorded before it, and the
client undoes a failed step's optimizer state when the fetch raises. Answered early, a
failure came one fetch late, after the next step was recorded on the failed one's state
(Adam's step count one ahead, and that step's loss lost). What can still fail there
(running out of memory) is reported at the session's next fetch; if the script fetches
nothing more, it goes unreported, as the failures of work recorded after its last fetch
do.
"""

from typing import Any, Callable

from gt.runtime.codegen import generate

MIN_REST = 0.25  # the share of a program's steps that must be left after the split
# Ops whose kernels may raise on the values they read, and the inputs whose values do:
# an index out of range, a divisor of zero, a value outside a check's range or [0, 1]
# (None: any input).
FALLIBLE = {
    'embedding': (1,), 'gather': (1,), 'scatter_add': (1,), 'index_add': (1,),
    'nll_loss_forward': (1,), 'floor_divide': (1,), 'remainder': (1,), 'pow': (1,),
    'check_between': (0,), 'binary_cross_entropy': (0,),
    'binary_cross_entropy_backward': (1,), 'set_rng_state': None}
BY_NAME = frozenset({'torch_call', 'torch_random', 'torch_sizes', 'torch_vjp',
                     'torch_vjp_grad'})
# Torch functions run by name that may, by the words of their names: those that read
# indices, counts or probabilities, factor or invert matrices, or divide integers (a
# norm, a convolution, an LSTM or an activation cannot).
FALLIBLE_WORDS = frozenset({
    'getitem', 'setitem', 'index', 'gather', 'scatter', 'take', 'put', 'embedding',
    'bincount', 'hot', 'multinomial', 'bernoulli', 'binomial', 'poisson', 'normal',
    'searchsorted', 'bucketize', 'histc', 'nll', 'entropy', 'ctc', 'margin', 'unpool',
    'cholesky', 'inv', 'inverse', 'tensorinv', 'solve', 'tensorsolve', 'lu', 'factor',
    'det', 'slogdet', 'logdet', 'eig', 'eigh', 'eigvals', 'eigvalsh', 'svd', 'svdvals',
    'qr', 'lstsq', 'pinv', 'power', 'divide', 'div', 'remainder', 'fmod', 'gcd', 'lcm',
    'interleave', 'unique', 'nonzero', 'select', 'sparse', 'assert', 'check', 'cond',
    'rank'})
NEVER_FAILING = frozenset({'kl_div'})  # 'div' is a word of it, not a division
# Ops whose output holds only values of their first input (laid out anew), and those
# that give a 0/1 mask: an index found valid stays valid through them, and through a
# product with a mask (the loss's backward reads `target * (target != ignore_index)`).
SAME_VALUES = frozenset({'reshape', 'unsqueeze', 'squeeze', 'expand', 'transpose',
                         'permute', 'getitem', 'contiguous', 'detach', 'batched_layout'})
MASKS = frozenset({'eq', 'ne', 'lt', 'le', 'gt', 'ge', 'logical_and', 'logical_or',
                   'logical_not'})


def _checked_inputs(step: Any) -> tuple[int, ...] | None:
    """The positions of the inputs whose values `step` may fail on; () where it cannot
    fail on values, None for any of them."""
    if step.op in ('torch_vjp', 'torch_vjp_grad'):
        if not _fallible_by_name(step.attrs.get('fn')):
            return ()
        return tuple(range(step.attrs.get('n_inputs', len(step.in_slots))))
    if step.op in BY_NAME:
        return None if _fallible_by_name(step.attrs.get('fn')) else ()
    return FALLIBLE.get(step.op, ())


def _fallible_by_name(name: Any) -> bool:
    if not isinstance(name, str):
        return True
    attribute = name.rpartition('.')[2].strip('_').lower()
    return attribute not in NEVER_FAILING and not FALLIBLE_WORDS.isdisjoint(attribute.split('_'))


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
    is not hot yet, runs compiled, moves data, runs under another default dtype, would
    leave too little to overlap, or could fail after the fetched values."""
    if (program.generated is None or program.compiled is not None or program.moves
            or program.default_dtype is not None):
        return None
    key = tuple(fetched_slots)
    if key in program.splits:
        return program.splits[key]
    makers = program.maker_of_slot
    at = 1 + max((makers[slot] for slot in fetched_slots if slot in makers), default=-1)
    split = None
    if (len(program.steps) - at >= max(1, MIN_REST * len(program.steps))
            and _cannot_fail_after(program.steps, at)):
        split = Split(program, at)
    program.splits[key] = split
    return split


def _cannot_fail_after(steps: list, at: int) -> bool:
    """Whether no step from `at` on may fail on its values: each input such a step may
    fail on was found valid before `at`, read in that role by a step that could have
    failed on it (a loss's backward reads the targets its forward read; a lookup's, its
    indices; a by-name call's gradient, its forward's inputs), or made from such a value
    by ops that keep its values (`SAME_VALUES`, a product with a mask)."""
    valid: set[int] = set()
    masks: set[int] = set()
    for index, step in enumerate(steps):
        checked = _checked_inputs(step)
        positions = range(len(step.in_slots)) if checked is None else checked
        if index >= at and any(step.in_slots[p] not in valid for p in positions
                               if p < len(step.in_slots)):
            return False
        if index < at:
            valid.update(step.in_slots[p] for p in positions if p < len(step.in_slots))
        inputs = step.in_slots
        if step.op in SAME_VALUES and inputs and inputs[0] in valid:
            valid.update(step.out_slots)
        elif step.op in MASKS:
            masks.update(step.out_slots)
        elif step.op == 'mul' and len(inputs) == 2 and (
                (inputs[0] in valid and inputs[1] in masks)
                or (inputs[1] in valid and inputs[0] in masks)):
            valid.update(step.out_slots)
    return True


def run_split(program: Any, split: Split, inputs: list, context: Any, base: int,
              answer: Callable[[dict], None]) -> tuple[list, list]:
    """Run `program` in its two halves, calling `answer({slot: value})` with the carried
    values between them. A failure in either half runs the whole program again op by op
    from its inputs, as a failure of the one generated function does (the rest may
    have reused a carried value's memory): in the first, the caller answers at the end,
    errors included; in the rest, its failures are reported with the next fetch."""
    program.runs += 1
    program.ran_compiled = False
    rewind = context.generator_rewind() if program.draws else None
    try:
        carried = split.first(inputs, context)
        answer(dict(zip(split.carried, carried)))
        return split.rest(carried, context), []  # which lets go of each carried value
    except Exception:
        if rewind is not None:  # the same draws as the values answered
            rewind()
        env, errors = program.interpret(inputs, context, base)
        return [env[slot] for slot in program.result_slots], errors
