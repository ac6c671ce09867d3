"""Shared test setup: environment defaults, a real GT cluster of processes, and a helper
that runs a client script in its own interpreter.

Every process a test starts is bounded by a timeout and stopped at teardown (terminate,
then kill); servers and workers also get `--exit-with-parent` so that they end even if
pytest itself is killed.
"""

import compileall
import contextlib
import importlib.util
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import zlib
from dataclasses import dataclass

import hypothesis
import pytest
import torch

# Before anything imports gt: the client reads these at import time, and every process
# started below inherits them.
os.environ.setdefault('TORCHINDUCTOR_CACHE_DIR',
                      os.path.join(tempfile.gettempdir(), 'gt-test-inductor-cache'))
os.environ.setdefault('GT_TIMEOUT', '10')
os.environ.setdefault('GT_STARTUP_TIMEOUT', '90')

# The suite's oracles are torch on the CPU, so on a machine with a GPU every server, worker
# and script it starts sees none (their auto-started workers take the CPU; a CUDA worker
# gives CUDA's kernels and draws). This process keeps its GPU, initialized first, for the
# tests marked `gpu`, whose clusters and scripts are given `GPUS_ENV` back.
GPUS_ENV: dict[str, str] = {}
if torch.cuda.is_available():
    torch.cuda.init()
    GPUS_ENV['CUDA_VISIBLE_DEVICES'] = os.environ.get('CUDA_VISIBLE_DEVICES') or ','.join(
        str(index) for index in range(torch.cuda.device_count()))
    os.environ['CUDA_VISIBLE_DEVICES'] = ''

# Every test process, and each server, worker and script it starts, imports GT anew (some
# 280 processes a run). Where PYTHONDONTWRITEBYTECODE is set, as on CI's image, each would
# compile GT's modules from source, 0.2 s a process: compile them once, here.
compileall.compile_dir(importlib.util.find_spec('gt').submodule_search_locations[0], quiet=2)

# In CI, property tests replay the same examples every run, so a landing never depends on
# a random draw; locally they explore anew (HYPOTHESIS_PROFILE=explore in CI to do so).
hypothesis.settings.register_profile('ci', derandomize=True)
hypothesis.settings.register_profile('explore', derandomize=False)
hypothesis.settings.load_profile(
    os.environ.get('HYPOTHESIS_PROFILE', 'ci' if os.environ.get('CI') else 'explore'))

# Test modules import these helpers as `gt_test_support`: the name `conftest` is not theirs
# to import, since pytest rebinds it to whichever conftest.py it loaded last (tests/api has one).
sys.modules.setdefault('gt_test_support', sys.modules[__name__])


@pytest.fixture(autouse=True)
def seeded_torch(request):
    """torch seeds its default generator anew in each process (2.13), so a torch model's
    initial weights would differ run to run: seed it from the test's id, as the tests seed
    their data, so a test sees the same numbers every run, whatever ran before it."""
    torch.manual_seed(zlib.crc32(request.node.nodeid.encode()))


STOP_SECONDS = 5.0
READY_SECONDS = 90.0  # a loaded 2-core machine imports torch in several processes at once
SCRIPT_SECONDS = 90.0


def free_port() -> int:
    """A TCP port nobody listens on right now (another process may take it later; the
    window is small enough for tests)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


def socket_file_identity(path: str) -> tuple[int, int] | None:
    """The file at `path` (inode, modification time), or None: a server killed earlier, in
    this run or another, may have left its ipc socket file for a port handed out again."""
    try:
        status = os.stat(path)
    except FileNotFoundError:
        return None
    return status.st_ino, status.st_mtime_ns


def stop_process(process: subprocess.Popen, seconds: float = STOP_SECONDS) -> None:
    """Terminate, then kill after `seconds`; always reaps."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(seconds)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(seconds)


