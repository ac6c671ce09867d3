"""What the dispatcher tells its instruction log and its monitor subscribers: events as
they happen (gt.runtime.events), workers' activity reports, and every STATS_SECONDS the
workers' and sessions' numbers for `top`."""

import contextlib
import os
import time
from typing import Any

import zmq

from gt.runtime.curve import ServerCurve
from gt.runtime.events import Events, register_dispatcher
from gt.runtime.peers import Session, WorkerHandle, bytes_per_worker
from gt.runtime.planner import Plan

STATS_SECONDS = 0.5


class Monitor:
    def __init__(self, endpoints: list[str], log_path: str | None, context: zmq.Context,
                 host: str, curve: ServerCurve | None = None):
        self.events = Events(log_path or os.environ.get('GT_INSTRUCTION_LOG'), context, host,
                             curve)
        self.host, self.port = host, self.events.monitor_port
        self.reporting_programs = self.events.on  # what workers were last told
        self.next_stats = 0.0
        self.note = register_dispatcher(endpoints, self.port,
                                        curve.public_key if curve else None)
        self.emit = self.events.emit

    @property
    def on(self) -> bool:
        """Whether events are wanted: callers check it before building one."""
        return self.events.on

    def serve(self, workers: list[WorkerHandle], sessions: list[Session]) -> bool:
        """Count subscribers and publish stats when due. Returns True when workers must
        be told to start or stop reporting their programs' times."""
        self.events.poll_subscriptions()
        now = time.monotonic()
        if self.events.subscribers and now >= self.next_stats:
            self.next_stats = now + STATS_SECONDS
            self.events.publish(b'stats', {
                'time': self.events.seconds(),
                'workers': [{'index': w.index, 'name': w.name, 'device': w.device,
                             'host': w.host, 'alive': w.alive,
                             **{k: v for k, v in w.activity.items() if k != 'events'}}
                            for w in workers],
                'sessions': [accounting(session) for session in sessions]})
        if self.events.on != self.reporting_programs:
            self.reporting_programs = self.events.on
            return True
        return False

    def charge(self, worker: int, session: Session | None, seconds: float) -> None:
        """A RunProgram ended on `worker` after `seconds` (its Done or Fetched reply): the
        session's worker-seconds, the ones the scheduler charges it, current at once."""
        if session is not None and seconds > 0:
            session.worker_seconds[worker] = session.worker_seconds.get(worker, 0.0) + seconds

    def note_activity(self, handle: WorkerHandle, activity: dict) -> None:
        """A worker's report since its last beat, and its programs' start and end times for
        the log. A report sent before a fetch's reply has no memory figure: the previous
        one stands. A program's start comes as it starts (`running`: a program that hangs
        shows as started), its end with the next report."""
        running = activity.get('running')
        if running is not None:
            start, number, program, ops, kinds, express = running
            if self.events.on:
                self.emit('WORKER_START', handle.label, 'Program', wall=start, session=number,
                          worker=handle.index, program=program, ops=ops, kinds=kinds,
                          **({'lane': 'express'} if express else {}))
            return
        if 'memory' not in activity and 'memory' in handle.activity:
            activity = {**activity, 'memory': handle.activity['memory']}
        handle.activity = activity
        if not self.events.on:
            return
        for start, end, number, program, ops, kinds, compiled, express in (
                activity.get('events') or []):
            lane = {'lane': 'express'} if express else {}
            self.emit('WORKER_END', handle.label, 'Program', wall=end, session=number,
                      worker=handle.index, program=program, ops=ops, kinds=kinds,
                      seconds=end - start, compiled=compiled, **lane)

    def close(self) -> None:
        self.events.close()
        with contextlib.suppress(OSError):
            os.unlink(self.note)


def top_ops(plan: Plan | None, count: int = 3) -> str:
    """The fragment's commonest ops, for a log line: `matmul:2,add:4`."""
    if plan is None:
        return '-'
    return ','.join(f'{op}:{n}' for op, n in list(plan.ops.items())[:count]) or '-'


def accounting(session: Session) -> dict:
    """A session's numbers: ops and programs submitted, worker-seconds and bytes held per
    worker (from the shapes and placements of the values it holds)."""
    held: dict[int, int] = {}
    for entry in session.values.values():
        for worker, size in bytes_per_worker(*entry).items():
            held[worker] = held.get(worker, 0) + size
    return {'number': session.number, 'client': session.client, 'ops': session.ops,
            'programs': session.programs, 'values': len(session.values),
            'queued_peak': session.queued_peak,
            'worker_seconds': dict(session.worker_seconds), 'bytes': held}


def dispatcher_stats(dispatcher: Any, session: Session | None) -> dict:
    """The dispatcher's own numbers for a stats reply, and the asking session's."""
    return {
        'monitor_port': dispatcher.monitor.port,
        'monitor_host': dispatcher.monitor.host,
        'session': accounting(session) if session else None,
        'sessions': len(dispatcher.sessions),
        'session_values': len(session.values) if session else 0,
        'plans_cached': len(dispatcher.planner.cache),
        'plan_hits': dispatcher.planner.hits, 'plan_misses': dispatcher.planner.misses,
        'bytes_to_workers': dispatcher.bytes_to_workers,
        'bytes_from_clients': dispatcher.bytes_from_clients,
        'bytes_relayed': dispatcher.bytes_to_workers - dispatcher.bytes_from_clients,
        'done_messages': dispatcher.done_messages, 'done_programs': dispatcher.done_programs,
    }
