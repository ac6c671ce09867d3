"""`python -m gt.scripts.top [--host H --port P] [--interval S] [-n N]`: an htop-style live
view of a running dispatcher (the newest on this host by default): per worker its activity
split by op, idle time, memory and compiled programs; per client session its ops per
second, share of each worker and bytes held. `q` quits; it also ends when the dispatcher
goes away, or after N frames. Its output not a terminal (`top > file`, a pipe), it prints
a frame every interval (2 s unless given) one after another, as `top -b` does."""

import argparse
import contextlib
import os
import signal
import sys
import termios
import time
import tty
from collections.abc import Iterator

import msgpack
import psutil
import zmq
from rich import box
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from gt.runtime.curve import Keys
from gt.runtime.events import running_dispatchers
from gt.runtime.transport import tcp_port
from gt.scripts.attach import (
    GONE_SECONDS,
    monitor_endpoint,
    positive_count,
    positive_seconds,
    subscribe,
)
from gt.scripts.top_model import Model, WorkerView, human_bytes

COLOURS = ('bright_blue', 'green', 'yellow', 'magenta', 'cyan', 'red', 'bright_white')
OTHER_COLOUR = 'grey50'
BAR_WIDTH = 36
QUIET_SECONDS = 3.0  # no stats for this long: is the dispatcher still there?


def percent(share: float | None) -> str:
    return '-' if share is None else f'{100 * share:.0f}%'


def pick_colours(top: list[str], colours: dict[str, str]) -> dict[str, str]:
    """Colours for the top ops; an op keeps the one it had when it is free."""
    picked: dict[str, str] = {}
    for op in top:
        if colours.get(op) not in COLOURS or colours[op] in picked.values():
            colours[op] = next(c for c in COLOURS if c not in picked.values()
                               and c not in (colours.get(o) for o in top if o != op))
        picked[op] = colours[op]
    return picked


def activity_bar(worker: WorkerView, top: dict[str, str]) -> Text:
    """Busy cells coloured by op (the top ops by their colour, the rest grey), then idle."""
    bar, total, drawn = Text(), 0.0, 0
    for op, rate in sorted(worker.op_utilization(), key=lambda item: item[0] not in top):
        total += rate
        end = round(min(total, 1.0) * BAR_WIDTH)
        bar.append('█' * (end - drawn), top.get(op, OTHER_COLOUR))
        drawn = end
    return bar.append('·' * (BAR_WIDTH - drawn), 'grey30')


def render(model: Model, title: str, quiet: float, colours: dict[str, str]) -> Group:
    top = pick_colours(model.top_ops(len(COLOURS)), colours)
    header = Text.assemble(('GT top', 'bold'), f'  dispatcher {title}')
    if model.uptime is None:
        header.append('  waiting for stats…', 'yellow')
    else:
        alive = sum(worker.alive for worker in model.workers.values())
        uptime = int(model.uptime)
        header.append(f'  clients {len(model.sessions)}  workers {alive}/{len(model.workers)}'
                      f'  up {uptime // 3600}:{uptime // 60 % 60:02}:{uptime % 60:02}')
    if quiet > QUIET_SECONDS:
        header.append(f'  no stats for {quiet:.0f} s', 'bold red')
    header.append('   q quits', 'dim')

    workers = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for name in ('worker', 'device', 'state', 'activity by op', 'busy', 'idle', 'memory',
                 'compiled'):
        workers.add_column(name, justify='right' if name in ('busy', 'idle', 'memory',
                                                             'compiled') else 'left')
    for worker in sorted(model.workers.values(), key=lambda w: w.index):
        state = Text('alive', 'green') if worker.alive else Text('lost', 'bold red')
        workers.add_row(f'worker{worker.index}', f'{worker.device}@{worker.host}', state,
                        activity_bar(worker, top), percent(worker.utilization),
                        percent(worker.idle), human_bytes(worker.memory),
                        str(worker.compiled_programs if worker.compiled_programs is not None
                            else '-'))
    legend = Text('  ')
    for op, colour in top.items():
        legend.append('█ ', colour).append(f'{op}  ')
    legend.append('█ ', OTHER_COLOUR).append('other  ').append('· ', 'grey30').append('idle')

    sessions = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for name in ('session', 'client', 'ops', 'ops/s'):
        sessions.add_column(name, justify='left' if name == 'client' else 'right')
    indexes = sorted(model.workers)
    for index in indexes:
        sessions.add_column(f'on worker{index}', justify='right')
    sessions.add_column('held', justify='right')
    sessions.add_column('values', justify='right')
    for session in sorted(model.sessions.values(), key=lambda s: s.number):
        rate = '-' if session.ops_rate is None else f'{session.ops_rate:.0f}'
        sessions.add_row(str(session.number), session.client, str(session.ops), rate,
                         *(percent(session.share.get(index)) for index in indexes),
                         human_bytes(session.bytes_held), str(session.values))
    if not model.sessions:
        sessions.caption = 'no client sessions'
    return Group(header, workers, legend, sessions)


