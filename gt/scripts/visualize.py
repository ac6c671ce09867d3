"""`python -m gt.scripts.visualize LOG [LOG...] --output timeline.png --chrome trace.json`:
draw an instruction log (`GT_INSTRUCTION_LOG`, `gt.server --log`, or `gt.scripts.trace`'s
`trace_*.log`) as a timeline with one lane per client, the dispatcher and each worker
(`timeline.py`), and/or write it as a Chrome/Perfetto trace (`chrome_trace.py`).

This module reads the logs into a `Trace`: every event on its lane, program runs paired
from WORKER_START/WORKER_END, fetches from their RECV to their SEND, and flows that link
one client fragment's events across the lanes.
"""

import argparse
import glob
import itertools
import os
from collections import Counter, defaultdict, deque
from dataclasses import dataclass, field, replace

from gt.runtime.events import parse_line

DISPATCHER = 'dispatcher'
CLIENT_KINDS = {'CONNECT', 'RECV', 'SEND', 'DISCONNECT'}
# `kinds` lists a fragment's commonest ops; scalar constants lead many counts, never the work.
BOOKKEEPING_OPS = {'scalar'}


@dataclass(frozen=True)
class Lane:
    key: str  # 'client:<peer>', 'dispatcher', 'worker:<index>' or 'worker:<index>:express'
    label: str
    group: str  # 'client', 'dispatcher' or 'worker'


@dataclass(frozen=True)
class Event:
    seconds: float
    kind: str
    peer: str
    message: str
    fields: dict
    lane: str
    op: str | None = None  # the op that colours it; None for a message without ops
    flow: int | None = None  # the client fragment it belongs to
    target: float | None = None  # WORKER_SEND: when its program started on the worker


@dataclass(frozen=True)
class Interval:
    """A program's run on a worker lane, or a fetch in flight on the dispatcher's."""
    start: float
    end: float
    lane: str
    name: str  # the instruction id: `p2` for a program, `s1:b31` for a fetch
    op: str | None
    flow: int | None
    fields: dict


@dataclass
class Trace:
    lanes: list[Lane]
    events: list[Event]  # sorted by time
    runs: list[Interval] = field(default_factory=list)
    fetches: list[Interval] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    ops: list[str] = field(default_factory=list)  # in the whole log, commonest first

    def window(self, start: float | None, end: float | None) -> 'Trace':
        """What happens between `start` and `end` seconds (intervals that overlap it)."""
        low = float('-inf') if start is None else start
        high = float('inf') if end is None else end
        return Trace(self.lanes, [e for e in self.events if low <= e.seconds <= high],
                     [r for r in self.runs if r.end >= low and r.start <= high],
                     [f for f in self.fetches if f.end >= low and f.start <= high], self.sources,
                     self.ops)

    def times(self) -> list[float]:
        return sorted([e.seconds for e in self.events]
                      + [t for i in self.runs + self.fetches for t in (i.start, i.end)])


def first_op(kinds: str | None) -> str | None:
    """The op a `kinds` field (`scalar:6,matmul:4,randn:2`) is coloured by: its first."""
    names = [item.split(':')[0] for item in (kinds or '').split(',') if item not in ('', '-')]
    work = [name for name in names if name not in BOOKKEEPING_OPS]
    return (work or names or [None])[0]


def expand(paths: list[str]) -> list[str]:
    """Each path, or the files a glob names, in order; SystemExit for one that is missing."""
    found = []
    for path in paths:
        matches = sorted(glob.glob(path)) if glob.has_magic(path) else [path]
        if not matches:
            raise SystemExit(f'visualize: no file matches {path!r}')
        for match in matches:
            if os.path.isdir(match):
                raise SystemExit(f'visualize: {match} is a folder; name its logs '
                                 f'({os.path.join(match, "trace_*.log")}, say)')
            if not os.path.isfile(match):
                raise SystemExit(f'visualize: no such log file: {match}')
            found.append(match)
    return found


