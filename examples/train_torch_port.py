"""A PyTorch training script ported to GT by changing its imports, and nothing else.

The four import lines below are the port: with `import torch`, `torch.nn`,
`torch.nn.functional` and `torch.optim` instead, the script runs on plain PyTorch and
prints the same numbers (tests/runtime/test_torch_port.py checks it). It uses what
research scripts use: a model with LayerNorm, dropout and GELU, shuffled minibatches
indexed by a permutation, AdamW with a cosine schedule and warmup, gradient clipping,
masked metrics, top-k accuracy, evaluation under no_grad, and a checkpoint saved and
loaded with torch's file format.

    python examples/train_torch_port.py
"""

import math
import os
import tempfile

import gt as torch
import gt.nn as nn
import gt.nn.functional as F
import gt.optim as optim

CLASSES, FEATURES, HIDDEN = 4, 16, 64
STEPS, BATCH = 60, 32


def make_data(count: int, centers):
    """Gaussian blobs, one per class, with a sine twist so a linear model is not enough."""
    labels = torch.randint(0, CLASSES, (count,))
    points = centers[labels] + torch.randn(count, FEATURES)
    points[:, 0] = points[:, 0] + torch.sin(points[:, 1] * 2)
    return points, labels


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(FEATURES, HIDDEN)
        self.norm = nn.LayerNorm(HIDDEN)
        self.drop = nn.Dropout(0.1)
        self.out = nn.Linear(HIDDEN, CLASSES)

    def forward(self, x):
        h = F.gelu(self.norm(self.inp(x)))
        return self.out(self.drop(h))


def warmup_cosine(step: int) -> float:
    if step < 5:
        return (step + 1) / 5
    return 0.5 * (1 + math.cos(math.pi * (step - 5) / (STEPS - 5)))


def evaluate(model, points, labels):
    model.eval()
    with torch.no_grad():
        logits = model(points)
        loss = F.cross_entropy(logits, labels)
        correct = (logits.argmax(dim=1) == labels).float().mean()
        top2 = logits.topk(2, dim=1).indices
        in_top2 = (top2 == labels.unsqueeze(1)).any(dim=1).float().mean()
        confident = logits.softmax(dim=1).max(dim=1).values > 0.9
        confident_right = (logits.argmax(dim=1) == labels)[confident].float().mean()
    model.train()
    return loss.item(), correct.item(), in_top2.item(), confident_right.item()


def main():
    torch.manual_seed(0)
    centers = torch.randn(CLASSES, FEATURES) * 0.6
    train_x, train_y = make_data(512, centers)
    test_x, test_y = make_data(256, centers)
    model = Classifier()
    optimizer = optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    scheduler = optim.lr_scheduler.LambdaLR(optimizer, warmup_cosine)
    order = torch.randperm(train_x.shape[0])
    for step in range(STEPS):
        start = (step * BATCH) % train_x.shape[0]
        index = order[start:start + BATCH]
        logits = model(train_x[index])
        loss = F.cross_entropy(logits, train_y[index])
        optimizer.zero_grad()
        loss.backward()
        norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        scheduler.step()
        if step % 20 == 0 or step == STEPS - 1:
            print(f'step {step:3d}  loss {loss.item():.4f}  grad norm {norm.item():.4f}  '
                  f'lr {scheduler.get_last_lr()[0]:.5f}')
    loss, accuracy, top2, confident = evaluate(model, test_x, test_y)
    print(f'test loss {loss:.4f}  accuracy {accuracy:.4f}  top-2 {top2:.4f}  '
          f'confident and right {confident:.4f}')
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, 'checkpoint.pt')
        torch.save({'model': model.state_dict(), 'optimizer': optimizer.state_dict()}, path)
        restored = Classifier()
        restored.load_state_dict(torch.load(path)['model'])
    print(f'restored accuracy {evaluate(restored, test_x, test_y)[1]:.4f}')


if __name__ == '__main__':
    main()
