"""CURVE on real processes and real tcp sockets: keys made by `gt.scripts.keys`; a server
with `--curve-secret` serves clients and workers that have its public key, and sharded
work moves between workers over encrypted peer sockets; a client without the key or with
a wrong one, and a worker alike, get a clear error at once while the server logs and
goes on; with `--curve-clients` only the admitted keys connect; bytes on the wire are
ciphertext; and CURVE alone lets a server listen beyond loopback."""

import os
import select
import shutil
import socket
import stat
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import torch
import zmq
from gt_test_support import (
    READY_SECONDS,
    Cluster,
    assert_server_starts,
    connected,
    free_port,
    run_script,
)

import gt
from gt import ShardConfig, SignalConfig
from gt.runtime import curve
from gt.runtime.protocol import Goodbye, Hello, Welcome
from gt.runtime.transport import dealer, receive, send
from gt.scripts.attach import monitor_endpoint, subscribe
from gt.scripts.keys import main as make_keys

pytestmark = [pytest.mark.skipif(not curve.available(), reason='libzmq without CURVE'),
              pytest.mark.usefixtures('fresh_configs')]


@pytest.fixture(scope='module')
def keys(tmp_path_factory):
    """Key pairs for the server, a worker and a client; the worker's and the client's
    public keys admitted in `admitted/`; a stranger's pair (another server's) apart.
    (Made in this process: the command itself is tested below.)"""
    root = tmp_path_factory.mktemp('curve')
    for name in ('server', 'worker', 'client'):
        make_keys([str(root), '--name', name])
    os.makedirs(root / 'admitted')
    for name in ('worker', 'client'):
        shutil.copy(root / f'{name}.key', root / 'admitted')
    make_keys([str(root / 'stranger')])
    return root


class CurveCluster(Cluster):
    """A Cluster whose server has `--curve-secret` and whose workers get the server's
    public key (and `worker_args`)."""

    def __init__(self, keys, workers: int, server_args: list[str] = (),
                 worker_args: list[str] = ()):
        self.worker_args = list(worker_args)
        self.server_key = str(keys / 'server.key')
        super().__init__(workers, env={'GT_CURVE_SERVER_KEY': self.server_key}, server_args=[
            '--curve-secret', str(keys / 'server.key_secret'), *server_args])

    def _start(self, name: str, args: list[str]) -> subprocess.Popen:
        return super()._start(name, args + self.worker_args if name != 'server' else args)

    def wait_ready(self, workers: int | None = None, timeout: float = READY_SECONDS,
                   secret: str | None = None) -> None:
        """As Cluster.wait_ready, over CURVE (a plain probe would never hear back)."""
        probe = dealer(self.endpoint, keys=curve.client_keys(self.server_key, secret))
        try:
            wanted = len(self.workers) if workers is None else workers
            send(probe, Hello('tests:wait_ready', wanted, ''))
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                assert all(p.poll() is None for p in self.processes), self.logs()
                if probe.poll(250) and isinstance(receive(probe)[0], Welcome):
                    send(probe, Goodbye())
                    return
            raise TimeoutError(f'CURVE cluster not ready within {timeout} s\n' + self.logs())
        finally:
            probe.close(linger=200)


@pytest.fixture(scope='module')
def secured(keys):
    """A CURVE server admitting any key, and two workers with keys made in memory."""
    cluster = CurveCluster(keys, workers=2)
    try:
        cluster.wait_ready()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def with_server_key(secured, monkeypatch):
    monkeypatch.setenv('GT_CURVE_SERVER_KEY', secured.server_key)
    monkeypatch.delenv('GT_CURVE_SECRET', raising=False)


def test_the_keys_command_writes_a_pair(tmp_path):
    command = [sys.executable, '-m', 'gt.scripts.keys', str(tmp_path / 'keys')]
    made = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    public = curve.load_public(str(tmp_path / 'keys' / 'server.key'))
    assert made.stdout.strip() == public.decode()
    assert curve.load_pair(str(tmp_path / 'keys' / 'server.key_secret')).public == public
    assert stat.S_IMODE(os.stat(tmp_path / 'keys' / 'server.key_secret').st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / 'keys' / 'server.key').st_mode) == 0o644
    with pytest.raises(SystemExit):  # never overwritten silently
        make_keys([str(tmp_path / 'keys')])
    assert curve.load_public(str(tmp_path / 'keys' / 'server.key')) == public


