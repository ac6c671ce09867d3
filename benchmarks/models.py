"""Recurrent language models through GT against plain PyTorch eager, in one run:
`python benchmarks/recurrent.py`.

An embedding (50 tokens, 16 wide), an LSTM or GRU (16 to 32) and a linear head over a
batch of 4 sequences of 8 tokens; cross-entropy loss, `clip_grad_norm_` and AdamW: 20
steps, then one fetch of the loss, timed per step. gt.nn's recurrent layers run torch's
kernel by name (one node per layer stack, its gradient the call's vector-Jacobian
product; unrolled step by step, as training dropout between layers and packed sequences
still are, the LSTM's step took 5x torch's time). After each ratio, the CPU a step costs
GT's client, dispatcher and worker.
"""

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import DEVICE, alternating, cpu_per_run, devices, report  # noqa: E402

import gt  # noqa: E402
import gt.nn as nn  # noqa: E402

STEPS = 20
TOKENS, EMBEDDING, HIDDEN, BATCH, LENGTH = 50, 16, 32, 4, 8


def build(library, optimizers, kind: str, tokens: torch.Tensor, to_library):
    """The model, its optimizer and a function running `count` steps, in either library."""
    class LanguageModel(library.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embedding = library.Embedding(TOKENS, EMBEDDING)
            self.recurrent = getattr(library, kind)(EMBEDDING, HIDDEN)
            self.head = library.Linear(HIDDEN, TOKENS)

        def forward(self, x):
            output, _ = self.recurrent(self.embedding(x))
            return self.head(output)

    model = LanguageModel().to(DEVICE)  # GT's: unchanged
    optimizer = optimizers.AdamW(model.parameters(), lr=1e-3)
    x, y = to_library(tokens[:-1]), to_library(tokens[1:])

    def steps(count: int = STEPS) -> float:
        for _ in range(count):
            loss = library.functional.cross_entropy(model(x).reshape(-1, TOKENS),
                                                    y.reshape(-1))
            loss.backward()
            library.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad()
        return loss.item()

    return steps


def main() -> int:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    tokens = torch.randint(0, TOKENS, (LENGTH + 1, BATCH),
                           generator=torch.Generator().manual_seed(0))
    first = True
    for kind in ('LSTM', 'GRU'):
        torch_steps = build(torch.nn, torch.optim, kind, tokens, lambda t: t.to(DEVICE))
        gt_steps = build(nn, gt.optim, kind, tokens, gt.tensor)
        gt_steps(3)  # start the server and fill the plan cache before timing
        torch_steps(3)
        if first:
            print(devices(gt))
            first = False
        torch_time, gt_time = alternating(torch_steps, gt_steps)
        report(f'{kind} language model step', torch_time / STEPS, gt_time / STEPS, None)
        print(cpu_per_run(gt_steps, STEPS))
    return 0


if __name__ == '__main__':
    sys.exit(main())
