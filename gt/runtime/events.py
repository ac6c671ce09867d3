"""What the dispatcher saw and did, as events: the instruction log and the monitor feed.

An event is `(seconds, kind, peer, message, fields)`: seconds since the dispatcher
started, a kind (`RECV` from a client, `WORKER_SEND`, `WORKER_RECV`, `SEND` to a client,
`WORKER_START`/`WORKER_END` of a program as its worker reports them, `CONNECT`, `DISCONNECT`,
`WORKER_JOIN`, `WORKER_LOST`), the peer (a client's `host:pid` or a worker's name),
the message kind, and `key=value` details. The log has one line per event, in the
seeds' format:

    [TAPE 0.003s] RECV         | host:59712      | Submit     | ops=12 fetch=1 base=40

Nothing is recorded unless a log is open (`GT_INSTRUCTION_LOG`, `--log`) or a
subscriber asks for events (`trace`; `top` asks only for statistics); lines are
formatted and written by a background thread, and the monitor socket (ZeroMQ XPUB)
drops what a slow subscriber cannot take, so neither ever slows the dispatcher's loop.
"""

import contextlib
import fcntl
import json
import os
import queue
import re
import threading
import time
from typing import Any

import msgpack
import psutil
import zmq

LINE = re.compile(r'^\[TAPE (?P<seconds>\d+\.\d+)s\] (?P<kind>\S+)\s*\| (?P<peer>.*?)\s*\| '
                  r'(?P<message>\S+)\s*\|(?P<fields>.*)$')
FIELD = re.compile(r'(\w+)=(\S*)')
MONITOR_HWM = 10000  # events queued per subscriber before the newest are dropped
CLOSE_SECONDS = 5.0  # the longest a closing dispatcher waits for its log to be written


def format_line(seconds: float, kind: str, peer: str, message: str, fields: dict) -> str:
    details = ' '.join(f'{key}={_plain(value)}' for key, value in fields.items())
    return f'[TAPE {seconds:.3f}s] {kind:<12} | {peer:<15} | {message:<10} | {details}'


def _plain(value: Any) -> str:
    """A field value without spaces, so lines split back into fields."""
    if isinstance(value, float):
        return f'{value:.6g}'
    if isinstance(value, dict):
        return ','.join(f'{k}:{_plain(v)}' for k, v in value.items())
    return str(value).replace(' ', '')


def parse_line(line: str) -> tuple[float, str, str, str, dict] | None:
    """An event back from a log line; None for a line that is not one."""
    match = LINE.match(line.rstrip('\n'))
    if match is None:
        return None
    fields = dict(FIELD.findall(match['fields']))
    return (float(match['seconds']), match['kind'], match['peer'], match['message'], fields)


class LogInUse(RuntimeError):
    """Another dispatcher writes this instruction log."""


def _own_log(path: str) -> Any:
    """The log, opened afresh and held: one log per run, as `GT_INSTRUCTION_LOG=ops.log
    python train.py` reads (a second run appended, and `visualize` drew both as one), and
    one run per log: two scripts given the same path each truncated it, and one run's
    events were lost without a word. A lock taken before truncating says so instead."""
    file = open(path, 'a', buffering=1 << 16)  # noqa: SIM115 - the writer thread's
    try:
        fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        file.close()
        raise LogInUse(f'the instruction log {path!r} is being written by another GT server; '
                       'give each its own (GT_INSTRUCTION_LOG, --log)') from None
    file.truncate(0)
    return file


