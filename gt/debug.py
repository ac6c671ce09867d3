"""Looking inside: worker statistics, the IR the dispatcher built for this client, and the
autograd tape."""

from gt import autograd
from gt.runtime import client as connection


def get_worker_stats() -> list[dict]:
    """Per worker: device, live tensors and bytes, ops and programs run."""
    return connection.current().stats().workers


def get_dispatcher_stats() -> dict:
    return connection.current().stats().dispatcher


def print_worker_stats() -> None:
    for worker in get_worker_stats():
        print(f"worker {worker['index']} ({worker['device']}, {worker['engine']}): "
              f"{worker['tensors']} tensors, {worker['bytes']:,} bytes, "
              f"{worker['ops']} ops in {worker['programs_run']} programs")


def dump_ir(show: bool = True) -> str:
    """The IR of this client's most recent fragment (pending work is sent first), as the
    dispatcher's passes left it: types, placements and workers. Printed unless `show` is
    False; returned either way."""
    text = connection.current().dump()
    if show:
        print(text)
    return text


def print_tape() -> None:
    """Print the autograd tape that is alive now: what backward() would walk, oldest first."""
    print('\n'.join(autograd.tape_lines()))
