"""The command lines: `python -m gt.server` and `python -m gt.worker`."""

import os
import select
import subprocess
import sys

import pytest
import torch
from gt_test_support import Cluster, connected, free_port

from gt.runtime.transport import local_socket_path

COMMAND_SECONDS = 60
# A GPU this machine lacks: any on a machine without CUDA, else one past its last.
MISSING_DEVICE = f'cuda:{torch.cuda.device_count()}' if torch.cuda.is_available() else 'cuda'


def start(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, '-m', *args], text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)


def finish(process: subprocess.Popen) -> tuple[int, str, str]:
    try:
        stdout, stderr = process.communicate(timeout=COMMAND_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate(timeout=5)
        pytest.fail(f'{process.args} did not finish within {COMMAND_SECONDS} s')
    return process.returncode, stdout, stderr


@pytest.fixture(scope='module')
def outputs():
    """Every command at once: each pays for importing torch, so let them overlap."""
    commands = {
        'server help': ('gt.server', '--help'),
        'worker help': ('gt.worker', '--help'),
        'bogus backend': ('gt.worker', '--backend', 'bogus', '-p', '1'),
        'server port out of range': ('gt.server', '-p', '99999'),
        'worker port not a number': ('gt.worker', '-p', 'abc'),
        'device not on this machine': ('gt.worker', '--device', MISSING_DEVICE, '-p', '1'),
        'device not a device': ('gt.worker', '--device', 'gpu0', '-p', '1'),
        'top port negative': ('gt.scripts.top', '--port', '-5'),
        'top interval negative': ('gt.scripts.top', '--interval', '-1'),
        'trace seconds not a number': ('gt.scripts.trace', '-s', 'nan'),
        'trace no events': ('gt.scripts.trace', '-s', '1', '-n', '0'),
        'trace dir a file': ('gt.scripts.trace', '-s', '60', '--dir', __file__),
    }
    started = {name: start(*args) for name, args in commands.items()}
    return {name: finish(process) for name, process in started.items()}


def test_server_help(outputs):
    code, stdout, _ = outputs['server help']
    assert code == 0
    for flag in ('-p', '--port', '--host', '--endpoint'):
        assert flag in stdout, flag
    assert 'python -m gt.server' in stdout


def test_worker_help(outputs):
    code, stdout, _ = outputs['worker help']
    assert code == 0
    for flag in ('--host', '-p', '--port', '--backend', '--device', '--endpoint'):
        assert flag in stdout, flag
    assert 'torch' in stdout and 'numpy' in stdout
    assert 'python -m gt.worker' in stdout


def test_unknown_backend_is_refused(outputs):
    code, stdout, stderr = outputs['bogus backend']
    assert code != 0
    assert 'bogus' in stderr
    assert '--backend' in stderr
    assert 'Traceback' not in stderr  # a usage message, not a crash


@pytest.mark.parametrize('command', ['server port out of range', 'worker port not a number'])
def test_a_bad_port_is_refused_by_name(outputs, command):
    code, stdout, stderr = outputs[command]
    assert code == 2 and 'is not a TCP port (1 to 65535)' in stderr, stderr
    assert 'Traceback' not in stderr


@pytest.mark.parametrize('command, problem', [
    ('device not on this machine', 'CUDA device'),
    ('device not a device', 'not a torch device (cpu, cuda or cuda:N)')])
def test_a_worker_refuses_a_device_it_cannot_run_on(outputs, command, problem):
    code, stdout, stderr = outputs[command]
    assert code == 2 and '--device ' in stderr and problem in stderr, stderr
    assert 'Traceback' not in stderr and 'connected' not in stdout


@pytest.mark.time_limit(60)
@pytest.mark.parametrize('host, address', [('localhost', '127.0.0.1'),
                                           ('192.0.2.1', '192.0.2.1')])  # TEST-NET-1
def test_a_worker_without_a_server_says_so_and_keeps_trying(host, address):
    """On another machine, the likely cause is a server listening on its loopback."""
    port = free_port()
    worker = start('gt.worker', '--host', host, '-p', str(port))
    try:
        ready, _, _ = select.select([worker.stderr], [], [], 40)
        line = worker.stderr.readline() if ready else 'nothing within 40 s'
        assert f'no GT server has answered at tcp://{address}:{port}' in line, line
        remote = 'python -m gt.server --host 0.0.0.0 --token SECRET, with GT_TOKEN=SECRET'
        assert (remote in line) == (host != 'localhost'), line
        assert worker.poll() is None  # still waiting: a server started now would get it
    finally:
        worker.kill()
        worker.communicate(timeout=10)


@pytest.mark.time_limit(90)
def test_server_lifecycle():
    """Listens on tcp and on its ipc socket; a second server on the port fails clearly; on
    SIGTERM it exits 0 and removes the ipc socket."""
    first = Cluster(workers=0)
    try:
        first.wait_answering()
        socket_file = local_socket_path(first.port)
        assert os.path.exists(socket_file)
        code, _, stderr = finish(start('gt.server', '-p', str(first.port)))
        assert code != 0
        assert str(first.port) in stderr and 'Traceback' not in stderr, stderr
        assert first.server.poll() is None  # the second one did not disturb the first
        assert os.path.exists(socket_file)
        first.server.terminate()
        assert first.server.wait(10) == 0, first.logs()
        assert not os.path.exists(socket_file)
    finally:
        first.stop()


@pytest.mark.time_limit(90)
def test_the_seeds_pytorch_backend_name_is_torchs(start_cluster):
    import gt

    cluster = start_cluster(workers=1, backend='pytorch')
    with connected(cluster.address):
        assert gt.arange(4).sum().item() == 6
        assert gt.debug.get_worker_stats()[0]['engine'] == 'torch'


def test_a_stale_ipc_socket_file_does_not_take_the_address_from_tcp():
    """A killed server leaves its ipc socket file: `localhost:PORT` went there, and a
    live server on TCP at that port was unreachable by that name (found by an audit)."""
    import socket

    from gt.runtime.transport import endpoint_for

    port = free_port()
    path = local_socket_path(port)
    if os.path.exists(path):  # left by a server killed earlier: nobody has the port now
        os.unlink(path)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(path)  # a socket file nobody listens on, as a killed server leaves it
    stale.close()
    try:
        assert endpoint_for(f'localhost:{port}') == f'tcp://127.0.0.1:{port}'
        os.unlink(path)
        live = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        live.bind(path)
        live.listen()
        try:
            assert endpoint_for(f'localhost:{port}') == f'ipc://{path}'
        finally:
            live.close()
    finally:
        if os.path.exists(path):
            os.unlink(path)


def test_simple_launch_refuses_a_port_another_server_holds():
    """Else its workers joined that server, and its check passed against it."""
    import socket

    example = os.path.join(os.path.dirname(__file__), '..', '..', 'examples',
                           'simple_launch.py')
    with socket.socket() as taken:
        taken.bind(('127.0.0.1', 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run([sys.executable, example, '--port', str(port)],
                                capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert f'port {port} is in use' in result.stderr
    assert 'test passed' not in result.stdout


@pytest.mark.parametrize('command, problem', [
    ('top port negative', "argument --port: '-5' is not a TCP port (1 to 65535)"),
    ('top interval negative', "argument --interval: '-1' is not a number of seconds above 0"),
    ('trace seconds not a number', "argument -s/--seconds: 'nan' is not a number of seconds"),
    ('trace no events', "argument -n/--max-events: '0' is not a whole number above 0"),
    ('trace dir a file', 'gt trace: cannot write'),
])
def test_top_and_trace_refuse_bad_arguments_at_once(outputs, command, problem):
    """Each crashed with a traceback, was taken silently, or (a --dir that is a file)
    failed only after the whole capture (found by an audit)."""
    code, stdout, stderr = outputs[command]
    assert code != 0 and problem in stderr, stderr
    assert 'Traceback' not in stderr
