"""gt.save and gt.load (gt/serialization.py) against torch's file format, and a training
run resumed from a checkpoint: it equals the uninterrupted run, in GT and in torch,
whichever of the two wrote the file."""

import collections

import pytest
import torch
from optim_check import assert_close, assert_same_weights, backward_both, batches, models

import gt
import gt.nn as nn
import gt.optim as optim
from gt.serialization import load, save

STEPS, CHECKPOINT = 8, 4


def test_a_saved_file_is_a_torch_file_and_loads_back(tmp_path, monkeypatch):
    values = {name: torch.randn(3, 2, generator=torch.Generator().manual_seed(1)).to(dtype)
              for name, dtype in [('f32', torch.float32), ('f64', torch.float64),
                                  ('bf16', torch.bfloat16), ('i64', torch.int64)]}
    shared = gt.tensor(values['f32'])
    obj = collections.OrderedDict(
        tensors={name: gt.tensor(value) for name, value in values.items()},
        flags=gt.tensor([True, False]), scalar=gt.tensor(2.5), weight=nn.Parameter(values['f32']),
        nested=[shared, (shared, 'text', 3, 0.5, None)], grad=gt.ones(2, requires_grad=True))
    client = gt.runtime.client.current()
    fetches = []
    fetch = client.fetch
    monkeypatch.setattr(client, 'fetch', lambda ids: fetches.append(ids) or fetch(ids))
    save(obj, tmp_path / 'state.pt')
    monkeypatch.undo()
    assert len(fetches) == 1  # every tensor in one round trip, the shared one once
    assert len(fetches[0]) == 9

    plain = torch.load(tmp_path / 'state.pt')  # torch's own loader, weights only
    assert type(plain) is collections.OrderedDict
    for name, value in values.items():
        assert plain['tensors'][name].dtype == value.dtype
        assert torch.equal(plain['tensors'][name], value)
    assert isinstance(plain['weight'], torch.nn.Parameter) and plain['grad'].requires_grad
    assert plain['nested'][0] is plain['nested'][1][0]
    assert plain['nested'][1][1:] == ('text', 3, 0.5, None)

    loaded = load(tmp_path / 'state.pt', map_location='cuda')  # placement is GT's
    assert type(loaded) is collections.OrderedDict
    for name, value in values.items():
        assert isinstance(loaded['tensors'][name], gt.Tensor)
        assert loaded['tensors'][name].dtype == value.dtype
        assert torch.equal(loaded['tensors'][name].data, value)
    assert loaded['flags'].tolist() == [True, False] and loaded['scalar'].item() == 2.5
    assert isinstance(loaded['weight'], nn.Parameter) and loaded['weight'].requires_grad
    assert loaded['grad'].requires_grad and not isinstance(loaded['grad'], nn.Parameter)
    assert loaded['nested'][0] is loaded['nested'][1][0]


def add_layers(model, lib):
    """The same layers in either library: a shared module and a buffer among them."""
    model.body = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4))
    model.head = lib.nn.Linear(4, 2)
    model.shared = model.head
    model.register_buffer('scale', lib.ones(2) * 2)


class TorchNet(torch.nn.Module):  # pickled by name: at the module's top level
    def __init__(self):
        super().__init__()
        add_layers(self, torch)


class GtNet(nn.Module):
    def __init__(self):
        super().__init__()
        add_layers(self, gt)


def test_a_whole_module_saves_and_loads_as_torchs_does(tmp_path):
    """torch.save(model) pickles the module; loading it (weights_only=False) gives the
    same model back, sharing what it shared; a change to the copy leaves the original."""
    theirs, mine = TorchNet(), GtNet()
    mine.load_state_dict(theirs.state_dict())
    results = []
    for lib, model in ((torch, theirs), (gt, mine)):
        model.body(lib.ones(5, 3) * 2)  # moves the running statistics
        lib.save({'model': model, 'step': 3}, tmp_path / f'{lib.__name__}.pt')
        loaded = lib.load(tmp_path / f'{lib.__name__}.pt', weights_only=False)
        back = loaded['model']
        assert type(back) is type(model) and back.shared is back.head and loaded['step'] == 3
        assert isinstance(back.head.weight, lib.nn.Parameter)
        with lib.no_grad():
            back.head.weight.fill_(0)
        results.append([list(back.state_dict()), model.head.weight.abs().sum().item() > 0,
                        back.body[1].running_mean.tolist(), back.scale.tolist()])
    assert results[1] == results[0]


def setup(name: str, mine: nn.Module | None = None, theirs: torch.nn.Module | None = None):
    """The optimizer and schedule of a run, in GT (for `mine`) and torch (for `theirs`)."""
    def build(lib, model):
        if name == 'AdamW':
            optimizer = lib.optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.1,
                                        foreach=False)
            return optimizer, lib.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=0.05,
                                                                total_steps=STEPS)
        optimizer = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True,
                                  foreach=False)
        return optimizer, lib.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5)
    return build(gt, mine) if mine is not None else build(torch, theirs)


def run(model, optimizer, scheduler, data) -> None:
    """Training steps on `data`, with a GT or a torch model."""
    for x, y in data:
        if isinstance(model, nn.Module):
            nn.functional.mse_loss(model(gt.tensor(x)), gt.tensor(y)).backward()
        else:
            torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
        optimizer.zero_grad()
        scheduler.step()


