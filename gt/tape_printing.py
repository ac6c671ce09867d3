"""The live autograd tape as text, for gt.debug.print_tape(): one line per recorded op
in the IR's print style, so a user can see what backward() will walk."""

from typing import Any

from gt import autograd
from gt.ir.dtypes import SHORT_NAMES
from gt.ir.printer import COMMENT_COLUMN, format_attr


def tape_lines() -> list[str]:
    """The live tape, oldest first.

    Names are given here: `%0, %1, ...` for values the tape made, `%a0, %a1, ...` (typed in
    the header, `*` marking those that require grad) for the tensors it started from.
    """
    nodes = [node for node in (reference() for reference in autograd.live_nodes)
             if node is not None]
    names: dict[int, str] = {}
    for node in nodes:
        for value_id in node.output_ids:
            names[value_id] = f'%{len(names)}'
    arguments: list[str] = []
    body = []
    for node in nodes:
        operands = []
        for tensor, value_id in zip(node.inputs, node.input_ids):
            if value_id not in names:
                names[value_id] = f'%a{len(arguments)}'
                marker = '*' if tensor.requires_grad else ''
                arguments.append(f'{names[value_id]}: {_format_type(tensor._type)}{marker}')
            operands.append(names[value_id])
        if node.freed:
            operands = ['<freed>']
        operands += [f'{key}={format_attr(value)}' for key, value in node.attrs.items()]
        results = ', '.join(f'{names[value_id]}: {_format_type(value_type)}'
                            for value_id, value_type in zip(node.output_ids, node.output_types))
        statement = f'  {results} = {node.op}({", ".join(operands)})'
        body.append(f'{statement.ljust(COMMENT_COLUMN)}  # {node.name()}')
    return [f'tape({", ".join(arguments)}) {{', *body, '}']


def _format_type(value_type: Any) -> str:
    shape = ','.join(str(size) for size in value_type.shape)
    return f'{SHORT_NAMES[value_type.dtype]}[{shape}]'
