"""Finding a running dispatcher's monitor socket and subscribing to it (for `top` and
`trace`): the newest live dispatcher on this host by default, or the one at
`--host`/`--port`, which says where its monitor is when asked for its statistics (with
its token, GT_TOKEN, when it has one). A dispatcher with CURVE needs its public key:
GT_CURVE_SERVER_KEY, or for one on this host its note; the key pair is GT_CURVE_SECRET,
else one made in memory. A server with a token and no CURVE keys shows its monitor on its
own host only: the feed would go unencrypted and unchecked to anyone who asked."""

import argparse
import math
import os
import sys
from typing import Any, Callable

import zmq

from gt.runtime import curve
from gt.runtime.events import running_dispatchers
from gt.runtime.protocol import Refused, Stats, StatsRequest
from gt.runtime.transport import dealer, receive, send
from gt.server import LOOPBACK

ASK_SECONDS = 3.0
# No statistics (published every half second to any subscriber) for this long from a
# dispatcher whose process cannot be seen: it went away.
GONE_SECONDS = 6.0


def monitor_endpoint(host: str | None, port: int | None) -> tuple[str, curve.Keys | None]:
    """`tcp://host:monitor_port` of the dispatcher asked for, and the CURVE keys to
    subscribe with (None: it has none); SystemExit with a message that says what to do
    when there is none."""
    try:
        keys = curve.client_keys()
        if port is None:
            found = running_dispatchers()
            if not found:
                raise SystemExit('no GT dispatcher is running on this host (start a GT script '
                                 'or `python -m gt.server`, or name one with --host and --port)')
            if len(found) > 1:
                print(_chosen_among(found), file=sys.stderr, flush=True)
            if found[0].get('curve_key'):
                keys = curve.client_keys(found[0]['curve_key'])
            return f"tcp://{host or '127.0.0.1'}:{found[0]['monitor_port']}", keys
    except (ValueError, RuntimeError) as error:
        raise SystemExit(str(error)) from None
    host = host or '127.0.0.1'
    socket = dealer(f'tcp://{host}:{port}', keys=keys)
    try:
        send(socket, StatsRequest(0, os.environ.get('GT_TOKEN', '')))
        if not socket.poll(int(ASK_SECONDS * 1000)):
            hint = '' if keys else (' (a server started with --curve-secret answers only '
                                    'CURVE: set GT_CURVE_SERVER_KEY to its public key)')
            raise SystemExit(f'no GT dispatcher answered at {host}:{port}{hint}')
        message, _ = receive(socket)
    finally:
        socket.close(0)
    if isinstance(message, Refused):
        raise SystemExit(f'the GT dispatcher at {host}:{port} refused: {message.reason}')
    if not isinstance(message, Stats) or 'monitor_port' not in message.dispatcher:
        raise SystemExit(f'{host}:{port} did not answer as a GT dispatcher')
    shown_on = message.dispatcher.get('monitor_host', host)
    if shown_on in LOOPBACK and host not in LOOPBACK:
        raise SystemExit(f'the GT dispatcher at {host}:{port} shows its monitor on its own '
                         'host only (it has a token but no CURVE keys to encrypt the feed): '
                         'run this there, or start the server with --curve-secret')
    return f"tcp://{host}:{message.dispatcher['monitor_port']}", keys


def _chosen_among(found: list[dict]) -> str:
    """Which of several dispatchers on this host is watched, and how to choose another
    (a script's own auto-started one listens on an ipc socket only: no port chooses it)."""
    def named(note: dict) -> str:
        tcp = [e for e in note['endpoints'] if e.startswith('tcp://')]
        where = f"port {tcp[0].rpartition(':')[2]}" if tcp else 'a script\'s own, no port'
        return f"{where} (pid {note['pid']})"
    others = [named(note) for note in found[1:]]
    return (f'gt: {len(found)} GT dispatchers run on this host; watching the newest, '
            f'{named(found[0])}. Others: {", ".join(others)}; --port chooses one by its port')


def subscribe(endpoint: str, *topics: bytes, keys: curve.Keys | None = None) -> zmq.Socket:
    socket = zmq.Context.instance().socket(zmq.SUB)
    socket.setsockopt(zmq.LINGER, 0)
    if keys is not None:
        keys.connect_as_client(socket)
    for topic in topics:
        socket.setsockopt(zmq.SUBSCRIBE, topic)
    socket.connect(endpoint)
    return socket


def _above_zero(convert: Callable[[str], Any], noun: str) -> Callable[[str], Any]:
    """An argparse type: `convert(text)`, a finite value above 0, else a usage error."""
    def parse(text: str) -> Any:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f'{text!r} is not {noun}') from None
        if not math.isfinite(value) or value <= 0:
            raise argparse.ArgumentTypeError(f'{text!r} is not {noun} above 0')
        return value
    return parse


positive_seconds = _above_zero(float, 'a number of seconds')  # a command line's duration
positive_count = _above_zero(int, 'a whole number')  # a command line's count
