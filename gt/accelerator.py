"""`gt.accelerator` (torch.accelerator), asked at the top of recent torch scripts
(`torch.accelerator.is_available()`). A GT client holds no device (gt/cuda.py): the
answer is torch's on a machine without one, and the script's CPU branch, whose
`torch.device('cpu')` GT accepts and ignores, runs on the workers' GPUs all the same."""

from gt import cuda


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0


def current_accelerator(check_available: bool = False) -> None:
    return None


def synchronize(device: object = None) -> None:
    """Wait until the work sent so far has finished on every worker, as gt.cuda's."""
    cuda.synchronize(device)