def load_trace(paths: list[str]) -> Trace:
    """The events of every log in `paths` (files or globs); SystemExit when there are none."""
    files = expand(paths)
    lanes: dict[str, Lane] = {}
    events, runs, fetches = [], [], []
    flows = itertools.count()
    lines = 0
    for path in files:
        with open(path, errors='replace') as file:
            text = file.read().splitlines()
        lines += sum(bool(line.strip()) for line in text)
        parsed = [event for event in map(parse_line, text) if event is not None]
        link(parsed, lanes, flows, events, runs, fetches)
    if not lines:
        raise SystemExit(f'visualize: {", ".join(files)} is empty: nothing was logged (a '
                         'trace of an idle server, or a run that recorded nothing)')
    if not events and not runs:
        raise SystemExit(f'visualize: no instruction-log events in {", ".join(files)} (is it '
                         'a GT_INSTRUCTION_LOG file, with lines like "[TAPE 0.003s] RECV ..."?)')
    order = {'client': 0, 'dispatcher': 1, 'worker': 2}
    ordered = sorted(lanes.values(), key=lambda lane: (order[lane.group], _worker_rank(lane)))
    events.sort(key=lambda event: event.seconds)
    runs.sort(key=lambda run: run.start)
    fetches.sort(key=lambda fetch: fetch.start)
    ops = Counter(item.op for item in events + runs if item.op)
    return Trace(ordered, events, runs, fetches, files, [op for op, _ in ops.most_common()])


def _worker_rank(lane: Lane) -> tuple:
    """Workers by index, each one's express lane right after it."""
    index, _, express = (lane.key.split(':', 1)[1] if lane.group == 'worker'
                         else '').partition(':')
    return (0, int(index), express) if index.isdigit() else (1, 0, index)


def link(parsed: list, lanes: dict, flows, events: list, runs: list, fetches: list) -> None:
    """One log's events, in the order the dispatcher wrote them, onto lanes and flows.
    A RECV starts its session's flow; the WORKER_SENDs that follow belong to it, as do
    their runs (paired in order by session, worker and program), the workers' replies
    (each worker answers its fetches in order) and the SEND back to the client."""
    recv_of_session: dict[str, Event] = {}  # the latest, whose flow is under way
    open_fetch: dict[str, Event] = {}
    fetch_flows: dict[str, deque] = defaultdict(deque)  # worker lane -> flows awaiting
    sends: dict[tuple, deque] = defaultdict(deque)  # (session, worker, program) -> sends
    starts: dict[tuple, deque] = defaultdict(deque)
    worker_lanes: dict[str, str] = {}  # a worker's peer label -> its lane
    lanes.setdefault(DISPATCHER, Lane(DISPATCHER, 'dispatcher', 'dispatcher'))
    for seconds, kind, peer, message, fields in parsed:
        session = fields.get('session')
        lane = _lane(kind, peer, fields, lanes, worker_lanes)
        event = Event(seconds, kind, peer, message, fields, lane)
        if kind == 'RECV':
            event = replace(event, op=first_op(fields.get('kinds')), flow=next(flows))
            recv_of_session[session] = event
            if fields.get('fetch', '0') != '0':
                open_fetch[session] = event
        elif kind == 'WORKER_SEND':  # its run, when reported, says which op it is
            recv = recv_of_session.get(session)
            if recv is not None:
                event = replace(event, flow=recv.flow,
                                op=recv.op if fields.get('ops') != '0' else None)
            if fields.get('fetch', '0') != '0':
                fetch_flows[lane].append(event.flow)
            sends[(session, lane, fields.get('program'))].append(len(events))
        elif kind == 'WORKER_RECV' and message == 'Fetched':
            event = replace(event, flow=fetch_flows[lane].popleft() if fetch_flows[lane]
                            else None)
        elif kind == 'SEND':
            event = replace(event, flow=recv_of_session[session].flow
                            if session in recv_of_session else None)
            asked = open_fetch.pop(session, None)
            if asked is not None:
                fetches.append(Interval(asked.seconds, seconds, DISPATCHER,
                                        f's{session}:b{asked.fields.get("base")}', asked.op,
                                        asked.flow, {**fields, 'base': asked.fields.get('base')}))
        if kind == 'WORKER_START':
            starts[(session, lane, fields.get('program'))].append(event)
            continue
        if kind == 'WORKER_END':
            runs.append(_run(event, starts, sends, events))
            continue
        events.append(event)
    for waiting in starts.values():  # started, never reported ended: an instant
        events.extend(replace(start, op=first_op(start.fields.get('kinds')))
                      for start in waiting)


