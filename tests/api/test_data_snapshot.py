"""`tensor.data` as torch scripts use it: a torch.Tensor to read, whose in-place changes
(initialization, moving averages) reach the GT tensor too, and `p.data = value`; each
against the same lines run in torch."""

import copy
import io

import pytest
import torch

import gt
import gt.nn as nn


def twins():
    mine, theirs = nn.Linear(4, 3), torch.nn.Linear(4, 3)
    mine.load_state_dict(theirs.state_dict())
    return mine, theirs


def same(mine, theirs) -> None:
    assert torch.equal(mine.data, theirs.data), (mine, theirs)


@pytest.mark.parametrize('update', [
    lambda lib, p, q: p.data.zero_(),
    lambda lib, p, q: p.data.fill_(0.5),
    lambda lib, p, q: p.data.copy_(q.data),
    lambda lib, p, q: p.data.mul_(0.9).add_(q.data, alpha=0.1),
    lambda lib, p, q: p.data.normal_(0.0, 0.02),
    lambda lib, p, q: p.data.uniform_(-0.1, 0.1),
    lambda lib, p, q: p.data.clamp_(-0.1, 0.1),
    lambda lib, p, q: p.data.__setitem__(0, 2.0),
], ids=['zero_', 'fill_', 'copy_', 'moving_average', 'normal_', 'uniform_', 'clamp_',
        'setitem'])
def test_an_in_place_change_of_data_reaches_the_tensor(update):
    mine, theirs = twins()
    gt.manual_seed(1)
    torch.manual_seed(1)
    update(gt, mine.weight, mine.bias.reshape(3, 1).expand(3, 4))
    update(torch, theirs.weight, theirs.bias.reshape(3, 1).expand(3, 4))
    same(mine.weight, theirs.weight)
    assert mine.weight.requires_grad and mine.weight.is_leaf and mine.weight.grad_fn is None


def test_the_changed_copy_holds_the_new_value_too():
    """Each `.data` is a copy of its own; the one changed is brought up to date."""
    x = gt.tensor([1.0, -2.0])
    data = x.data
    assert data.clamp_(min=0) is data and data.tolist() == [1.0, 0.0] == x.tolist()


def test_assigning_data_keeps_the_parameter_and_its_gradient_flow():
    mine, theirs = twins()
    mine.weight.data = gt.ones(3, 4) * 2
    theirs.weight.data = torch.ones(3, 4) * 2
    mine.bias.data = torch.zeros(3)  # a torch tensor joins GT as data
    theirs.bias.data = torch.zeros(3)
    x = torch.randn(5, 4)
    mine(gt.tensor(x)).sum().backward()
    theirs(x).sum().backward()
    assert isinstance(mine.weight, nn.Parameter) and mine.weight.requires_grad
    for a, b in ((mine.weight, theirs.weight), (mine.bias, theirs.bias)):
        same(a, b)
        same(a.grad, b.grad)


def test_data_reads_as_a_plain_torch_tensor():
    x = gt.tensor([[1.0, 2.0], [3.0, 4.0]])
    data = x.data
    assert isinstance(data, torch.Tensor) and repr(data) == repr(torch.tensor([[1.0, 2.0],
                                                                              [3.0, 4.0]]))
    assert type(data + 1) is torch.Tensor and (data + 1).tolist() == [[2.0, 3.0], [4.0, 5.0]]
    assert data.numpy().tolist() == [[1.0, 2.0], [3.0, 4.0]]
    buffer = io.BytesIO()
    torch.save({'x': data}, buffer)
    buffer.seek(0)
    assert type(torch.load(buffer, weights_only=True)['x']) is torch.Tensor
    assert x.tolist() == [[1.0, 2.0], [3.0, 4.0]]


WRITES_THROUGH_VIEWS = {
    'copy_ of a transposed .data': lambda lib, a, b: a.data.copy_(b.data.t()),
    'mul_ by a row of a .data': lambda lib, a, b: a.data.mul_(b.data[0]),
    '+= on a row': lambda lib, a, b: a.data[0].__iadd__(1.0),
    'operator += on a row': lambda lib, a, b: _add_to_row(a.data),
    '*= on a column': lambda lib, a, b: _double_column(a.data),
    'a gather is a copy': lambda lib, a, b: a.data.__setitem__([0, 1], a.data[[1, 0]]),
    'out= a .data (SB3 polyak_update)': lambda lib, a, b: lib.add(
        a.data.mul_(0.9), b.data, alpha=0.1, out=a.data),
    'torch.add, out= a .data': lambda lib, a, b: torch.add(a.data, b.data, out=a.data),
}


def _add_to_row(data):
    data[1] += 1.0


def _double_column(data):
    data[:, 0] *= 2


