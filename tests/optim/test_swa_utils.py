"""optim.swa_utils against torch's: AveragedModel's running mean and moving averages
(bit for bit: lerp is torch's kernel), its buffers, its state_dict, update_bn and the SWALR
schedule; and an update per step that costs no round trip."""

import pytest
import torch
from optim_check import seeded

import gt


def train_and_average(lib, make_average, steps=5, batch_norm=False):
    lib.manual_seed(0)
    middle = lib.nn.BatchNorm1d(8) if batch_norm else lib.nn.Tanh()
    model = lib.nn.Sequential(lib.nn.Linear(4, 8), middle, lib.nn.Linear(8, 2))
    average = make_average(lib.optim.swa_utils, model)
    optimizer = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    generator = seeded()
    for _ in range(steps):
        x = lib.tensor(torch.randn(16, 4, generator=generator).numpy())
        loss = model(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        average.update_parameters(model)
    return average


AVERAGES = {
    'running-mean': lambda swa, model: swa.AveragedModel(model),
    'ema': lambda swa, model: swa.AveragedModel(
        model, multi_avg_fn=swa.get_ema_multi_avg_fn(0.9)),
    'ema-per-tensor': lambda swa, model: swa.AveragedModel(
        model, avg_fn=swa.get_ema_avg_fn(0.9)),
    'running-mean-lists': lambda swa, model: swa.AveragedModel(
        model, multi_avg_fn=swa.get_swa_multi_avg_fn()),
    'ema-with-buffers': lambda swa, model: swa.AveragedModel(
        model, multi_avg_fn=swa.get_ema_multi_avg_fn(0.9), use_buffers=True),
}


@pytest.mark.parametrize('name', list(AVERAGES))
def test_averages_are_torchs_bit_for_bit(name):
    mine = train_and_average(gt, AVERAGES[name]).state_dict()
    theirs = train_and_average(torch, AVERAGES[name]).state_dict()
    assert mine.keys() == theirs.keys()
    for key, value in theirs.items():
        assert torch.equal(mine[key].data, value), key


@pytest.mark.parametrize('name', ['running-mean', 'ema-with-buffers'])
def test_batch_norm_buffers_and_update_bn(name):
    """Buffers follow the model's unless averaged; update_bn recomputes the statistics as
    a plain average of a pass over the data (GT's batch norm trains to float tolerance)."""
    def run(lib):
        average = train_and_average(lib, AVERAGES[name], batch_norm=True)
        before = {k: v.clone() for k, v in average.state_dict().items()}
        generator = seeded()
        loader = [(lib.tensor(torch.randn(16, 4, generator=generator).numpy()), 0)
                  for _ in range(3)]
        lib.optim.swa_utils.update_bn(loader, average)
        assert average.training and average.module[1].momentum == 0.1
        return before, average.state_dict()

    for mine, theirs in zip(run(gt), run(torch)):
        assert mine.keys() == theirs.keys()
        for key, value in theirs.items():
            torch.testing.assert_close(mine[key].data, value, rtol=1e-5, atol=1e-6)


def test_a_loaded_model_averages_on_from_its_count_and_updates_fetch_nothing(monkeypatch):
    theirs = train_and_average(torch, AVERAGES['running-mean'], steps=2)
    mine = train_and_average(gt, AVERAGES['running-mean'], steps=1)
    mine.load_state_dict(theirs.state_dict())
    model = gt.nn.Sequential(gt.nn.Linear(4, 8), gt.nn.Tanh(), gt.nn.Linear(8, 2))
    twin = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    model.load_state_dict(twin.state_dict())
    mine.update_parameters(model)  # reads the loaded count: one fetch
    theirs.update_parameters(twin)
    client = gt.runtime.client.current()
    fetches = []
    fetch = client.fetch
    monkeypatch.setattr(client, 'fetch', lambda ids: fetches.append(ids) or fetch(ids))
    mine.update_parameters(model)
    theirs.update_parameters(twin)
    assert fetches == []
    monkeypatch.undo()
    for key, value in theirs.state_dict().items():
        assert torch.equal(mine.state_dict()[key].data, value), key


@pytest.mark.parametrize('options', [
    {'swa_lr': 0.05}, {'swa_lr': 0.05, 'anneal_strategy': 'linear', 'anneal_epochs': 4},
    {'swa_lr': [0.05, 0.01], 'anneal_epochs': 0},
])
def test_swalr_rates_and_state_are_torchs(options):
    def rates(lib):
        model = lib.nn.Linear(2, 2)
        optimizer = lib.optim.SGD([{'params': [model.weight]}, {'params': [model.bias]}],
                                  lr=0.5)
        schedule = lib.optim.swa_utils.SWALR(optimizer, **options)
        seen = []
        for _ in range(6):
            optimizer.step()
            schedule.step()
            seen.append(schedule.get_last_lr())
        state = schedule.state_dict()
        again = lib.optim.swa_utils.SWALR(optimizer, **options)
        again.load_state_dict(state)
        return seen, again.anneal_func(0.5), sorted(state)

    assert rates(gt) == rates(torch)


def test_swalr_errors_are_torchs():
    optimizer = gt.optim.SGD(gt.nn.Linear(2, 2).parameters(), lr=0.1)
    with pytest.raises(ValueError, match="one of 'cos' or 'linear'"):
        gt.optim.swa_utils.SWALR(optimizer, 0.1, anneal_strategy='step')
    with pytest.raises(ValueError, match='equal or greater than 0'):
        gt.optim.swa_utils.SWALR(optimizer, 0.1, anneal_epochs=-1)
    with pytest.raises(ValueError, match='same length as optimizer.param_groups'):
        gt.optim.swa_utils.SWALR(optimizer, [0.1, 0.2])