def _lane(kind: str, peer: str, fields: dict, lanes: dict, worker_lanes: dict) -> str:
    """The lane of the peer a log line names (made when first seen): a client's by its
    `host:pid`, a worker's by its index, anything else the dispatcher's."""
    if kind in CLIENT_KINDS:
        lane = f'client:{peer}'
        if lane not in lanes:
            session = fields.get('session')
            lanes[lane] = Lane(lane, f'client {peer}' + (f' (s{session})' if session else ''),
                               'client')
        return lane
    if not kind.startswith('WORKER'):
        return DISPATCHER
    index = fields.get('worker')
    lane = worker_lanes.setdefault(peer, f'worker:{index or peer}')
    if lane not in lanes or kind == 'WORKER_JOIN':  # the join names the device
        device = f", {fields['device']}" if 'device' in fields else ''
        lanes[lane] = Lane(lane, f'worker {index} ({peer}{device})', 'worker')
    if fields.get('lane') == 'express':  # its runs overlap the main lane's: a row of its own
        lane = f'{lane}:express'
        if lane not in lanes:
            lanes[lane] = Lane(lane, f'worker {index} express lane', 'worker')
    return lane


def _run(end: Event, starts: dict, sends: dict, events: list) -> Interval:
    """The run a WORKER_END closes, linked to the WORKER_SEND that carried its program."""
    key = (end.fields.get('session'), end.lane, end.fields.get('program'))
    seconds = _seconds(end.fields.get('seconds'))
    # The start's own stamp, with the worker's exact duration (the log rounds to ms).
    start = starts[key].popleft().seconds if starts[key] else end.seconds - seconds
    op = first_op(end.fields.get('kinds'))
    flow = None
    if sends[key]:
        at = sends[key].popleft()
        events[at] = replace(events[at], op=op, target=start)
        flow = events[at].flow
    return Interval(start, start + seconds, end.lane, f'p{end.fields.get("program")}', op, flow,
                    end.fields)


def _seconds(text: str | None) -> float:
    """A run's logged seconds; 0 for a value that is no number, as a line that does not
    parse is skipped (one such field ended the whole drawing with a traceback)."""
    try:
        return float(text or 0)
    except ValueError:
        return 0.0


def visualize(paths: list[str], output: str | None = None, chrome: str | None = None,
              dpi: int = 150, start: float | None = None, end: float | None = None,
              keep_gaps: bool = False) -> Trace:
    """Read the logs and write the timeline PNG and/or the Chrome trace; returns the trace
    drawn. matplotlib is imported only when a picture is asked for."""
    whole = load_trace(paths)
    trace = whole.window(start, end)
    if not trace.events and not trace.runs:
        times = whole.times()
        raise SystemExit(f'visualize: no events between --start {start} and --end {end}; the '
                         f'log runs from {times[0]:.3f} to {times[-1]:.3f} s')
    if output:
        from gt.scripts.timeline import draw_timeline

        try:
            draw_timeline(trace, output, dpi, start, end, cut_gaps=not keep_gaps)
        except OSError as error:  # matplotlib's traceback said it from deep inside
            raise SystemExit(f'visualize: cannot write {output!r}: {error.strerror}') from None
    if chrome:
        from gt.scripts.chrome_trace import write_chrome_trace

        write_chrome_trace(trace, chrome)
    return trace


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog='python -m gt.scripts.visualize', description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('logs', nargs='+', help='instruction logs, or globs (trace_*.log)')
    parser.add_argument('--output', '-o', help='the timeline picture (PNG, SVG, PDF or '
                        'another format matplotlib writes, by its extension)')
    parser.add_argument('--dpi', type=int, default=150, help='its resolution (default 150)')
    parser.add_argument('--chrome', help='also write a Chrome/Perfetto trace JSON here')
    parser.add_argument('--start', type=float, help='seconds: draw from here')
    parser.add_argument('--end', type=float, help='seconds: draw up to here')
    parser.add_argument('--keep-gaps', action='store_true', help='do not cut long idle '
                        'stretches out of the timeline (a --start/--end window keeps them)')
    args = parser.parse_args(argv)
    if not args.output and not args.chrome:
        args.output = 'timeline.png'
    trace = visualize(args.logs, args.output, args.chrome, args.dpi, args.start, args.end,
                      args.keep_gaps)
    lanes = ', '.join(lane.label for lane in trace.lanes)
    print(f'{len(trace.events)} events and {len(trace.runs)} program runs on {lanes}')
    for path in filter(None, (args.output, args.chrome)):
        print(f'wrote {path}')


if __name__ == '__main__':
    main()
