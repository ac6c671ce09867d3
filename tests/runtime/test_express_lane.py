"""The express lane on real processes: a light client's fetches finish while a heavy
client's long program is still running on the same one-thread worker (checked by which
finished first, and by the instruction log's `lane=express` sends, not by timings), with
exact values; a stranger who claims a worker's express lane without its secret gets
nothing; and a session that ends while its program runs there leaves nothing behind."""

import subprocess
import time

import numpy as np
import pytest
from gt_test_support import connected, finish_script, start_script

import gt
from gt.runtime.events import parse_line
from gt.runtime.protocol import ExpressReady, Hello, RunProgram, Welcome
from gt.runtime.scheduler import LONGEST_HALF_LIFE
from gt.runtime.transport import dealer, receive, send

# One program of `count` 2000x2000 matmuls: seconds on one thread.
HEAVY = """
import gt
gt.connect('{address}')
x = gt.randn(2000, 2000) / 45
x.data
print('ready', flush=True)
for _ in range({count}):
    x = (x @ x).tanh()
print(float(x.sum()), flush=True)
"""
HEAVY_OPS = 24
# A session is light once its longest recent program, halving every LONGEST_HALF_LIFE, is
# short: tiny fetches for this long outlast a cold first run of up to ~100 ms.
LIGHT_AFTER_SECONDS = 6 * LONGEST_HALF_LIFE
# Light at first; told to go on, a long program that the client does not wait for: it
# exits while the program runs on the express lane.
LEAVING = """
import sys, time, gt
gt.connect('{address}')
x = gt.ones(4)
deadline = time.monotonic() + {light_after}
while time.monotonic() < deadline:
    x.sum().item()
print('light', flush=True)
sys.stdin.readline()
x = gt.randn(2000, 2000) / 45
for _ in range({count}):
    x = (x @ x).tanh()
gt.sync()
"""


def _light_work_beside(cluster, log, before_each=lambda: None) -> tuple[list, bool]:
    """Measure this process's session as light, start the heavy client, and fetch beside
    its program; return the values and whether the heavy client was still running."""
    values = []
    with connected(cluster.address):
        base = gt.tensor(np.arange(6, dtype=np.float32))
        deadline = time.monotonic() + LIGHT_AFTER_SECONDS
        while time.monotonic() < deadline:  # the dispatcher measures its programs: light
            (base * 1).sum().item()
        heavy = start_script(HEAVY.format(address=cluster.address, count=12))
        assert heavy.stdout.readline().strip() == 'ready'
        _wait_until_sent(log, HEAVY_OPS)
        for k in range(2, 7):
            before_each()
            values.append((base * k).sum().item())
        still_running = heavy.poll() is None
    assert finish_script(heavy).returncode == 0
    return values, still_running


def _sends(log) -> list:
    events = [e for e in map(parse_line, log.read_text().splitlines()) if e]
    return [e for e in events if e[1] == 'WORKER_SEND']


def _wait_until_sent(log, ops: int) -> None:
    """Until a program of at least `ops` ops went to the worker (it runs from then)."""
    deadline = time.monotonic() + 60
    while not any(int(e[4]['ops']) >= ops for e in _sends(log)):
        assert time.monotonic() < deadline, log.read_text()[-3000:]
        time.sleep(0.05)


def _express_sends(log) -> list:
    return [e for e in _sends(log) if e[4].get('lane') == 'express']


@pytest.mark.time_limit(180)
def test_a_light_client_is_served_while_a_heavy_program_runs(start_cluster, tmp_path,
                                                            capsys):
    log = tmp_path / 'ops.log'
    cluster = start_cluster(workers=1, env={'GT_INSTRUCTION_LOG': str(log)})
    values, heavy_still_running = _light_work_beside(cluster, log)
    assert values == [15.0 * k for k in range(2, 7)]
    assert heavy_still_running  # it did not wait for the heavy program
    assert _express_sends(log)
    events = [e for e in map(parse_line, log.read_text().splitlines()) if e]
    assert any(e[1] == 'WORKER_END' and e[4].get('lane') == 'express' for e in events)
    with connected(cluster.address):
        stats = gt.debug.get_worker_stats()
        gt.debug.print_worker_stats()
    assert stats[0]['express_programs'] >= 1
    assert f"({stats[0]['express_programs']} on its express lane)" in capsys.readouterr().out


