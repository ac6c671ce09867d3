"""Replayed backward passes (gt.backward_replay) against torch: a tape seen twice before
replays its ops, and anything that changes what the rules would emit (shapes, attrs, which value
feeds which op, which inputs require grad, a leaf's existing .grad, hooks) either gets a
recording of its own or runs the rules."""

import numpy as np
import pytest
import torch
from check import fetch, rng

import gt
from gt import backward_replay
from gt.runtime import client as client_module
from gt.runtime import recording as recording_module


def leaves(*shapes, requires_grad=True):
    """The same random data as GT and torch leaves."""
    generator = rng()
    data = [generator.standard_normal(shape).astype(np.float32) for shape in shapes]
    return ([gt.from_numpy(d).requires_grad_(requires_grad) for d in data],
            [torch.from_numpy(d.copy()).requires_grad_(requires_grad) for d in data])


def assert_grads(got, want):
    assert [g.grad is None for g in got] == [w.grad is None for w in want]
    got, want = [g for g in got if g.grad is not None], [w for w in want if w.grad is not None]
    values = fetch([g.grad for g in got])
    for index, (value, w) in enumerate(zip(values, want)):
        torch.testing.assert_close(value, w.grad, rtol=1e-4, atol=1e-5,
                                   msg=lambda m: f'grad of leaf {index}: {m}')


def counted(action):
    """Run `action`; return how many backward passes replayed and recorded meanwhile."""
    before = dict(backward_replay.counts)
    action()
    return {name: backward_replay.counts[name] - before[name] for name in before}


def test_a_repeated_training_step_replays_and_matches_torch():
    (x, w1, w2), (tx, tw1, tw2) = leaves((8, 5), (5, 6), (6, 3))

    def step(lib, x, w1, w2):
        hidden = torch.nn.functional.gelu if lib is torch else gt.nn.functional.gelu
        out = hidden(x @ w1) @ w2
        return (out.softmax(-1) * 3.0 - out.mean()).pow(2).sum()

    for number in range(4):
        for tensor in (x, w1, w2, tx, tw1, tw2):
            tensor.grad = None
        counts = counted(lambda: step(gt, x, w1, w2).backward())
        step(torch, tx, tw1, tw2).backward()
        assert_grads([x, w1, w2], [tx, tw1, tw2])
        assert counts['replayed'] == (number > 1), (number, counts)  # recorded at 1


def test_accumulating_into_existing_grads_gets_its_own_recording():
    (x, w), (tx, tw) = leaves((4, 3), (3, 2))
    for _ in range(4):  # no zero_grad: .grad starts empty, then holds a sum
        ((x @ w).tanh() * 2).sum().backward()
        ((tx @ tw).tanh() * 2).sum().backward()
        assert_grads([x, w], [tx, tw])


@pytest.mark.parametrize('case', ['aliasing', 'attrs', 'shapes', 'requires_grad', 'literal'])
def test_tapes_alike_but_for_one_thing_do_not_share_a_recording(case):
    """Each pair of functions records the same ops on the same types but for one thing;
    the second must not replay the first's gradient ops."""
    (a, b), (ta, tb) = leaves((3, 3), (3, 3))
    first, second = {
        'aliasing': (lambda x, y: (x * y).sum(), lambda x, y: (x * x).sum()),
        'attrs': (lambda x, y: (x.sum(0) * y[0]).sum(), lambda x, y: (x.sum(1) * y[0]).sum()),
        'shapes': (lambda x, y: (x * y).sum(), lambda x, y: (x[:2] * y[:2]).sum()),
        'requires_grad': (lambda x, y: (x * y.detach()).sum(), lambda x, y: (x * y).sum()),
        'literal': (lambda x, y: (x.clamp(min=0.5) * y).sum(),
                    lambda x, y: (x.clamp(min=-0.5) * y).sum()),
    }[case]
    for fn in (first, second, first, second):
        for tensor in (a, b, ta, tb):
            tensor.grad = None
        fn(a, b).backward()
        fn(ta, tb).backward()
        assert_grads([a, b], [ta, tb])


def test_a_given_gradient_is_a_value_of_the_replay():
    (x,), (tx,) = leaves((4, 3))
    for scale in (1.0, -2.0, 3.5):
        x.grad = tx.grad = None
        seed = rng().standard_normal((4,)).astype(np.float32) * scale
        (x.exp() @ gt.ones(3)).backward(gt.tensor(seed))
        (tx.exp() @ torch.ones(3)).backward(torch.tensor(seed))
        assert_grads([x], [tx])


def test_hooks_and_retained_grads_run_the_rules_every_time():
    (x,), (tx,) = leaves((5,))
    seen = []
    for _ in range(3):
        x.grad = tx.grad = None
        hidden, t_hidden = x.sin(), tx.sin()
        hidden.retain_grad(), t_hidden.retain_grad()
        hidden.register_hook(lambda grad: seen.append(1) or grad * 2)
        t_hidden.register_hook(lambda grad: grad * 2)
        counts = counted(lambda: (hidden * hidden).sum().backward())
        (t_hidden * t_hidden).sum().backward()
        assert counts['replayed'] == 0
        assert_grads([x, hidden], [tx, t_hidden])
    assert len(seen) == 3


def test_retain_graph_then_a_second_backward_of_the_same_tape():
    (x,), (tx,) = leaves((4,))
    loss, t_loss = (x * x.cos()).sum(), (tx * tx.cos()).sum()
    for retain in (True, True, False):
        loss.backward(retain_graph=retain)
        t_loss.backward(retain_graph=retain)
        assert_grads([x], [tx])
    with pytest.raises(RuntimeError, match='backward through the graph a second time'):
        loss.backward()


