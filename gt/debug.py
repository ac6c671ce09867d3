"""Looking inside: worker statistics and the IR the dispatcher built for this client."""

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
