"""Training steps of common kinds of model through GT against plain PyTorch eager, in one
run: `python benchmarks/models.py`.

- a small CNN (two 3x3 convolutions, max pooling, adaptive average pooling and a
  linear head) on 32 images of 3x32x32, SGD with momentum: convolutions run by name,
  their gradients torch's backward kernel (gt/ir/direct_gradients.py), max pooling's
  from the forward's indices (gt/ir/ops/pooling.py); and the same with a BatchNorm2d
  after each convolution (torch's kernels on one worker, gt/ir/ops/batch_norm.py);
- an MLP 784-256-256-10 with SiLU and LeakyReLU on a batch of 64, SGD: the activations
  are rows of their own (gt/ir/ops/activations.py);
- LSTM and GRU language models: an embedding (50 tokens, 16 wide), the recurrent layer
  (16 to 32) and a linear head over 4 sequences of 8 tokens, `clip_grad_norm_` and AdamW:
  the layer stack is one call of torch's kernel (unrolled step by step, as training
  dropout between layers still is, the LSTM's step took 5x torch's time);
- an LSTM classifier (2 layers) over 4 sequences of lengths 8, 3, 7 and 5, packed: one
  call of torch's packed kernel (unrolled, 4.6x torch's time).

Each: 10 steps then one fetch of the loss, timed per step; after each ratio, the CPU a
step costs GT's client, dispatcher and worker.
"""

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import DEVICE, alternating, cpu_per_run, devices, report  # noqa: E402

import gt  # noqa: E402
import gt.nn as nn  # noqa: E402

STEPS = 10
TOKENS, EMBEDDING, HIDDEN, BATCH, LENGTH = 50, 16, 32, 4, 8
CLASSES = 10
LENGTHS = [8, 3, 7, 5]  # the packed classifier's sequences, padded to LENGTH


def cnn(library):
    return library.Sequential(
        library.Conv2d(3, 16, 3, padding=1), library.ReLU(), library.MaxPool2d(2),
        library.Conv2d(16, 32, 3, padding=1), library.ReLU(), library.AdaptiveAvgPool2d(1),
        library.Flatten(), library.Linear(32, 10))


def normalized_cnn(library):
    return library.Sequential(
        library.Conv2d(3, 16, 3, padding=1), library.BatchNorm2d(16), library.ReLU(),
        library.MaxPool2d(2), library.Conv2d(16, 32, 3, padding=1), library.BatchNorm2d(32),
        library.ReLU(), library.AdaptiveAvgPool2d(1), library.Flatten(), library.Linear(32, 10))


def activated_mlp(library):
    return library.Sequential(library.Linear(784, 256), library.SiLU(),
                              library.Linear(256, 256), library.LeakyReLU(0.1),
                              library.Linear(256, 10))


def language_model(kind: str):
    def build(library):
        class LanguageModel(library.Module):
            def __init__(self) -> None:
                super().__init__()
                self.embedding = library.Embedding(TOKENS, EMBEDDING)
                self.recurrent = getattr(library, kind)(EMBEDDING, HIDDEN)
                self.head = library.Linear(HIDDEN, TOKENS)

            def forward(self, x):
                output, _ = self.recurrent(self.embedding(x))
                return self.head(output).reshape(-1, TOKENS)

        return LanguageModel()
    return build


def packed_classifier(library):
    """Sequences of different lengths, packed, through a 2-layer LSTM; the last layer's
    final state classifies each."""
    class PackedClassifier(library.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embedding = library.Embedding(TOKENS, EMBEDDING)
            self.recurrent = library.LSTM(EMBEDDING, HIDDEN, num_layers=2)
            self.head = library.Linear(HIDDEN, CLASSES)

        def forward(self, x):
            packed = library.utils.rnn.pack_padded_sequence(self.embedding(x), LENGTHS,
                                                            enforce_sorted=False)
            _, (hidden, _) = self.recurrent(packed)
            return self.head(hidden[-1])

    return PackedClassifier()


def labelled_sequences() -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    return (torch.randint(0, TOKENS, (LENGTH, BATCH), generator=generator),
            torch.randint(0, CLASSES, (BATCH,), generator=generator))


def tokens() -> tuple[torch.Tensor, torch.Tensor]:
    sequence = torch.randint(0, TOKENS, (LENGTH + 1, BATCH),
                             generator=torch.Generator().manual_seed(0))
    return sequence[:-1], sequence[1:].reshape(-1)


MODELS = [
    ('small CNN step', cnn, lambda: (torch.randn(32, 3, 32, 32), torch.randint(0, 10, (32,))),
     lambda optim, params: optim.SGD(params, lr=0.01, momentum=0.9), False),
    ('the CNN with batch norm step', normalized_cnn,
     lambda: (torch.randn(32, 3, 32, 32), torch.randint(0, 10, (32,))),
     lambda optim, params: optim.SGD(params, lr=0.01, momentum=0.9), False),
    ('SiLU/LeakyReLU MLP step', activated_mlp,
     lambda: (torch.randn(64, 784), torch.randint(0, 10, (64,))),
     lambda optim, params: optim.SGD(params, lr=0.01), False),
    ('LSTM language model step', language_model('LSTM'), tokens,
     lambda optim, params: optim.AdamW(params, lr=1e-3), True),
    ('GRU language model step', language_model('GRU'), tokens,
     lambda optim, params: optim.AdamW(params, lr=1e-3), True),
    ('packed LSTM classifier step', packed_classifier, labelled_sequences,
     lambda optim, params: optim.AdamW(params, lr=1e-3), True),
]


def build(library, optimizers, make_model, data, make_optimizer, clip: bool):
    """The model, its optimizer and a function running `count` steps, in either library."""
    torch.manual_seed(0)
    model = make_model(library).to(DEVICE)  # GT's: unchanged
    optimizer = make_optimizer(optimizers, model.parameters())
    x, y = data

    def steps(count: int = STEPS) -> float:
        for _ in range(count):
            loss = library.functional.cross_entropy(model(x), y)
            loss.backward()
            if clip:
                library.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad()
        return loss.item()

    return steps


def main() -> int:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    first = True
    for name, make_model, make_data, make_optimizer, clip in MODELS:
        x, y = make_data()
        torch_steps = build(torch.nn, torch.optim, make_model, (x.to(DEVICE), y.to(DEVICE)),
                            make_optimizer, clip)
        gt_steps = build(nn, gt.optim, make_model, (gt.tensor(x), gt.tensor(y)),
                         make_optimizer, clip)
        gt_steps(3)  # start the server and fill the plan cache before timing
        torch_steps(3)
        if first:
            print(devices(gt))
            first = False
        torch_time, gt_time = alternating(torch_steps, gt_steps)
        report(name, torch_time / STEPS, gt_time / STEPS, None)
        print(cpu_per_run(gt_steps, STEPS))
    return 0


if __name__ == '__main__':
    sys.exit(main())