def test_an_input_changed_in_place_after_use_keeps_its_old_value_on_the_tape():
    (x,), (tx,) = leaves((3,))
    for step in range(4):  # the rules, recorded, then replayed twice
        x.grad = tx.grad = None
        hidden, t_hidden = x * 1.0, tx * 1.0
        t_loss = (t_hidden * t_hidden).sum()
        t_loss.backward()  # before the change: torch would raise after it (mul saved it)
        loss = (hidden * hidden).sum()
        hidden += 1
        counts = counted(loss.backward)
        assert counts['replayed'] == (step >= 2) and counts['recorded'] == (step == 1)
        assert_grads([x], [tx])


def test_replay_off_runs_the_rules(monkeypatch):
    monkeypatch.setattr(backward_replay, 'ENABLED', False)
    (x,), (tx,) = leaves((3,))
    for _ in range(2):
        x.grad = tx.grad = None
        counts = counted(lambda: x.tanh().sum().backward())
        tx.tanh().sum().backward()
        assert counts == {'recorded': 0, 'replayed': 0, 'ran_rules': 0}
        assert_grads([x], [tx])


def test_the_sign_of_a_zero_attr_tells_tapes_apart():
    """copysign's gradient flips with the sign of its number, an attr of a run by name:
    0.0 and -0.0 are equal as Python numbers but not as keys."""
    (x,), (tx,) = leaves((3,))
    for sign in (0.0, -0.0, 0.0, -0.0):
        x.grad = tx.grad = None
        torch.copysign(x, sign).sum().backward()
        torch.copysign(tx, sign).sum().backward()
        assert_grads([x], [tx])


def test_a_list_the_user_changes_later_does_not_change_a_recording():
    (x,), (tx,) = leaves((3, 3))
    for _ in range(3):
        x.grad = tx.grad = None
        dims = [0]
        (x.std(dim=dims) * gt.arange(3.0)).sum().backward()
        (tx.std(dim=[0]) * torch.arange(3.0)).sum().backward()
        assert_grads([x], [tx])
        dims[0] = 1


def test_a_replay_sent_in_pieces_keeps_no_more_values_than_the_rules_do(monkeypatch):
    """A pass longer than a fragment is sent in pieces; each piece's temporaries must die
    inside it, as the rules' do, not live on the worker until the pass ends: no piece
    of a replay keeps more values than the same piece of the rules' pass."""
    monkeypatch.setattr(recording_module, 'FRAGMENT_LIMIT', 40)  # the pass spans several
    kept_counts = []
    encode = client_module.encode_structure
    monkeypatch.setattr(client_module, 'encode_structure',
                        lambda records, kept: kept_counts.append(len(kept)) or
                        encode(records, kept))
    layers = [gt.nn.Linear(16, 16) for _ in range(12)]
    x = gt.randn(4, 16)
    by_step = []
    for _ in range(4):
        for layer in layers:
            layer.zero_grad()
        hidden = x
        for layer in layers:
            hidden = layer(hidden).tanh()
        loss = hidden.pow(2).mean()
        loss.item()
        kept_counts.clear()
        counts = counted(loss.backward)
        layers[0].weight.grad.sum().item()
        by_step.append((kept_counts[:-1], counts['replayed']))
    (rules, replayed_first), (recording, replayed_second), *replays = by_step
    assert replayed_first == replayed_second == 0 and len(rules) > 1 and recording == rules
    for kept, replayed in replays:  # the rules hold a gradient or two a little longer
        assert replayed == 1 and len(kept) == len(rules)
        assert all(mine <= theirs for mine, theirs in zip(kept, rules)), (kept, rules)


def test_a_tape_seen_once_is_not_recorded():
    """Recording costs about as much again as the rules: a loop whose shapes change every
    step must not pay it on every backward."""
    (x,), (tx,) = leaves((6, 3))
    for rows in (2, 3, 4, 5, 6):
        x.grad = tx.grad = None
        counts = counted(lambda: x[:rows].sin().sum().backward())
        tx[:rows].sin().sum().backward()
        assert counts == {'recorded': 0, 'replayed': 0, 'ran_rules': 1}
        assert_grads([x], [tx])


@pytest.mark.parametrize('write', ['clamp_ under no_grad', '.data.mul_', '.detach().mul_'])
def test_a_leaf_written_between_forward_and_backward_still_gets_its_gradient(write):
    """A leaf used by a linear layer (which saves the input, not the weight) and then
    written in place before backward, as weight clipping does: the write puts a stand-in
    for the leaf's old value on the tape, whose gradient is the leaf's. Replayed from the
    third step on, the gradient had gone to the stand-in and the leaf's .grad stayed None."""
    def train(lib):
        layer = lib.nn.Linear(3, 2, bias=False)
        with lib.no_grad():
            layer.weight.copy_(lib.tensor([[0.2, -0.5, 0.4], [0.1, 0.6, -0.2]]))
        optimizer = lib.optim.SGD(layer.parameters(), lr=0.1)
        x, grads = lib.tensor([[1.0, 2.0, 3.0]]), []
        for _ in range(5):
            optimizer.zero_grad()
            loss = layer(x).pow(2).sum()
            if write == 'clamp_ under no_grad':
                with lib.no_grad():
                    layer.weight.clamp_(-0.3, 0.3)
            elif write == '.data.mul_':
                layer.weight.data.mul_(0.9)
            else:
                layer.weight.detach().mul_(0.9)
            loss.backward()
            grads.append(None if layer.weight.grad is None else
                         torch.as_tensor(layer.weight.grad.tolist()))
            optimizer.step()
        return grads

    for step, (mine, theirs) in enumerate(zip(train(gt), train(torch))):
        assert mine is not None, f'step {step}: no gradient'
        torch.testing.assert_close(mine, theirs, msg=lambda m: f'step {step}: {m}')
