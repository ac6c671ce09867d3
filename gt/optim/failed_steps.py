"""An optimizer step whose update failed on a worker did not happen, as in torch, where
the failing op raised before `optimizer.step()` ran.

A parameter and its state tensors go back to their values on the worker
(gt.runtime.reverts): state tensors are updated in place (`keep`), as torch's are, so
that each is a rebinding that can go back, and a reference held to one sees each step.
What the client keeps (a step count, NAdam's running product, the state first made by
the step) goes back when the worker says the parameter's update was undone: each step
leaves, per parameter, how to undo its client side (`watch`).
"""

import functools
import weakref
from typing import Any

import torch

from gt.runtime import client as connection
from gt.tensor import Tensor


def keep(state: dict, key: str, value: Tensor) -> Tensor:
    """`state[key] = value` as torch's in-place update: the tensor already there takes
    `value` (a fresh result, which it consumes), and is returned."""
    held = state.get(key)
    if isinstance(held, Tensor) and held is not value and held._id is not None:
        held._client.reverts.state(held._id)  # made in this message (loaded, say): kept
        return held._rebind(value)
    state[key] = value
    return value


NOTHING = ((), {})


def client_side(state: dict | None) -> tuple:
    """What of one parameter's state the client holds: its keys, and its numbers (a 0-d
    torch tensor copied: some are updated in place)."""
    if not state:
        return NOTHING
    numbers = {}
    for key, value in state.items():
        if type(value) is int:
            numbers[key] = value
        elif not isinstance(value, Tensor):
            numbers[key] = value.clone() if isinstance(value, torch.Tensor) else value
    return tuple(state), numbers


def watch(optimizer: Any, before: dict) -> None:
    """After a step: `before` maps each updated parameter to `client_side` of its state
    before the step; the client undoes the step's client side if the worker undoes the
    parameter's update. A parameter without state (plain SGD) has none to undo. Held
    weakly: an undo kept for a later report must not keep a dropped model's values."""
    reverts = None
    for param, (keys, numbers) in before.items():
        now = optimizer.state.get(param)
        if now and param._id is not None:
            reverts = reverts or connection.current().reverts
            reverts.watch(param._id, functools.partial(
                _undo, weakref.ref(optimizer), weakref.ref(param), keys, numbers,
                client_side(now)[1]))


def _undo(optimizer: weakref.ref, param: weakref.ref, keys: tuple, before: dict,
          after: dict) -> None:
    """A count goes back by what the step added (later steps may have counted on); any
    other number goes back if no later step changed it; state the step made is dropped,
    so that the next step makes it afresh."""
    owner, tensor = optimizer(), param()
    state = None if owner is None or tensor is None else owner.state.get(tensor)
    if state is None:
        return
    for key in [key for key in state if key not in keys]:
        del state[key]
    for key, old in before.items():
        now, then = state.get(key), after.get(key)
        if type(old) is int and type(now) is int and type(then) is int:
            state[key] = now - (then - old)
        elif isinstance(now, torch.Tensor) and isinstance(then, torch.Tensor) and \
                now.shape == then.shape and bool(torch.equal(now, then)):
            now.copy_(old)
        elif not isinstance(now, torch.Tensor) and now == then:
            state[key] = old
