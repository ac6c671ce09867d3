"""A malformed or out-of-range number in one of GT's environment variables is refused by
name, where it is read: by `import gt` in a client, by `gt.server` at its start, and by a
client before it auto-starts a server whose processes would read it. On/off variables all
read the same words, and refuse others by name."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from gt_test_support import connected, placements_of, run_script

import gt
from gt.runtime import environment

README = Path(__file__).resolve().parents[2] / 'README.md'


@pytest.mark.parametrize('name, value, problem', [
    ('GT_MAX_QUEUED', 'lots', 'not an integer'),
    ('GT_TIMEOUT', 'soon', 'not a number'),
    ('GT_FRAGMENT_LIMIT', '2.5', 'not an integer'),
    ('GT_FRAGMENT_LIMIT', '0', 'below 1, the least it can be'),
    ('GT_MAX_QUEUED', '-1', 'below 0, the least it can be'),
    ('GT_TIMEOUT', '0', 'not above 0'),
    ('GT_TIMEOUT', '-5', 'negative'),
    ('GT_STARTUP_TIMEOUT', 'inf', 'not a finite number'),
    ('GT_WEIGHT', 'nan', 'not a finite number'),
    ('GT_WORKER_THREADS', '0', 'below 1, the least it can be; unset it for the default\n'),
    ('GT_TIMEOUT', '0.5', "below 2 s, twice a client's ping interval (1 s)"),
    ('GT_SESSION_TIMEOUT', '0.5', "below 2 s, twice a client's keep-alive interval (1 s)"),
])
def test_a_client_refuses_a_malformed_number_by_name(name, value, problem):
    result = run_script('import gt\ngt.ones(1).tolist()', env={name: value})
    assert result.returncode != 0
    assert f"ValueError: {name}='{value}' is {problem}" in result.stderr, result.explain()


@pytest.mark.parametrize('name, value, problem', [
    ('GT_WORKER_WINDOW', '0', "GT_WORKER_WINDOW='0' is below 1"),
    ('GT_HOTPATH_THRESHOLD', '0', "GT_HOTPATH_THRESHOLD='0' is below 1"),
    ('GT_EXPRESS_SECONDS', '-1', "GT_EXPRESS_SECONDS='-1' is negative"),
    ('GT_HEARTBEAT_TIMEOUT', '0.01', "GT_HEARTBEAT_TIMEOUT='0.01' is below 1 s, twice a "
     "worker's heartbeat interval"),
    ('GT_MAX_MESSAGE_BYTES', 'lots', "GT_MAX_MESSAGE_BYTES: not a size: 'lots'"),
    ('GT_INSTRUCTION_LOG', '/nonexistent/dir/ops.log',
     "GT_INSTRUCTION_LOG='/nonexistent/dir/ops.log' cannot be written: No such file"),
    ('GT_THREAD_TUNING', 'bogus', "GT_THREAD_TUNING='bogus' is not one of checked, compiled"),
])
def test_a_client_refuses_its_auto_started_servers_variables_before_starting_it(
        name, value, problem):
    """Before, `GT_WORKER_WINDOW=0` let the script print its result and then hang at exit;
    `GT_HOTPATH_THRESHOLD=0` was only read by the worker."""
    result = run_script('import gt\nprint("imported", flush=True)\ngt.ones(2).tolist()',
                        env={name: value})
    assert result.returncode != 0
    assert 'imported' in result.stdout, result.explain()
    assert result.stderr.count(problem) == 1, result.explain()
    assert 'auto-started GT server process' not in result.stderr, result.explain()


def test_zero_is_allowed_where_it_means_off():
    result = run_script('import gt\nprint(gt.ones(2).add(1).tolist())',
                        env={'GT_EXPRESS_SECONDS': '0', 'GT_MAX_QUEUED': '0'})
    assert result.returncode == 0, result.explain()
    assert '[2.0, 2.0]' in result.stdout


def test_the_server_refuses_a_malformed_number_by_name():
    server = subprocess.run([sys.executable, '-m', 'gt.server', '-p', '0'], timeout=60,
                            capture_output=True, text=True,
                            env={**os.environ, 'GT_WORKER_WINDOW': 'four'})
    assert server.returncode != 0
    assert "GT_WORKER_WINDOW='four' is not an integer" in server.stderr, server.stderr


@pytest.mark.parametrize('name', [*environment.VARIABLES, *environment.SIZES])
def test_every_checked_variable_is_in_the_readme_with_its_default(name):
    row = re.search(rf'^\| `{name}` \|(.*)\|$', README.read_text(), re.M)
    assert row is not None, f'{name} is not in the README\'s table'
    default = environment.VARIABLES.get(name, (None,))[0]
    if default is not None:
        shown = f'{default:g}' if isinstance(default, float) else str(default)
        assert re.search(rf'\b{re.escape(shown)}\b', row[1]), (name, shown, row[1])


def test_sizes_read_binary_units():
    assert environment.size_argument('4096') == 4096
    assert environment.size_argument('512M') == 512 << 20
    assert environment.size_argument('1.5GiB') == 3 << 29


@pytest.mark.parametrize('value, expected', [
    ('1', True), ('true', True), ('Yes', True), (' ON ', True),
    ('0', False), ('false', False), ('No', False), ('off', False), ('', None)])
def test_every_switch_reads_the_same_words(value, expected):
    for name in environment.SWITCHES:
        assert environment.switch(name, None, {name: value}) is expected, name
    assert environment.switch('GT_AUTO_SHARD', True, {}) is True  # unset: the default


def test_a_switch_that_is_neither_on_nor_off_is_refused_by_name():
    with pytest.raises(ValueError, match="GT_AUTO_SHARD='maybe' is neither on nor off"):
        environment.switch('GT_AUTO_SHARD', True, {'GT_AUTO_SHARD': 'maybe'})
    result = run_script('import gt\nprint("imported", flush=True)\ngt.ones(2).tolist()',
                        env={'GT_BACKWARD_REPLAY': 'never'})
    assert result.returncode != 0
    assert "ValueError: GT_BACKWARD_REPLAY='never' is neither on nor off" in result.stderr, \
        result.explain()


def test_backward_replay_is_turned_off_by_any_off_word():
    result = run_script('from gt import backward_replay\nprint(backward_replay.ENABLED)',
                        env={'GT_BACKWARD_REPLAY': 'off'})
    assert result.stdout.strip() == 'False', result.explain()


@pytest.mark.parametrize('value', ['0', 'off', 'false', 'No'])
def test_auto_sharding_is_turned_off_by_any_off_word(cluster, monkeypatch, value):
    """Before, only 0 turned it off: GT_AUTO_SHARD=false still sharded."""
    monkeypatch.setenv('GT_AUTO_SHARD', value)
    with connected(cluster.address):
        big = gt.zeros(512, 1024)  # over GT_AUTO_SHARD_ELEMENTS: sharded were the rule on
        assert big.sum().item() == 0.0
        # On the session's home worker alone, whichever it is: a session that has just
        # said goodbye may still count on worker 0 when this one says hello.
        placements = placements_of(gt.debug.dump_ir(show=False), 'zeros')
        assert placements in (['R@w0'], ['R@w1']), (value, placements)


@pytest.mark.parametrize('weight', [5e-324, 0.0, -1.0, 2e6])
def test_a_session_weight_out_of_bounds_is_refused(weight):
    """A weight near 0 made the session's charged time infinite, and the scheduler's
    clock with it, for every session after it: weights are kept within 1e-6 and 1e6."""
    from gt.runtime import environment

    with pytest.raises(ValueError, match='a session weight must be between 1e-06 and 1e'):
        environment.weight(weight)
    assert environment.weight(1e-6) == 1e-6
    assert environment.hello_weight(weight) == 1.0  # a Hello from any client: the default


@pytest.mark.parametrize('how', ['--log', 'GT_INSTRUCTION_LOG'])
def test_the_server_refuses_a_log_it_cannot_write_before_it_listens(how, tmp_path):
    """A traceback from the first event written, and the ipc socket file left behind,
    which then took `localhost:PORT` (found by an audit)."""
    from gt_test_support import free_port, socket_file_identity

    from gt.runtime.transport import local_socket_path

    port, log = free_port(), str(tmp_path / 'missing' / 'ops.log')
    before = socket_file_identity(local_socket_path(port))
    server = subprocess.run(
        [sys.executable, '-m', 'gt.server', '-p', str(port),
         *(['--log', log] if how == '--log' else [])], timeout=60, capture_output=True,
        text=True, env={**os.environ, **({'GT_INSTRUCTION_LOG': log} if how != '--log' else {})})
    assert server.returncode == 2
    assert server.stderr == (f'gt.server: cannot write the instruction log {log!r}: No such '
                             'file or directory\n'), server.stderr
    assert socket_file_identity(local_socket_path(port)) == before