def test_a_public_key_written_out_is_taken_whatever_its_characters():
    """Z85 has '/' among its characters: 38% of keys have one, and such a key, written
    out or found in a local dispatcher's note (top, trace), was taken for a path."""
    keys = [zmq.curve_keypair()[0] for _ in range(400)]
    slashed = next(key for key in keys if b'/' in key)
    assert curve.load_public(slashed.decode()) == slashed
    with pytest.raises(ValueError, match='neither a key file nor a 40-character'):
        curve.load_public('keys/server.key')  # a path that is not there


@pytest.mark.time_limit(120)
def test_a_client_with_the_key_computes_over_curve_and_peers_move_encrypted(secured,
                                                                          with_server_key):
    gt.register_config('pair', SignalConfig(shard=ShardConfig(axis=0, workers=[0, 1])))
    data = np.random.default_rng(0).standard_normal((64, 32)).astype(np.float32)
    expected = torch.from_numpy(data)
    with connected(secured.endpoint):  # tcp, not the server's ipc socket
        with gt.signal.context('pair'):
            x = gt.signal.tensor(gt.from_numpy(data), name='pair')
        w = gt.from_numpy(data[:8].T.copy())
        torch.testing.assert_close((x @ w).relu().data, (expected @ expected[:8].T).relu())
        # amax and softmax over the sharded axis need the other worker's rows.
        torch.testing.assert_close(x.amax(dim=0).data, expected.amax(dim=0))
        torch.testing.assert_close(x.softmax(dim=0).data, expected.softmax(dim=0))
        stats = gt.debug.get_worker_stats()
        assert sum(s['peer_bytes_sent'] for s in stats) > 0, stats
        assert all(s['peer_curve'] for s in stats), stats
        peer_endpoints = [s['peer_endpoints'][0] for s in stats]
    for endpoint in peer_endpoints:  # the peer sockets admit CURVE clients only
        plain = dealer(endpoint, connect=False)
        watch = curve.HandshakeWatch(plain, endpoint, None)
        plain.connect(endpoint)
        try:
            with pytest.raises(ConnectionError, match='requires CURVE'):
                watch.check(5000)
        finally:
            watch.close()
            plain.close(0)
    # The monitor socket is a CURVE server too; top and trace subscribe with the key.
    monitor, monitor_keys = monitor_endpoint('127.0.0.1', secured.port)
    assert monitor_keys is not None
    subscriber = subscribe(monitor, b'stats', keys=monitor_keys)
    try:
        assert subscriber.poll(5000), 'no stats from the CURVE monitor socket'
    finally:
        subscriber.close(0)


@pytest.mark.time_limit(60)
def test_top_without_the_key_says_the_server_may_use_curve(secured, monkeypatch):
    """It said only that no dispatcher answered, of one that was there."""
    monkeypatch.delenv('GT_CURVE_SERVER_KEY', raising=False)
    monkeypatch.delenv('GT_CURVE_SECRET', raising=False)
    with pytest.raises(SystemExit, match='no GT dispatcher answered .* set GT_CURVE_SERVER_KEY'):
        monitor_endpoint('127.0.0.1', secured.port)


@pytest.mark.time_limit(60)
def test_a_listener_that_hangs_up_every_handshake_is_a_clear_error(monkeypatch):
    """What a plain client sees of a CURVE server half the time (the server notices the
    mismatch first and hangs up), and all it sees of a port that is no ZeroMQ server."""
    monkeypatch.delenv('GT_CURVE_SERVER_KEY', raising=False)
    monkeypatch.setattr('gt.runtime.dispatcher_waits.SILENCE_SECONDS', 3600.0)
    listener = socket.create_server(('127.0.0.1', 0))

    def hang_up_on_everyone():
        while True:
            try:
                accepted, _ = listener.accept()
            except OSError:
                return
            accepted.close()
    threading.Thread(target=hang_up_on_everyone, daemon=True).start()
    try:
        with pytest.raises(ConnectionError, match='hung up during every handshake: if it is '
                           'a GT server, it requires CURVE encryption'):
            gt.connect(f'127.0.0.1:{listener.getsockname()[1]}')
    finally:
        listener.close()