@pytest.mark.parametrize('case', WRITES_THROUGH_VIEWS, ids=str)
def test_a_write_through_data_with_views_among_its_operands_is_torchs(case):
    """A view of a `.data` as an operand stands for the same view of its tensor: the
    whole tensor was taken, silently wrong for `a.data.copy_(b.data.t())` (a tied
    autoencoder) and an error for `w.data[0] += 1` (from an audit)."""
    results = []
    for lib in (gt, torch):
        a, b = lib.tensor([[1.0, 2.0], [3.0, 4.0]]), lib.tensor([[5.0, 6.0], [7.0, 8.0]])
        WRITES_THROUGH_VIEWS[case](lib, a, b)
        results.append(a.tolist())
    assert results[0] == results[1]


def test_a_data_indexed_by_a_gt_tensor_is_left_to_gt():
    """`emb.weight.data[ids]` with GT ids, and state_dict values too: GT's indexing,
    where torch had read the GT tensor as a sequence."""
    embedding = nn.Embedding(5, 2)
    ids = gt.tensor([1, 3])
    want = embedding.weight.detach().cpu()[[1, 3]]
    assert torch.equal(embedding.weight.data[ids].cpu(), want)
    assert torch.equal(embedding.state_dict()['weight'][ids].cpu(), want)
    assert torch.equal(embedding.weight.data.index_select(0, ids).cpu(), want)


def test_data_of_a_temporary_is_written_as_torchs_is():
    """torch's `.data` of a temporary holds its storage, so a write (HiFi-GAN's
    `init_weights` on a parametrized conv's weight) happens, and draws from the
    generator; GT's holds the values on the cluster and writes there."""
    seen = []
    for lib in (gt, torch):
        lib.manual_seed(0)
        conv = lib.nn.utils.parametrizations.weight_norm(lib.nn.Conv1d(2, 2, 3))
        conv.weight.data.normal_(0.0, 0.01)
        data = lib.ones(2).data
        data.zero_()
        seen.append([data.tolist(), lib.rand(2).tolist(), conv.weight.tolist()])
    assert seen[0][:2] == seen[1][:2]
    torch.testing.assert_close(torch.tensor(seen[0][2]), torch.tensor(seen[1][2]))


def test_a_state_dict_value_outliving_its_model_says_so():
    state = nn.Linear(2, 2).state_dict()
    with pytest.raises(RuntimeError, match='is gone'):
        state['weight'].zero_()


def test_data_of_a_temporary_view_writes_into_its_base_as_torchs():
    seen = []
    for lib in (gt, torch):
        lib.manual_seed(0)
        table = lib.nn.Embedding(4, 3)
        table.weight[0].data.zero_()
        a = lib.arange(4.0).requires_grad_()
        h = a * 2
        h[1:3].data.zero_()  # unseen by autograd: h keeps its history
        (h * a).sum().backward()
        w = lib.ones(2, 3)
        w.t()[0].data.fill_(5)
        seen.append([table.weight.tolist(), table.weight.is_leaf, h.tolist(), a.grad.tolist(),
                     w.tolist()])
    assert seen[0] == seen[1]


def ema_updates(lib, model, ema):
    """A moving average through state_dict() values, as YOLOv5's ModelEMA and timm's
    ModelEmaV2 write it; then a value zeroed and a deep copy changed."""
    with lib.no_grad():
        current = model.state_dict()
        for name, value in ema.state_dict().items():
            if value.dtype.is_floating_point:
                value *= 0.9
                value += 0.1 * current[name].detach()
        for average, value in zip(ema.state_dict().values(), model.state_dict().values()):
            average.copy_(average * 0.5 + value * 0.5)
        model.state_dict()['0.bias'].zero_()
        copy.deepcopy(model.state_dict())['0.weight'].fill_(7.0)  # its own tensor


def test_state_dict_values_alias_the_model_as_torchs_do():
    results = []
    for lib in (torch, gt):
        lib.manual_seed(0)
        model, ema = (lib.nn.Sequential(lib.nn.Linear(3, 2), lib.nn.BatchNorm1d(2))
                      for _ in range(2))
        model(lib.randn(4, 3))  # moves the running statistics
        ema_updates(lib, model, ema)
        results.append({name: value.tolist() for name, value in
                        [*model.state_dict().items(), *(('ema.' + k, v) for k, v in
                                                        ema.state_dict().items())]})
    assert results[1].keys() == results[0].keys()
    for name, expected in results[0].items():
        torch.testing.assert_close(torch.tensor(results[1][name]), torch.tensor(expected),
                                   msg=name)


@pytest.mark.parametrize('update', [
    lambda r, g: r.copy_(g), lambda r, g: r.add_(g), lambda r, g: r.lerp_(g, 0.25),
    lambda r, g: r.__setitem__(slice(1, None), g[1:]), lambda r, g: r.__imul__(g)],
    ids=['copy_', 'add_', 'lerp_', 'setitem', 'imul'])
def test_a_torch_tensor_updated_in_place_from_a_gt_tensor_changes_as_in_torch(update):
    mine, theirs = torch.ones(2), torch.ones(2)
    update(mine, gt.tensor([2.0, 3.0]))
    update(theirs, torch.tensor([2.0, 3.0]))
    assert type(mine) is torch.Tensor and torch.equal(mine, theirs)
