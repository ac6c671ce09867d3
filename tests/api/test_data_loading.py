"""What a ported script's data plumbing asks of GT: torch's DataLoader over a
TensorDataset of GT tensors batches as over torch tensors (the same batches, in the same
shuffled order for the same torch generator), GT layers taking the torch batches of a
dataset of numpy arrays, and the `torch.cuda` device probe."""

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

import gt


@pytest.mark.parametrize('shuffle', [False, True])
@pytest.mark.parametrize('drop_last', [False, True])
def test_batches_match_torch_s(shuffle, drop_last):
    features = torch.randn(11, 3)
    labels = torch.arange(11)
    loaders = [DataLoader(TensorDataset(x, y), batch_size=4, shuffle=shuffle, drop_last=drop_last,
                          generator=torch.Generator().manual_seed(5))
               for x, y in ((gt.tensor(features), gt.tensor(labels)), (features, labels))]
    mine, theirs = list(loaders[0]), list(loaders[1])
    assert len(mine) == len(theirs) == (2 if drop_last else 3)
    for (x, y), (tx, ty) in zip(mine, theirs):
        assert isinstance(x, gt.Tensor) and x.dtype == tx.dtype
        assert torch.equal(x.data, tx) and torch.equal(y.data, ty)


def test_gt_manual_seed_makes_the_shuffle_torch_s():
    """gt.manual_seed seeds torch's generator in this process too, which the loader's
    sampler draws from (a GT random op, drawn on a worker, does not advance it)."""
    orders = []
    for lib in (gt, torch):
        lib.manual_seed(3)
        loader = DataLoader(TensorDataset(lib.arange(10)), batch_size=5, shuffle=True)
        orders.append([batch.tolist() for (batch,) in loader])
    assert orders[0] == orders[1]


def test_a_loader_shares_the_sessions_random_stream_as_torchs_shares_its_generator():
    """The usual order: seed, make the model (random draws: on GT's workers, from torch's
    one generator in torch), then shuffle, then train with dropout. torch's loader draws
    its seeds from that generator, so the shuffle depends on the model's draws and moves
    the dropout masks after it: GT's does the same with the session's stream."""
    seen = []
    for lib in (gt, torch):
        lib.manual_seed(3)
        lib.nn.Linear(20, 30)
        loader = DataLoader(TensorDataset(lib.arange(10.0)), batch_size=5, shuffle=True)
        plain = DataLoader(TensorDataset(lib.arange(4.0)), batch_size=2)
        for epoch in range(2):
            seen.append([batch.tolist() for (batch,) in loader])
            seen.append([batch.tolist() for (batch,) in plain])
            seen.append(lib.nn.functional.dropout(lib.ones(8), 0.5).tolist())
    half = len(seen) // 2
    assert seen[:half] == seen[half:]


def test_random_split_and_the_other_random_samplers_share_the_stream_too():
    """random_split, SubsetRandomSampler and WeightedRandomSampler (its weights a GT
    tensor) draw from torch's global generator: after a model's draws, their choices and
    every draw after them are torch's."""
    seen = []
    for lib in (gt, torch):
        lib.manual_seed(0)
        lib.nn.Linear(3, 5)
        data = TensorDataset(lib.arange(10.0))
        train, _ = torch.utils.data.random_split(data, [0.8, 0.2])
        seen.append(train.indices)
        seen.append(lib.rand(2).tolist())
        subset = torch.utils.data.SubsetRandomSampler(range(6))
        seen.append([b.tolist() for (b,) in DataLoader(data, batch_size=3, sampler=subset)])
        seen.append(lib.rand(1).tolist())
        weighted = torch.utils.data.WeightedRandomSampler(lib.tensor([0.1, 0.9, 0.5]), 4)
        seen.append(list(weighted))
        seen.append(lib.rand(1).tolist())
        own, _ = torch.utils.data.random_split(data, [5, 5],
                                               generator=torch.Generator().manual_seed(3))
        seen.append(own.indices)
    half = len(seen) // 2
    assert seen[:half] == seen[half:]


