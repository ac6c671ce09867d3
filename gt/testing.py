"""torch.testing for GT tensors (`gt.testing.assert_close(got, expected)`): GT tensors
anywhere in the arguments are fetched, in one round trip, and torch's own checks compare
them, with torch's tolerances and messages."""

from typing import Any

import torch
from torch.utils import _pytree as pytree

from gt.tensor import Tensor


def assert_close(actual: Any, expected: Any, *args: Any, **kwargs: Any) -> None:
    actual, expected = _fetched((actual, expected))
    torch.testing.assert_close(actual, expected, *args, **kwargs)


def assert_allclose(actual: Any, expected: Any, *args: Any, **kwargs: Any) -> None:
    """torch's deprecated spelling, which takes lists and numbers as well."""
    actual, expected = _fetched((actual, expected))
    torch.testing.assert_allclose(actual, expected, *args, **kwargs)


def _fetched(tree: Any) -> Any:
    leaves, spec = pytree.tree_flatten(tree)
    tensors = [leaf for leaf in leaves if isinstance(leaf, Tensor)]
    if tensors:
        values = iter(tensors[0]._client.fetch([t._id for t in tensors]))
        leaves = [next(values) if isinstance(leaf, Tensor) else leaf for leaf in leaves]
    return pytree.tree_unflatten(leaves, spec)
