"""What a worker did between two heartbeats, for `top`, the stats and the instruction log.

The worker's loop adds each program's run (its time, split over the program's ops by
their counts: timing every op would cost more than the ops); the heartbeat thread takes
the report and starts a new one. Program start and end times are kept only while the
dispatcher asks for them (an instruction log is open or a monitor listens); then a
program's start is also sent as it starts (`running`), so a program that never ends
shows in the log as started.
"""

import os
import time
from collections import Counter

import psutil

PROGRAM_EVENTS_KEPT = 2000  # per beat: a flood of tiny programs is summarized, not listed


class Activity:
    def __init__(self) -> None:
        self.busy = 0.0
        self.programs = 0
        # id(op_counts) -> [op_counts, n_ops, seconds]: spread over ops once per beat, in
        # `report`, not once per run (a training step's program has a score of op kinds)
        self.by_program: dict[int, list] = {}
        # [start, end, session, program id, ops, kinds, compiled, on the express lane]
        self.events: list = []

    def add(self, session: int, program_id: int, op_counts: dict, n_ops: int, start: float,
            seconds: float, compiled: bool, keep_event: bool, express: bool = False) -> None:
        """One program's run: `op_counts` its ops by name (the program's own dict, the
        same object every run), `n_ops` their total."""
        self.busy += seconds
        self.programs += 1
        if n_ops:
            entry = self.by_program.get(id(op_counts))
            if entry is None:
                self.by_program[id(op_counts)] = [op_counts, n_ops, seconds]
            else:
                entry[2] += seconds
        if keep_event and len(self.events) < PROGRAM_EVENTS_KEPT:
            self.events.append([start, start + seconds, session, program_id, n_ops,
                                kinds_of(op_counts), compiled, express])

    def report(self, extra: dict) -> dict:
        ops: Counter = Counter()  # op name -> seconds
        for op_counts, n_ops, seconds in self.by_program.values():
            for op, count in op_counts.items():
                ops[op] += seconds * count / n_ops
        return {'busy': self.busy, 'programs': self.programs, 'ops': dict(ops),
                'events': self.events, 'time': time.time(),
                **extra}


def kinds_of(op_counts: dict) -> str:
    """A program's commonest ops, for the log: `matmul:2,add:4`."""
    return ','.join(f'{op}:{count}' for op, count in
                    sorted(op_counts.items(), key=lambda item: -item[1])[:3]) or '-'


def memory_held(engine_name: str) -> int:
    """Bytes the worker holds: CUDA's allocated memory on a GPU, else the process's RSS."""
    if engine_name == 'torch':
        import torch

        if torch.cuda.is_available() and torch.cuda.is_initialized():
            return int(torch.cuda.memory_allocated())
    return int(psutil.Process(os.getpid()).memory_info().rss)
