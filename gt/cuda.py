"""`gt.cuda`: what torch scripts ask of torch.cuda before they start.

A GT client holds no device memory. Tensors live on the workers, which use their GPUs by
themselves, and `.to(device)` leaves placement to GT. So here `is_available()` is False
and `device_count()` is 0, and the usual line
`device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')` picks a spelling
that GT accepts and ignores. GT has one random generator per session, seeded by
`gt.manual_seed` (which, like `torch.manual_seed`, seeds every device): `manual_seed`
and `manual_seed_all` here seed only CUDA generators in torch, and a client has none.
`gt.cuda.amp` is gt.amp (its autocast and GradScaler behave as torch's do without CUDA).
What torch.cuda answers without CUDA, this answers too: `empty_cache()` does nothing and
the memory counters are 0 (the workers' memory is in `gt.debug.print_worker_stats()`);
anything else torch.cuda has is an error naming why. The one exception is
`synchronize()`, which scripts call before reading a clock: it waits for every op the
script has sent to finish on every worker, GPU kernels included, as torch's waits for its
GPU.
"""

from gt import amp as amp  # torch.cuda.amp's spelling

# `except torch.cuda.OutOfMemoryError:` (skip the batch) catches GT's, which a worker's
# failed allocation or the session's memory limit raises.
from gt.runtime.session_errors import OutOfMemoryError as OutOfMemoryError


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0


def manual_seed(seed: int) -> None:
    """Nothing to seed: see the module docstring (`gt.manual_seed` seeds the session)."""


def manual_seed_all(seed: int) -> None:
    """Nothing to seed: see the module docstring (`gt.manual_seed` seeds the session)."""


def synchronize(device: object = None) -> None:
    """Wait until the work this script has sent so far has finished on every worker
    (whichever `device` is named: a client does not know its workers' GPUs)."""
    from gt.runtime import client

    client.current().stats()


def is_initialized() -> bool:
    return False


def empty_cache() -> None:
    """Nothing to free here; a worker frees a tensor's memory when its last reference dies."""


def memory_allocated(device: object = None) -> int:
    return 0


def max_memory_allocated(device: object = None) -> int:
    return 0


def memory_reserved(device: object = None) -> int:
    return 0


def max_memory_reserved(device: object = None) -> int:
    return 0


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """False, as torch answers without CUDA (`'bfloat16' if is_available() and
    is_bf16_supported() else 'float16'`); GT's workers take bfloat16 on any device."""
    return False


def __getattr__(name: str) -> object:
    raise AttributeError(
        f'gt.cuda has no {name}: a GT client has no CUDA device (gt.cuda.is_available() is '
        f'False, as in torch without CUDA). Workers run the work on their GPUs, and a script '
        f'waits for it when it reads a value (.item(), .numpy(), print).')
