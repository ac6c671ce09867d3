"""Compiled regions: a program's steps grouped into as few compilable calls as possible.

Some steps must stay eager: moves (they talk to peers), random draws (so that
`manual_seed` reproduces torch's numbers exactly), creation ops that read the message's
literals and data, and nodes the compilers cannot trace (`traced`: the gradient of a
torch function run by name, and calls reading host indices). Creation ops that draw
nothing have no inputs, so they can run first; the other eager steps keep their order.
Creation ops that their attrs alone decide (zeros, full, arange) are compilable.
Each pure step then joins the region right after the last eager step it depends on, so
a training step with no moves is one region, and one with an all_reduce per gradient is
one region before the moves, one after, and the small groups in between.

    steps:    s2 = scalar   s3 = mul(s0, s2)   s4 = randn   s5 = add(s3, s4)   s6 = relu(s3)
    order:    scalar | region[mul, relu] | randn | region[add]
"""

from dataclasses import dataclass

from gt.runtime.codegen import Step


@dataclass(frozen=True)
class Region:
    steps: tuple[int, ...]  # indices into the program's steps, in program order
    inputs: tuple[int, ...]  # slots it reads that are defined outside it
    outputs: tuple[int, ...]  # slots it defines that later steps read or the program keeps


def partition(steps: list[Step], compilable: list[bool], hoistable: list[bool],
              result_slots: list[int], min_ops: int) -> list[int | Region]:
    """The program's run order: eager step indices and regions. A group of fewer than
    `min_ops` compilable steps stays eager (a compiled call costs more than a few ops)."""
    hoisted = [i for i in range(len(steps)) if hoistable[i] and not compilable[i]]
    eager = [i for i in range(len(steps)) if not hoistable[i] and not compilable[i]]
    position = {index: k for k, index in enumerate(eager)}
    producer = {slot: index for index, step in enumerate(steps) for slot in step.out_slots}
    group: dict[int, int] = {}  # compilable step -> 1 + the last eager step it must follow
    for index, step in enumerate(steps):
        if compilable[index]:
            group[index] = max((group.get(producer[slot], position.get(producer[slot], -1) + 1)
                                for slot in step.in_slots if slot in producer), default=0)
    members: dict[int, list[int]] = {}
    for index, number in group.items():
        members.setdefault(number, []).append(index)
    order: list[int | Region] = list(hoisted)
    for number in range(len(eager) + 1):
        chosen = members.get(number, [])
        if len(chosen) >= min_ops:
            order.append(_region(steps, chosen, result_slots))
        else:
            order.extend(chosen)
        if number < len(eager):
            order.append(eager[number])
    return order


def _region(steps: list[Step], chosen: list[int], result_slots: list[int]) -> Region:
    inside = set(chosen)
    defined = {slot for index in chosen for slot in steps[index].out_slots}
    inputs = dict.fromkeys(slot for index in chosen for slot in steps[index].in_slots
                           if slot not in defined)
    read_later = {slot for index, step in enumerate(steps) if index not in inside
                  for slot in step.in_slots} | set(result_slots)
    outputs = [slot for index in chosen for slot in steps[index].out_slots
               if slot in read_later]
    return Region(tuple(chosen), tuple(inputs), tuple(outputs))