# ---- client scripts -------------------------------------------------------------------------
@dataclass
class ScriptResult:
    returncode: int
    stdout: str
    stderr: str

    def explain(self) -> str:
        return (f'exit code {self.returncode}\n--- stdout ---\n{self.stdout}\n'
                f'--- stderr ---\n{self.stderr}')


def start_script(code: str, env: dict | None = None, **popen_args) -> subprocess.Popen:
    """Start `python -c code` (dedented) in its own session, stdout and stderr piped."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.Popen(
        [sys.executable, '-c', textwrap.dedent(code)], env=full_env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, **popen_args)


def finish_script(process: subprocess.Popen, timeout: float = SCRIPT_SECONDS) -> ScriptResult:
    """Wait for a script from `start_script`; on timeout kill its whole process group."""
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(process)
        stdout, stderr = process.communicate(timeout=STOP_SECONDS)
        pytest.fail(f'script did not finish within {timeout} s\n--- stdout ---\n{stdout}\n'
                    f'--- stderr ---\n{stderr}')
    return ScriptResult(process.returncode, stdout, stderr)


def assert_raises_as_torch(kind: type, call) -> None:
    """`call(torch)` raises `kind`, and `call(gt)` raises it too, with torch's words."""
    import gt

    with pytest.raises(kind) as theirs:
        call(torch)
    with pytest.raises(kind) as mine:
        call(gt)
    assert str(mine.value) == str(theirs.value)


def run_script(code: str, timeout: float = SCRIPT_SECONDS, env: dict | None = None) -> ScriptResult:
    """Run a client script in a fresh interpreter and return what it printed."""
    return finish_script(start_script(code, env), timeout)


def assert_server_starts(arguments: list[str], env: dict | None = None) -> None:
    """`python -m gt.server *arguments` is still running after 3 s (it did not refuse)."""
    server = subprocess.Popen([sys.executable, '-m', 'gt.server', *arguments],
                              stderr=subprocess.PIPE, text=True, env=env)
    try:
        time.sleep(3)
        assert server.poll() is None, server.stderr.read()
    finally:
        server.terminate()
        server.wait(10)


def read_line(process: subprocess.Popen, seconds: float) -> str:
    """The next line a script from `start_script` prints, waiting at most `seconds`."""
    ready, _, _ = select.select([process.stdout], [], [], seconds)
    if not ready:
        kill_group(process)
        pytest.fail(f'no output within {seconds} s: {process.communicate(timeout=STOP_SECONDS)}')
    return process.stdout.readline()


def kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