def find_note(host: str | None, endpoint: str) -> dict | None:
    """The registry's note of the dispatcher whose monitor is `endpoint`, when it runs here."""
    if host not in (None, '127.0.0.1', 'localhost'):
        return None
    port = int(endpoint.rsplit(':', 1)[1])
    return next((note for note in running_dispatchers() if note['monitor_port'] == port), None)


def process_alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


@contextlib.contextmanager
def keys() -> Iterator[int | None]:
    """stdin's descriptor in cbreak mode (keys arrive one by one, unechoed), restored on
    the way out; None when stdin is no terminal."""
    if not sys.stdin.isatty():
        yield None
        return
    descriptor = sys.stdin.fileno()
    saved = termios.tcgetattr(descriptor)
    tty.setcbreak(descriptor)
    try:
        yield descriptor
    finally:
        termios.tcsetattr(descriptor, termios.TCSADRAIN, saved)


class Printed:
    """Frames printed one after another, for output that is no terminal."""

    def __init__(self) -> None:
        self.console = Console(file=sys.stdout, width=120, color_system=None)

    def __enter__(self) -> 'Printed':
        return self

    def __exit__(self, *exception: object) -> None:
        sys.stdout.flush()

    def update(self, frame: object, refresh: bool = True) -> None:
        self.console.print(frame)
        self.console.print()
        sys.stdout.flush()


def screen() -> Live | Printed:
    if sys.stdout.isatty():
        return Live(auto_refresh=False, screen=True, transient=True)
    return Printed()


def watch(endpoint: str, title: str, pid: int | None, interval: float,
          curve_keys: Keys | None = None, frames: int | None = None) -> str:
    """Draw until `q`, the dispatcher goes away or `frames` were drawn; returns why it
    stopped."""
    socket, model, colours = subscribe(endpoint, b'stats', keys=curve_keys), Model(), {}
    last_stats = time.monotonic()
    # Printed frames wait an interval for the first stats; a screen shows its header at once.
    next_frame = last_stats + (0.0 if sys.stdout.isatty() else interval)
    drawn = 0
    with contextlib.closing(socket), keys() as stdin, screen() as live:
        poller = zmq.Poller()
        poller.register(socket, zmq.POLLIN)
        if stdin is not None:
            poller.register(stdin, zmq.POLLIN)
        while True:
            ready = dict(poller.poll(max(0, int((next_frame - time.monotonic()) * 1000))))
            while socket.poll(0):
                _, payload = socket.recv_multipart()
                model.update(msgpack.unpackb(payload, raw=False, strict_map_key=False))
                last_stats = time.monotonic()
            if stdin in ready and b'q' in os.read(stdin, 64).lower():
                return ''
            quiet = time.monotonic() - last_stats
            if quiet > QUIET_SECONDS and (not process_alive(pid) if pid is not None
                                          else quiet > GONE_SECONDS):
                return f'the dispatcher at {title} went away'
            if time.monotonic() >= next_frame:
                live.update(render(model, title, quiet, colours), refresh=True)
                next_frame = time.monotonic() + interval
                drawn += 1
                if frames is not None and drawn >= frames:
                    return ''


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog='python -m gt.scripts.top', description=__doc__)
    parser.add_argument('--port', type=tcp_port, help='the dispatcher\'s port (default: the '
                        'newest dispatcher running on this host)')
    parser.add_argument('--host', help='the dispatcher\'s host (default 127.0.0.1)')
    parser.add_argument('--interval', type=positive_seconds,
                        help='seconds between redraws (default 0.25; 2 when the output is '
                        'no terminal)')
    parser.add_argument('-n', '--frames', type=positive_count,
                        help='stop after this many frames (default: until q)')
    args = parser.parse_args(argv)
    interval = args.interval or (0.25 if sys.stdout.isatty() else 2.0)
    endpoint, curve_keys = monitor_endpoint(args.host, args.port)
    note = find_note(args.host, endpoint)
    if note is not None:
        title = f"{note['endpoints'][0]} (pid {note['pid']})"
    else:
        title = f"{args.host or '127.0.0.1'}:{args.port}"
    # A terminate signal unwinds like Ctrl-C does, so the terminal is restored either way.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        reason = watch(endpoint, title, note and note['pid'], max(0.05, interval),
                       curve_keys, args.frames)
    except KeyboardInterrupt:
        reason = ''
    if reason:
        print(f'gt top: {reason}')


if __name__ == '__main__':
    main()
