"""torch.utils.data over GT tensors: `DataLoader(TensorDataset(x, y), batch_size=64)`.

torch's default collate knows torch tensors, numpy arrays and numbers; a dataset of GT
tensors gives it GT tensors, which it rejects. Registering GT's Tensor in torch's
collate table (the extension point torch's collate keeps for types it does not know)
makes a batch `gt.stack` of its samples, recorded lazily like any op.

A loader draws from torch's global generator: a seed for its iterator at each
`iter(loader)`, a random sampler's seed or permutation at its first batch, and
`random_split` its permutation. In a torch script on the
CPU that is the generator dropout and `randn` draw from, so those draws move the model's
later ones and fix the shuffle. GT's draws come from the session's generator on the
workers, so here, while a loader without its own `generator=` draws, torch's generator
takes the session's state and the session takes it back after (`shared_stream`: one
round trip each). This holds while torch's generator is as GT last left it (seeded by
`gt.manual_seed`, set by `gt.set_rng_state`, or handed back here): one that torch code in
the client seeded or drew from since is that code's, and is left alone. With GPU workers
the session's generator is CUDA's, which torch's loader never touches, and nothing is
shared, as in torch.

A loader worker process (`num_workers > 0`) sends its batches to the parent through a
multiprocessing queue, whose feeder thread pickles them: a GT tensor pickles as its value,
a fetch, which from that thread met the worker's main thread recording the next sample
(the client refuses a second thread), and the parent waited for a batch that never came.
So a worker fetches the GT tensors of each batch itself, in one round trip, before the
batch is queued; the parent gets the torch tensors the pickles would have given.
"""

import contextlib
from typing import Any, Iterator

import torch
import torch.utils.data.dataset
from torch.utils._pytree import tree_flatten, tree_unflatten
from torch.utils.data import (
    DataLoader,
    RandomSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)
from torch.utils.data._utils import fetch as fetchers
from torch.utils.data._utils.collate import default_collate_fn_map

from gt.functional import stack
from gt.ir.ops.random_state import pack, unpack
from gt.runtime import client as connection
from gt.runtime import ownership
from gt.tensor import Tensor, apply


def collate_tensors(batch: list, *, collate_fn_map: Any = None) -> Tensor:
    return stack(batch, 0)


_left_by_gt: bytes | None = None  # torch's generator state as GT last left it


def left_torch_generator() -> None:
    """Called when GT has set torch's generator (seeded it, restored it, handed it back)."""
    global _left_by_gt
    _left_by_gt = torch.get_rng_state().numpy().tobytes()


@contextlib.contextmanager
def shared_stream() -> Iterator[None]:
    """torch's global generator draws in the session's place, when there is a session,
    its generator is a CPU one (torch's state format), and torch's is as GT left it."""
    from gt.creation import get_rng_state, tensor

    client = connection.connected()
    if client is None or torch.get_rng_state().numpy().tobytes() != _left_by_gt:
        yield
        return
    worker = unpack(get_rng_state()._value().numpy())[0]
    if len(worker) != len(_left_by_gt):
        yield
        return
    torch.set_rng_state(torch.frombuffer(bytearray(worker), dtype=torch.uint8))
    try:
        yield
    finally:
        left_torch_generator()
        apply('set_rng_state', [tensor(pack(_left_by_gt, _left_by_gt))])


def _loader_iter(original: Any) -> Any:
    def __iter__(self: DataLoader) -> Any:
        if self.generator is not None:
            return original(self)
        with shared_stream():
            return original(self)
    return __iter__


def _sampler_iter(original: Any) -> Any:
    """A random sampler draws its permutation or its seed with its first index."""
    def __iter__(self: RandomSampler) -> Iterator[int]:
        indices = original(self)
        if self.generator is None:  # its seed is drawn with the first index
            with shared_stream():
                first = next(indices, None)
            if first is None:
                return
            yield first
        yield from indices
    return __iter__


def _random_split(original: Any) -> Any:
    def random_split(dataset: Any, lengths: Any, generator: Any = torch.default_generator
                     ) -> Any:
        if generator is not torch.default_generator:
            return original(dataset, lengths, generator)
        with shared_stream():
            return original(dataset, lengths, generator)
    random_split.__doc__ = original.__doc__
    return random_split


def _weights_as_torch(original: Any) -> Any:
    """torch's sampler reads its weights with torch.as_tensor, which cannot read a GT
    tensor: it gets the values (one fetch)."""
    def __init__(self: WeightedRandomSampler, weights: Any, *args: Any, **kwargs: Any) -> None:
        if isinstance(weights, Tensor):
            weights = weights._value()
        original(self, weights, *args, **kwargs)
    return __init__


def _values_in_workers(original: Any) -> Any:
    """A fetcher's `fetch`, whose result, in a loader's worker process, has the values of
    its GT tensors in their place (see the module's docstring)."""
    def fetch(self: Any, possibly_batched_index: Any) -> Any:
        data = original(self, possibly_batched_index)
        if torch.utils.data.get_worker_info() is None:
            return data
        leaves, structure = tree_flatten(data)
        held = [leaf for leaf in leaves if _made_here(leaf)]
        if not held:
            return data
        values = iter(held[0]._client.fetch([tensor._id for tensor in held]))
        leaves = [next(values).requires_grad_(leaf.requires_grad and leaf.is_leaf)
                  if _made_here(leaf) else leaf for leaf in leaves]
        return tree_unflatten(leaves, structure)
    return fetch


def _made_here(value: Any) -> bool:
    """A GT tensor of this process's session. The parent's tensors are left to pickle as
    the error the parent raises, naming the cause (gt/runtime/ownership.py)."""
    return isinstance(value, Tensor) and value._client.pid == ownership.process_id()


def register_collate() -> None:
    """Called once by `import gt`: the collate entry, and the draws of the loader, the
    random samplers and random_split from the shared stream."""
    default_collate_fn_map[Tensor] = collate_tensors
    DataLoader.__iter__ = _loader_iter(DataLoader.__iter__)
    for sampler in (RandomSampler, SubsetRandomSampler, WeightedRandomSampler):
        sampler.__iter__ = _sampler_iter(sampler.__iter__)
    WeightedRandomSampler.__init__ = _weights_as_torch(WeightedRandomSampler.__init__)
    for fetcher in (fetchers._MapDatasetFetcher, fetchers._IterableDatasetFetcher):
        fetcher.fetch = _values_in_workers(fetcher.fetch)
    torch.utils.data.random_split = torch.utils.data.dataset.random_split = \
        _random_split(torch.utils.data.dataset.random_split)
