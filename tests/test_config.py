"""Signal configs on the client (gt/config.py): every YAML example of the signals seed,
the Python API, mixing both, the wire form, load-time errors that name file, signal and
field, and GT_CONFIG. Scopes are tested in test_signal.py; placement in tests/passes and
tests/runtime.
"""

import dataclasses
import os
import subprocess
import sys

import msgpack
import pytest

import gt
from gt import ShardConfig, SignalConfig
from gt.config import ConfigError, clear_configs, get_config, version, wire_form

# The seed's YAML examples, as written there; each with the wire form it must register.
SEED_EXAMPLES = {
    'quick': ("""\
# config.yaml
forward_layer1:
  shard:
    axis: 0                  # Shard batch dimension
    workers: [0, 1, 2, 3]    # Use workers 0-3
  backward: backward_layer1  # Different config for gradients

backward_layer1:
  shard:
    axis: 0
    workers: [0, 1, 2, 3]
""", {'forward_layer1': [0, [0, 1, 2, 3], 'backward_layer1', False],
      'backward_layer1': [0, [0, 1, 2, 3], None, False]}),
    'basic': ("""\
signal_name:
  shard:
    axis: 0              # Which axis to shard (0 = batch, 1 = features)
    workers: [0, 1]      # List of worker IDs to use
""", {'signal_name': [0, [0, 1], None, False]}),
    'pipeline': ("""\
forward_stage:
  shard:
    axis: 0
    workers: [0, 1]
  backward: backward_stage  # Use different workers for gradients

backward_stage:
  shard:
    axis: 0
    workers: [2, 3]          # Backward on different workers
""", {'forward_stage': [0, [0, 1], 'backward_stage', False],
      'backward_stage': [0, [2, 3], None, False]}),
    'compile': ("""\
hot_path:
  shard:
    axis: 0
    workers: [0, 1, 2, 3]
  compile: true              # Enable torch.compile for this signal
""", {'hot_path': [0, [0, 1, 2, 3], None, True]}),
    'data_parallel': ("""\
data_parallel:
  shard:
    axis: 0                    # Batch dimension
    workers: [0, 1, 2, 3]      # All workers
""", {'data_parallel': [0, [0, 1, 2, 3], None, False]}),
    'model_parallel': ("""\
model_parallel:
  shard:
    axis: 1                    # Feature dimension
    workers: [0, 1]
""", {'model_parallel': [1, [0, 1], None, False]}),
    'stages': ("""\
stage_1:
  shard:
    axis: 0
    workers: [0, 1]
  backward: stage_1_backward

stage_1_backward:
  shard:
    axis: 0
    workers: [2, 3]

stage_2:
  shard:
    axis: 0
    workers: [2, 3]
  backward: stage_2_backward

stage_2_backward:
  shard:
    axis: 0
    workers: [0, 1]
""", {'stage_1': [0, [0, 1], 'stage_1_backward', False],
      'stage_1_backward': [0, [2, 3], None, False],
      'stage_2': [0, [2, 3], 'stage_2_backward', False],
      'stage_2_backward': [0, [0, 1], None, False]}),
    'hybrid': ("""\
layer1_data_parallel:
  shard:
    axis: 0                    # Data parallel
    workers: [0, 1, 2, 3]

layer2_model_parallel:
  shard:
    axis: 1                    # Model parallel
    workers: [0, 1]
""", {'layer1_data_parallel': [0, [0, 1, 2, 3], None, False],
      'layer2_model_parallel': [1, [0, 1], None, False]}),
    'training': ("""\
# training_config.yaml
forward_pass:
  shard:
    axis: 0
    workers: [0, 1, 2, 3]
  backward: backward_pass
  compile: true

backward_pass:
  shard:
    axis: 0
    workers: [0, 1, 2, 3]
  compile: true

parameter_updates:
  shard:
    axis: 0
    workers: [0, 1, 2, 3]
""", {'forward_pass': [0, [0, 1, 2, 3], 'backward_pass', True],
      'backward_pass': [0, [0, 1, 2, 3], None, True],
      'parameter_updates': [0, [0, 1, 2, 3], None, False]}),
}
QUICK_YAML = SEED_EXAMPLES['quick'][0]


pytestmark = pytest.mark.usefixtures('fresh_configs')


def write(tmp_path, text: str, name: str = 'config.yaml') -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize('example', sorted(SEED_EXAMPLES))
def test_every_seed_yaml_example_loads(tmp_path, example):
    text, wanted = SEED_EXAMPLES[example]
    gt.load_config(write(tmp_path, text))
    assert wire_form() == wanted
    assert msgpack.unpackb(msgpack.packb(wire_form())) == wanted  # what the client sends


