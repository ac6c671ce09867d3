"""`python -m gt.scripts.top`: the model's rates and shares from synthetic stats messages,
a rendered frame, and the real thing in a pseudo-terminal: two clients on two workers shown,
`q` quits, and it ends by itself when the dispatcher goes away (one found by port, one
auto-started and found through the registry)."""

import math
import os
import re
import socket
import subprocess
import sys
import time

import pexpect
import pytest
from gt_test_support import kill_group, read_line, start_script
from rich.console import Console

from gt.scripts.top import COLOURS, OTHER_COLOUR, pick_colours, render
from gt.scripts.top_model import Model, human_bytes, smooth

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ANSI = re.compile(r'\x1b(\[[0-?]*[ -/]*[@-~]|[@-Z\\-_])')


# ---- the model --------------------------------------------------------------------------------
def worker(index: int, time: float | None = None, busy: float = 0.0, ops: dict | None = None,
           **more) -> dict:
    stats = {'index': index, 'name': f'w-{index}', 'device': 'cpu', 'host': 'box',
             'alive': True}
    if time is not None:
        stats.update(busy=busy, programs=1, ops=ops or {}, sessions={}, time=time,
                     memory=1 << 20, compiled_programs=2)
    return {**stats, **more}


def session(number: int, ops: int, seconds: dict, held: dict | None = None) -> dict:
    return {'number': number, 'client': f'box:{100 + number}', 'ops': ops, 'programs': ops,
            'values': 3, 'worker_seconds': seconds, 'bytes': held or {}}


def stats(time: float, workers: list, sessions: list) -> dict:
    return {'time': time, 'workers': workers, 'sessions': sessions}


def steady(model: Model, steps: int, start: int = 0) -> None:
    """Worker 0 reports every 0.5 s: busy 0.25 s (matmul 0.2, add 0.05), of which session 1
    ran 0.15 s and session 2 0.1 s; session 1 submits 100 ops per step, session 2 50."""
    for step in range(start, start + steps):
        model.update(stats(
            0.5 * step,
            [worker(0, 1000 + 0.5 * step, 0.25, {'matmul': 0.2, 'add': 0.05}), worker(1)],
            [session(1, 100 * step, {0: 0.15 * step}, {0: 4096, 1: 2048}),
             session(2, 50 * step, {0: 0.1 * step})]))


def test_smooth_weighs_a_sample_by_its_interval():
    assert smooth(None, 3.0, 0.5) == 3.0
    assert smooth(1.0, 2.0, 1.0, tau=1.0) == pytest.approx(2.0 - math.exp(-1.0))
    assert smooth(1.0, 2.0, 0.0) == 1.0
    assert smooth(1.0, 2.0, 100.0) == pytest.approx(2.0)


def test_human_bytes():
    assert [human_bytes(n) for n in (None, 0, 1023, 1536, 5 << 20, 3 << 40)] == [
        '-', '0 B', '1023 B', '1.5 KiB', '5.0 MiB', '3.0 TiB']


def test_steady_load_gives_utilization_op_split_rates_and_shares():
    model = Model()
    steady(model, 40)
    busy = model.workers[0]
    assert busy.utilization == pytest.approx(0.5)
    assert busy.idle == pytest.approx(0.5)
    assert dict(busy.op_utilization()) == pytest.approx({'matmul': 0.4, 'add': 0.1})
    assert [op for op, _ in busy.op_utilization()] == ['matmul', 'add']
    assert (busy.memory, busy.compiled_programs) == (1 << 20, 2)
    first, second = model.sessions[1], model.sessions[2]
    assert first.ops_rate == pytest.approx(200) and second.ops_rate == pytest.approx(100)
    assert first.share == pytest.approx({0: 0.3}) and second.share == pytest.approx({0: 0.2})
    assert first.client == 'box:101' and first.bytes_held == 6144
    assert model.top_ops(1) == ['matmul'] and model.top_ops(5) == ['matmul', 'add']
    idle = model.workers[1]  # no heartbeat yet
    assert idle.utilization is None and idle.memory is None and idle.op_utilization() == []
    assert model.uptime == pytest.approx(19.5)


