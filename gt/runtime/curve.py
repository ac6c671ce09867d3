"""CURVE encryption and authentication (ZeroMQ's CurveZMQ) for GT's sockets.

The dispatcher's sockets become CURVE servers with the key pair of `gt.server
--curve-secret`; clients and workers name the server's public key (GT_CURVE_SERVER_KEY)
and bring a key pair of their own (GT_CURVE_SECRET), or make one in memory. With
`--curve-clients DIR` a ZAP handler admits only the public keys in DIR. A worker's peer
socket is a CURVE server with that worker's key pair, which the dispatcher passes on to
its peers in `Peers`. ZeroMQ is silent when a handshake fails (the peer just never
hears back), so clients and workers watch their socket's handshakes until one succeeds,
and the server logs the failures it sees.
"""

import os
import sys
import threading
import time
from dataclasses import dataclass

import zmq
import zmq.auth
from zmq.auth.thread import ThreadAuthenticator
from zmq.utils import z85
from zmq.utils.monitor import recv_monitor_message

KEYS_COMMAND = 'python -m gt.scripts.keys DIR'
HANDSHAKE_FAILED = (zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
                    | zmq.EVENT_HANDSHAKE_FAILED_AUTH)
HANG_UPS_MEANING_CURVE = 3  # a plain client's handshakes a CURVE server (or no GT one) ended
LOG_EVERY_SECONDS = 10.0  # a peer with a wrong key retries every 100 ms: log it now and then


def available() -> bool:
    return zmq.has('curve')


@dataclass(frozen=True)
class Keys:
    """A key pair (Z85), and the public key of the server it connects to, if any."""

    public: bytes
    secret: bytes
    server: bytes = b''

    def connect_as_client(self, socket: zmq.Socket, server: bytes | None = None) -> None:
        """Before `connect`: talk CURVE to `server` (default: this pair's server)."""
        socket.curve_serverkey = server or self.server
        socket.curve_publickey = self.public
        socket.curve_secretkey = self.secret

    def serve(self, socket: zmq.Socket) -> None:
        """Before `bind`: accept CURVE clients only, as the owner of this pair."""
        socket.curve_server = True
        socket.curve_publickey = self.public
        socket.curve_secretkey = self.secret


def load_public(source: str | bytes) -> bytes:
    """A public key from a key file (`server.key`; a `.key_secret` file has it too) or
    written out as its 40 Z85 characters."""
    source = os.fsdecode(source)
    if os.path.isfile(source):
        try:
            return zmq.auth.load_certificate(source)[0]
        except (OSError, ValueError) as error:
            raise ValueError(f'cannot read a CURVE public key from {source}: {error}') from None
    if len(source) == 40:  # Z85 has '/' and '.' among its characters: no path test
        try:
            z85.decode(source)
            return source.encode()
        except (ValueError, KeyError):
            pass
    raise ValueError(f'{source!r} is neither a key file nor a 40-character Z85 public key '
                     f'(make a key pair with `{KEYS_COMMAND}`)')


def load_pair(path: str) -> Keys:
    """The key pair in a `.key_secret` file."""
    try:
        public, secret = zmq.auth.load_certificate(path)
    except (OSError, ValueError) as error:
        raise ValueError(f'cannot read a CURVE key pair from {path}: {error} (make one with '
                         f'`{KEYS_COMMAND}`)') from None
    if secret is None:
        raise ValueError(f'{path} holds a public key only: give the matching .key_secret file')
    return Keys(public, secret)


def client_keys(server_key: str | bytes | None = None,
                secret: str | None = None) -> Keys | None:
    """A client's or worker's keys: the server's public key (argument, else
    $GT_CURVE_SERVER_KEY; None without one: no CURVE) and its own pair (`secret`, else
    $GT_CURVE_SECRET, else a new one made in memory, which a server admits unless it was
    given --curve-clients)."""
    server_key = server_key or os.environ.get('GT_CURVE_SERVER_KEY')
    if not server_key:
        return None
    require_curve('GT_CURVE_SERVER_KEY')
    secret = secret or os.environ.get('GT_CURVE_SECRET')
    own = load_pair(secret) if secret else Keys(*zmq.curve_keypair())
    return Keys(own.public, own.secret, load_public(server_key))