def test_the_seeds_python_api_examples():
    gt.register_config('forward_layer1', SignalConfig(
        shard=ShardConfig(axis=0, workers=[0, 1, 2, 3]),
        backward_signal='backward_layer1', compile=False))
    gt.register_config('data_parallel', SignalConfig(shard=ShardConfig(axis=0,
                                                                       workers=[0, 1, 2, 3])))

    def configure_for_batch_size(batch_size):
        workers = [0, 1, 2, 3] if batch_size >= 256 else [0, 1]
        gt.register_config('training', SignalConfig(shard=ShardConfig(axis=0, workers=workers)))

    configure_for_batch_size(512)
    assert get_config('training').shard.workers == (0, 1, 2, 3)
    configure_for_batch_size(64)
    assert get_config('training').shard.workers == (0, 1)
    assert wire_form() == {'forward_layer1': [0, [0, 1, 2, 3], 'backward_layer1', False],
                           'data_parallel': [0, [0, 1, 2, 3], None, False],
                           'training': [0, [0, 1], None, False]}


def test_configs_are_frozen_and_store_workers_as_a_tuple():
    shard = ShardConfig(workers=[3, 1])
    assert shard.workers == (3, 1) and shard.axis == 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        shard.axis = 1
    assert SignalConfig() == SignalConfig(shard=None, backward_signal=None, compile=False)


def test_wire_form_without_shard_or_workers():
    gt.register_config('plain', SignalConfig())
    gt.register_config('everywhere', SignalConfig(shard=ShardConfig(axis=2), compile=True))
    assert wire_form() == {'plain': [None, None, None, False],
                           'everywhere': [2, None, None, True]}


def test_the_later_registration_wins_in_both_directions(tmp_path):
    path = write(tmp_path, QUICK_YAML)
    gt.register_config('forward_layer1', SignalConfig(shard=ShardConfig(axis=1)))
    gt.load_config(path)  # YAML after Python
    assert wire_form()['forward_layer1'] == [0, [0, 1, 2, 3], 'backward_layer1', False]
    gt.register_config('forward_layer1', SignalConfig(shard=ShardConfig(axis=1, workers=[0])))
    assert wire_form()['forward_layer1'] == [1, [0], None, False]  # Python after YAML
    assert get_config('backward_layer1').shard.workers == (0, 1, 2, 3)  # others stay


def test_version_increases_on_every_change_and_not_on_a_failed_load(tmp_path):
    start = version()
    gt.register_config('a', SignalConfig())
    after_register = version()
    gt.load_config(write(tmp_path, QUICK_YAML))
    after_load = version()
    with pytest.raises(ConfigError):
        gt.load_config(write(tmp_path, 'x:\n  compile: 3\n', 'bad.yaml'))
    assert version() == after_load
    clear_configs()
    assert start < after_register < after_load < version()
    assert wire_form() == {}


@pytest.mark.parametrize('text', ['', '# nothing yet\n', '{}\n'])
def test_an_empty_file_registers_nothing(tmp_path, text):
    gt.load_config(write(tmp_path, text))
    assert wire_form() == {}


def test_an_empty_signal_and_a_backward_not_yet_registered_are_fine(tmp_path):
    gt.load_config(write(tmp_path, 'empty:\nnull_body: ~\nforward:\n  backward: later\n'))
    assert get_config('empty') == get_config('null_body') == SignalConfig()
    assert get_config('forward').backward_signal == 'later'
    assert get_config('later') is None


@pytest.mark.parametrize('body, field', [
    ('  shard:\n    axis: zero\n', "shard.axis must be a non-negative integer, got 'zero'"),
    ('  shard:\n    axis: -1\n', 'shard.axis must be a non-negative integer, got -1'),
    ('  shard:\n    axis: true\n', 'shard.axis'),
    ('  shard:\n    axis: 1.5\n', 'shard.axis'),
    ('  sharding:\n    axis: 0\n', 'unknown field sharding (expected shard, backward, compile)'),
    ('  shard:\n    axes: 0\n', 'unknown field shard.axes (expected shard.axis, shard.workers)'),
    ('  shard: 0\n', 'shard must be a mapping'),
    ('  shard:\n    workers: 3\n', 'shard.workers'),
    ('  shard:\n    workers: []\n', 'shard.workers'),
    ('  shard:\n    workers: [0, one]\n', 'shard.workers'),
    ('  shard:\n    workers: [0, -1]\n', 'shard.workers'),
    ('  shard:\n    workers: [0, 0]\n', 'shard.workers names a worker twice'),
    # Past 2**64 msgpack cannot send them: once accepted, then the session's work was lost.
    ('  shard: {axis: 99999999999999999999}\n',
     'shard.axis 99999999999999999999 is out of range'),
    ('  shard:\n    axis: 2147483648\n', 'shard.axis 2147483648 is out of range'),
    ('  shard:\n    workers: [99999999999999999999]\n',
     'shard.workers names worker 99999999999999999999, out of range'),
    ('  backward: 3\n', 'backward must be the name of a signal, got 3'),
    ('  backward: [a]\n', 'backward must be the name of a signal'),
    ('  compile: maybe\n', 'compile must be true or false'),
    ('  compile: 1\n', 'compile must be true or false'),
    (' [1, 2]\n', 'expected a mapping with shard, backward, compile'),
])
def test_a_malformed_signal_names_file_signal_and_field_and_registers_nothing(
        tmp_path, body, field):
    path = write(tmp_path, QUICK_YAML + '\nforward_layer9:\n' + body)
    with pytest.raises(ConfigError) as raised:
        gt.load_config(path)
    assert str(raised.value).startswith(f"{path}: signal 'forward_layer9': ")
    assert str(raised.value).count(str(path)) == 1  # said once, not once per level
    assert field in str(raised.value)
    assert wire_form() == {}  # the good signals before it were not registered either


