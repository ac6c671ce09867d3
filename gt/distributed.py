"""torch.distributed's questions for a ported script (`if dist.is_available() and
dist.is_initialized(): ...`): a GT script is one process, never a member of a process
group, so they answer as torch does in a process that joined none (is_initialized() is
False; get_rank() says no group was made). GT spreads work over its workers itself
(sharding, gt.signal); process groups and collectives are refused by name."""

from typing import Any

import torch.distributed as _torch_distributed

QUESTIONS = ('is_available', 'is_initialized', 'is_torchelastic_launched', 'get_rank',
             'get_world_size', 'get_backend')


def __getattr__(name: str) -> Any:
    if name in QUESTIONS:
        return getattr(_torch_distributed, name)
    raise AttributeError(
        f'gt.distributed.{name}: a GT script is not a member of a process group; GT spreads '
        'work over its workers itself (sharding: gt.signal and gt.ShardConfig)')
