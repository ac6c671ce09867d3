"""Failures end in a clear exception in the client that made the request, never a hang:
no server, a lost worker, a lost dispatcher, a bad op, a failing op, garbage on the wire.

Time bounds are generous (a loaded two-core machine), but they are bounds: a hang fails.
"""

import os
import re
import signal
import subprocess
import sys
import threading
import time
import traceback

import msgpack
import numpy as np
import pytest
import torch
from gt_test_support import (
    connected,
    finish_script,
    free_port,
    kill_group,
    read_line,
    start_script,
    submit_message,
)

import gt
from gt.ir import OPS
from gt.runtime.fragment import encode_structure
from gt.runtime.protocol import (
    MESSAGES,
    Fetched,
    Goodbye,
    Heartbeat,
    Hello,
    Ping,
    ProtocolError,
    Stats,
    Welcome,
    encode,
)
from gt.runtime.transport import dealer, receive, send

TEST_FILE = os.path.abspath(__file__)


@pytest.fixture
def client(cluster):
    with connected(cluster.address) as connection:
        yield connection


# ---- no server ----------------------------------------------------------------------------
@pytest.mark.time_limit(60)
def test_no_server_is_a_connection_error(monkeypatch):
    monkeypatch.setattr(gt.runtime.dispatcher_waits, 'SILENCE_SECONDS', 3.0)  # GT_TIMEOUT=3
    started = time.monotonic()
    with pytest.raises(ConnectionError, match='no answer|refused|running'):
        with connected(f'localhost:{free_port()}'):
            (gt.ones(3) + 1).tolist()
    assert time.monotonic() - started < 30


@pytest.mark.time_limit(90)
def test_after_the_dispatcher_dies_later_calls_fail_sooner(start_cluster, monkeypatch):
    """The first wait gives up after GT_TIMEOUT; a later one asks once and gives up
    within seconds, rather than waiting the whole timeout again."""
    monkeypatch.setattr(gt.runtime.dispatcher_waits, 'SILENCE_SECONDS', 4.0)
    private = start_cluster(workers=1)
    with connected(private.address):
        x = gt.ones(3)
        assert x.sum().item() == 3.0
        private.server.kill()
        private.server.wait(10)
        waits = []
        for _ in range(3):
            started = time.monotonic()
            with pytest.raises(ConnectionError, match='is it running'):
                (x * 2).sum().item()
            waits.append(time.monotonic() - started)
    assert waits[0] >= 4.0 and all(wait < 3.5 for wait in waits[1:]), waits


# ---- a lost worker ------------------------------------------------------------------------
@pytest.mark.time_limit(60)
def test_a_server_without_workers_is_said_while_waiting_then_raises(start_cluster):
    empty = start_cluster(workers=0, wait=False)
    empty.wait_answering()
    script = start_script(f"""
        import gt
        try:
            gt.connect({empty.address!r})
        except ConnectionError as error:
            print(error)
        """, env={'GT_STARTUP_TIMEOUT': '7'})
    result = finish_script(script, timeout=40)
    assert 'answers, but no worker has joined it yet; waiting up to 7 s' in result.stderr
    assert 'no GT worker joined the dispatcher' in result.stdout, result


@pytest.mark.time_limit(60)
def test_connecting_where_nothing_listens_says_only_that_nothing_answers():
    """The notice that the dispatcher answers but has no worker came for a dispatcher
    that was not running at all (found by an audit)."""
    script = start_script(f"""
        import gt
        try:
            gt.connect('localhost:{free_port()}')
        except ConnectionError as error:
            print(error)
        """, env={'GT_TIMEOUT': '7'})
    result = finish_script(script, timeout=40)
    assert 'is it running' in result.stdout, result
    assert 'answers' not in result.stderr, result.stderr


