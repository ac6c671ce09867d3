"""The server's guards, on real processes: it will not listen beyond loopback without a
token unless told to; a wrong token is refused with a clear error (and logged with the
peer's address), for clients and workers alike; oversized messages are dropped unread;
a session past its memory limit gets gt.OutOfMemoryError while others go on; a worker
that cannot allocate fails only that program; one session cannot read another's values."""

import os
import subprocess
import sys
import time

import numpy as np
import pytest
import torch
from gt_test_support import (
    Cluster,
    assert_server_starts,
    connected,
    free_port,
    run_script,
    submit_message,
)

import gt
from gt.runtime.protocol import Fetched, Hello, Welcome, encode
from gt.runtime.transport import dealer, receive, send


def test_a_public_address_needs_a_token_or_insecure():
    port = free_port()
    refused = subprocess.run([sys.executable, '-m', 'gt.server', '--host', '0.0.0.0', '-p',
                              str(port)], capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2
    assert 'refusing to listen on 0.0.0.0 without a token' in refused.stderr
    assert '--token' in refused.stderr and '--insecure' in refused.stderr
    for extra in (['--insecure'], ['--token', 's3cret']):
        assert_server_starts(['--host', '0.0.0.0', '-p', str(port), *extra])


@pytest.fixture
def guarded():
    cluster = Cluster(workers=1, env={'GT_TOKEN': 's3cret'}, server_args=[
        '--token', 's3cret', '--max-message-bytes', '1M', '--session-memory-limit', '1M'])
    try:
        cluster.wait_ready()
        yield cluster
    finally:
        cluster.stop()


@pytest.mark.time_limit(120)
def test_tokens_are_checked_for_clients_and_workers(guarded, monkeypatch):
    monkeypatch.delenv('GT_TOKEN', raising=False)
    wrong = run_script(f"""
        import gt
        gt.connect('{guarded.address}', token='guess')
        gt.ones(2).sum().item()
    """)
    assert wrong.returncode != 0 and 'wrong or missing token' in wrong.stderr, wrong.explain()
    right = run_script(f"""
        import gt
        gt.connect('{guarded.address}')
        print(gt.ones(2).sum().item())
    """, env={'GT_TOKEN': 's3cret'})
    assert right.stdout.strip() == '2.0', right.explain()
    intruder = subprocess.run([sys.executable, '-m', 'gt.worker', '-p', str(guarded.port)],
                              capture_output=True, text=True, timeout=60,
                              env={k: v for k, v in guarded.env.items() if k != 'GT_TOKEN'})
    assert intruder.returncode != 0
    assert 'refused this worker: wrong or missing token' in intruder.stderr
    time.sleep(0.5)
    log = guarded.logs()
    assert 'refused client' in log and 'refused worker' in log, log
    assert 'from a local socket (uid ' in log, log  # where from, in words


@pytest.mark.time_limit(120)
def test_top_and_trace_need_the_token_of_a_server_that_has_one(guarded, monkeypatch):
    """Its statistics name every session's client, ops and memory: a monitor asking by
    address (`--port`) must carry GT_TOKEN, as clients and workers do."""
    def top(token):
        env = {k: v for k, v in guarded.env.items() if k != 'GT_TOKEN'}
        if token:
            env['GT_TOKEN'] = token
        return subprocess.run([sys.executable, '-m', 'gt.scripts.top', '--port',
                               str(guarded.port), '-n', '1'], capture_output=True, text=True,
                              timeout=60, env=env)

    refused = top(None)
    assert refused.returncode != 0
    assert 'refused: wrong or missing token' in refused.stderr, refused.stderr
    assert top('guess').returncode != 0
    shown = top('s3cret')
    assert shown.returncode == 0 and 'workers' in shown.stdout.lower(), shown.stderr
    assert 'refused monitor from' in guarded.logs()


def test_a_token_server_shows_its_monitor_on_its_own_host_only():
    """The monitor feed is a PUB socket, which checks no token: bound to every interface
    it would show every session to anyone (it does, with CURVE keys, encrypted)."""
    import psutil

    outside = next((address.address for addresses in psutil.net_if_addrs().values()
                    for address in addresses if address.family.name == 'AF_INET'
                    and not address.address.startswith('127.')), None)
    if outside is None:
        pytest.skip('this machine has no address but loopback')
    port = free_port()
    server = subprocess.Popen([sys.executable, '-m', 'gt.server', '--host', '0.0.0.0', '-p',
                               str(port), '--token', 's3cret'], stderr=subprocess.PIPE,
                              text=True)
    try:
        time.sleep(3)
        top = subprocess.run([sys.executable, '-m', 'gt.scripts.top', '--host', outside,
                              '--port', str(port), '-n', '1'], capture_output=True, text=True,
                             timeout=60, env={**os.environ, 'GT_TOKEN': 's3cret'})
        assert top.returncode != 0
        assert 'shows its monitor on its own host only' in top.stderr, top.stderr
    finally:
        server.terminate()
        server.wait(10)


@pytest.mark.time_limit(120)
def test_oversized_messages_are_refused_and_others_go_on(guarded, monkeypatch):
    monkeypatch.setenv('GT_TOKEN', 's3cret')
    with connected(guarded.address):
        big = np.zeros(2 * 1024 * 1024 // 4, dtype=np.float32)  # 2 MB, over the 1 MB bound
        before = gt.ones(10) * 7  # recorded in the same fragment as the upload
        with pytest.raises(ValueError, match='over the server.s bound of 1,048,576 bytes'):
            gt.from_numpy(big)  # at the upload's line
        assert before.sum().item() == 70.0  # the work before it was not lost with it
        assert gt.ones(3).sum().item() == 3.0  # the session goes on
        halves = [np.ones(600 * 1024 // 4, dtype=np.float32)] * 2  # 600 KB each: 1.2 MB
        total = sum(gt.from_numpy(half).sum() for half in halves)  # sent in two messages
        assert total.item() == 2 * 600 * 1024 // 4
        raw = dealer(guarded.endpoint)
        try:
            send(raw, Hello('tests:raw', 1, '', 's3cret'))
            assert isinstance(receive(raw)[0], Welcome)
            raw.send_multipart([encode(submit_message(request=1)), big.tobytes()])
            assert not raw.poll(2000)  # dropped unread: no answer
        finally:
            raw.close(0)
        assert gt.ones(4).sum().item() == 4.0  # the server still serves


@pytest.mark.time_limit(120)
def test_a_session_past_its_memory_limit_gets_out_of_memory(guarded, monkeypatch):
    monkeypatch.setenv('GT_TOKEN', 's3cret')
    other = subprocess.Popen([sys.executable, '-c', f"""
import time, gt
gt.connect('{guarded.address}')
kept = gt.ones(64, 1024)  # 256 KB of its own
for _ in range(40):
    assert kept.sum().item() == 65536.0
    time.sleep(0.05)
print('other ok')
"""], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with connected(guarded.address):
        first = gt.ones(128, 1024)  # 512 KB: under the 1 MB limit
        first.sum().item()
        second = gt.ones(160, 1024)  # 640 KB more: over it
        with pytest.raises(gt.OutOfMemoryError, match=r'limit of 1,048,576 .*holds 524,'):
            second.sum().item()
        del first
        third = gt.ones(160, 1024)  # room again once the first is freed
        assert third.sum().item() == 160 * 1024
    out, err = other.communicate(timeout=60)
    assert other.returncode == 0 and 'other ok' in out, err


@pytest.mark.time_limit(120)
def test_the_tensors_of_refused_work_say_why_they_do_not_exist(guarded, monkeypatch):
    """They used to fail with "value 1 does not exist in this session"."""
    monkeypatch.setenv('GT_TOKEN', 's3cret')
    with connected(guarded.address) as connection:
        kept = gt.tensor([1.0, 2.0])
        assert kept.tolist() == [1.0, 2.0]
        made_with = gt.tensor([3.0, 4.0])
        big = gt.zeros(300_000)  # 1.2 MB: the fragment is over the 1 MB limit
        connection.flush()  # refused; the client hears of it at its next fetch
        reader = made_with * 2  # so the server refuses this fragment too: it reads a lost value
        connection.flush()
        with pytest.raises(gt.OutOfMemoryError, match=r'(?s)over its limit.*the work refused '
                                                      r'was recorded from .*py:\d+ to .*py:\d+'):
            kept.tolist()  # the next fetch reports the refusal, as for any failure
        why = r'this tensor was never computed: the server refused the work that made it'
        for lost in (made_with, big):
            with pytest.raises(gt.OutOfMemoryError, match=why + r' \(recorded from .*over its'):
                lost.tolist()
        with pytest.raises(gt.OutOfMemoryError, match=why + r' .*value \d+ was never made.*over'):
            reader.tolist()
        with pytest.raises(gt.OutOfMemoryError, match=why):
            made_with + 1  # at the line that uses it
        assert kept.tolist() == [1.0, 2.0]
        assert (gt.ones(3) * 2).tolist() == [2.0, 2.0, 2.0]


@pytest.mark.time_limit(120)
def test_a_worker_that_cannot_allocate_fails_only_that_program(cluster):
    with connected(cluster.address):
        kept = gt.ones(10)
        huge = gt.zeros(10 ** 12)  # 4 TB
        with pytest.raises(gt.OutOfMemoryError, match='zeros'):
            huge.sum().item()
        assert kept.sum().item() == 10.0
        assert torch.equal((gt.ones(3) * 2).data, torch.full((3,), 2.0))


def test_a_session_cannot_name_another_sessions_values(cluster):
    with connected(cluster.address):
        secret = gt.tensor([1.0, 2.0, 3.0])
        secret.sum().item()
        secret_id = secret._id
        stranger = dealer(cluster.endpoint)
        try:
            send(stranger, Hello('tests:stranger', 1, ''))
            assert isinstance(receive(stranger)[0], Welcome)
            send(stranger, submit_message(fetch=[secret_id], request=1))
            reply, frames = receive(stranger)
            assert isinstance(reply, Fetched) and not frames
            assert 'does not exist in this session' in str(reply.errors)
        finally:
            stranger.close(0)
        assert secret.sum().item() == 6.0
