"""`python -m gt.scripts.trace -s SECONDS [-n EVENTS] [--port P] [--dir DIR]`: capture a
running dispatcher's events into `DIR/trace_<time>.log`, in the instruction log's format
(so `python -m gt.scripts.visualize` reads it)."""

import argparse
import os
import time

import msgpack

from gt.runtime import curve
from gt.runtime.events import format_line
from gt.runtime.transport import tcp_port
from gt.scripts.attach import (
    GONE_SECONDS,
    monitor_endpoint,
    positive_count,
    positive_seconds,
    subscribe,
)


def capture(endpoint: str, seconds: float, max_events: int | None,
            keys: curve.Keys | None = None) -> tuple[list, bool]:
    """The events heard within `seconds` (at most `max_events`), and whether the
    dispatcher went away meanwhile: its statistics, published every half second to any
    subscriber, are the heartbeat (a trace waited out its seconds after the end)."""
    socket = subscribe(endpoint, b'event', b'stats', keys=keys)
    events: list = []
    deadline = time.monotonic() + seconds
    last_heard = time.monotonic()
    try:
        while max_events is None or len(events) < max_events:
            left = deadline - time.monotonic()
            if left <= 0:
                return events, False
            if not socket.poll(int(min(left, 0.5) * 1000)):
                if time.monotonic() - last_heard > GONE_SECONDS:
                    return events, True
                continue
            topic, payload = socket.recv_multipart()
            last_heard = time.monotonic()
            if topic == b'event':
                events.append(msgpack.unpackb(payload, raw=False))
    finally:
        socket.close(0)
    return events, False


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog='python -m gt.scripts.trace', description=__doc__)
    parser.add_argument('-s', '--seconds', type=positive_seconds, required=True,
                        help='longest time to capture for')
    parser.add_argument('-n', '--max-events', type=positive_count,
                        help='stop after this many events')
    parser.add_argument('--port', type=tcp_port, help='the dispatcher\'s port (default: the '
                        'newest dispatcher running on this host)')
    parser.add_argument('--host', help='the dispatcher\'s host (default 127.0.0.1)')
    parser.add_argument('--dir', default='.', help='where to write the trace (default: here)')
    args = parser.parse_args(argv)
    # Opened before the capture: a --dir that cannot take the file lost a whole capture.
    path = os.path.join(args.dir, f'trace_{time.strftime("%Y%m%d_%H%M%S")}.log')
    try:
        os.makedirs(args.dir, exist_ok=True)
        file = open(path, 'w')
    except OSError as error:
        raise SystemExit(f'gt trace: cannot write {path!r}: {error.strerror}') from None
    with file:
        endpoint, keys = monitor_endpoint(args.host, args.port)
        events, gone = capture(endpoint, args.seconds, args.max_events, keys)
        if gone:
            print(f'the dispatcher at {endpoint} went away: writing what was heard')
        for seconds, kind, peer, message, fields in events:
            file.write(format_line(seconds, kind, peer, message, fields) + '\n')
    print(f'{len(events)} events from {endpoint} written to {path}')


if __name__ == '__main__':
    main()