@pytest.mark.time_limit(90)
def test_killed_worker_fails_the_next_fetch(start_cluster):
    private = start_cluster(workers=1, env={'GT_HEARTBEAT_TIMEOUT': '1.5'})
    with connected(private.address):
        x = gt.from_numpy(np.arange(6, dtype=np.float32))
        assert (x * 2).sum().item() == 30.0
        private.workers[0].kill()
        private.workers[0].wait(10)
        started = time.monotonic()
        with pytest.raises(Exception, match='lost') as raised:
            (x + 1).sum().item()
        assert time.monotonic() - started < 30
        assert 'worker' in str(raised.value)
    assert private.server.poll() is None, 'the dispatcher died with its worker'
    with open(os.path.join(private.log_dir, 'server.log')) as log:  # said without GT_VERBOSE
        assert re.search(r'\[gt dispatcher [\d:.]+\] worker 0 \(.+ on .+\) was lost: no '
                         r'heartbeat for 1.5 s', log.read()), private.logs()


@pytest.mark.time_limit(90)
def test_after_losing_its_worker_a_session_goes_on_on_another(start_cluster):
    private = start_cluster(workers=2, env={'GT_HEARTBEAT_TIMEOUT': '1.5'})
    with connected(private.address):
        x = gt.from_numpy(np.arange(4, dtype=np.float32))
        assert x.sum().item() == 6.0
        stats = gt.debug.get_worker_stats()
        home = next(s for s in stats if s['tensors'] > 0)
        victim = next(w for w in private.workers if w.pid == home['pid'])
        victim.kill()
        victim.wait(10)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # until the dispatcher notices
            if len(gt.debug.get_worker_stats()) == 1:
                break
            time.sleep(0.2)
        with pytest.raises(Exception, match='lost with worker'):
            (x + 1).sum().item()
        assert (gt.ones(3) * 2).tolist() == [2.0, 2.0, 2.0]  # new work runs elsewhere


@pytest.mark.time_limit(90)
def test_a_session_whose_only_worker_died_goes_on_on_a_worker_that_joins(start_cluster):
    """The session's home worker was its only one: until a worker joins, new work says
    none is alive; then new tensors are made on the newcomer (before, every later op
    failed for good, naming the lost worker)."""
    private = start_cluster(workers=1, env={'GT_HEARTBEAT_TIMEOUT': '1.5'})
    with connected(private.address):
        x = gt.from_numpy(np.arange(4, dtype=np.float32))
        assert x.sum().item() == 6.0
        private.workers[0].kill()
        private.workers[0].wait(10)
        deadline = time.monotonic() + 30
        while gt.debug.get_worker_stats() and time.monotonic() < deadline:
            time.sleep(0.2)  # until the dispatcher notices
        with pytest.raises(RuntimeError, match='no worker is alive to run this work') as said:
            (gt.ones(3) * 2).tolist()
        assert not isinstance(said.value, ValueError)  # the cluster's state, not an argument
        private.workers[0] = private._start('worker-new', [
            'gt.worker', '--host', 'localhost', '-p', str(private.port), '--device', 'cpu',
            *private.guard])
        private.wait_ready(workers=1)
        assert (gt.ones(3) * 2).tolist() == [2.0, 2.0, 2.0]
        with pytest.raises(Exception, match='lost with worker'):
            (x + 1).sum().item()  # what the lost worker held stays lost, by name


@pytest.mark.time_limit(90)
def test_a_stalled_dispatcher_loses_no_worker(start_cluster):
    # A dispatcher that was stopped (a loaded machine, a long handler) heard nothing while
    # its workers kept beating: that silence is its own, not theirs.
    private = start_cluster(workers=2, env={'GT_HEARTBEAT_TIMEOUT': '1.5',
                                            'GT_AUTO_SHARD_ELEMENTS': '1'})
    with connected(private.address):
        x = gt.from_numpy(np.arange(8, dtype=np.float32))  # a shard on each worker
        assert x.sum().item() == 28.0
        os.kill(private.server.pid, signal.SIGSTOP)
        time.sleep(3.5)
        os.kill(private.server.pid, signal.SIGCONT)
        time.sleep(1.0)  # a loss would be declared by now
        assert len(gt.debug.get_worker_stats()) == 2
        assert (x * 2).tolist() == [2.0 * i for i in range(8)]


