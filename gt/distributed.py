"""torch.distributed's questions for a ported script (`if dist.is_available() and
dist.is_initialized(): ...`): a GT script is one process, never a member of a process
group, so they answer as torch does in a process that joined none (is_initialized() is
False; get_rank() says no group was made). GT spreads work over its workers itself
(sharding, gt.signal); process groups and collectives are refused by name."""

from typing import Any

import torch.distributed as _torch_distributed

QUESTIONS = ('is_available', 'is_initialized', 'is_torchelastic_launched', 'get_rank',
             'get_world_size', 'get_backend')


def refusal(name: str) -> str:
    return (f'gt.distributed.{name}: a GT script is not a member of a process group; GT '
            'spreads work over its workers itself (sharding: gt.signal and gt.ShardConfig)')


def __getattr__(name: str) -> Any:
    """torch's questions; any other name of torch.distributed imports (a script imports
    `init_process_group` at its top and calls it only when launched by torchrun), and
    refuses when called."""
    if name in QUESTIONS:
        return getattr(_torch_distributed, name)
    if name.startswith('_') or not hasattr(_torch_distributed, name):
        raise AttributeError(refusal(name))

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(refusal(name))
    refused.__name__ = refused.__qualname__ = name
    return refused
