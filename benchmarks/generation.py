"""Sampling from a small causal transformer, a token a step, through GT against plain
PyTorch eager, in one run: `python benchmarks/generation.py`.

The loop is nanoGPT's `generate` (no key-value cache): each step runs the model on the
whole sequence so far, samples the next token with `multinomial` and appends it. No value
is fetched until the end, so GT records the steps ahead of the worker; but every step
has new shapes, so every fragment is new to the dispatcher's plan cache: it is planned
afresh (decoded, passed through the pipeline and lowered) and the worker runs a program
it has not seen. That is what this measures, over three ranges of sequence lengths that
GT has not seen before; then the first range again, whose plans GT has cached. Each line
is per token; after each GT line, the CPU a token costs GT's client, dispatcher and
worker. The tokens sampled must be torch's, for the same seed.
"""

import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import DEVICE, cpu_per_run, devices, report  # noqa: E402

import gt  # noqa: E402
import gt.nn as gnn  # noqa: E402

VOCABULARY, WIDTH, HEADS, LAYERS, CONTEXT = 65, 64, 4, 2, 1024
RANGE = 48  # tokens sampled per timed run
STARTS = (1, 1 + RANGE, 1 + 2 * RANGE)  # the prompt's length in each range
FRESH_STARTS = (1 + 3 * RANGE, 1 + 4 * RANGE)  # for where GT's CPU goes at new lengths


def language_model(nn):
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.first_norm, self.second_norm = nn.LayerNorm(WIDTH), nn.LayerNorm(WIDTH)
            self.attention = nn.MultiheadAttention(WIDTH, HEADS, batch_first=True)
            self.mlp = nn.Sequential(nn.Linear(WIDTH, 4 * WIDTH), nn.GELU(),
                                     nn.Linear(4 * WIDTH, WIDTH))

        def forward(self, x, mask):
            h = self.first_norm(x)
            x = x + self.attention(h, h, h, attn_mask=mask, need_weights=False)[0]
            return x + self.mlp(self.second_norm(x))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.tokens = nn.Embedding(VOCABULARY, WIDTH)
            self.positions = nn.Embedding(CONTEXT, WIDTH)
            self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
            self.head = nn.Linear(WIDTH, VOCABULARY)

        def forward(self, ids, library):
            length = ids.shape[1]
            x = self.tokens(ids) + self.positions(library.arange(length))
            mask = library.triu(library.ones(length, length, dtype=library.bool), diagonal=1)
            for block in self.blocks:
                x = block(x, mask)
            return self.head(x)

    return Model().eval()


def generate(library, model, ids, tokens: int, seed: int) -> list:
    """`tokens` more tokens after `ids`, sampled as nanoGPT samples; fetched at the end."""
    library.manual_seed(seed)
    with library.no_grad():
        for _ in range(tokens):
            logits = model(ids[:, -CONTEXT:], library)[:, -1, :]
            next_token = library.multinomial(library.softmax(logits, dim=-1), num_samples=1)
            ids = library.cat([ids, next_token], dim=1)
    return ids[0, -tokens:].tolist()


def main() -> int:
    torch.manual_seed(0)
    torch_model = language_model(torch.nn).to(DEVICE)
    gt_model = language_model(gnn)
    gt_model.load_state_dict(torch_model.state_dict())
    prompt = torch.randint(0, VOCABULARY, (1, max(FRESH_STARTS)),
                           generator=torch.Generator().manual_seed(1))
    gt_prompt = gt.tensor(prompt)
    gt_prompt.tolist()  # start the server before timing
    print(devices(gt))

    def torch_run(start: int) -> list:
        return generate(torch, torch_model, prompt[:, :start].to(DEVICE), RANGE, start)

    def gt_run(start: int) -> list:
        return generate(gt, gt_model, gt_prompt[:, :start], RANGE, start)

    # First calls (kernels, GT's type inference of each function) at lengths not timed.
    generate(torch, torch_model, prompt.repeat(1, 4).to(DEVICE), 2, 0)
    generate(gt, gt_model, gt.cat([gt_prompt] * 4, dim=1), 2, 0)
    same, ratios = True, []
    for start in STARTS:
        torch_seconds = min(_timed(torch_run, start) for _ in range(3))
        before = gt.debug.get_dispatcher_stats()['plan_misses']
        expected = torch_run(start)
        started = time.perf_counter()
        got = gt_run(start)
        gt_seconds = time.perf_counter() - started
        misses = gt.debug.get_dispatcher_stats()['plan_misses'] - before
        same = same and got == expected
        ratios.append(gt_seconds / torch_seconds)
        report(f'new lengths {start}-{start + RANGE - 1}, per token', torch_seconds / RANGE,
               gt_seconds / RANGE, None)
        print(f'  {misses} fragments planned afresh for {RANGE} tokens')
    print(f'median ratio over the new lengths: {statistics.median(ratios):.2f}x')
    fresh = iter(FRESH_STARTS)
    print(cpu_per_run(lambda: gt_run(next(fresh)), per=RANGE, repeats=len(FRESH_STARTS),
                      warm=False).replace('step', 'token', 1) + ', new lengths')
    torch_seconds = min(_timed(torch_run, STARTS[0]) for _ in range(3))
    gt_seconds = min(_timed(gt_run, STARTS[0]) for _ in range(3))
    report(f'lengths {STARTS[0]}-{STARTS[0] + RANGE - 1} again, plans cached',
           torch_seconds / RANGE, gt_seconds / RANGE, None)
    print(cpu_per_run(lambda: gt_run(STARTS[0]), per=RANGE, repeats=3).replace(
        'step', 'token', 1))
    print(f"tokens sampled equal torch's for the same seeds: {same}")
    return 0 if same else 1


def _timed(run, start: int) -> float:
    started = time.perf_counter()
    run(start)
    return time.perf_counter() - started


if __name__ == '__main__':
    sys.exit(main())