def test_a_report_repeated_in_later_messages_counts_once():
    model = Model()
    steady(model, 3)
    before = model.workers[0].utilization
    for later in (1.2, 1.4):  # the same report (time 1001.0) with the dispatcher's time moving on
        model.update(stats(later, [worker(0, 1001.0, 0.25, {'matmul': 0.25}), worker(1)],
                           [session(1, 200, {0: 0.3}), session(2, 100, {0: 0.2})]))
    assert model.workers[0].utilization == before
    assert model.workers[0].mix == pytest.approx({'matmul': 0.8, 'add': 0.2})


def test_busy_time_of_reports_that_no_message_carried_still_counts():
    """Reports may replace each other between two messages (a worker also reports before
    each fetch): the sessions' cumulative seconds hold what the dropped ones said."""
    model = Model()
    model.update(stats(0.0, [worker(0, 1000.0)], [session(1, 0, {0: 0.0})]))
    # 1 s later: the report carried covers only its last 0.1 s (0.1 busy), but the session's
    # seconds on worker 0 went up by 0.8.
    model.update(stats(1.0, [worker(0, 1001.0, 0.1, {'relu': 0.1})], [session(1, 10, {0: 0.8})]))
    assert model.workers[0].utilization == pytest.approx(0.8)
    assert model.sessions[1].share == pytest.approx({0: 0.8})
    # A session that ended took its seconds with it: the report's own busy time is a floor.
    model.update(stats(1.5, [worker(0, 1001.5, 0.5, {'relu': 0.5})], []))
    assert model.workers[0].utilization == pytest.approx(smooth(0.8, 1.0, 0.5))
    assert model.sessions == {}


def test_sessions_come_and_go_and_workers_get_lost():
    model = Model()
    steady(model, 4)
    # A new session, seen 0.5 s after the previous message with 30 ops already: 60 ops/s.
    model.update(stats(2.0, [worker(0, 1002.0, 0.25, {'matmul': 0.25}, alive=False)],
                       [session(1, 400, {0: 0.6}), session(3, 30, {})]))
    assert model.sessions[3].ops_rate == pytest.approx(60)
    assert model.sessions[3].share == {0: 0.0}  # nothing ran for it
    assert 2 not in model.sessions
    assert model.workers[0].alive is False
    # Its last bar is not shown frozen, with its last report or without a new one: a lost
    # worker's load is unknown.
    assert model.workers[0].utilization is None and model.workers[0].op_utilization() == []
    model.update(stats(2.5, [worker(0, 1002.0, 0.25, {'matmul': 0.25}, alive=False)], []))
    assert model.workers[0].utilization is None
    # A session already there at the first message gives no rate until the next one.
    fresh = Model()
    fresh.update(stats(5.0, [], [session(7, 1000, {})]))
    assert fresh.sessions[7].ops_rate is None


def test_ops_that_stop_running_fade_out_of_the_mix():
    model = Model()
    steady(model, 4)
    for step in range(4, 40):
        model.update(stats(0.5 * step, [worker(0, 1000 + 0.5 * step, 0.25, {'sum': 0.25})],
                           [session(1, 100 * step, {0: 0.25 * step})]))
    assert model.workers[0].mix == pytest.approx({'sum': 1.0}, abs=1e-3)
    assert set(model.workers[0].mix) == {'sum'}


def test_an_op_keeps_its_colour_while_it_stays_on_top():
    colours: dict[str, str] = {}
    first = pick_colours(['matmul', 'add'], colours)
    assert first == {'matmul': COLOURS[0], 'add': COLOURS[1]}
    again = pick_colours(['add', 'relu', 'matmul'], colours)
    assert again['add'] == COLOURS[1] and again['matmul'] == COLOURS[0]
    assert again['relu'] not in (COLOURS[0], COLOURS[1])
    many = pick_colours([f'op{i}' for i in range(len(COLOURS))], colours)
    assert sorted(many.values()) == sorted(COLOURS) and OTHER_COLOUR not in COLOURS