class Events:
    """The dispatcher's event sink. `on` is False while nobody listens: callers check it
    before building an event, so a silent dispatcher pays one attribute read."""

    def __init__(self, log_path: str | None, context: zmq.Context, host: str = '127.0.0.1',
                 curve: Any = None):
        self.epoch = time.time()
        self.on = False
        self.lines: queue.SimpleQueue | None = None
        if log_path:
            self.lines = queue.SimpleQueue()
            self.file = _own_log(log_path)
            self.writer = threading.Thread(target=self._write, daemon=True,
                                           name='gt-instruction-log')
            self.writer.start()
        self.monitor = context.socket(zmq.XPUB)
        self.monitor.setsockopt(zmq.LINGER, 0)
        self.monitor.setsockopt(zmq.SNDHWM, MONITOR_HWM)
        self.monitor.setsockopt(zmq.XPUB_VERBOSE, 1)
        if curve is not None:  # gt.runtime.curve.ServerCurve: subscribers need its key too
            curve.protect(self.monitor)
        self.monitor_port = self.monitor.bind_to_random_port(f'tcp://{host}')
        self.subscribers = 0  # to anything: stats are published while there are any
        self.event_subscribers = 0  # to events: only these turn event recording on
        self._update()

    def _update(self) -> None:
        self.on = self.lines is not None or self.event_subscribers > 0

    def seconds(self, wall: float | None = None) -> float:
        return (time.time() if wall is None else wall) - self.epoch

    def emit(self, kind: str, peer: str, message: str, wall: float | None = None,
             **fields: Any) -> None:
        event = (self.seconds(wall), kind, peer, message, fields)
        if self.lines is not None:
            self.lines.put(event)
        if self.event_subscribers:
            self.publish(b'event', event)

    def publish(self, topic: bytes, payload: Any) -> None:
        try:
            self.monitor.send_multipart([topic, msgpack.packb(payload, use_bin_type=True)],
                                        zmq.NOBLOCK)
        except zmq.ZMQError:
            pass  # a full queue: the monitor misses this one, the dispatcher goes on

    def poll_subscriptions(self) -> None:
        """Count subscribers from the XPUB's (un)subscribe messages."""
        while True:
            try:
                message = self.monitor.recv(zmq.NOBLOCK)
            except zmq.Again:
                break
            change = {b'\x01': 1, b'\x00': -1}.get(message[:1], 0)
            self.subscribers = max(0, self.subscribers + change)
            if b'event'.startswith(message[1:]):  # b'event' or everything (b'')
                self.event_subscribers = max(0, self.event_subscribers + change)
        self._update()

    def _write(self) -> None:
        while True:
            event = self.lines.get()
            if event is None:
                self.file.flush()
                return
            self.file.write(format_line(*event) + '\n')
            if self.lines.empty():
                self.file.flush()

    def close(self) -> None:
        """Write out every event emitted (the writer is a daemon: a dispatcher exiting
        right after this lost the log's last lines)."""
        if self.lines is not None:
            self.lines.put(None)
            self.writer.join(CLOSE_SECONDS)
        self.monitor.close(0)


# ---- finding a running dispatcher on this host --------------------------------------------
def registry_dir() -> str:
    return os.path.join(os.environ.get('XDG_RUNTIME_DIR') or '/tmp', f'gt-{os.getuid()}',
                        'dispatchers')


def register_dispatcher(endpoints: list[str], monitor_port: int,
                        curve_key: str | None = None) -> str:
    """Note this dispatcher where `top` and `trace` look, with its CURVE public key when
    it has one; returns the note's path."""
    folder = registry_dir()
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f'{os.getpid()}.json')
    with open(path, 'w') as file:
        json.dump({'pid': os.getpid(), 'endpoints': endpoints, 'monitor_port': monitor_port,
                   'started': time.time(), 'curve_key': curve_key}, file)
    return path


def running_dispatchers() -> list[dict]:
    """Dispatchers on this host whose process is alive, newest first. The notes of dead
    ones (killed, so they could not remove them) are removed: a process started after
    its note was written has only reused the number."""
    found = []
    folder = registry_dir()
    for name in os.listdir(folder) if os.path.isdir(folder) else []:
        path = os.path.join(folder, name)
        try:
            with open(path) as file:
                note = json.load(file)
            alive = psutil.Process(note['pid']).create_time() <= note['started'] + 1.0
        except psutil.NoSuchProcess:
            alive = False
        except (OSError, ValueError, KeyError, TypeError, psutil.Error):
            continue  # being written, or not ours to judge
        if alive:
            found.append(note)
        else:
            with contextlib.suppress(OSError):
                os.unlink(path)
    return sorted(found, key=lambda note: note['started'], reverse=True)
