"""The instruction log and the monitor feed on real processes: the seeds' line format,
every event kind from 2 clients on 2 workers, `--log` and `GT_INSTRUCTION_LOG` for the
auto-started server, `gt.scripts.trace` capturing from a live dispatcher, and the
per-session numbers in the stats."""

import glob
import os
import re
import subprocess
import sys
import time

import pytest
from gt_test_support import (
    TRAINING_CLIENT,
    connected,
    finish_script,
    run_script,
    start_script,
)

import gt
from gt.runtime.events import format_line, parse_line

# The seeds' sample (../shared/seeds/001_10ea08746ccdf18b.txt), as a pattern.
SEED_LINE = re.compile(r'^\[TAPE \d+\.\d{3}s\] [A-Z_]+\s+\| \S.*?\s*\| \w+\s*\| (\w+=\S*\s?)*$')
SEED_SAMPLE = """\
[TAPE 0.003s] RECV         | 127.0.0.1:59712 | BinaryOp  | result=2 op=matmul left=0 right=1
[TAPE 0.003s] WORKER_SEND  | auto_worker     | WorkerOp  | op=matmul result=127.0.0.1:59712_2
[TAPE 0.004s] WORKER_RECV  | auto_worker     | WorkerOp  | success=True
[TAPE 0.004s] SEND         | 127.0.0.1:59712 | BinaryOp  | success=True"""

def test_lines_have_the_seeds_format_and_parse_back():
    for line in SEED_SAMPLE.splitlines():
        assert SEED_LINE.match(line), line
        assert parse_line(line) is not None
    line = format_line(0.0123, 'WORKER_SEND', 'worker1', 'RunProgram',
                       {'session': 3, 'ops': 12, 'kinds': 'matmul:2,add:1', 'first': True,
                        'seconds': 0.000123456})
    assert SEED_LINE.match(line), line
    assert line.startswith('[TAPE 0.012s] WORKER_SEND  | worker1         | RunProgram |')
    assert parse_line(line) == (0.012, 'WORKER_SEND', 'worker1', 'RunProgram',
                                {'session': '3', 'ops': '12', 'kinds': 'matmul:2,add:1',
                                 'first': 'True', 'seconds': '0.000123456'})
    assert parse_line('not a log line') is None


@pytest.mark.time_limit(120)
def test_two_clients_on_two_workers_log_every_event_kind(start_cluster, tmp_path):
    log = tmp_path / 'ops.log'
    cluster = start_cluster(workers=2, env={'GT_INSTRUCTION_LOG': str(log)})
    clients = [start_script(TRAINING_CLIENT.format(address=cluster.address, seed=seed,
                                                       shard=True))
               for seed in (1, 2)]
    results = [finish_script(client) for client in clients]
    assert all(r.returncode == 0 for r in results), [r.explain() for r in results]
    deadline = time.monotonic() + 10
    events = []
    while time.monotonic() < deadline:
        events = [parse_line(line) for line in log.read_text().splitlines()]
        if sum(e[1] == 'DISCONNECT' for e in events if e) == 2:
            break
        time.sleep(0.2)
    assert all(events), [line for line in log.read_text().splitlines() if not parse_line(line)]
    kinds = {event[1] for event in events}
    assert kinds >= {'WORKER_JOIN', 'CONNECT', 'RECV', 'WORKER_SEND', 'WORKER_START',
                     'WORKER_END', 'WORKER_RECV', 'SEND', 'DISCONNECT'}, kinds
    clients_seen = {peer for _, kind, peer, _, _ in events if kind == 'CONNECT'}
    assert len(clients_seen - {'tests:wait_ready'}) == 2, clients_seen
    workers_run = {fields['worker'] for _, kind, _, _, fields in events if kind == 'WORKER_END'}
    assert workers_run == {'0', '1'}  # the sharded work ran on both
    assert any('matmul' in fields.get('kinds', '') for _, kind, _, _, fields in events
               if kind == 'RECV')


def test_the_auto_started_server_writes_one_whole_log_per_run(tmp_path):
    """Each run starts the file afresh (`visualize` drew two runs appended as one), and
    the log ends with the session's end, which a server stopped at once lost."""
    log = tmp_path / 'auto.log'
    for _ in range(3):
        result = run_script("""
            import gt
            print((gt.ones(3, 3) @ gt.ones(3, 3)).sum().item())
        """, env={'GT_INSTRUCTION_LOG': str(log)})
        assert result.returncode == 0, result.explain()
        assert result.stdout.strip() == '27.0'
        kinds = [parse_line(line)[1] for line in log.read_text().splitlines()]
        assert kinds[:2] == ['WORKER_JOIN', 'CONNECT'] and 'SEND' in kinds
        assert kinds.count('WORKER_JOIN') == 1 and kinds[-1] == 'DISCONNECT', kinds


