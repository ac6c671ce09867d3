"""Optimizer step hooks, per optimizer and global, as torch's: their order, what they
are given, new arguments from a pre-hook, removal, and an optimizer with its own step."""

import importlib

import pytest
import torch

import gt


def hooked_training(lib):
    lib.manual_seed(0)
    model = lib.nn.Linear(2, 1)
    optimizer = lib.optim.SGD(model.parameters(), lr=0.1)
    calls = []
    pre = optimizer.register_step_pre_hook(
        lambda o, args, kwargs: calls.append(('pre', args[0] is o, sorted(kwargs))))
    post = optimizer.register_step_post_hook(lambda o, args, kwargs: calls.append('post'))
    hooks = importlib.import_module(f'{lib.__name__}.optim.optimizer')
    everywhere = hooks.register_optimizer_step_pre_hook(lambda o, a, k: calls.append('global'))
    model(lib.ones(1, 2)).sum().backward()
    optimizer.step()
    pre.remove()
    everywhere.remove()
    optimizer.step()
    post.remove()
    optimizer.step()
    lbfgs = lib.optim.LBFGS(model.parameters())
    lbfgs.register_step_pre_hook(
        lambda o, args, kwargs: ((o, lambda: model(lib.ones(1, 2)).sum() * 2), kwargs))
    lbfgs.step(lambda: model(lib.ones(1, 2)).sum())
    return calls, model.weight.tolist()


def test_step_hooks_run_as_torchs():
    assert hooked_training(gt) == hooked_training(torch)


def test_a_pre_hook_returning_something_else_is_refused():
    model = gt.nn.Linear(2, 1)
    optimizer = gt.optim.Adam(model.parameters())
    optimizer.register_step_pre_hook(lambda o, args, kwargs: 'no')
    with pytest.raises(RuntimeError, match='must return None or a tuple'):
        optimizer.step()