def require_curve(what: str) -> None:
    if not available():
        raise RuntimeError(f'{what} asks for CURVE encryption, but this libzmq '
                           f'({zmq.zmq_version()}) was built without it: install a pyzmq '
                           'wheel (which bundles libzmq with libsodium) or build libzmq with '
                           'CURVE')


# ---- the server's side ----------------------------------------------------------------------
class ServerCurve:
    """The dispatcher's key pair and whom it admits: the public keys in `clients` (a
    directory of `.key` files, read again when an unknown key knocks), or any key."""

    def __init__(self, secret_path: str, clients: str | None = None):
        require_curve('--curve-secret')
        self.keys = load_pair(secret_path)
        self.clients = clients
        if clients is not None and not os.path.isdir(clients):
            raise ValueError(f'--curve-clients {clients}: not a directory of public keys')
        self.authenticator: ThreadAuthenticator | None = None

    @property
    def public_key(self) -> str:
        return self.keys.public.decode()

    def protect(self, socket: zmq.Socket, log_failures: bool = False) -> None:
        """Make `socket` (not yet bound) a CURVE server; with `log_failures`, the failed
        handshakes it sees go to stderr."""
        if self.clients is not None and self.authenticator is None:
            # ZAP handlers serve a whole context, and must listen before anyone connects.
            self.authenticator = KeyDirectory(socket.context, self.clients)
            self.authenticator.configure_curve_callback('*', self.authenticator)
            self.authenticator.start()
        self.keys.serve(socket)
        if log_failures:
            monitor = socket.get_monitor_socket(zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
                                                | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL)
            threading.Thread(target=_log_failures, args=(monitor,), daemon=True,
                             name='gt-curve-log').start()


class KeyDirectory(ThreadAuthenticator):
    """A ZAP handler that admits the public keys in a directory and logs the others with
    their address (which only the ZAP request carries)."""

    def __init__(self, context: zmq.Context, directory: str):
        super().__init__(context)
        self.directory = directory
        self.admitted = zmq.auth.load_certificates(directory)
        self.address = ''

    async def handle_zap_message(self, msg: list) -> None:
        # Requests are handled one at a time, in this handler's thread.
        self.address = msg[3].decode(errors='replace') if len(msg) > 3 else ''
        await super().handle_zap_message(msg)

    def callback(self, domain: str, key: bytes) -> bool:
        if key not in self.admitted:
            self.admitted = zmq.auth.load_certificates(self.directory)  # added since?
        if key in self.admitted:
            return True
        print(f'gt.server: refused CURVE key {key.decode()} from {describe_peer(self.address)}: '
              f'not in --curve-clients {self.directory}', file=sys.stderr, flush=True)
        return False


def describe_peer(address: str) -> str:
    """A peer's address as ZeroMQ gives it (a ZAP request's, a message's Peer-Address): an
    IP address, or for ipc `localhost:uid:gid:pid`."""
    parts = address.split(':')
    if len(parts) == 4 and parts[0] == 'localhost':
        return f'a local socket (uid {parts[1]}, pid {parts[3]})'
    return address or 'a local socket'


def _log_failures(monitor: zmq.Socket) -> None:
    """Say on stderr why peers failed their handshake (the ZAP handler logs refused keys);
    a peer retrying every 100 ms is logged once per LOG_EVERY_SECONDS."""
    last_logged: dict[int, float] = {}
    repeats: dict[int, int] = {}
    while True:
        try:
            event = recv_monitor_message(monitor)
        except zmq.ZMQError:
            return
        if event['event'] == zmq.EVENT_MONITOR_STOPPED:
            return
        now = time.monotonic()
        reason = event['value'] if event['event'] == zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL else 0
        if now - last_logged.get(reason, -LOG_EVERY_SECONDS) < LOG_EVERY_SECONDS:
            repeats[reason] = repeats.get(reason, 0) + 1
            continue
        more = repeats.pop(reason, 0)
        endpoint = event['endpoint'].decode(errors='replace')
        print(f'gt.server: refused a connection on {endpoint}: {_server_side(reason)}'
              + (f' ({more} more since)' if more else ''), file=sys.stderr, flush=True)
        last_logged[reason] = now