@pytest.mark.time_limit(90)
def test_a_running_program_shows_as_started_before_it_ends(tmp_path):
    """The seeds' use of the log: "see the last operation before timeout". A program's
    start reached the log only with its end, so one that hung never showed."""
    log = tmp_path / 'running.log'
    script = start_script("""
        import gt
        x = gt.randn(800, 800)
        for _ in range(60):  # one program of a second or more
            x = (x @ x).tanh()
        print(x.sum().item() > 0)
    """, env={'GT_INSTRUCTION_LOG': str(log)})
    deadline = time.monotonic() + 60
    seen = None
    while seen is None and time.monotonic() < deadline:
        time.sleep(0.05)
        events = [parse_line(line) for line in (log.read_text() if log.exists() else '')
                  .splitlines()]
        starts = [e for e in events if e and e[1] == 'WORKER_START'
                  and int(e[4]['ops']) >= 120]
        if starts:
            seen = [e for e in events if e and e[1] == 'WORKER_END'
                    and e[4]['program'] == starts[0][4]['program']]
    result = finish_script(script, timeout=60)
    assert result.returncode == 0, result.explain()
    assert seen == [], 'the long program was not seen running'
    kinds = [parse_line(line)[1] for line in log.read_text().splitlines()]
    assert kinds.count('WORKER_START') == kinds.count('WORKER_END')


@pytest.mark.time_limit(90)
def test_server_log_flag_and_trace_capture(tmp_path):
    from gt_test_support import free_port

    port = free_port()
    log = tmp_path / 'server.log'
    server = subprocess.Popen([sys.executable, '-m', 'gt.server', '-p', str(port), '--log',
                               str(log)])
    worker = subprocess.Popen([sys.executable, '-m', 'gt.worker', '-p', str(port)])
    try:
        client = start_script("""
            import sys, time, gt
            gt.connect(sys.argv[1])
            x = gt.randn(50, 50)
            for i in range(200):
                (x @ x).sum().item()
                time.sleep(0.02)
        """.replace('sys.argv[1]', repr(f'localhost:{port}')))
        time.sleep(1.5)
        trace = subprocess.run(
            [sys.executable, '-m', 'gt.scripts.trace', '-s', '5', '-n', '40', '--port',
             str(port), '--dir', str(tmp_path / 'traces')],
            capture_output=True, text=True, timeout=60)
        assert trace.returncode == 0, trace.stderr
        assert '40 events' in trace.stdout
        (captured,) = glob.glob(str(tmp_path / 'traces' / 'trace_*.log'))
        lines = open(captured).read().splitlines()
        assert len(lines) == 40 and all(parse_line(line) for line in lines)
        assert {'RECV', 'SEND'} <= {parse_line(line)[1] for line in lines}
        finish_script(client, timeout=60)
    finally:
        for process in (worker, server):
            process.terminate()
            process.wait(10)
    events = [parse_line(line) for line in log.read_text().splitlines()]
    assert {'CONNECT', 'RECV', 'WORKER_SEND', 'SEND'} <= {event[1] for event in events}
    # trace asked for the statistics (--port): the log it watches does not show that
    assert 'Stats' not in {event[3] for event in events}
    assert all(len(line.split('|')[2]) == 12 for line in log.read_text().splitlines())


@pytest.mark.time_limit(90)
def test_a_second_server_given_a_log_in_use_refuses_it(tmp_path):
    """Two scripts given one GT_INSTRUCTION_LOG each truncated it, and one run's events
    were lost without a word (found by an audit): the second server now says so, before
    it listens, and the first one's log is whole."""
    from gt_test_support import free_port, socket_file_identity

    from gt.runtime.transport import local_socket_path

    first_port, second_port, log = free_port(), free_port(), tmp_path / 'ops.log'
    first = subprocess.Popen([sys.executable, '-m', 'gt.server', '-p', str(first_port),
                              '--log', str(log)])
    worker = subprocess.Popen([sys.executable, '-m', 'gt.worker', '-p', str(first_port)])
    try:
        with connected(f'localhost:{first_port}'):
            assert gt.arange(3).sum().item() == 3
            before = socket_file_identity(local_socket_path(second_port))
            second = subprocess.run([sys.executable, '-m', 'gt.server', '-p', str(second_port),
                                     '--log', str(log)], capture_output=True, text=True,
                                    timeout=60)
            assert second.returncode == 2
            assert second.stderr == (f"gt.server: the instruction log '{log}' is being written "
                                     'by another GT server; give each its own '
                                     '(GT_INSTRUCTION_LOG, --log)\n'), second.stderr
            assert socket_file_identity(local_socket_path(second_port)) == before  # unbound
            assert gt.arange(4).sum().item() == 6
    finally:
        for process in (worker, first):
            process.terminate()
            process.wait(10)
    kinds = [parse_line(line)[1] for line in log.read_text().splitlines()]
    assert kinds.count('CONNECT') == 1 and 'SEND' in kinds, kinds


