"""The shape of one row of the op table, and what creation ops get from the engine."""

from dataclasses import dataclass
from typing import Any, Callable, Protocol

from gt.ir.graph import TensorType


class RunContext(Protocol):
    """What an engine hands to creation ops: where to put tensors and how to draw them."""

    device: Any  # a torch.device, or None for the numpy engine
    generator: Any  # a torch.Generator or numpy Generator, one per session
    data: list[Any]  # tensors that arrived with the message, by slot


@dataclass(frozen=True)
class OpDef:
    """One op. `infer(input_types, **attrs)` returns the output types (a tuple) and raises
    ValueError or TypeError, naming the problem, when the op does not apply.

    `torch(*inputs, **attrs)` and `numpy(*inputs, **attrs)` compute it; they return the
    array itself when the op has one output, else a tuple (empty for none). Creation ops
    (`source=True`) take a `RunContext` before the inputs. Attrs always arrive by keyword,
    all of them, and after msgpack, so tuples arrive as lists.

    `grad(emit, inputs, grads, **attrs)` returns one gradient (or None) per input, built
    with `emit(op, *operands, **attrs)` from the inputs and the output gradients (None
    for an output that got none); None for ops without gradients. See gradients.py.
    """

    name: str
    infer: Callable[..., tuple[TensorType, ...]]
    torch: Callable[..., Any]
    numpy: Callable[..., Any]
    source: bool = False
    effects: bool = False  # sends and collectives: never removed or reordered
    random: bool = False  # two calls differ: never merged as common subexpressions
    grad: Callable[..., Any] | None = None
    shard: Callable[..., Any] | None = None  # see gt.ir.sharding; None: gather and replicate
    uniform: bool = False  # a creation op whose every element is alike: a shard is made small
    communication: bool = False  # moves data between workers; runs with a RunContext
    placed_by_signal: bool = False  # its output is placed by its signal, as created values are
    context: bool = False  # takes a RunContext though it creates nothing (torch_random)
    grad_of_grad: bool = True  # its gradient is differentiable again (create_graph)
    # Joins compiled regions; False: runs eagerly between them; a function of a node's
    # attrs: decides per node.
    traced: bool | Callable[..., bool] = True
    # A creation op whose value its attrs alone decide: `made_on(**attrs, device=...)`
    # makes it with no RunContext, so it may join a compiled region, where the compiler
    # folds it into its uses (a gradient's `where(keep, g, zeros)` allocates nothing).
    made_on: Callable[..., Any] | None = None

    def traces(self, attrs: dict) -> bool:
        """Whether a node of this op with `attrs` may join a compiled region."""
        return self.traced(**attrs) if callable(self.traced) else self.traced

    @property
    def compilable(self) -> bool:
        """Whether its nodes may join compiled regions at all (`traces` decides per node):
        sends, collectives, random draws and ops that read the run's context stay eager."""
        return not (self.effects or self.random) and (
            self.made_on is not None or not self.takes_context)

    @property
    def takes_context(self) -> bool:
        return self.source or self.communication or self.context