# ---- clusters -------------------------------------------------------------------------------
class Cluster:
    """A real `python -m gt.server` and `python -m gt.worker` processes on a loopback port."""

    def __init__(self, workers: int = 2, backend: str = 'torch', env: dict | None = None,
                 log_dir: str | None = None, server_args: list[str] | None = None,
                 device: str = 'cpu'):
        self.port = free_port()
        self.address = f'localhost:{self.port}'
        self.endpoint = f'tcp://127.0.0.1:{self.port}'
        self.log_dir = log_dir or tempfile.mkdtemp(prefix='gt-test-cluster-')
        self.env = dict(os.environ)
        # Two cores: workers that each take every core would fight over them.
        self.env.setdefault('GT_WORKER_THREADS', '1')
        self.env.setdefault('GT_SESSION_TIMEOUT', '5')  # so tests can watch sessions expire
        self.env.update(env or {})
        self.guard = ['--exit-with-parent', str(os.getpid())]
        # The CPU even on a GPU machine, unless a test asks for the GPU: the suite's torch
        # oracles run on the CPU, while a CUDA worker gives CUDA's draws and kernels (what
        # tests/runtime/test_gpu_workers.py checks, on `gpu_cluster`).
        placement = ['--device', device] if backend == 'torch' else []
        if device != 'cpu':
            self.env.update(GPUS_ENV)
        self.server_args = server_args or []
        self.server = self.start_server()
        self.workers = [
            self._start(f'worker{index}', ['gt.worker', '--host', 'localhost', '-p',
                                           str(self.port), '--backend', backend, *placement,
                                           *self.guard])
            for index in range(workers)
        ]

    def start_server(self, log_name: str = 'server') -> subprocess.Popen:
        """Start a dispatcher on this cluster's port (again, after a test killed it)."""
        return self._start(log_name, ['gt.server', '-p', str(self.port), *self.server_args,
                                      *self.guard])

    def _start(self, name: str, args: list[str]) -> subprocess.Popen:
        log = open(os.path.join(self.log_dir, f'{name}.log'), 'w')
        try:
            return subprocess.Popen([sys.executable, '-m', *args], env=self.env, stdout=log,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        finally:
            log.close()

    @property
    def processes(self) -> list[subprocess.Popen]:
        return [self.server, *self.workers]

    def logs(self) -> str:
        text = []
        for name in sorted(os.listdir(self.log_dir)):
            with open(os.path.join(self.log_dir, name)) as log:
                text.append(f'--- {name} ---\n{log.read()[-3000:]}')
        return '\n'.join(text)

    def wait_ready(self, workers: int | None = None, timeout: float = READY_SECONDS) -> None:
        """Return once the dispatcher has `workers` live workers (it answers a Hello then)."""
        from gt.runtime.protocol import Goodbye, Hello, Welcome
        from gt.runtime.transport import dealer, receive, send

        wanted = len(self.workers) if workers is None else workers
        probe = dealer(self.endpoint)
        try:
            send(probe, Hello('tests:wait_ready', wanted, '', self.env.get('GT_TOKEN', '')))
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                for process in self.processes:
                    if process.poll() is not None:
                        raise RuntimeError(f'{process.args} exited with {process.returncode}\n'
                                           + self.logs())
                if probe.poll(250):
                    message, _ = receive(probe)
                    if isinstance(message, Welcome):
                        send(probe, Goodbye())
                        return
            raise TimeoutError(f'cluster on port {self.port} not ready within {timeout} s\n'
                               + self.logs())
        finally:
            probe.close(linger=200)

    def wait_answering(self, timeout: float = READY_SECONDS) -> None:
        """Return once the dispatcher answers a Ping (it needs no workers for that)."""
        from gt.runtime.protocol import Ping, Pong
        from gt.runtime.transport import dealer, receive, send

        probe = dealer(self.endpoint)
        try:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if self.server.poll() is not None:
                    raise RuntimeError(f'the server exited with {self.server.returncode}\n'
                                       + self.logs())
                send(probe, Ping())
                if probe.poll(500) and isinstance(receive(probe)[0], Pong):
                    return
            raise TimeoutError(f'no Pong on port {self.port} within {timeout} s\n' + self.logs())
        finally:
            probe.close(linger=0)

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            stop_process(process)
        if self.server.returncode == -signal.SIGKILL:  # a test killed it: tidy up after it
            from gt.runtime.transport import local_socket_path

            with contextlib.suppress(OSError):
                os.unlink(local_socket_path(self.port))
        shutil.rmtree(self.log_dir, ignore_errors=True)


@contextlib.contextmanager
def running_cluster(workers: int = 2, device: str = 'cpu'):
    """A ready cluster for the block (for fixtures shared by a session or a module). A
    port found free can be taken before the server binds it (a client's outgoing
    connection draws from the same range: it happened once in a full run), so a server
    refused its address is started again on another."""
    for attempt in range(3):
        started = Cluster(workers=workers, device=device)
        try:
            started.wait_ready()
            break
        except RuntimeError as error:
            started.stop()
            if 'Address already in use' not in str(error) or attempt == 2:
                raise
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture(scope='session')
def cluster():
    """One dispatcher and two torch workers, shared by the whole session. Tests must not
    break it; a test that kills processes starts its own with `start_cluster`."""
    with running_cluster(2) as started:
        yield started


@pytest.fixture(scope='session')
def gpu_cluster():
    """A dispatcher and two torch workers on the GPU (both on cuda:0 on a one-GPU
    machine), for tests marked `gpu`."""
    with running_cluster(2, device='cuda') as started:
        yield started


@pytest.fixture(scope='session')
def four():
    """A dispatcher with 4 one-thread workers, for the sharding tests; not to be broken."""
    with running_cluster(4) as started:
        yield started


@pytest.fixture
def fresh_configs(monkeypatch):
    """No signal configs before or after the test (they are process-wide), and GT_VERBOSE
    unset, its warnings not yet given."""
    import gt
    from gt.config import clear_configs

    clear_configs()
    monkeypatch.setattr(gt.signal, '_warned', set())  # GT_VERBOSE warns once per process
    monkeypatch.delenv('GT_VERBOSE', raising=False)
    yield
    clear_configs()


def placements_of(ir: str, op: str) -> list[str]:
    """The placements of the values that `op` makes in a dump, in order."""
    return [line.split('<')[1].split('>')[0] for line in ir.splitlines() if f'= {op}(' in line]


@pytest.fixture
def start_cluster():
    """Start private clusters (`start_cluster(workers=1, env={...})`); all are stopped
    when the test ends."""
    started: list[Cluster] = []

    def start(workers: int = 1, backend: str = 'torch', env: dict | None = None,
              wait: bool = True) -> Cluster:
        created = Cluster(workers, backend, env)
        started.append(created)
        if wait:
            created.wait_ready()
        return created

    yield start
    for created in started:
        created.stop()


# A short training loop for tests that need clients at work: `shard` puts its data on
# workers 0 and 1 (so its steps move values between them).
TRAINING_CLIENT = """
import contextlib, gt
from gt import ShardConfig, SignalConfig
gt.connect({address!r})
gt.register_config('pair', SignalConfig(shard=ShardConfig(axis=0, workers=[0, 1])))
gt.manual_seed({seed})
with gt.signal.context('pair') if {shard} else contextlib.nullcontext():
    x = gt.randn(64, 32)
w = gt.randn(32, 8, requires_grad=True)
for _ in range(3):
    loss = (x @ w).relu().sum()
    loss.backward()
    with gt.no_grad():
        w -= 0.01 * w.grad
    w.grad = None
    loss.item()
"""


def submit_message(**given):
    """A protocol `Submit` with `given` fields; the others empty (b'', 0, [], request 0), so
    that raw-socket tests keep working as the message grows fields."""
    from gt.runtime.protocol import Submit

    defaults = {'structure': b'', 'base': 0, 'request': 0}
    return Submit(**{name: given.pop(name, defaults.get(name, []))
                     for name in Submit._fields}, **given)


@contextlib.contextmanager
def connected(address: str):
    """This process's gt client, connected to `address` for the block, then closed so
    that later tests start from no connection."""
    import gt
    from gt.runtime import client

    try:
        gt.connect(address)
        yield client.current()
    finally:
        if client._client is not None:
            client._client.close()
        client._client = None


# ---- the sharded re-run, started early ------------------------------------------------------
TESTS = os.path.dirname(os.path.abspath(__file__))
SHARDED_RERUN_TEST = 'test_the_api_suites_pass_with_everything_sharded_over_3_workers'
# A guard against a hang, not a speed bound: alone, the re-run takes 1.7 minutes on a quiet
# 2-core machine and over 4.5 on a slow one.
SHARDED_RERUN_SECONDS = 900.0


class ShardedRerun:
    """The API, autograd and gt.nn suites again, in a pytest of their own, on 3 workers
    with every created tensor sharded (tests/runtime/test_sharded_suite.py checks how it
    ended). It starts as soon as collection finds that test, so that it runs beside the
    suites collected before tests/runtime: those time nothing, and leave a 2-core machine
    about half idle. Measured: the re-run took 103 s alone, and run beside those suites it
    made them 50 s longer, not 103. tests/runtime times things and kills processes, so its
    first test waits for the re-run to end."""

    def __init__(self) -> None:
        self.output = tempfile.TemporaryFile(mode='w+')
        env = dict(os.environ, GT_WORKERS='3', GT_AUTO_SHARD_ELEMENTS='1',
                   GT_WORKER_THREADS='1')
        suites = [os.path.join(TESTS, suite) for suite in ('api', 'autograd', 'nn')]
        self.process = subprocess.Popen(
            [sys.executable, '-m', 'pytest', '-q', '-x', '-p', 'no:cacheprovider', *suites],
            env=env, stdout=self.output, stderr=subprocess.STDOUT, text=True,
            cwd=os.path.dirname(TESTS), start_new_session=True)
        self.deadline = time.monotonic() + SHARDED_RERUN_SECONDS

    def wait(self) -> None:
        """Until the re-run ends (killed at its deadline)."""
        if self.process.poll() is not None:
            return
        try:
            self.process.wait(max(0.0, self.deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.stop()
            self.output.write(f'\nthe sharded re-run ran longer than {SHARDED_RERUN_SECONDS} s '
                              'and was killed\n')

    def result(self) -> ScriptResult:
        """How the re-run ended, once it has."""
        self.wait()
        self.output.seek(0)
        return ScriptResult(self.process.returncode, self.output.read(), '')

    def stop(self) -> None:
        if self.process.poll() is None:
            kill_group(self.process)
            self.process.wait()


sharded_rerun: ShardedRerun | None = None


def pytest_collection_finish(session) -> None:
    global sharded_rerun
    if session.config.option.collectonly:
        return
    if any(item.name == SHARDED_RERUN_TEST for item in session.items):
        sharded_rerun = ShardedRerun()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item) -> None:
    """Before a tests/runtime test's fixtures, and outside its time limit."""
    if sharded_rerun is not None and str(item.path).startswith(RUNTIME_TESTS):
        sharded_rerun.wait()


def pytest_sessionfinish(session) -> None:
    if sharded_rerun is not None:
        sharded_rerun.stop()


# ---- a guard against hangs ------------------------------------------------------------------
RUNTIME_TESTS = os.path.join(TESTS, 'runtime')
DEFAULT_TIME_LIMIT = 120.0


def pytest_configure(config) -> None:
    config.addinivalue_line(
        'markers', 'time_limit(seconds): fail a tests/runtime test that runs longer '
        f'(default {DEFAULT_TIME_LIMIT:.0f} s)')
    config.addinivalue_line('markers', 'gpu: needs a CUDA GPU; skipped on a machine without one')


def pytest_collection_modifyitems(config, items) -> None:
    if torch.cuda.is_available():
        return
    no_gpu = pytest.mark.skip(reason='needs a CUDA GPU (torch.cuda.is_available() is False)')
    for item in items:
        if item.get_closest_marker('gpu'):
            item.add_marker(no_gpu)


class TimeLimitExceeded(Exception):
    pass


@pytest.fixture(autouse=True)
def time_limit(request):
    """Fail a runtime test that runs too long instead of hanging the run: SIGALRM raises
    in the test's main thread (pyzmq's blocking calls wake up for signals)."""
    if not str(request.node.path).startswith(RUNTIME_TESTS) or not hasattr(signal, 'SIGALRM'):
        yield
        return
    marker = request.node.get_closest_marker('time_limit')
    seconds = marker.args[0] if marker else DEFAULT_TIME_LIMIT
    from gt.scripts.opinfo_check import raise_after  # gt only after the environment above

    with raise_after(seconds, TimeLimitExceeded(f'{request.node.nodeid} ran longer than '
                                                f'{seconds} s')):
        yield


def wait_for_compiles(compiler, seconds: float = 60.0) -> None:
    """Until an in-process gt.runtime.compiler.Compiler has nothing left to compile."""
    deadline = time.monotonic() + seconds
    while compiler.pending and time.monotonic() < deadline:
        time.sleep(0.01)
    assert compiler.pending == 0, 'compiles did not finish'