def test_torch_code_that_seeds_torchs_generator_keeps_it():
    """A generator that torch code in the client seeded is that code's: the loader draws
    from it as it would without GT."""
    gt.manual_seed(1)
    gt.randn(3).tolist()
    orders = []
    for _ in range(2):
        torch.manual_seed(5)
        loader = DataLoader(TensorDataset(torch.arange(10)), batch_size=5, shuffle=True)
        orders.append([batch.tolist() for (batch,) in loader])
    torch.manual_seed(5)
    sampler = torch.utils.data.RandomSampler(range(10))
    assert orders[0] == orders[1] and sum(orders[0], []) != list(range(10))
    assert len(list(sampler)) == 10


def test_a_loader_with_its_own_generator_shuffles_as_torchs_after_a_model_is_made():
    """With the loader's own generator the batches are torch's too, and the session's
    stream is not drawn from."""
    orders = []
    for lib in (gt, torch):
        lib.manual_seed(3)
        lib.nn.Linear(20, 30)
        loader = DataLoader(TensorDataset(lib.arange(10)), batch_size=5, shuffle=True,
                            generator=torch.Generator().manual_seed(8))
        orders.append([batch.tolist() for (batch,) in loader])
    assert orders[0] == orders[1]


def test_a_training_loop_over_a_loader_learns():
    torch.manual_seed(0)
    features = torch.randn(64, 4)
    labels = (features.sum(1) > 0).long()
    model = gt.nn.Linear(4, 2)
    optimizer = gt.optim.SGD(model.parameters(), lr=0.5)
    loader = DataLoader(TensorDataset(gt.tensor(features), gt.tensor(labels)), batch_size=16,
                        shuffle=True)
    losses = []
    for _ in range(5):
        for x, y in loader:
            loss = gt.nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]


def test_the_cuda_probe_of_a_ported_script_picks_a_device_gt_accepts():
    device = gt.device('cuda' if gt.cuda.is_available() else 'cpu')
    assert gt.cuda.device_count() == 0
    gt.cuda.manual_seed_all(0)
    x = gt.ones(2).to(device)
    assert x.tolist() == [1.0, 1.0]


class NumpySamples(torch.utils.data.Dataset):
    """A dataset as torchvision's and most custom ones are: numpy arrays and ints, which
    torch's collate makes torch tensors, in a GT script too."""

    def __init__(self) -> None:
        self.features = np.random.default_rng(0).standard_normal((6, 4)).astype(np.float32)

    def __len__(self) -> int:
        return len(self.features)

    def __getitem__(self, index: int) -> tuple:
        return self.features[index], index % 3


def test_gt_layers_and_functions_take_the_torch_batches_of_a_numpy_dataset():
    x, y = next(iter(DataLoader(NumpySamples(), batch_size=6)))
    assert type(x) is torch.Tensor  # torch's collate made it
    torch.manual_seed(0)
    theirs = [torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(4),
              torch.nn.MultiheadAttention(4, 2, batch_first=True)]
    mine = [gt.nn.Linear(4, 3), gt.nn.BatchNorm1d(4),
            gt.nn.MultiheadAttention(4, 2, batch_first=True)]
    for layer, torch_layer in zip(mine, theirs):
        layer.load_state_dict(torch_layer.state_dict())
    linear, norm, attention = mine
    torch_linear, torch_norm, torch_attention = theirs
    got = [gt.nn.functional.cross_entropy(linear(x), y), norm(x),
           attention(x[None], x[None], x[None])[0], x @ linear.weight.t(),
           torch.matmul(x, linear.weight.t()), gt.matmul(x, linear.weight.t()),
           gt.nn.functional.linear(x, linear.weight)]
    want = [torch.nn.functional.cross_entropy(torch_linear(x), y), torch_norm(x),
            torch_attention(x[None], x[None], x[None])[0], *[x @ torch_linear.weight.t()] * 4]
    for g, w in zip(got, want):
        assert isinstance(g, gt.Tensor)
        torch.testing.assert_close(g.data, w.detach())


def test_gt_manual_seed_returns_torchs_generator_for_a_loader():
    orders = []
    for lib in (gt, torch):
        generator = lib.manual_seed(3)
        assert generator is torch.default_generator and generator.initial_seed() == 3
        loader = DataLoader(TensorDataset(lib.arange(10)), batch_size=5, shuffle=True,
                            generator=generator)
        orders.append([batch.tolist() for (batch,) in loader])
    assert orders[0] == orders[1]
