"""Signal configs and scopes on the client: the seeds' YAML and Python API, their errors,
and per-thread scopes. (Placement itself is tested in tests/passes and tests/runtime.)"""

import subprocess
import sys
import threading

import pytest

import gt
from gt import ShardConfig, SignalConfig
from gt.config import ConfigError, clear_configs, get_config, version, wire_form

SEED_YAML = """\
forward_layer1:
  shard:
    axis: 0                  # Shard batch dimension
    workers: [0, 1, 2, 3]    # Use workers 0-3
  backward: backward_layer1  # Different config for gradients

backward_layer1:
  shard:
    axis: 0
    workers: [0, 1, 2, 3]

hot_path:
  shard:
    axis: 0
    workers: [0, 1, 2, 3]
  compile: true              # Enable torch.compile for this signal
"""


@pytest.fixture(autouse=True)
def fresh():
    clear_configs()
    yield
    clear_configs()


def write(tmp_path, text: str) -> str:
    path = tmp_path / 'config.yaml'
    path.write_text(text)
    return str(path)


def test_the_seeds_yaml_loads(tmp_path):
    gt.load_config(write(tmp_path, SEED_YAML))
    assert get_config('forward_layer1') == SignalConfig(
        shard=ShardConfig(axis=0, workers=[0, 1, 2, 3]), backward_signal='backward_layer1')
    assert get_config('hot_path').compile is True
    assert wire_form()['forward_layer1'] == [0, [0, 1, 2, 3], 'backward_layer1', False]


def test_python_and_yaml_mix_and_the_later_wins(tmp_path):
    before = version()
    gt.register_config('forward_layer1', SignalConfig(shard=ShardConfig(axis=1)))
    gt.load_config(write(tmp_path, SEED_YAML))
    assert get_config('forward_layer1').shard.axis == 0
    gt.register_config('forward_layer1', SignalConfig(shard=ShardConfig(axis=1, workers=[0])))
    assert wire_form()['forward_layer1'] == [1, [0], None, False]
    assert version() > before


@pytest.mark.parametrize('text, named', [
    ('forward:\n  shard:\n    axis: zero\n', "signal 'forward': shard.axis"),
    ('forward:\n  shard:\n    axis: -1\n', "signal 'forward': shard.axis"),
    ('forward:\n  sharding:\n    axis: 0\n', "signal 'forward': unknown field sharding"),
    ('forward:\n  shard:\n    axes: 0\n', "signal 'forward': unknown field shard.axes"),
    ('forward:\n  shard:\n    workers: 3\n', "signal 'forward': shard.workers"),
    ('forward:\n  shard:\n    workers: [0, 0]\n', "signal 'forward': shard.workers names"),
    ('forward:\n  backward: 3\n', "signal 'forward': backward"),
    ('forward:\n  compile: maybe\n', "signal 'forward': compile"),
    ('forward: [1, 2]\n', "signal 'forward': expected a mapping"),
    ('forward:\n  shard: {axis: 0\n', 'not valid YAML (line'),
])
def test_a_malformed_file_names_the_file_signal_and_field_and_registers_nothing(
        tmp_path, text, named):
    path = write(tmp_path, 'good:\n  shard:\n    axis: 0\n' + text)
    with pytest.raises(ConfigError, match='config.yaml') as raised:
        gt.load_config(path)
    assert named in str(raised.value)
    assert get_config('good') is None


def test_a_file_that_is_not_a_mapping_is_refused(tmp_path):
    with pytest.raises(ConfigError, match='config.yaml: expected a mapping of signal names'):
        gt.load_config(write(tmp_path, '- forward\n- backward\n'))
    gt.load_config(write(tmp_path, '# nothing yet\n'))  # an empty file is fine


def test_a_missing_file_names_its_path(tmp_path):
    with pytest.raises(FileNotFoundError, match='nowhere.yaml'):
        gt.load_config(str(tmp_path / 'nowhere.yaml'))


def test_python_configs_are_checked_too():
    with pytest.raises(ConfigError, match='shard.axis'):
        ShardConfig(axis=-2)
    with pytest.raises(ConfigError, match='shard.workers'):
        ShardConfig(workers=[])
    with pytest.raises(ConfigError, match='compile'):
        SignalConfig(compile='yes')
    with pytest.raises(ConfigError, match='SignalConfig'):
        gt.register_config('x', {'shard': {'axis': 0}})


def test_scopes_nest_per_thread_and_carry_their_backward_signal():
    gt.register_config('stage', SignalConfig(backward_signal='stage_backward'))
    seen = []
    with gt.signal.context('outer'):
        with gt.signal.context('stage'):
            assert gt.signal.current_scope() == 'stage'
            assert gt.signal.current_backward() == 'stage_backward'
            with gt.signal.context('other', backward='explicit'):
                assert gt.signal.current_backward() == 'explicit'
            thread = threading.Thread(target=lambda: seen.append(gt.signal.current_scope()))
            thread.start()
            thread.join()
        assert gt.signal.current_scope() == 'outer'
        assert gt.signal.current_backward() is None
    assert seen == [None]
    assert gt.signal.current_scope() is None


def test_enter_and_exit_by_hand():
    gt.signal.enter('signal_name')
    assert gt.signal.current_scope() == 'signal_name'
    with pytest.raises(RuntimeError, match="innermost signal is 'signal_name'"):
        gt.signal.exit('other')
    gt.signal.exit('signal_name')
    with pytest.raises(RuntimeError, match='without a matching'):
        gt.signal.exit()


def test_gt_verbose_names_a_signal_without_config_once(monkeypatch, capsys):
    monkeypatch.setenv('GT_VERBOSE', '1')
    for _ in range(2):
        with gt.signal.context('unconfigured_signal'):
            pass
    assert capsys.readouterr().err.count("signal 'unconfigured_signal' has no config") == 1


def test_gt_config_is_loaded_at_import_and_a_bad_one_fails_it(tmp_path):
    good = write(tmp_path, SEED_YAML)
    code = "import gt; print(gt.config.get_config('forward_layer1').shard.workers)"
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                            env={'GT_CONFIG': good, 'PATH': '/usr/bin:/bin'}, timeout=60)
    assert result.stdout.strip() == '(0, 1, 2, 3)', result.stderr
    bad = tmp_path / 'bad.yaml'
    bad.write_text('forward:\n  shard:\n    axis: zero\n')
    result = subprocess.run([sys.executable, '-c', 'import gt'], capture_output=True,
                            text=True, env={'GT_CONFIG': str(bad), 'PATH': '/usr/bin:/bin'},
                            timeout=60)
    assert result.returncode != 0
    assert 'bad.yaml' in result.stderr and 'shard.axis' in result.stderr