@pytest.mark.time_limit(90)
def test_worker_lost_while_a_fetch_waits(start_cluster):
    private = start_cluster(workers=1, env={'GT_HEARTBEAT_TIMEOUT': '1.5'})
    with connected(private.address):
        x = gt.from_numpy(np.arange(6, dtype=np.float32))
        assert x.sum().item() == 15.0
        # Stopped, the worker holds the fetch below; then it dies without a word.
        os.kill(private.workers[0].pid, signal.SIGSTOP)
        threading.Timer(1.0, private.workers[0].kill).start()
        started = time.monotonic()
        with pytest.raises(gt.WorkerError, match='lost') as lost:
            (x + 1).sum().item()
        assert time.monotonic() - started < 30
    # It names the line whose tensor was being fetched, as an op's failure does.
    assert f'while fetching the tensor made at {__file__}:' in str(lost.value), lost.value
    assert '(sum)' in str(lost.value), lost.value


# ---- a lost dispatcher ----------------------------------------------------------------------
@pytest.mark.time_limit(90)
def test_killed_dispatcher_fails_a_waiting_client(start_cluster, monkeypatch):
    monkeypatch.setattr(gt.runtime.dispatcher_waits, 'SILENCE_SECONDS', 4.0)  # GT_TIMEOUT=4
    # A patient dispatcher: the stopped worker must not be declared lost before the kill.
    private = start_cluster(workers=1, env={'GT_HEARTBEAT_TIMEOUT': '120'})
    with connected(private.address):
        x = gt.from_numpy(np.arange(6, dtype=np.float32))
        assert x.sum().item() == 15.0
        worker = private.workers[0]
        os.kill(worker.pid, signal.SIGSTOP)  # the next fetch waits for this worker...
        try:
            threading.Timer(1.5, private.server.kill).start()  # ...while the dispatcher dies
            started = time.monotonic()
            with pytest.raises(ConnectionError):
                (x + 1).sum().item()
            assert time.monotonic() - started < 30
            assert private.server.poll() is not None
        finally:
            os.kill(worker.pid, signal.SIGCONT)


# ---- errors at the user's line --------------------------------------------------------------
def last_user_frame(error: BaseException) -> traceback.FrameSummary:
    gt_dir = os.path.dirname(os.path.abspath(gt.__file__))
    frames = [frame for frame in traceback.extract_tb(error.__traceback__)
              if not os.path.abspath(frame.filename).startswith(gt_dir)]
    return frames[-1]


def test_shape_mismatch_raises_at_the_users_line(client):
    a, b = gt.randn(2, 3), gt.randn(4, 5)
    line = sys._getframe().f_lineno + 2
    with pytest.raises(ValueError) as raised:
        a @ b
    message = str(raised.value)
    assert '[2, 3]' in message or '(2, 3)' in message, message
    assert '[4, 5]' in message or '(4, 5)' in message, message
    frame = last_user_frame(raised.value)
    assert (os.path.abspath(frame.filename), frame.lineno) == (TEST_FILE, line)


