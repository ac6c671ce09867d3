"""Run a graph as GT would on several workers, in one process: the pipeline, lowering, one
thread per worker running its program with the op table's torch rows, and moves carried
by the runtime's own Mover over in-memory queues instead of sockets. Tests compare the
result with the graph run whole, which is the oracle for every sharding rule and move.
"""

import threading

import torch

from gt.ir import Graph, Partial, Shard, interpret
from gt.ir.placement import chunk_bounds
from gt.passes import PipelineOptions, lower, run_pipeline
from gt.runtime.engines import TorchEngine
from gt.runtime.exchange import Mover

SEED = 1234


class QueueMover(Mover):
    def __init__(self, index: int, mailbox: dict, condition: threading.Condition):
        super().__init__(TorchEngine('cpu'), index)
        self.mailbox, self.condition = mailbox, condition

    def _send(self, peer, key, value):
        with self.condition:
            self.mailbox[(*key, self.index, peer)] = value.clone()
            self.condition.notify_all()

    def _receive(self, key, sender, wait):
        with self.condition:
            found = self.condition.wait_for(
                lambda: (*key, sender, self.index) in self.mailbox, timeout=10)
            assert found, f'worker {self.index} waited in vain for a piece from {sender}'
            return self.mailbox.pop((*key, sender, self.index))


class Context:
    """What a worker's SessionContext gives the ops, for one simulated worker."""

    def __init__(self, mover: Mover | None, data: list, literals: list):
        self.device = torch.device('cpu')
        self.generator = torch.Generator().manual_seed(SEED)
        self.data, self.literals = data, literals
        self.session, self.base, self.moved = 0, 0, {}
        self.exchange = mover

    def literal(self, slot, dtype):
        from gt.ir.dtypes import TORCH_DTYPES

        return torch.tensor(self.literals[slot], dtype=TORCH_DTYPES[dtype])

    def move(self, value, **attrs):
        return self.exchange.move(self, value, wait=None, **attrs)

    def sync_generator(self, **attrs):
        self.exchange.sync_generator(self, wait=None, **attrs)


def local_part(array: torch.Tensor, placement, worker: int) -> torch.Tensor:
    if isinstance(placement, Shard):
        start, stop = chunk_bounds(array.shape[placement.axis], len(placement.workers),
                                   placement.workers.index(worker))
        return array.narrow(placement.axis, start, stop - start).clone()
    if isinstance(placement, Partial) and worker != placement.workers[0]:
        return torch.zeros_like(array)
    return array.clone()


def assemble(parts: dict, placement) -> torch.Tensor:
    ordered = [parts[worker] for worker in placement.workers]
    if isinstance(placement, Shard):
        return torch.cat(ordered, placement.axis)
    if isinstance(placement, Partial):
        total = ordered[0]
        for part in ordered[1:]:
            total = total + part
        return total
    for part in ordered[1:]:
        assert torch.equal(part, ordered[0]) or torch.allclose(part, ordered[0],
                                                                equal_nan=True), 'copies differ'
    return ordered[0]


def run_whole(graph: Graph, inputs: list, data: list = (), literals: list = ()) -> list:
    return interpret(graph, list(inputs), Context(None, list(data), list(literals)))


def run_sharded(graph: Graph, options: PipelineOptions, inputs: list, data: list = (),
                literals: list = ()) -> tuple[list, Graph]:
    """The graph's outputs computed the sharded way, and the graph after the passes."""
    placed = run_pipeline(graph, options, check=True)
    programs = lower(placed, options)
    mailbox: dict = {}
    condition = threading.Condition()
    results: dict = {}
    errors: list = []

    def work(worker: int) -> None:
        program = programs[worker]
        local_inputs = [local_part(inputs[index], placed.inputs[index].placement, worker)
                        for index in program.inputs]
        context = Context(QueueMover(worker, mailbox, condition), list(data), list(literals))
        behind = options.generator_holders is not None and worker not in options.generator_holders
        if behind:  # its generator drew something the others did not
            torch.randn(7, generator=context.generator)
        try:
            results[worker] = interpret(program.graph, local_inputs, context)
        except Exception as error:  # reported by the main thread
            errors.append(error)

    threads = [threading.Thread(target=work, args=(w,)) for w in programs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    if errors:
        raise errors[0]
    assert not mailbox, f'pieces sent but never received: {list(mailbox)}'
    outputs = []
    for index, value in enumerate(placed.outputs):
        parts = {worker: results[worker][list(programs[worker].outputs).index(index)]
                 for worker in programs if index in programs[worker].outputs}
        outputs.append(assemble(parts, value.placement))
    return outputs, placed
