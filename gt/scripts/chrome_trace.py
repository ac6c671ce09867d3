"""A `Trace` as Chrome trace-event JSON (chrome://tracing, ui.perfetto.dev): one process
per component group (clients, dispatcher, workers), one named thread per lane; program
runs and fetches in flight as complete (`X`) events, everything else as instants (`i`);
timestamps in microseconds since the dispatcher started; each event's fields as args."""

import json

from gt.scripts.visualize import Trace

GROUPS = {'client': (1, 'clients'), 'dispatcher': (2, 'dispatcher'), 'worker': (3, 'workers')}


def _micros(seconds: float) -> float:
    return round(max(0.0, seconds) * 1e6, 3)


def _value(text):
    """A log field as JSON: numbers and booleans as such, the rest as written."""
    if not isinstance(text, str) or text in ('True', 'False'):
        return text == 'True' if isinstance(text, str) else text
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _args(fields: dict, **more) -> dict:
    return {**{key: _value(value) for key, value in fields.items()}, **more}


def chrome_trace(trace: Trace) -> dict:
    tracks = {}
    metadata = []
    for pid, name in GROUPS.values():
        metadata.append({'ph': 'M', 'name': 'process_name', 'pid': pid, 'tid': 0, 'ts': 0,
                         'args': {'name': name}})
    for order, lane in enumerate(trace.lanes):
        pid = GROUPS[lane.group][0]
        tracks[lane.key] = pid, order + 1
        metadata.append({'ph': 'M', 'name': 'thread_name', 'pid': pid, 'tid': order + 1,
                         'ts': 0, 'args': {'name': lane.label}})
        metadata.append({'ph': 'M', 'name': 'thread_sort_index', 'pid': pid, 'tid': order + 1,
                         'ts': 0, 'args': {'sort_index': order}})
    events = []
    for event in trace.events:
        pid, tid = tracks[event.lane]
        args = _args(event.fields, peer=event.peer, message=event.message)
        if event.flow is not None:
            args['flow'] = event.flow
        events.append({'ph': 'i', 's': 't', 'name': f'{event.kind} {event.message}',
                       'cat': event.op or event.message, 'ts': _micros(event.seconds),
                       'pid': pid, 'tid': tid, 'args': args})
    for kind, intervals in (('program', trace.runs), ('fetch', trace.fetches)):
        for interval in intervals:
            pid, tid = tracks[interval.lane]
            name = f'{interval.op or kind} {interval.name}' if kind == 'program' else \
                f'fetch {interval.name}'
            events.append({'ph': 'X', 'name': name, 'cat': kind, 'ts': _micros(interval.start),
                           'dur': _micros(interval.end - interval.start), 'pid': pid,
                           'tid': tid, 'args': _args(interval.fields, flow=interval.flow)})
    events.sort(key=lambda event: event['ts'])
    return {'traceEvents': metadata + events, 'displayTimeUnit': 'ms',
            'otherData': {'source': ', '.join(trace.sources)}}


def write_chrome_trace(trace: Trace, path: str) -> None:
    with open(path, 'w') as file:
        json.dump(chrome_trace(trace), file)
