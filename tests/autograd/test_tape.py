"""The tape itself: `gt.debug.print_tape()`, which ops record a node, and that every
differentiable op of the table ('grad=' set) is tested against torch here."""

import gc
import re
from pathlib import Path

import pytest
import torch

import gt
from gt import autograd, tape_printing
from gt.ir import OPS


@pytest.fixture(autouse=True)
def own_tape(monkeypatch):
    """A tape of this test's nodes only, whatever other tests left alive."""
    monkeypatch.setattr(autograd, 'live_nodes', [])


def test_print_tape(capsys):
    x = gt.ones(3, 4, dtype=torch.float64, requires_grad=True)
    w = gt.ones(4, requires_grad=True)
    top = (x * w).exp().max(1)
    loss = top.values.sum()
    gt.debug.print_tape()
    assert capsys.readouterr().out == (
        'tape(%a0: f64[3,4]*, %a1: f32[4]*) {\n'
        '  %0: f64[3,4] = mul(%a0, %a1)                        # MulBackward0\n'
        '  %1: f64[3,4] = exp(%0)                              # ExpBackward0\n'
        '  %2: f64[3], %3: i64[3] = max_dim(%1, dim=1, keepdim=False)  # MaxDimBackward0\n'
        '  %4: f64[] = sum(%2, dim=None, keepdim=False)        # SumBackward0\n'
        '}\n')
    loss.backward()
    del top
    gc.collect()
    assert tape_printing.tape_lines() == [
        'tape() {',
        '  %0: f64[] = sum(<freed>, dim=None, keepdim=False)   # SumBackward0',
        '}']
    del loss
    gc.collect()
    assert tape_printing.tape_lines() == ['tape() {', '}']


def test_print_tape_names_constants_and_in_place_updates():
    x = gt.ones(2, requires_grad=True)
    h = x * 2.0
    h += 1
    lines = tape_printing.tape_lines()
    assert lines[0] == 'tape(%a0: f32[2]*, %a1: f32[], %a2: f32[]) {'
    assert re.match(r'  %0: f32\[2\] = mul\(%a0, %a1\) +# MulBackward0$', lines[1])
    assert re.match(r'  %1: f32\[2\] = add\(%0, %a2\) +# AddBackward0$', lines[2])
    assert len(lines) == 4


def test_ops_without_gradients_record_nothing():
    x = gt.ones(2, 3, requires_grad=True)
    kept = [x > 0, x.argmax(), x // 2, x.long(), gt.zeros(2)]
    assert tape_printing.tape_lines() == ['tape() {', '}']
    assert not any(tensor.requires_grad for tensor in kept)


def test_every_differentiable_op_is_tested_against_torch():
    text = ''.join(path.read_text() for path in Path(__file__).parent.glob('test_*_grads.py'))
    differentiable = sorted(name for name, row in OPS.items() if row.grad is not None)
    missing = [name for name in differentiable if f"'{name}'" not in text]
    assert not missing, f'differentiable ops without gradient tests: {missing}'
    assert len(differentiable) == 116


def test_grad_fn_name_and_next_functions_walk_as_torchs():
    """What graph printers (torchviz's make_dot) walk: `name()`, `next_functions`, and
    `variable` on a leaf's AccumulateGrad."""
    walks = []
    for library in (gt, torch):
        w = library.ones(2, requires_grad=True)
        x = library.ones(2)
        y = (w * x).exp().sum() + w.sum()
        seen = []

        def walk(fn, depth=0):
            if fn is None:
                seen.append((depth, None))
                return
            leaf = getattr(fn, 'variable', None)
            seen.append((depth, fn.name().rstrip('0'), leaf is w))
            for next_fn, _ in fn.next_functions:
                walk(next_fn, depth + 1)
        walk(y.grad_fn)
        walks.append(seen)
    assert walks[0] == walks[1]