@pytest.mark.time_limit(60)
def test_trace_stops_when_its_dispatcher_goes_away(tmp_path):
    """It waited out its seconds (40 here) after the end, where top says so at once."""
    from gt_test_support import free_port

    port = free_port()
    server = subprocess.Popen([sys.executable, '-m', 'gt.server', '-p', str(port)])
    try:
        time.sleep(2)
        started = time.monotonic()
        trace = subprocess.Popen([sys.executable, '-m', 'gt.scripts.trace', '-s', '40',
                                  '--port', str(port), '--dir', str(tmp_path)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(3)
        server.kill()
        out, err = trace.communicate(timeout=30)
    finally:
        server.kill()
        server.wait(10)
    assert trace.returncode == 0, err
    assert 'went away' in out and '0 events' in out, out
    assert time.monotonic() - started < 20


def test_trace_without_a_dispatcher_says_so(tmp_path):
    from gt_test_support import free_port

    result = subprocess.run([sys.executable, '-m', 'gt.scripts.trace', '-s', '1', '--port',
                             str(free_port())], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and 'no GT dispatcher answered' in result.stderr


def test_stats_count_this_sessions_work(cluster):
    with connected(cluster.address):
        x = gt.randn(100, 100)
        for _ in range(5):
            (x @ x).sum().item()
        # At once, no heartbeat needed: each program's reply carries its seconds.
        session = gt.debug.get_dispatcher_stats()['session']
    assert session['ops'] >= 11 and session['programs'] >= 5
    assert sum(session['worker_seconds'].values()) > 0
    assert sum(session['bytes'].values()) == 100 * 100 * 4


def test_notes_of_dead_dispatchers_are_removed_when_found(tmp_path, monkeypatch):
    """`top` and `trace` find dispatchers by their notes; a killed one's note stayed
    forever (118 piled up in a day), and a reused process number passed for it."""
    import json

    from gt.runtime.events import registry_dir, running_dispatchers

    monkeypatch.setenv('XDG_RUNTIME_DIR', str(tmp_path))
    folder = registry_dir()
    os.makedirs(folder)
    dead = subprocess.Popen([sys.executable, '-c', 'pass'])
    dead.wait()
    now = time.time()
    notes = {'dead': {'pid': dead.pid, 'started': now}, 'live': {'pid': os.getpid(),
                                                                 'started': now},
             'reused': {'pid': os.getpid(), 'started': now - 3600}}  # before we began
    for name, note in notes.items():
        with open(os.path.join(folder, f'{name}.json'), 'w') as file:
            json.dump({**note, 'endpoints': [], 'monitor_port': 1}, file)
    assert [note['pid'] for note in running_dispatchers()] == [os.getpid()]
    assert sorted(os.listdir(folder)) == ['live.json']


@pytest.mark.time_limit(60)
def test_gt_instruction_log_in_a_client_of_a_running_server_that_writes_none_says_so(
        start_cluster, cluster, tmp_path, monkeypatch):
    """The variable is the writing server's: set only where the script runs, against a
    server started without it, it wrote nothing and said nothing."""
    import warnings

    import gt

    monkeypatch.setenv('GT_INSTRUCTION_LOG', str(tmp_path / 'ops.log'))
    with pytest.warns(UserWarning, match=r'GT_INSTRUCTION_LOG is read by the server .* '
                                         r'writes none: start it with python -m gt.server --log'):
        with connected(cluster.address):
            assert gt.ones(2).sum().item() == 2.0
    logging = start_cluster(workers=1, env={'GT_INSTRUCTION_LOG': str(tmp_path / 'its.log')})
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        with connected(logging.address):
            assert gt.ones(2).sum().item() == 2.0


@pytest.mark.time_limit(60)
def test_trace_without_a_port_says_which_of_several_dispatchers_it_watches(tmp_path):
    """With several dispatchers on the host it took the newest without a word."""
    from gt_test_support import free_port

    env = dict(os.environ, XDG_RUNTIME_DIR=str(tmp_path))  # these two alone on the host
    ports = [free_port(), free_port()]
    servers = []
    try:
        notes = tmp_path / f'gt-{os.getuid()}' / 'dispatchers'
        for port in ports:
            servers.append(subprocess.Popen([sys.executable, '-m', 'gt.server', '-p',
                                             str(port)], env=env))
            deadline = time.monotonic() + 30
            while len(glob.glob(str(notes / '*'))) < len(servers):  # the second is newer
                assert time.monotonic() < deadline, 'a server wrote no note'
                time.sleep(0.1)
        trace = subprocess.run([sys.executable, '-m', 'gt.scripts.trace', '-s', '0.5',
                                '--dir', str(tmp_path)],
                               capture_output=True, text=True, timeout=30, env=env)
    finally:
        for server in servers:
            server.kill()
            server.wait(10)
    assert trace.returncode == 0, trace.stderr
    assert (f'2 GT dispatchers run on this host; watching the newest, port {ports[1]} (pid '
            f'{servers[1].pid}). Others: port {ports[0]} (pid {servers[0].pid}); --port '
            'chooses one by its port' in trace.stderr), trace.stderr
