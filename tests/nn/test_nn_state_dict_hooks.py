"""state_dict and load_state_dict's extension points against torch's: the hooks, a
`_load_from_state_dict` override that renames old keys, extra state, `prefix`,
`destination`, `assign`, `_metadata` versions, and BatchNorm's loading of a state that
lacks num_batches_tracked. Each scenario runs with both libraries and must agree."""

import warnings
from collections import OrderedDict

import pytest
import torch
from nn_check import assert_close

import gt


def model(lib):
    class Block(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = lib.nn.Linear(3, 2)
            self.norm = lib.nn.BatchNorm1d(2)
            self.steps = 0

        def get_extra_state(self):
            return {'steps': self.steps}

        def set_extra_state(self, state):
            self.steps = state['steps']

    return Block()


def fill(lib, module, value):
    with lib.no_grad():
        for parameter in module.parameters():
            parameter.fill_(value)


def run_both(scenario):
    """The scenario's result with each library, as plain Python values."""
    results = []
    for lib in (gt, torch):
        lib.manual_seed(0)
        results.append(scenario(lib))
    return results


def test_hooks_run_in_torchs_order_with_torchs_arguments():
    def scenario(lib):
        calls = []
        block = model(lib)
        block.register_state_dict_pre_hook(
            lambda m, prefix, keep: calls.append(('pre', type(m).__name__, prefix, keep)))
        block.proj.register_state_dict_pre_hook(
            lambda m, prefix, keep: calls.append(('pre', type(m).__name__, prefix, keep)))

        def post(m, state, prefix, metadata):
            calls.append(('post', prefix, sorted(state), metadata))
            state[prefix + 'added'] = lib.zeros(1)
        block.register_state_dict_post_hook(post)
        state = block.state_dict(prefix='model.')
        calls.append(sorted(state))
        calls.append({key: dict(value) for key, value in state._metadata.items()})
        block.steps = 7
        saved = block.state_dict()
        saved.pop('added')

        def load_pre(m, state, prefix, metadata, strict, missing, unexpected, errors):
            calls.append(('load-pre', type(m).__name__, prefix, sorted(state), strict))

        def load_post(m, keys):
            calls.append(('load-post', type(m).__name__, list(keys.missing_keys)))
            keys.missing_keys.clear()  # excused, so strict loading succeeds
        other = model(lib)
        other.register_load_state_dict_pre_hook(load_pre)
        other.proj.register_load_state_dict_pre_hook(load_pre)
        other.register_load_state_dict_post_hook(load_post)
        saved.pop('norm.running_mean')
        result = other.load_state_dict(saved)
        calls.append((repr(result), other.steps))
        return calls

    mine, theirs = run_both(scenario)
    assert mine == theirs


def test_a_load_from_state_dict_override_renames_old_keys_and_load_errors_are_torchs():
    def scenario(lib):
        class Renamed(lib.nn.Linear):
            def _load_from_state_dict(self, state, prefix, *rest):
                for old, new in (('w', 'weight'), ('b', 'bias')):
                    if prefix + old in state:
                        state[prefix + new] = state.pop(prefix + old)
                super()._load_from_state_dict(state, prefix, *rest)

        outer = lib.nn.Sequential(Renamed(2, 2))
        outer.load_state_dict({'0.w': torch.ones(2, 2), '0.b': torch.zeros(2)})
        loaded = outer[0].weight.tolist()
        messages = []
        for bad in ({'0.w': torch.ones(3, 2), '0.b': torch.zeros(2)},
                    {'0.weight': 'text', '0.bias': torch.zeros(2)},
                    OrderedDict([('0.weight', torch.ones(2, 2))])):
            try:
                outer.load_state_dict(bad)
            except RuntimeError as error:
                messages.append(str(error))
        with pytest.raises(TypeError, match='Expected state_dict to be dict-like'):
            outer.load_state_dict([('0.weight', torch.ones(2, 2))])
        return loaded, messages

    mine, theirs = run_both(scenario)
    assert mine == theirs


def test_a_failed_load_changes_nothing():
    layer = gt.nn.Linear(2, 2)
    before = layer.weight.tolist()
    with pytest.raises(RuntimeError, match='size mismatch for bias'):
        layer.load_state_dict({'weight': torch.ones(2, 2), 'bias': torch.zeros(3)})
    assert layer.weight.tolist() == before


def test_assign_makes_the_given_tensors_the_modules_own():
    layer = gt.nn.Linear(2, 2)
    weight = gt.nn.Parameter(gt.ones(2, 2), requires_grad=False)
    layer.load_state_dict({'weight': weight, 'bias': torch.zeros(2, dtype=torch.float64)},
                          assign=True)
    assert layer.weight is weight and not layer.weight.requires_grad
    assert isinstance(layer.bias, gt.nn.Parameter) and layer.bias.dtype == torch.float64
    assert layer.bias.requires_grad


def test_batch_norm_loads_a_state_without_num_batches_tracked():
    def scenario(lib):
        norm = lib.nn.BatchNorm1d(2)
        norm(lib.randn(4, 2))
        plain = {'weight': torch.ones(2) * 2, 'bias': torch.zeros(2),
                 'running_mean': torch.ones(2), 'running_var': torch.ones(2)}
        result = norm.load_state_dict(plain)
        with_version = OrderedDict(plain)
        with_version._metadata = {'': {'version': 2}}
        try:
            norm.load_state_dict(with_version)
        except RuntimeError as error:
            failed = str(error)
        return repr(result), int(norm.num_batches_tracked), norm.weight.tolist(), failed

    mine, theirs = run_both(scenario)
    assert mine == theirs


def test_private_state_dict_hook_may_replace_the_dict_and_positional_args_warn():
    for lib in (gt, torch):
        layer = lib.nn.Linear(2, 1)
        layer._register_state_dict_hook(lambda m, state, prefix, meta: {'only': 1})
        assert layer.state_dict() == {'only': 1}
        other = lib.nn.Linear(2, 1)
        destination = OrderedDict()
        with pytest.warns(FutureWarning, match='Positional args are being deprecated'):
            other.state_dict(destination, 'p.')
        assert list(destination) == ['p.weight', 'p.bias']
        public = lib.nn.Linear(2, 1)
        public.register_state_dict_post_hook(lambda m, state, prefix, meta: {})
        with pytest.raises(RuntimeError, match='must return None'):
            public.state_dict()


def test_state_dict_values_are_fetched_once_and_alias_the_model():
    layer = gt.nn.Linear(3, 3)
    fill(gt, layer, 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        state = layer.state_dict()
    assert isinstance(state['weight'], torch.Tensor)
    state['weight'].mul_(2)
    assert_close(layer.weight, torch.full((3, 3), 1.0))
    assert isinstance(layer.state_dict(keep_vars=True)['weight'], gt.nn.Parameter)