@pytest.mark.skipif('floor_divide' not in OPS, reason='the op table has no floor_divide')
def test_worker_error_names_the_op_and_the_users_line(client):
    survivor = gt.from_numpy(np.array([1.0, 2.0], dtype=np.float32))
    line = sys._getframe().f_lineno + 1
    broken = gt.tensor([1]) // gt.tensor([0])  # torch: ZeroDivisionError on the worker
    with pytest.raises(gt.WorkerError) as raised:
        broken.tolist()
    message = str(raised.value)
    assert 'floor_divide' in message, message
    assert f'{TEST_FILE}:{line}' in message or f'{os.path.basename(TEST_FILE)}:{line}' in message, \
        message
    # Everything else still works: older values, new values, and the same op done right.
    assert (survivor * 3).tolist() == [3.0, 6.0]
    assert (gt.tensor([7]) // gt.tensor([2])).tolist() == [3]
    # A failed value stays failed; it does not poison later fetches of healthy values.
    with pytest.raises(gt.WorkerError):
        (broken + 1).tolist()
    assert survivor.tolist() == [1.0, 2.0]


def test_a_worker_error_keeps_torchs_kind_where_a_script_catches_it(client):
    """torch raises IndexError for an embedding index out of range; a ported `except
    IndexError` must still catch it (it is a gt.WorkerError too, naming the line)."""
    embedding = gt.nn.Embedding(3, 2)
    with pytest.raises(IndexError, match='index out of range') as raised:
        embedding(gt.tensor([5])).sum().item()
    assert isinstance(raised.value, gt.WorkerError) and 'embedding' in str(raised.value)
    with pytest.raises(gt.WorkerError) as raised:  # torch's RuntimeError stays just that
        (gt.tensor([1]) // gt.tensor([0])).tolist()
    assert not isinstance(raised.value, (IndexError, ValueError, TypeError))
    assert embedding(gt.tensor([2])).shape == (1, 2)


def test_a_lookup_whose_backward_alone_runs_still_fails_as_an_index_error(client):
    """The lookup's value is unused, so only its backward runs (torch's embedding
    backward, whose CPU kernel checks no index): torch raised IndexError at the lookup,
    and a script's `except IndexError` missed GT's failure."""
    weight = gt.nn.Parameter(gt.randn(10, 4))
    loss = (weight * weight).sum()
    (loss + gt.nn.functional.embedding(gt.tensor([1, 12]), weight).sum()).backward()
    with pytest.raises(IndexError, match='out of bounds') as raised:
        loss.item()
    assert isinstance(raised.value, RuntimeError) and 'embedding_backward' in str(raised.value)


# ---- garbage on the wire --------------------------------------------------------------------
def receive_within(socket, kind: type, seconds: float = 10.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if socket.poll(100):
            try:
                message, frames = receive(socket)
            except ProtocolError:
                continue
            if isinstance(message, kind):
                return message, frames
    pytest.fail(f'no {kind.__name__} within {seconds} s')


def dispatcher_answers(cluster) -> bool:
    if cluster.server.poll() is not None:
        return False
    probe = dealer(cluster.endpoint)
    try:
        send(probe, Ping())
        return probe.poll(5000) != 0
    finally:
        probe.close(linger=0)


@pytest.mark.time_limit(90)
def test_garbage_on_the_socket_is_ignored(start_cluster):
    private = start_cluster(workers=1)
    rng = np.random.default_rng(0)
    stranger = dealer(private.endpoint)
    try:
        for size in (0, 1, 7, 100, 4096):
            stranger.send(rng.bytes(size))
            stranger.send_multipart([rng.bytes(size), rng.bytes(3)])
        stranger.send(b'\xc1')  # never valid msgpack
        stranger.send(msgpack.packb('not a list'))
        stranger.send(msgpack.packb([]))
        stranger.send(msgpack.packb([10**6, 1, 2]))  # no such kind
        stranger.send(msgpack.packb([-1, 'x']))
        stranger.send(msgpack.packb(['Hello', 'x', 1]))
        stranger.send(msgpack.packb([0]))  # Hello, too few fields
        stranger.send(msgpack.packb([0, 'x', 1, 2, 3, 4, 5]))  # Hello, too many
        stranger.send(msgpack.packb([0, 12345, 'many', '', '', 1.0]))  # wrong field types
        stranger.send(encode(submit_message(fetch=[0], request=1)))  # before any Hello
        stranger.send(encode(submit_message(request=2)) + b'trailing')
        stranger.send(encode(Welcome(1, [])))  # a message only the dispatcher sends
        # A session that sends nonsense inside well-formed messages.
        send(stranger, Hello('tests:garbage', 1, ''))
        receive_within(stranger, Welcome)
        stranger.send_multipart([encode(submit_message(structure=rng.bytes(64), request=3)),
                                 b'junk'])
        for request, structure in enumerate([
            msgpack.packb([[['no_such_op', [], {}, None]], [0]]),
            msgpack.packb([[['neg', [5], {}, None]], [0]]),  # an operand it never defined
            msgpack.packb([[['neg', [-1], {}, None]], [0]]),  # an external it did not list
            msgpack.packb([[['randn', [], {'shape': 'x', 'dtype': 'float32'}, None]], [0]]),
            msgpack.packb([[['randn', [], {'shape': [2], 'dtype': 'float32'}, None]], [7]]),
            msgpack.packb([[None], None]),
            msgpack.packb(17),
        ], start=10):
            stranger.send(encode(submit_message(structure=structure, fetch=[0],
                                                request=request)))
            reply, _ = receive_within(stranger, Fetched)
            assert reply.request == request and reply.errors, reply
        stranger.send(encode(submit_message(base='base', externals=['x'], releases=[[1]],
                                            fetch=[None], request=20)))
        reply, _ = receive_within(stranger, Fetched)
        assert reply.errors, reply
        send(stranger, Goodbye())
    finally:
        stranger.close(linger=1000)
    assert dispatcher_answers(private), 'the dispatcher died:\n' + private.logs()
    assert private.workers[0].poll() is None, private.logs()
    with connected(private.address):
        assert (gt.from_numpy(np.array([1.0, 2.0], dtype=np.float32)) + 1).tolist() == [2.0, 3.0]
        assert gt.ones(4, 4).sum().item() == 16.0


# Fields of the right arity but unhashable types reach dict lookups in the dispatcher's
# handlers (dispatcher.py `heartbeat`, `worker_reply`), whose TypeError ends serve_forever.
UNHASHABLE = {
    'heartbeat': msgpack.packb([MESSAGES.index(Heartbeat), [1, 2]]),
    'fetched': msgpack.packb([MESSAGES.index(Fetched), [1], [], [], 0.0]),
    'stats': msgpack.packb([MESSAGES.index(Stats), {'a': 1}, [], {}]),
}


@pytest.mark.parametrize('kind', sorted(UNHASHABLE))
@pytest.mark.time_limit(60)
def test_unhashable_fields_do_not_kill_the_dispatcher(start_cluster, kind):
    private = start_cluster(workers=0, wait=False)
    private.wait_answering()
    stranger = dealer(private.endpoint)
    try:
        stranger.send(UNHASHABLE[kind])
    finally:
        stranger.close(linger=1000)
    time.sleep(0.5)
    assert dispatcher_answers(private), private.logs()


def data_submit(data_frames: list) -> list:
    """A session's fragment `from_numpy(shape=[2], float32)`, fetched, with `data_frames`."""
    structure = encode_structure(
        [['from_numpy', [], {'shape': [2], 'dtype': 'float32', 'slot': 0}, None]], [0])
    return [encode(submit_message(structure=structure, fetch=[0], request=1)), *data_frames]


BAD_DATA = {
    'header not msgpack': [b'\xc1junk', b'\x00' * 8],
    'unknown dtype': [msgpack.packb([['float99', [2]]]), b'\x00' * 8],
    'shape does not fit the buffer': [msgpack.packb([['float32', [3]]]), b'\x00' * 8],
}


@pytest.mark.parametrize('case', sorted(BAD_DATA))
@pytest.mark.time_limit(60)
def test_malformed_data_fails_the_request_not_the_worker(start_cluster, case):
    private = start_cluster(workers=1, env={'GT_HEARTBEAT_TIMEOUT': '1.5'})
    stranger = dealer(private.endpoint)
    try:
        send(stranger, Hello('tests:bad-data', 1, ''))
        receive_within(stranger, Welcome)
        stranger.send_multipart(data_submit(BAD_DATA[case]))
        reply, frames = receive_within(stranger, Fetched, 15)
        assert reply.errors, reply
        assert not frames
    finally:
        stranger.close(linger=200)
    time.sleep(0.5)
    assert private.workers[0].poll() is None, 'the worker died:\n' + private.logs()
    with connected(private.address):
        assert (gt.from_numpy(np.array([1.0, 2.0], dtype=np.float32)) + 1).tolist() == [2.0, 3.0]


# ---- restarts and vanished clients ----------------------------------------------------------
@pytest.mark.time_limit(90)
def test_workers_rejoin_a_restarted_dispatcher(start_cluster):
    private = start_cluster(workers=1)
    with connected(private.address):
        assert gt.ones(3).sum().item() == 3.0
        private.server.kill()
        private.server.wait(10)
        private.server = private.start_server('server-restarted')
        private.wait_ready(1, timeout=30)  # the old worker registers again on its own
        # The client's session died with the old dispatcher: the new one says what to do.
        with pytest.raises(ConnectionError, match=r'was it restarted\? gt.connect\(\) starts'):
            gt.ones(3).sum().item()
    assert private.workers[0].poll() is None
    with connected(private.address):
        assert (gt.from_numpy(np.array([1.0, 2.0], dtype=np.float32)) * 2).tolist() == [2.0, 4.0]
        assert len(gt.debug.get_worker_stats()) == 1


@pytest.mark.time_limit(60)
def test_a_stopped_dispatcher_tells_its_sessions(start_cluster):
    """SIGTERM to gt.server: each session hears that the server ended it, at its next
    call, rather than waiting GT_TIMEOUT (10 s) for a dispatcher that is gone."""
    private = start_cluster(workers=1)
    with connected(private.address):
        kept = gt.ones(3) * 2
        assert kept.tolist() == [2.0, 2.0, 2.0]
        private.server.terminate()
        private.server.wait(10)
        with pytest.raises(gt.ClosedSessionError, match=r'ended session \d+: it was stopped'):
            kept.tolist()  # without the note: a ConnectionError, after GT_TIMEOUT


@pytest.mark.time_limit(60)
def test_a_tensor_of_an_ended_session_says_so(cluster):
    with connected(cluster.address) as first:
        old = gt.ones(3) + 1
        assert old.tolist() == [2.0, 2.0, 2.0]
        gt.connect(cluster.address)  # ends the first session
        new = gt.ones(3)
        for use in (lambda: old.tolist(), lambda: old + new, lambda: new + old,
                    lambda: gt.stack([new, old]), lambda: (old * 2).sum().item()):
            with pytest.raises(gt.ClosedSessionError,
                               match=f'session {first.session}, which has ended'):
                use()
        assert (new * 2).tolist() == [2.0, 2.0, 2.0]  # the new session is untouched


HOLDER = '''
import os, time
import gt
gt.connect(os.environ['GT_ADDRESS'])
kept = [gt.randn(64, 64) for _ in range(5)]
print(sum(k.sum().item() for k in kept), flush=True)
time.sleep(120)
'''


@pytest.mark.time_limit(90)
def test_a_killed_clients_session_is_freed(cluster):
    with connected(cluster.address):
        before_sessions = gt.debug.get_dispatcher_stats()['sessions']
        before_tensors = sum(w['tensors'] for w in gt.debug.get_worker_stats())
        holder = start_script(HOLDER, env={'GT_ADDRESS': cluster.address})
        try:
            line = read_line(holder, 60)
            assert line.strip(), holder.stderr.read()
            assert sum(w['tensors'] for w in gt.debug.get_worker_stats()) >= before_tensors + 5
        finally:
            kill_group(holder)
            holder.communicate(timeout=10)
        deadline = time.monotonic() + 20  # GT_SESSION_TIMEOUT (5 s here) and some slack
        while time.monotonic() < deadline:
            sessions = gt.debug.get_dispatcher_stats()['sessions']
            tensors = sum(w['tensors'] for w in gt.debug.get_worker_stats())
            if (sessions, tensors) == (before_sessions, before_tensors):
                break
            time.sleep(0.5)
        assert (sessions, tensors) == (before_sessions, before_tensors)


STOPPED = '''
import os, sys, gt
gt.connect(os.environ['GT_ADDRESS'])
kept = gt.tensor([1.0, 2.0])
print(kept.tolist(), flush=True)
sys.stdin.readline()  # the test stops this process past the session timeout meanwhile
for use in (lambda: (kept * 2).tolist(), lambda: (gt.ones(1) + 1).tolist()):
    try:
        print(use(), flush=True)
    except Exception as error:
        print(f'{type(error).__name__}: {error}', flush=True)
'''


@pytest.mark.time_limit(60)
def test_a_session_ended_by_its_timeout_says_so(start_cluster):
    """Its client, stopped (SIGSTOP) past GT_SESSION_TIMEOUT and resumed, used to get
    "ConnectionError: the GT dispatcher refused: no session: say Hello first"."""
    private = start_cluster(workers=1, env={'GT_SESSION_TIMEOUT': '2'})
    script = start_script(STOPPED, env={'GT_ADDRESS': private.address},
                          stdin=subprocess.PIPE)
    try:
        assert read_line(script, 60).strip() == '[1.0, 2.0]'
        os.kill(script.pid, signal.SIGSTOP)
        time.sleep(4)  # its keep-alive thread is stopped too
        os.kill(script.pid, signal.SIGCONT)
        script.stdin.write('go\n')
        script.stdin.flush()
        lines = [read_line(script, 30).strip() for _ in range(2)]
    finally:
        kill_group(script)
        script.communicate(timeout=10)
    ended = (r'ClosedSessionError: the GT server ended session \d+ after 2(\.0)? s without '
             r'contact from this client \(GT_SESSION_TIMEOUT; .*\): its tensors are gone\. '
             r'Call gt.connect\(address\) for a new session')
    assert len(lines) == 2 and all(re.match(ended, line) for line in lines), lines


@pytest.mark.time_limit(60)
def test_a_stalled_worker_comes_back(start_cluster):
    private = start_cluster(workers=1, env={'GT_HEARTBEAT_TIMEOUT': '1'})
    worker = private.workers[0]
    with connected(private.address):
        before = gt.from_numpy(np.arange(3, dtype=np.float32)) * 1
        assert before.sum().item() == 3.0
        os.kill(worker.pid, signal.SIGSTOP)
        time.sleep(2.5)  # declared lost
        os.kill(worker.pid, signal.SIGCONT)
        assert worker.poll() is None
        private.wait_ready(1, timeout=10)  # a Hello is answered once a live worker is there
        # It came back empty: what it held is named as lost, not as never made.
        with pytest.raises(Exception, match='value .* was lost with worker 0'):
            before.tolist()
        assert gt.ones(2).sum().item() == 2.0


@pytest.mark.time_limit(90)
def test_a_whole_copy_on_a_live_worker_outlives_the_loss_of_another(start_cluster):
    """A data-parallel weight is whole on every worker: losing one worker loses the
    pieces it held, not the copies the others hold (they were named lost too)."""
    private = start_cluster(workers=2, env={'GT_HEARTBEAT_TIMEOUT': '1'})
    with connected(private.address):
        workers = [w['index'] for w in gt.debug.get_worker_stats()]
        gt.register_config('whole_copies', gt.SignalConfig(
            shard=gt.ShardConfig(axis=0, workers=workers)))
        gt.manual_seed(0)
        model = gt.nn.Linear(8, 1)
        optimizer = gt.optim.SGD(model.parameters(), lr=0.1)
        x = gt.randn(64, 8)
        for _ in range(3):
            with gt.signal.context('whole_copies'):
                loss = model(gt.signal.tensor(x, name='whole_copies')).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        assert 'R@w' in gt.debug.dump_ir(show=False)  # the weight is whole on both
        weight = model.weight.tolist()
        with gt.signal.context('whole_copies'):
            pieces = gt.signal.tensor(x, name='whole_copies') * 1  # a row shard on each
        pieces.sum().item()
        os.kill(private.workers[1].pid, signal.SIGKILL)
        deadline = time.monotonic() + 20
        while len(gt.debug.get_worker_stats()) == 2:  # until the dispatcher notices
            assert time.monotonic() < deadline
            time.sleep(0.2)
        assert model.weight.tolist() == weight
        with pytest.raises(Exception, match='was lost with worker'):
            pieces.tolist()  # one of its pieces was there
        step = model(gt.ones(2, 8)).sum()  # and training goes on, on the worker left
        step.backward()
        optimizer.step()
        assert model.weight.grad is not None and len(model.weight.tolist()[0]) == 8


@pytest.mark.time_limit(90)
@pytest.mark.usefixtures('fresh_configs')
@pytest.mark.parametrize('optimizer', ['sgd with momentum', 'adam'])
def test_a_data_parallel_loop_trains_on_after_losing_a_worker_mid_step(start_cluster,
                                                                        optimizer):
    """A worker lost while a step's all_reduce waits for it fails that step, which goes
    back as a step torch raised in. The weight's update is made on its home worker from
    a weight copied to both: its pair was dropped (they are not held alike), so with
    momentum every later step and every read of the weight raised the lost move."""
    def make(library, parameters):
        if optimizer == 'adam':
            return library.optim.Adam(parameters, lr=0.05)
        return library.optim.SGD(parameters, lr=0.05, momentum=0.9)

    private = start_cluster(workers=2, env={'GT_HEARTBEAT_TIMEOUT': '1'})
    torch.manual_seed(0)
    reference, data = torch.nn.Linear(30, 7), torch.randn(96, 30)
    with connected(private.address):
        workers = [w['index'] for w in gt.debug.get_worker_stats()]
        gt.register_config('data_parallel', gt.SignalConfig(
            shard=gt.ShardConfig(axis=0, workers=workers)))
        model = gt.nn.Linear(30, 7)
        model.load_state_dict(reference.state_dict())
        ported = make(gt, model.parameters())

        def step() -> bool:
            with gt.signal.context('data_parallel'):
                batch = gt.signal.tensor(gt.tensor(data), name='data_parallel')
                loss = model(batch).pow(2).mean()
            ported.zero_grad()
            loss.backward()
            ported.step()
            try:
                loss.item()
            except RuntimeError as error:
                assert 'lost' in str(error), error
                return False
            return True
        took = [step() for _ in range(3)]
        # The other worker: the session's home (its first, in a fresh cluster) keeps it.
        stats = gt.debug.get_worker_stats()
        os.kill(max(stats, key=lambda worker: worker['index'])['pid'], signal.SIGKILL)
        took += [step() for _ in range(4)]
        got = [model.weight.data, model.bias.data]
    assert took[:3] == [True] * 3 and took[-3:] == [True] * 3, took
    expected = make(torch, reference.parameters())
    for took_step in took:
        if took_step:
            expected.zero_grad()
            reference(data).pow(2).mean().backward()
            expected.step()
    for mine, theirs in zip(got, [reference.weight, reference.bias]):
        torch.testing.assert_close(mine, theirs.detach(), rtol=1e-5, atol=1e-6)