def test_a_frame_shows_workers_sessions_and_the_header():
    model = Model()
    steady(model, 40)
    console = Console(width=120, record=True, color_system=None, file=open(os.devnull, 'w'))
    console.print(render(model, 'tcp://127.0.0.1:1234 (pid 9)', 0.0, {}))
    frame = console.export_text()
    assert 'dispatcher tcp://127.0.0.1:1234 (pid 9)  clients 2  workers 2/2  up 0:00:19' in frame
    rows = {line.split()[0]: line.split() for line in frame.splitlines() if line.strip()}
    assert rows['worker0'][4:] == ['50%', '50%', '1.0', 'MiB', '2']
    assert rows['worker0'][3].count('█') == 18  # half of the bar's 36 cells
    assert rows['worker1'][4:] == ['-', '-', '-', '-']
    assert rows['1'][1:] == ['box:101', '3900', '200', '30%', '-', '6.0', 'KiB', '3']
    assert rows['2'][1:] == ['box:102', '1950', '100', '20%', '-', '0', 'B', '3']
    assert '█ matmul' in frame and '█ add' in frame
    empty = Console(width=120, record=True, file=open(os.devnull, 'w'))
    empty.print(render(Model(), 'x', 5.0, {}))
    text = empty.export_text()
    assert 'waiting for stats' in text and 'no stats for 5 s' in text
    assert 'no client sessions' in text


# ---- the real thing ---------------------------------------------------------------------------
CLIENT = """
import os, sys, gt
gt.connect({address!r})
if {shard}:
    gt.register_config('pair', gt.SignalConfig(shard=gt.ShardConfig(axis=0, workers=[0, 1])))
    with gt.signal.context('pair'):
        x = gt.randn(256, 128)
else:
    x = gt.randn(128, 128)
w = gt.randn(128, 128)
(x @ w).sum().item()
print('ready', flush=True)
while not os.path.exists({stop!r}):
    (x @ w).relu().sum().item()
"""


def wait_ready(client) -> None:
    line = read_line(client, 60)
    if line.strip() != 'ready':
        kill_group(client)
        pytest.fail(f'the client printed {line!r}:\n{client.communicate(timeout=5)}')


def spawn_top(*args: str, env: dict | None = None) -> pexpect.spawn:
    # COLUMNS and LINES would win over the terminal's size (pytest-xdist sets 80x24).
    inherited = {key: value for key, value in os.environ.items()
                 if key not in ('COLUMNS', 'LINES')}
    full_env = {**inherited, 'TERM': 'xterm-256color', **(env or {})}
    return pexpect.spawn(sys.executable, ['-m', 'gt.scripts.top', *args], cwd=ROOT,
                         env=full_env, dimensions=(40, 120), encoding='utf-8', timeout=30)


def frames(output: str) -> list[str]:
    """The screens drawn so far, ANSI stripped (rich homes the cursor before each)."""
    return [ANSI.sub('', frame) for frame in output.split('\x1b[H')]


def wait_for_screen(top: pexpect.spawn, wanted: list[str], seconds: float) -> str:
    """Read until one frame matches every pattern in `wanted`; that frame."""
    output, deadline = '', time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            output += top.read_nonblocking(1 << 16, timeout=0.5)
        except pexpect.TIMEOUT:
            continue
        shown = [frame for frame in frames(output)
                 if all(re.search(pattern, frame) for pattern in wanted)]
        if shown:
            return shown[-1]
    pytest.fail(f'no frame showed {wanted} in {seconds} s; the last:\n{frames(output)[-1]}')


def expect_exit(top: pexpect.spawn, seconds: float) -> str:
    started = time.monotonic()
    if top.expect([pexpect.EOF, pexpect.TIMEOUT], timeout=seconds) == 1:
        pytest.fail(f'top still runs after {seconds} s; its last output:\n'
                    + '\n'.join(frames(top.before)[-2:]))
    print(f'top exited {time.monotonic() - started:.2f} s later')
    top.close()
    assert top.exitstatus == 0, (top.exitstatus, top.signalstatus, top.before)
    assert '\x1b[?1049l' in top.before  # left the alternate screen: the terminal is back
    return ANSI.sub('', top.before)


@pytest.mark.time_limit(90)
def test_top_shows_two_clients_on_two_workers_and_quits_on_q(start_cluster, tmp_path):
    cluster = start_cluster(workers=2)
    stop = str(tmp_path / 'stop')
    clients = [start_script(CLIENT.format(address=cluster.address, shard=shard, stop=stop))
               for shard in (True, False)]
    top = None
    try:
        for client in clients:
            wait_ready(client)
        top = spawn_top('--port', str(cluster.port))
        # Both workers with a busy figure (two reports seen), both clients with a rate.
        labels = [f' {socket.gethostname()}:{client.pid} +\\d+ +\\d+ ' for client in clients]
        frame = wait_for_screen(top, [r'worker0 .* \d+% ', r'worker1 .* \d+% ', *labels], 30)
        print('\n'.join(line.rstrip() for line in frame.splitlines()).strip('\n'))  # for -s
        top.send('q')
        expect_exit(top, 10)
    finally:
        open(stop, 'w').close()
        if top is not None and top.isalive():
            top.terminate(force=True)
        for client in clients:
            try:
                client.wait(10)
            except Exception:
                kill_group(client)
    assert [client.returncode for client in clients] == [0, 0]


