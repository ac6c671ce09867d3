"""Batches cut from random offsets, as nanoGPT's `get_batch` cuts them, in GT and in plain
PyTorch in one run: `python benchmarks/batching.py`.

    ix = torch.randint(len(data) - block_size, (batch_size,))
    x = torch.stack([data[i:i + block_size] for i in ix])
    y = torch.stack([data[i + 1:i + 1 + block_size] for i in ix])

Each `i` is a 0-d tensor. Two lines: the batch alone with one fetch of a sum of it
(the cost of cutting it), and nanoGPT's bigram baseline (an Embedding(vocab, vocab)
giving the logits, cross-entropy, AdamW) trained on such batches, 10 steps and one fetch
of the loss. Ratios against torch measured in the same run, both on the device GT's
worker uses.
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import DEVICE, alternating, devices, report  # noqa: E402

import gt  # noqa: E402
import gt.nn as nn  # noqa: E402
import gt.nn.functional as F  # noqa: E402

TOKENS, VOCAB, BATCH, BLOCK, STEPS = 200_000, 65, 12, 64, 10


def trainer(library, layers, functional, optimizers):
    """The batch-cutting and the bigram model's steps, in either library."""
    library.manual_seed(0)
    data = library.randint(0, VOCAB, (TOKENS,)).to(DEVICE)  # GT's .to(): placement is GT's
    model = layers.Embedding(VOCAB, VOCAB).to(DEVICE)
    optimizer = optimizers.AdamW(model.parameters(), lr=1e-3)

    def get_batch():
        ix = library.randint(len(data) - BLOCK, (BATCH,)).to(DEVICE)
        x = library.stack([data[i:i + BLOCK] for i in ix])
        y = library.stack([data[i + 1:i + 1 + BLOCK] for i in ix])
        return x, y

    def batch_only() -> float:
        x, y = get_batch()
        return (x.sum() + y.sum()).item()

    def train() -> float:
        for _ in range(STEPS):
            x, y = get_batch()
            logits = model(x)
            loss = functional.cross_entropy(logits.view(-1, VOCAB), y.view(-1))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        return loss.item()
    return batch_only, train


def main() -> None:
    print(devices(gt))
    # GT's first: gt.manual_seed seeds torch's generator too, as torch.manual_seed does.
    gt_batch, gt_train = trainer(gt, nn, F, gt.optim)
    torch_batch, torch_train = trainer(torch, torch.nn, torch.nn.functional, torch.optim)
    assert torch_batch() == gt_batch(), 'the batches differ from torch\'s'
    report('nanoGPT get_batch (12 x 64) + 1 fetch', *alternating(torch_batch, gt_batch), None)
    torch_seconds, gt_seconds = alternating(torch_train, gt_train, repeats=9)
    report(f'bigram LM step on those batches ({STEPS} steps)', torch_seconds / STEPS,
           gt_seconds / STEPS, None)


if __name__ == '__main__':
    main()