@pytest.mark.time_limit(180)
def test_a_stranger_claiming_a_workers_express_lane_gets_no_work(start_cluster, tmp_path):
    log = tmp_path / 'ops.log'
    cluster = start_cluster(workers=1, env={'GT_INSTRUCTION_LOG': str(log)})
    probe = dealer(cluster.endpoint)
    stranger = dealer(cluster.endpoint)
    try:
        send(probe, Hello('tests:stranger', 1, '', ''))
        assert probe.poll(10000)
        welcome, _ = receive(probe)
        assert isinstance(welcome, Welcome)
        worker = welcome.workers[0]['name'].encode()  # what every client is told

        def claim() -> None:  # just before each fetch: the real lane claims it every 0.5 s
            send(stranger, ExpressReady(worker, 'a guess'))
            time.sleep(0.02)
        values, heavy_still_running = _light_work_beside(cluster, log, claim)
        assert values == [15.0 * k for k in range(2, 7)] and heavy_still_running
        assert _express_sends(log)  # the real lane did the work
        received = []
        while stranger.poll(200):
            received.append(receive(stranger)[0])
        assert not any(isinstance(message, RunProgram) for message in received), received
    finally:
        for socket in (probe, stranger):
            socket.close(0)



@pytest.mark.time_limit(180)
def test_a_session_that_ends_during_its_express_program_leaves_nothing(start_cluster,
                                                                        tmp_path):
    """The main lane drops the session when it ends, behind the heavy program, while the
    express program still runs and then keeps its results: none may stay on the worker.
    (Were the express run to start only after the drop, the dispatcher's second
    EndSession after the express reply would drop what it kept.)"""
    log = tmp_path / 'ops.log'
    cluster = start_cluster(workers=1, env={'GT_INSTRUCTION_LOG': str(log)})
    leaving = start_script(LEAVING.format(address=cluster.address, count=16,
                                          light_after=LIGHT_AFTER_SECONDS),
                           stdin=subprocess.PIPE)
    assert leaving.stdout.readline().strip() == 'light'
    heavy = start_script(HEAVY.format(address=cluster.address, count=4))
    assert heavy.stdout.readline().strip() == 'ready'
    _wait_until_sent(log, 8)
    leaving.stdin.write('go\n')
    leaving.stdin.flush()
    assert finish_script(leaving).returncode == 0
    assert finish_script(heavy).returncode == 0
    assert any(int(e[4]['ops']) >= 30 for e in _express_sends(log))  # it ran there
    deadline = time.monotonic() + 60
    with connected(cluster.address):
        while (held := gt.debug.get_worker_stats()[0]['tensors']) != 0:
            assert time.monotonic() < deadline, f'the worker still holds {held} tensor(s)'
            time.sleep(0.2)


# Two programs: a first of ~3 s that the client waits for, then a long one it leaves
# running. The first's length decays (LONGEST_HALF_LIFE) while the second runs.
HEAVY_TWICE = """
import gt
gt.connect('{address}')
x = gt.randn(2000, 2000) / 45
for count in ({first}, {second}):
    for _ in range(count):
        x = (x @ x).tanh()
    print(float(x.sum()), flush=True)
"""


@pytest.mark.time_limit(240)
def test_a_heavy_session_stays_heavy_while_its_long_program_runs(start_cluster, tmp_path):
    """Its first program's length decays to nothing seconds after it ended, while its
    second is still running: it counted as light then, and a light client's fetch went
    to the main lane, behind the whole program. A program out that long is long."""
    log = tmp_path / 'ops.log'
    cluster = start_cluster(workers=1, env={'GT_INSTRUCTION_LOG': str(log)})
    with connected(cluster.address):
        base = gt.tensor(np.arange(6, dtype=np.float32))
        deadline = time.monotonic() + LIGHT_AFTER_SECONDS
        while time.monotonic() < deadline:  # this session is measured light
            (base * 1).sum().item()
        heavy = start_script(HEAVY_TWICE.format(address=cluster.address, first=12,
                                                second=60))
        assert heavy.stdout.readline().strip()  # the first program is done
        time.sleep(12 * LONGEST_HALF_LIFE)  # its length has decayed below a light one's
        express_before = len(_express_sends(log))
        value = (base * 3).sum().item()
        still_running = heavy.poll() is None
    assert finish_script(heavy, timeout=200).returncode == 0
    assert value == 45.0
    assert still_running, 'the light fetch waited for the heavy program'
    assert len(_express_sends(log)) > express_before


@pytest.mark.time_limit(180)
def test_a_new_clients_first_small_ops_do_not_wait_for_a_heavy_program(start_cluster,
                                                                        tmp_path):
    """A session with no program measured yet takes the express lane for small work: a
    client that connects beside a long program gets its first values before it ends."""
    log = tmp_path / 'ops.log'
    cluster = start_cluster(workers=1, env={'GT_INSTRUCTION_LOG': str(log)})
    heavy = start_script(HEAVY.format(address=cluster.address, count=12))
    assert heavy.stdout.readline().strip() == 'ready'
    _wait_until_sent(log, HEAVY_OPS)
    with connected(cluster.address):
        first = (gt.tensor([1.0, 2.0]) + 1).tolist()
        still_running = heavy.poll() is None
    assert finish_script(heavy).returncode == 0
    assert first == [2.0, 3.0]
    assert still_running  # it did not wait for the heavy program
    assert _express_sends(log)
