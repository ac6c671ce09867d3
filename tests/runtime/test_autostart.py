"""The auto-started local server: a script with no gt.connect() gets a private dispatcher
and workers as child processes, and leaves nothing behind when it ends, even when it is
killed outright."""

import json
import os
import signal
import time

import numpy as np
import pytest
from gt_test_support import finish_script, kill_group, read_line, run_script, start_script

# Pasted into scripts: the pids (and command lines) of this process's children, read from
# /proc so that the test does not depend on how the launcher keeps its processes.
CHILDREN = '''
import os

def children():
    me, found = os.getpid(), {}
    for name in os.listdir('/proc'):
        if not name.isdigit():
            continue
        try:
            with open(f'/proc/{name}/stat') as stat:
                ppid = int(stat.read().rsplit(')', 1)[1].split()[1])
            with open(f'/proc/{name}/cmdline', 'rb') as cmdline:
                command = cmdline.read().replace(b'\\0', b' ').decode()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == me:
            found[int(name)] = command
    return found
'''


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie nobody has reaped yet has ended)."""
    try:
        with open(f'/proc/{pid}/stat') as stat:
            state = stat.read().rsplit(')', 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ('Z', 'X')


def wait_until_gone(pids: list[int], seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    while True:
        left = [pid for pid in pids if alive(pid)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def last_json(stdout: str) -> dict:
    lines = [line for line in stdout.splitlines() if line.startswith('{')]
    assert lines, f'no JSON line in the output:\n{stdout}'
    return json.loads(lines[-1])


# ---- one script with two workers, inspected by several tests --------------------------------
TWO_WORKERS = CHILDREN + '''
import json
import torch
import gt
from gt.runtime import client

gt.gpu_workers(2)
added = (gt.tensor([1, 2, 3, 4]) + gt.tensor([5, 6, 7, 8])).data.numpy().tolist()
a, b = gt.randn(1000, 1000), gt.randn(1000, 1000)
c = a @ b
product_ok = torch.allclose(c.data, a.data @ b.data, rtol=1e-4, atol=1e-3)
workers = gt.debug.get_worker_stats()
try:
    gt.gpu_workers(3)
    late = None
except Exception as error:
    late = f'{type(error).__name__}: {error}'
runtime_dir = client.current().server.runtime_dir
print(json.dumps({
    'added': added, 'shape': list(c.shape), 'product_ok': product_ok,
    'workers': workers, 'late_gpu_workers': late, 'children': children(),
    'runtime_dir': runtime_dir, 'runtime_files': os.listdir(runtime_dir),
}), flush=True)
'''


@pytest.fixture(scope='module')
def two_workers():
    result = run_script(TWO_WORKERS)
    assert result.returncode == 0, result.explain()
    return last_json(result.stdout)


def test_auto_server_computes(two_workers):
    assert two_workers['added'] == [6, 8, 10, 12]
    assert two_workers['shape'] == [1000, 1000]
    assert two_workers['product_ok']


def test_gpu_workers_before_first_op_starts_that_many(two_workers):
    assert len(two_workers['workers']) == 2
    assert len({worker['pid'] for worker in two_workers['workers']}) == 2
    commands = two_workers['children'].values()
    assert sum('gt.server' in command for command in commands) == 1, commands
    assert sum('gt.worker' in command for command in commands) == 2, commands


def test_gpu_workers_after_first_op_raises(two_workers):
    assert two_workers['late_gpu_workers'] is not None
    assert two_workers['late_gpu_workers'].startswith('RuntimeError'), \
        two_workers['late_gpu_workers']


@pytest.mark.parametrize('count, error, words', [
    ('x', TypeError, "takes a number of workers, got 'x'"), (1.5, TypeError, 'got 1.5'),
    (0, ValueError, 'at least 1 worker'), (-1, ValueError, 'at least 1 worker')])
def test_gpu_workers_names_a_count_it_cannot_take(count, error, words):
    """Before anything else (a string raised "'<' not supported between instances")."""
    import gt

    with pytest.raises(error, match=words):
        gt.gpu_workers(count)


def test_exit_leaves_nothing_behind(two_workers):
    pids = [int(pid) for pid in two_workers['children']]
    assert pids
    assert wait_until_gone(pids, 3.0) == []
    assert any(name.endswith('.ipc') for name in two_workers['runtime_files']), \
        two_workers['runtime_files']
    assert not os.path.exists(two_workers['runtime_dir'])


# ---- killed outright -------------------------------------------------------------------
KILLED = CHILDREN + '''
import json, time
import gt
from gt.runtime import client

gt.randn(10).sum().item()  # the first op starts the server
runtime_dir = client.current().server.runtime_dir
print(json.dumps({'children': children(), 'runtime_dir': runtime_dir}), flush=True)
time.sleep(120)
'''


@pytest.mark.time_limit(90)
def test_sigkilled_script_leaves_no_children():
    script = start_script(KILLED)
    try:
        line = read_line(script, 60)
        assert line.startswith('{'), line + script.stderr.read()
        started = json.loads(line)
        pids = [int(pid) for pid in started['children']]
        assert len(pids) == 2 and all(alive(pid) for pid in pids), started
        os.kill(script.pid, signal.SIGKILL)
        script.wait(10)
        left = wait_until_gone(pids, 8.0)  # the children poll their parent twice a second
        assert left == [], f'still running after the script was killed: {left}'
        # The dispatcher removes its runtime directory (and socket) as it stops.
        deadline = time.monotonic() + 3
        while os.path.exists(started['runtime_dir']) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not os.path.exists(started['runtime_dir'])
    finally:
        kill_group(script)
        script.communicate(timeout=10)


# ---- two scripts at once -----------------------------------------------------------------
CONCURRENT = CHILDREN + '''
import json
import numpy as np
import gt
from gt.runtime import client

scale = float(os.environ['SCALE'])
x = gt.from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4) * scale)
y = (x @ x.T + 1).sum(dim=1)
print(json.dumps({'y': y.data.tolist(), 'runtime_dir': client.current().server.runtime_dir}))
'''


def expected_concurrent(scale: float) -> list[float]:
    x = np.arange(12, dtype=np.float32).reshape(3, 4) * scale
    return (x @ x.T + 1).sum(axis=1).tolist()


@pytest.mark.time_limit(120)
def test_two_auto_started_scripts_do_not_collide():
    scripts = [start_script(CONCURRENT, env={'SCALE': str(scale)}) for scale in (1.0, -2.0)]
    results = [finish_script(script) for script in scripts]
    for result in results:
        assert result.returncode == 0, result.explain()
    outputs = [last_json(result.stdout) for result in results]
    np.testing.assert_allclose(outputs[0]['y'], expected_concurrent(1.0), rtol=1e-5)
    np.testing.assert_allclose(outputs[1]['y'], expected_concurrent(-2.0), rtol=1e-5)
    assert outputs[0]['runtime_dir'] != outputs[1]['runtime_dir']


# ---- a worker lost ---------------------------------------------------------------------------
WORKER_KILLED = '''
import os, signal, gt
gt.gpu_workers(2)
big = gt.ones(512, 1024)  # over GT_AUTO_SHARD_ELEMENTS: sharded over both workers
kept = gt.tensor([1.0, 2.0])  # on the session's home worker, 0
print(big.sum().item(), kept.tolist(), flush=True)
os.kill(next(w['pid'] for w in gt.debug.get_worker_stats() if w['index'] == 1), signal.SIGKILL)
try:
    big.sum().item()  # waits for worker 1 until it is declared lost
except Exception as error:
    print(f'{type(error).__name__}: {error}', flush=True)
print((kept * 2).tolist(), gt.ones(512, 1024).sum().item(), flush=True)
'''


@pytest.mark.time_limit(120)
def test_a_lost_worker_of_the_auto_started_server_fails_only_its_values():
    """Its exit used to end the script's session: any wait of over 250 ms raised
    "ConnectionError: the auto-started GT server process gt.worker (pid N) exited with
    code -9", and so did every call after, though the dispatcher and the other worker
    lived."""
    result = run_script(WORKER_KILLED, env={'GT_HEARTBEAT_TIMEOUT': '1.5'})
    assert result.returncode == 0, result.explain()
    lines = result.stdout.splitlines()
    assert lines[0] == '524288.0 [1.0, 2.0]', result.explain()
    assert lines[1].startswith('WorkerError: ') and 'worker 1 (' in lines[1], result.explain()
    assert 'was lost' in lines[1], result.explain()
    assert lines[2] == '  while fetching the tensor made at <string>:9 (sum)', result.explain()
    assert lines[3] == '[2.0, 4.0] 524288.0', result.explain()


@pytest.mark.parametrize('visible, devices', [
    (None, [['--device', 'cuda:0'], ['--device', 'cuda:1'], ['--device', 'cuda:0']]),
    ('1', [['--device', 'cuda:0']] * 3),
    ('', [[]] * 3),
])
def test_auto_started_workers_take_the_gpus_they_will_see(monkeypatch, visible, devices):
    """Workers inherit the script's environment as it is when they start: a script that
    took its GPUs (torch counts 2) and then narrowed CUDA_VISIBLE_DEVICES gives its workers
    those it left them, none when it left none (as this suite does on a GPU machine)."""
    import torch

    from gt.runtime import launcher

    monkeypatch.setattr(torch.cuda, 'device_count', lambda: 2)
    if visible is None:
        monkeypatch.delenv('CUDA_VISIBLE_DEVICES', raising=False)
    else:
        monkeypatch.setenv('CUDA_VISIBLE_DEVICES', visible)
    assert launcher.gpu_placements(3) == devices
