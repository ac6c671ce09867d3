"""GT's overhead against plain PyTorch eager, in one run: `python benchmarks/overhead.py`.

1. A chain of 1000 small ops (`c = c + a` on 4x4 tensors) and one fetch: GT records the
   ops locally and sends them in a few messages; target 2x torch.
2. A 1000x1000 matmul of tensors made on the worker, plus fetching the result: the
   work dominates; target 1.2x.
After each, the CPU a run of GT's costs the client, the dispatcher and the worker.
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import DEVICE, alternating, cpu_per_run, devices, report  # noqa: E402

import gt  # noqa: E402

CHAIN = 1000


def torch_chain() -> None:
    a, c = torch.randn(4, 4, device=DEVICE), torch.randn(4, 4, device=DEVICE)
    for _ in range(CHAIN):
        c = c + a
    c.cpu().numpy()


def gt_chain(a: gt.Tensor, start: gt.Tensor) -> None:
    c = start
    for _ in range(CHAIN):
        c = c + a
    c.numpy()


def torch_matmul() -> None:
    a, b = torch.randn(1000, 1000, device=DEVICE), torch.randn(1000, 1000, device=DEVICE)
    (a @ b).cpu().numpy()


def gt_matmul() -> None:
    a, b = gt.randn(1000, 1000), gt.randn(1000, 1000)
    (a @ b).numpy()


def main() -> int:
    a, c = gt.randn(4, 4), gt.randn(4, 4)
    c.numpy()  # start the server before timing
    print(devices(gt))
    report(f'{CHAIN}-op chain on 4x4, one fetch',
           *alternating(torch_chain, lambda: gt_chain(a, c), repeats=100), 2.0)
    print(cpu_per_run(lambda: gt_chain(a, c), repeats=100))
    report('1000x1000 matmul + fetch', *alternating(torch_matmul, gt_matmul), 1.2)
    print(cpu_per_run(gt_matmul))
    stats = gt.debug.get_dispatcher_stats()
    print(f"dispatcher plan cache: {stats['plan_hits']} hits, {stats['plan_misses']} misses")
    return 0


if __name__ == '__main__':
    sys.exit(main())