@pytest.mark.time_limit(120)
def test_no_key_or_a_wrong_key_is_a_clear_error_at_once(secured, keys, monkeypatch):
    monkeypatch.delenv('GT_CURVE_SERVER_KEY', raising=False)
    # No silence timeout within the test's time limit: the error must come from the
    # handshake itself, not from a client that gave up waiting.
    monkeypatch.setattr('gt.runtime.dispatcher_waits.SILENCE_SECONDS', 3600.0)
    with pytest.raises(ConnectionError, match='requires CURVE encryption: set '
                       'GT_CURVE_SERVER_KEY'):
        gt.connect(secured.endpoint)
    wrong = str(keys / 'stranger' / 'server.key')
    with pytest.raises(ConnectionError, match=r'hung up during the CURVE handshake: '
                       r'GT_CURVE_SERVER_KEY \(.*\) is probably not this server'):
        gt.connect(secured.endpoint, curve_server_key=wrong)
    worker = subprocess.run([sys.executable, '-m', 'gt.worker', '-p', str(secured.port),
                             '--curve-server-key', wrong], capture_output=True, text=True,
                            timeout=60, env={**secured.env, 'GT_CURVE_SERVER_KEY': ''})
    assert worker.returncode != 0 and 'is probably not this server' in worker.stderr, \
        worker.stderr
    # Who reads the other's greeting first hangs up, so the server saw a peer without
    # CURVE either way, or a hang-up in the handshake.
    log = logged(secured, 'the peer does not use CURVE', 'the peer hung up during the handshake')
    assert "GT_CURVE_SERVER_KEY is not this server's public key" in log, log
    monkeypatch.setenv('GT_CURVE_SERVER_KEY', secured.server_key)
    with connected(secured.address):  # it goes on serving
        assert gt.ones(3).sum().item() == 3.0
    assert len(secured.workers) == 2 and all(w.poll() is None for w in secured.processes)


def logged(cluster: Cluster, *texts: str, seconds: float = 10.0) -> str:
    """The cluster's logs, once one of `texts` is in them (the server writes from a
    thread)."""
    deadline = time.monotonic() + seconds
    while not any(text in cluster.logs() for text in texts):
        assert time.monotonic() < deadline, f'{texts} not logged:\n{cluster.logs()}'
        time.sleep(0.1)
    return cluster.logs()


class Relay:
    """A tcp relay that keeps every byte it passes, both ways."""

    def __init__(self, target_port: int):
        self.listener = socket.create_server(('127.0.0.1', 0))
        self.port = self.listener.getsockname()[1]
        self.target_port = target_port
        self.seen = bytearray()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        inbound, _ = self.listener.accept()
        outbound = socket.create_connection(('127.0.0.1', self.target_port))
        pair = {inbound: outbound, outbound: inbound}
        while True:
            ready, _, _ = select.select(list(pair), [], [])
            for source in ready:
                chunk = source.recv(1 << 16)
                if not chunk:
                    return
                self.seen += chunk
                pair[source].sendall(chunk)


@pytest.mark.time_limit(120)
def test_bytes_on_the_wire_are_ciphertext(secured, with_server_key):
    relay = Relay(secured.port)
    marker = b'GT-PLAINTEXT-MARKER'
    data = np.frombuffer(marker * 64 + b'\0' * 16, dtype=np.float32)  # fits float32 words
    with connected(f'tcp://127.0.0.1:{relay.port}'):
        fetched = (gt.from_numpy(data) * 1).data  # goes there and comes back
    assert fetched.numpy().tobytes() == data.tobytes()
    assert len(relay.seen) > 2 * data.nbytes  # the relay saw the traffic ...
    # ... and no plaintext: not the data, nor the client's name (host:pid) that a Hello
    # carries. (Not the host name alone: a short one, say 'vm', turns up in random bytes.)
    client_name = f'{socket.gethostname()}:{os.getpid()}'.encode()
    assert marker not in relay.seen and client_name not in relay.seen
    plain = dealer(secured.endpoint)  # a plain ZeroMQ peer is never answered
    try:
        send(plain, Hello('tests:plain', 1, ''))
        assert not plain.poll(1500)
    finally:
        plain.close(0)