def _server_side(reason: int) -> str:
    if reason == 0:  # a hang-up: a peer that saw the mismatch first and left at once
        return ('the peer hung up during the handshake (one without CURVE, or without '
                'this server\'s public key?)')
    if reason == zmq.PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH:
        return 'the peer does not use CURVE (a client or worker without GT_CURVE_SERVER_KEY)'
    if reason == zmq.PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC:
        return ('the peer\'s CURVE handshake does not decrypt: its GT_CURVE_SERVER_KEY is not '
                'this server\'s public key')
    return f'its handshake failed (ZeroMQ protocol error {reason:#x})'


# ---- the client's side ----------------------------------------------------------------------
class HandshakeWatch:
    """Why a client's or worker's handshakes with the server fail, from the socket's
    monitor: a ConnectionError that says what to set, instead of silence. Made before
    the socket connects (a failed mechanism is not retried, so its one event must not be
    missed); closed once a handshake succeeded."""

    def __init__(self, socket: zmq.Socket, endpoint: str, keys: Keys | None):
        self.socket = socket
        self.endpoint = endpoint
        self.keys = keys
        self.succeeded = False
        self.hang_ups = 0  # before any handshake succeeded, without CURVE keys
        self.monitor = socket.get_monitor_socket(HANDSHAKE_FAILED
                                                 | zmq.EVENT_HANDSHAKE_SUCCEEDED)

    def check(self, milliseconds: int = 0) -> bool:
        """Read the events so far (waiting up to `milliseconds` for one): True once a
        handshake succeeded; a ConnectionError if one failed."""
        while not self.succeeded and self.monitor.poll(milliseconds):
            event = recv_monitor_message(self.monitor)
            if event['event'] == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                self.succeeded = True
            elif event['event'] & HANDSHAKE_FAILED:
                message = self._failure(event['event'], event['value'])
                if message:
                    raise ConnectionError(message)
        return self.succeeded

    def wait(self) -> None:
        """Until a handshake succeeds (however long the server takes to start)."""
        while not self.check(1000):
            pass

    def hint(self) -> str:
        """For a timeout's message: whether the CURVE handshake ever completed."""
        if self.keys is None or self.succeeded:
            return ''
        return (' (its CURVE handshake never completed: is GT_CURVE_SERVER_KEY this '
                'server\'s public key?)')

    def close(self) -> None:
        if self.monitor is not None:
            self.socket.disable_monitor()
            self.monitor.close(0)
            self.monitor = None

    def _failure(self, kind: int, value: int) -> str:
        where = f'the GT server at {self.endpoint}'
        mismatch = (kind == zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
                    and value == zmq.PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH)
        set_the_key = ('requires CURVE encryption: set GT_CURVE_SERVER_KEY to its public key '
                       'file (server.key from the server\'s operator), or pass it as '
                       'gt.connect(address, curve_server_key=PATH) or gt.worker '
                       '--curve-server-key PATH')
        if mismatch and self.keys is None:
            return f'{where} {set_the_key}'
        if kind == zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL and self.keys is None:
            # The server saw the mismatch first and hung up; which side sees it first is
            # a race, retried every ~100 ms, so a run of hang-ups says it as surely.
            self.hang_ups += 1
            if self.hang_ups >= HANG_UPS_MEANING_CURVE:
                return (f'{where} hung up during every handshake: if it is a GT server, it '
                        f'{set_the_key}')
            return ''
        if mismatch:
            return (f'{where} does not use CURVE, but GT_CURVE_SERVER_KEY is set: unset it, '
                    'or start the server with --curve-secret')
        if kind == zmq.EVENT_HANDSHAKE_FAILED_AUTH:
            key = self.keys.public.decode() if self.keys else '?'
            return (f'{where} refused this CURVE key ({key}; ZAP status {value}): its '
                    'operator must add the public key to the server\'s --curve-clients '
                    'directory, or set GT_CURVE_SECRET to the .key_secret file of a key it '
                    'admits')
        if kind == zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL and self.keys is not None:
            return (f'{where} hung up during the CURVE handshake: GT_CURVE_SERVER_KEY '
                    f'({self.keys.server.decode()}) is probably not this server\'s public key')
        if kind == zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL:
            return f'the handshake with {where} failed (ZeroMQ protocol error {value:#x})'
        return ''
