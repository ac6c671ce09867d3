"""The PyTorch twin of examples/train_mlp.py: the same script, with torch's imports.

    python examples/train_mlp_torch.py

Diff the two files to see what porting a PyTorch training script to GT takes.
"""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch.optim import Adam

EPOCHS = 10
BATCH_SIZE = 64


class MLP(nn.Module):
    def __init__(self, inputs: int, hidden: int, classes: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(inputs, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, classes)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x):
        x = self.dropout(F.relu(self.fc1(x)))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def main() -> float:
    torch.manual_seed(0)
    digits = load_digits()
    features = (digits.data / 16.0).astype(np.float32)  # pixels are 0..16
    x_train, x_test, y_train, y_test = train_test_split(
        features, digits.target, test_size=0.25, random_state=0, stratify=digits.target)
    model = MLP(64, 128, 10)
    optimizer = Adam(model.parameters(), lr=3e-3)
    shuffle = np.random.default_rng(0)

    for epoch in range(EPOCHS):
        model.train()
        losses = []
        order = shuffle.permutation(len(x_train))
        for start in range(0, len(order), BATCH_SIZE):
            batch = order[start:start + BATCH_SIZE]
            inputs, targets = torch.tensor(x_train[batch]), torch.tensor(y_train[batch])
            loss = F.cross_entropy(model(inputs), targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.detach())
        # One value fetched per epoch: the losses stay on the worker until then.
        print(f'epoch {epoch + 1:2d}: train loss {torch.stack(losses).mean().item():.4f}')

    model.eval()
    with torch.no_grad():
        predictions = model(torch.tensor(x_test)).argmax(dim=1)
        accuracy = (predictions == torch.tensor(y_test)).float().mean().item()
    print(f'test accuracy: {accuracy:.4f} on {len(y_test)} held-out digits')
    return accuracy


if __name__ == '__main__':
    main()