@pytest.mark.time_limit(120)
def test_curve_clients_admits_only_the_keys_in_its_directory(keys, monkeypatch):
    cluster = CurveCluster(keys, workers=1, server_args=['--curve-clients',
                                                         str(keys / 'admitted')],
                           worker_args=['--curve-secret', str(keys / 'worker.key_secret')])
    try:
        cluster.wait_ready(secret=str(keys / 'client.key_secret'))
        monkeypatch.setenv('GT_CURVE_SERVER_KEY', cluster.server_key)
        stranger = keys / 'stranger' / 'server.key_secret'
        monkeypatch.setenv('GT_CURVE_SECRET', str(stranger))
        with pytest.raises(ConnectionError, match='refused this CURVE key'):
            gt.connect(cluster.endpoint)
        monkeypatch.delenv('GT_CURVE_SECRET')
        with pytest.raises(ConnectionError, match='refused this CURVE key'):
            gt.connect(cluster.endpoint)  # a key made in memory is no better
        monkeypatch.setenv('GT_CURVE_SECRET', str(keys / 'client.key_secret'))
        with connected(cluster.endpoint):
            assert gt.arange(4).sum().item() == 6
        intruder = subprocess.run([sys.executable, '-m', 'gt.worker', '-p', str(cluster.port)],
                                  capture_output=True, text=True, timeout=60, env=cluster.env)
        assert intruder.returncode != 0, intruder.stderr
        assert 'refused this CURVE key' in intruder.stderr, intruder.stderr
        refused = curve.load_pair(str(stranger)).public.decode()
        logged(cluster, f'refused CURVE key {refused} from 127.0.0.1: not in --curve-clients')
    finally:
        cluster.stop()


def test_curve_alone_lets_a_server_listen_beyond_loopback(keys):
    port = free_port()
    server = [sys.executable, '-m', 'gt.server', '--host', '0.0.0.0', '-p', str(port)]
    env = {k: v for k, v in os.environ.items() if not k.startswith(('GT_CURVE_', 'GT_TOKEN'))}
    refused = subprocess.run(server, capture_output=True, text=True, timeout=60, env=env)
    assert refused.returncode == 2
    assert 'without a token or CURVE keys' in refused.stderr, refused.stderr
    assert '--curve-secret' in refused.stderr and 'gt.scripts.keys' in refused.stderr
    lonely = subprocess.run([*server, '--curve-clients', str(keys / 'admitted')],
                            capture_output=True, text=True, timeout=60, env=env)
    assert lonely.returncode == 2 and '--curve-clients needs --curve-secret' in lonely.stderr
    assert_server_starts([*server[3:], '--curve-secret', str(keys / 'server.key_secret')], env)


@pytest.mark.time_limit(120)
def test_an_auto_started_server_ignores_the_scripts_curve_settings(keys):
    """Those are for a remote server; the local one is private to this user already."""
    result = run_script('import gt; print(gt.ones(2).sum().item())', env={
        'GT_CURVE_SERVER_KEY': str(keys / 'stranger' / 'server.key'),
        'GT_CURVE_SECRET': str(keys / 'server.key_secret')})
    assert result.stdout.strip() == '2.0', result.explain()


def test_peers_on_other_hosts_move_pieces_over_encrypted_tcp():
    """Two workers' exchanges in this process, on 'hosts' of their own so that pieces take
    tcp: a piece arrives under the receiver's key; a sender told a wrong key gets
    nowhere (its handshake fails; the piece waits in its queue)."""
    from gt.runtime.engines import make_engine
    from gt.runtime.exchange import PeerExchange

    engine = make_engine('numpy')
    sender, receiver = (PeerExchange(engine, host, curve.Keys(*zmq.curve_keypair()))
                        for host in ('host-a', 'host-b'))
    wrong_key = zmq.curve_keypair()[0].decode()
    try:
        peers = [[0, 'host-a', sender.endpoints, True, sender.public_key],
                 [1, 'host-b', receiver.endpoints, True, receiver.public_key]]
        sender.set_peers(0, peers)
        receiver.set_peers(1, peers)
        piece = np.arange(6, dtype=np.float32).reshape(2, 3)
        sender._send(1, (0, 0, 1), piece)
        assert sender.outgoing[1].getsockopt_string(zmq.LAST_ENDPOINT).startswith('tcp://')
        received = receiver._receive((0, 0, 1), 0, lambda socket, ms: socket.poll(ms))
        assert np.array_equal(received, piece)
        sender.set_peers(0, [peers[0], [1, 'host-b', receiver.endpoints, True, wrong_key]])
        sender._send(1, (0, 0, 2), piece)
        assert not receiver.socket.poll(1000)
    finally:
        sender.close()
        receiver.close()