def test_a_non_string_signal_name_is_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"config.yaml: signal 3: a signal name must be"):
        gt.load_config(write(tmp_path, '3:\n  compile: true\n'))


def test_a_yaml_syntax_error_names_the_file_and_line(tmp_path):
    path = write(tmp_path, QUICK_YAML + 'broken:\n  shard: {axis: 0\n')
    with pytest.raises(ConfigError) as raised:
        gt.load_config(path)
    assert str(raised.value).startswith(f'{path}: not valid YAML (line ')
    assert wire_form() == {}


@pytest.mark.parametrize('text, kind', [('- forward\n- backward\n', 'list'),
                                        ('forward\n', 'str')])
def test_a_file_that_is_not_a_mapping_is_refused(tmp_path, text, kind):
    with pytest.raises(ConfigError, match=f'config.yaml: expected a mapping of signal names to '
                                          f'configs, got {kind}'):
        gt.load_config(write(tmp_path, text))


def test_a_missing_file_names_its_path(tmp_path):
    with pytest.raises(FileNotFoundError, match='nowhere.yaml'):
        gt.load_config(tmp_path / 'nowhere.yaml')


@pytest.mark.parametrize('make, field', [
    (lambda: ShardConfig(axis=-2), 'shard.axis'),
    (lambda: ShardConfig(axis=True), 'shard.axis'),
    (lambda: ShardConfig(axis='0'), 'shard.axis'),
    (lambda: ShardConfig(workers=[]), 'shard.workers'),
    (lambda: ShardConfig(workers='01'), 'shard.workers'),
    (lambda: ShardConfig(workers=[0, False]), 'shard.workers'),
    (lambda: ShardConfig(workers=[1, 1]), 'shard.workers names a worker twice'),
    (lambda: ShardConfig(axis=10**20), 'shard.axis 100000000000000000000 is out of range'),
    (lambda: ShardConfig(workers=[0, 2**64]), 'shard.workers names worker 18446744073709551616'),
    (lambda: SignalConfig(shard={'axis': 0}), 'shard must be a ShardConfig'),
    (lambda: SignalConfig(backward_signal=''), 'backward_signal'),
    (lambda: SignalConfig(backward_signal=3), 'backward_signal'),
    (lambda: SignalConfig(compile='yes'), 'compile'),
    (lambda: gt.register_config('', SignalConfig()), 'signal name'),
    (lambda: gt.register_config('x', {'shard': {'axis': 0}}), 'SignalConfig'),
])
def test_python_configs_are_checked_and_name_the_field(make, field):
    with pytest.raises(ConfigError, match=field.replace('.', r'\.')):
        make()
    assert issubclass(ConfigError, ValueError)


def run_python(code: str, config_path: str, cwd) -> subprocess.CompletedProcess:
    environment = {**os.environ, 'GT_CONFIG': config_path}
    return subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                          env=environment, cwd=cwd, timeout=120)


def test_gt_config_is_loaded_at_import(tmp_path):
    write(tmp_path, QUICK_YAML)
    code = "import gt; print(gt.config.get_config('forward_layer1'))"
    result = run_python(code, 'config.yaml', tmp_path)  # relative, as in the seed
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(SignalConfig(
        shard=ShardConfig(axis=0, workers=[0, 1, 2, 3]), backward_signal='backward_layer1'))
    result = run_python("import gt; print(gt.config.wire_form())", '', tmp_path)
    assert (result.returncode, result.stdout.strip()) == (0, '{}'), result.stderr


def test_a_malformed_gt_config_fails_import_naming_the_file(tmp_path):
    path = write(tmp_path, 'forward_layer1:\n  shard:\n    axis: zero\n', 'bad.yaml')
    result = run_python('import gt', path, tmp_path)
    assert result.returncode != 0
    assert (f"ConfigError: {path}: signal 'forward_layer1': shard.axis must be a non-negative "
            "integer, got 'zero'") in result.stderr


def test_a_gt_config_that_cannot_be_read_names_the_variable(tmp_path):
    """A plain FileNotFoundError said nothing of where the path came from."""
    result = run_python('import gt', str(tmp_path / 'nowhere.yaml'), tmp_path)
    assert result.returncode != 0
    assert (f"ConfigError: GT_CONFIG='{tmp_path / 'nowhere.yaml'}' cannot be read: No such "
            'file or directory') in result.stderr, result.stderr
