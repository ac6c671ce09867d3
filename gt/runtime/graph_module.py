"""A compiled region as a `torch.fx.GraphModule`: the form torch.compile and torch.export take.

Each step becomes one `call_function` node calling the op table's torch implementation
with its attrs as keyword arguments, so the compiler traces exactly the code the eager
path runs; a creation op calls its `made_on` form on the region's device. A region
travels to the compile helper process as plain data (op names, slots, attrs, device) and
is rebuilt there from the same op table.
"""

import operator

import torch
import torch.fx as fx

from gt.ir import OPS
from gt.ir.dtypes import DTYPE_NAMES, TORCH_DTYPES
from gt.runtime.codegen import Step
from gt.runtime.regions import Region


def build(steps: list[Step], region: Region, device: str) -> fx.GraphModule:
    graph = fx.Graph()
    values = {slot: graph.placeholder(f's{slot}') for slot in region.inputs}
    for index in region.steps:
        step = steps[index]
        if step.takes_context:  # a creation op (OpDef.made_on)
            node = graph.call_function(OPS[step.op].made_on, (),
                                       {**step.attrs, 'device': torch.device(device)})
        else:
            node = graph.call_function(step.function, tuple(values[s] for s in step.in_slots),
                                       dict(step.attrs))
        if step.returns_sequence:
            for k, slot in enumerate(step.out_slots):
                values[slot] = graph.call_function(operator.getitem, (node, k))
        elif step.out_slots:
            values[step.out_slots[0]] = node
    graph.output(tuple(values[slot] for slot in region.outputs))
    return fx.GraphModule(torch.nn.Module(), graph, class_name='GtRegion')


def to_wire(steps: list[Step], region: Region, device: str) -> list:
    """The region as msgpack-able data; `from_wire` rebuilds the same module."""
    return [[[steps[i].op, list(steps[i].in_slots), steps[i].attrs, list(steps[i].out_slots)]
             for i in region.steps], list(region.inputs), list(region.outputs), device]


def from_wire(wire: list) -> fx.GraphModule:
    records, inputs, outputs, device = wire
    steps = []
    for op, in_slots, attrs, out_slots in records:
        row = OPS[op]
        steps.append(Step(row.torch, row.takes_context, tuple(in_slots), attrs,
                          tuple(out_slots), op, len(out_slots) != 1))
    return build(steps, Region(tuple(range(len(steps))), tuple(inputs), tuple(outputs)),
                 device)


def spec_of(tensor: torch.Tensor) -> list:
    """What a compiled region depends on in an input: its shape, strides, dtype, device."""
    return [list(tensor.shape), list(tensor.stride()), DTYPE_NAMES[tensor.dtype],
            str(tensor.device)]


def example_inputs(specs: list) -> list[torch.Tensor]:
    """Tensors with the specs' layouts, to trace and compile with. Values are arbitrary
    but valid as indices (zeros), so tracing never trips on them."""
    tensors = []
    for shape, stride, dtype, device in specs:
        # One zeroed storage viewed with the strides: broadcast inputs (stride 0) too.
        size = 1 + sum((n - 1) * step for n, step in zip(shape, stride)) if all(shape) else 0
        storage = torch.zeros(size, dtype=TORCH_DTYPES[dtype], device=device)
        tensors.append(storage.as_strided(shape, stride))
    return tensors