@pytest.mark.parametrize('name', ['AdamW', 'SGD'])
def test_a_run_resumed_from_a_checkpoint_equals_an_uninterrupted_one(name, tmp_path):
    data = batches(STEPS)
    mine, theirs = models()
    start = {name: value.clone() for name, value in theirs.state_dict().items()}
    optimizer, scheduler = setup(name, mine)
    expected, reference = setup(name, theirs=theirs)
    run(theirs, expected, reference, data)  # torch, uninterrupted: the oracle
    straight = models()[0]
    straight.load_state_dict(start)
    run(straight, *setup(name, straight), data)  # GT, uninterrupted

    run(mine, optimizer, scheduler, data[:CHECKPOINT])
    path = tmp_path / 'checkpoint.pt'
    save({'model': mine.state_dict(), 'optimizer': optimizer.state_dict(),
          'scheduler': scheduler.state_dict(), 'step': CHECKPOINT}, path)
    del mine, optimizer, scheduler

    # GT resumes: fresh objects (other initial weights), then the checkpoint's state.
    checkpoint = load(path)
    resumed = models()[0]
    optimizer, scheduler = setup(name, resumed)
    resumed.load_state_dict(checkpoint['model'])
    optimizer.load_state_dict(checkpoint['optimizer'])
    scheduler.load_state_dict(checkpoint['scheduler'])
    run(resumed, optimizer, scheduler, data[checkpoint['step']:])
    for (_, got), (_, want) in zip(resumed.state_dict().items(), straight.state_dict().items()):
        assert torch.equal(got, want)  # the same ops on the same values: the same bits
    assert_same_weights(resumed, theirs)
    assert scheduler.get_last_lr() == reference.get_last_lr()

    # torch resumes from GT's file just as well.
    torch_checkpoint = torch.load(path)
    again = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    expected_again, reference_again = setup(name, theirs=again)
    again.load_state_dict(torch_checkpoint['model'])
    expected_again.load_state_dict(torch_checkpoint['optimizer'])
    reference_again.load_state_dict(torch_checkpoint['scheduler'])
    run(again, expected_again, reference_again, data[CHECKPOINT:])
    for (_, got), (_, want) in zip(again.state_dict().items(), theirs.state_dict().items()):
        assert_close(got, want)


def test_a_torch_checkpoint_resumes_in_gt(tmp_path):
    data = batches(STEPS)
    mine, theirs = models()
    expected, reference = setup('AdamW', theirs=theirs)
    run(theirs, expected, reference, data[:CHECKPOINT])
    torch.save({'model': theirs.state_dict(), 'optimizer': expected.state_dict(),
                'scheduler': reference.state_dict()}, tmp_path / 'torch.pt')
    run(theirs, expected, reference, data[CHECKPOINT:])

    checkpoint = load(tmp_path / 'torch.pt')
    optimizer, scheduler = setup('AdamW', mine)
    mine.load_state_dict(checkpoint['model'])
    optimizer.load_state_dict(checkpoint['optimizer'])
    scheduler.load_state_dict(checkpoint['scheduler'])
    assert optimizer.state[mine[0].weight]['step'] == CHECKPOINT
    run(mine, optimizer, scheduler, data[CHECKPOINT:])
    assert_same_weights(mine, theirs)
    backward_both(mine, theirs, data[0])  # and gradients flow through the loaded weights
    assert_close(mine[0].weight.grad, theirs[0].weight.grad)


def test_an_optimizer_state_saves_in_torchs_layout(tmp_path):
    layer = nn.Linear(3, 2)
    optimizer = optim.SGD(layer.parameters(), lr=0.1, momentum=0.9)
    layer(gt.randn(4, 3)).sum().backward()
    optimizer.step()
    save(optimizer.state_dict(), tmp_path / 'optimizer.pt')
    state = torch.load(tmp_path / 'optimizer.pt')
    assert list(state['state']) == [0, 1]
    assert state['state'][0]['momentum_buffer'].shape == (2, 3)
    assert state['param_groups'][0]['params'] == [0, 1]


@pytest.mark.parametrize('writer', ['gt.save', 'torch.save'])
def test_a_multistep_schedule_resumed_from_a_saved_checkpoint_still_decays(writer, tmp_path):
    """MultiStepLR keeps its milestones in a Counter, which gt.save and gt.load rebuilt
    with Counter.update: the milestones became (milestone, count) pairs, nothing raised,
    and the resumed run trained at the first learning rate for good."""
    def resumed(library, path):
        optimizer = library.optim.SGD(library.nn.Linear(2, 2).parameters(), lr=0.1)
        schedule = library.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[3, 6],
                                                          gamma=0.1)
        schedule.load_state_dict(library.load(path)['scheduler'])
        rates = []
        for _ in range(8):
            optimizer.step()
            schedule.step()
            rates.append(round(optimizer.param_groups[0]['lr'], 6))
        return rates

    path = str(tmp_path / 'checkpoint.pt')
    optimizer = torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=0.1)
    schedule = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[3, 6], gamma=0.1)
    {'gt.save': gt.save, 'torch.save': torch.save}[writer](
        {'scheduler': schedule.state_dict()}, path)
    assert torch.load(path, weights_only=False)['scheduler']['milestones'] == \
        schedule.state_dict()['milestones']
    assert resumed(gt, path) == resumed(torch, path)