@pytest.mark.time_limit(90)
def test_top_prints_frames_one_after_another_when_its_output_is_no_terminal(start_cluster,
                                                                            tmp_path):
    """`top > file` or a pipe: plain frames, each interval, as `top -b` does; -n stops it."""
    cluster = start_cluster(workers=1)
    stop = str(tmp_path / 'stop')
    client = start_script(CLIENT.format(address=cluster.address, shard=False, stop=stop))
    try:
        wait_ready(client)
        top = subprocess.run([sys.executable, '-m', 'gt.scripts.top', '--port',
                              str(cluster.port), '--interval', '1', '-n', '3'], cwd=ROOT,
                             capture_output=True, text=True, timeout=60)
    finally:
        open(stop, 'w').close()
        client.wait(10)
    assert top.returncode == 0, top.stderr
    assert top.stdout.count('clients 1  workers 1/1  up ') == 3, top.stdout
    assert re.search(r'worker0 .* \d+% ', top.stdout), top.stdout
    assert '\x1b[' not in top.stdout  # no escape codes in a file


LONG_PROGRAM = """
import gt
gt.connect({address!r})
x = gt.randn(1000, 1000)
x.sum().item()
for _ in range(800):  # programs of 256 ops (GT_FRAGMENT_LIMIT), seconds each
    x = (x @ x).tanh()
print('ready', flush=True)
x.sum().item()
print('done', flush=True)
"""


@pytest.mark.time_limit(90)
def test_top_attaches_while_a_worker_runs_a_long_program(start_cluster):
    """`top --port` asks the dispatcher where its monitor is; a worker answers statistics
    only between programs, so the dispatcher answers a monitor with a busy worker's last
    ones after a second, instead of after the program (top gave up after 3 s, saying no
    dispatcher answered)."""
    cluster = start_cluster(workers=1)
    client = start_script(LONG_PROGRAM.format(address=cluster.address))
    try:
        wait_ready(client)
        top = subprocess.run([sys.executable, '-m', 'gt.scripts.top', '--port',
                              str(cluster.port), '--interval', '0.5', '-n', '1'], cwd=ROOT,
                             capture_output=True, text=True, timeout=60)
        assert client.poll() is None, 'the program ended before top was answered: too short'
    finally:
        kill_group(client)
    assert top.returncode == 0, top.stderr
    assert 'clients 1  workers 1/1  up ' in top.stdout, top.stdout


@pytest.mark.time_limit(60)
def test_top_ends_when_the_dispatcher_it_watches_stops(start_cluster):
    cluster = start_cluster(workers=0, wait=False)
    cluster.wait_answering()
    top = spawn_top('--port', str(cluster.port))
    try:
        wait_for_screen(top, ['clients 0  workers 0/0  up '], 30)
        cluster.server.terminate()
        cluster.server.wait(10)
        assert 'the dispatcher at' in expect_exit(top, 15).split('went away')[0]
    finally:
        if top.isalive():
            top.terminate(force=True)


@pytest.mark.time_limit(90)
def test_top_finds_an_auto_started_dispatcher_and_ends_with_it(tmp_path):
    registry = {'XDG_RUNTIME_DIR': str(tmp_path)}  # this test's dispatchers only
    stop = str(tmp_path / 'stop')
    client = start_script(f"""
        import os, gt
        x = gt.randn(64, 64)
        (x @ x).sum().item()
        print('ready', flush=True)
        while not os.path.exists({stop!r}):
            (x @ x).sum().item()
    """, env=registry)
    top = None
    try:
        wait_ready(client)
        top = spawn_top(env=registry)
        wait_for_screen(top, ['worker0', f'{socket.gethostname()}:{client.pid}',
                              r'dispatcher ipc://\S+ \(pid \d+\)'], 30)
        open(stop, 'w').close()  # the script ends, and its dispatcher with it
        assert 'went away' in expect_exit(top, 15)
    finally:
        open(stop, 'w').close()
        if top is not None and top.isalive():
            top.terminate(force=True)
        try:
            client.wait(10)
        except Exception:
            kill_group(client)
