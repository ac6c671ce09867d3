"""The numbers behind `python -m gt.scripts.top`, from the dispatcher's stats messages: per
worker an EMA-smoothed utilization split by op, per client session its ops per second and
its share of each worker. Pure: feed `Model.update` stats dicts, read the views.

Busy time is measured from the sessions' cumulative worker-seconds between two of a worker's
reports (by the reports' own clock): a stats message carries only a worker's latest report,
and reports sent before fetches replace each other faster than stats are published.
"""

import math
from dataclasses import dataclass, field

TAU_SECONDS = 1.0  # the EMAs' time constant: a step change is 63% shown after this long
FORGOTTEN_SHARE = 1e-3  # an op whose smoothed share of busy time falls below this is dropped


def smooth(previous: float | None, sample: float, seconds: float,
           tau: float = TAU_SECONDS) -> float:
    """An exponential moving average over irregular steps: `sample` weighs 1 - e^(-dt/tau)."""
    if previous is None:
        return sample
    weight = 1.0 - math.exp(-max(seconds, 0.0) / tau)
    return previous + weight * (sample - previous)


def human_bytes(count: int | float | None) -> str:
    if count is None:
        return '-'
    for unit in ('B', 'KiB', 'MiB', 'GiB', 'TiB'):
        if abs(count) < 1024 or unit == 'TiB':
            return f'{count:.0f} {unit}' if unit == 'B' else f'{count:.1f} {unit}'
        count /= 1024
    raise AssertionError('unreachable')


@dataclass
class WorkerView:
    index: int
    name: str = ''
    device: str = ''
    host: str = ''
    alive: bool = True
    utilization: float | None = None  # busy seconds per second, smoothed; None before 2 reports
    mix: dict[str, float] = field(default_factory=dict)  # op -> share of busy time, smoothed
    memory: int | None = None
    compiled_programs: int | None = None
    report_time: float | None = None  # the worker's clock at its latest report
    seconds_seen: dict[int, float] = field(default_factory=dict)  # session -> its seconds here

    @property
    def idle(self) -> float | None:
        return None if self.utilization is None else 1.0 - self.utilization

    def op_utilization(self) -> list[tuple[str, float]]:
        """(op, busy seconds per second) for each op, largest first."""
        total = sum(self.mix.values())
        if not total or not self.utilization:
            return []
        shares = [(op, self.utilization * share / total) for op, share in self.mix.items()]
        return sorted(shares, key=lambda item: -item[1])


@dataclass
class SessionView:
    number: int
    client: str = ''
    ops: int = 0
    programs: int = 0
    values: int = 0
    bytes: dict[int, int] = field(default_factory=dict)  # worker -> bytes held there
    ops_rate: float | None = None  # ops submitted per second, smoothed
    share: dict[int, float] = field(default_factory=dict)  # worker -> its seconds per second

    @property
    def bytes_held(self) -> int:
        return sum(self.bytes.values())


class Model:
    def __init__(self, tau: float = TAU_SECONDS):
        self.tau = tau
        self.uptime: float | None = None  # the dispatcher's seconds at the latest stats
        self.workers: dict[int, WorkerView] = {}
        self.sessions: dict[int, SessionView] = {}

    def update(self, stats: dict) -> None:
        now = float(stats['time'])
        seconds = None if self.uptime is None else now - self.uptime
        incoming = {s['number']: s for s in stats.get('sessions', [])}
        self.sessions = {number: self._session(s, seconds) for number, s in incoming.items()}
        for worker in stats.get('workers', []):
            self._worker(worker, incoming)
        self.uptime = now

    def _session(self, stats: dict, seconds: float | None) -> SessionView:
        view = self.sessions.get(stats['number'])
        if view is None:
            view = SessionView(stats['number'])
            # A session first seen after the first message began since the previous one.
            previous_ops = 0 if seconds is not None else None
        else:
            previous_ops = view.ops
        if previous_ops is not None and seconds:
            rate = max(0, stats['ops'] - previous_ops) / seconds
            view.ops_rate = smooth(view.ops_rate, rate, seconds, self.tau)
        view.client, view.ops, view.programs = stats['client'], stats['ops'], stats['programs']
        view.values, view.bytes = stats['values'], dict(stats.get('bytes') or {})
        return view

    def _worker(self, stats: dict, sessions: dict[int, dict]) -> None:
        index = stats['index']
        view = self.workers.setdefault(index, WorkerView(index))
        view.name, view.device, view.host = stats['name'], stats['device'], stats['host']
        view.alive = stats['alive']
        view.memory = stats.get('memory', view.memory)
        view.compiled_programs = stats.get('compiled_programs', view.compiled_programs)
        # No heartbeat yet, or the report already counted: nothing new to sample.
        if 'time' in stats and stats['time'] != view.report_time:
            seen = {number: float((s.get('worker_seconds') or {}).get(index, 0.0))
                    for number, s in sessions.items()}
            if view.report_time is not None:
                self._sample(view, stats, seen, stats['time'] - view.report_time)
            view.report_time, view.seconds_seen = stats['time'], seen
        if not view.alive:  # a lost worker's last bar would stay frozen: it is unknown now
            view.utilization, view.mix = None, {}

    def _sample(self, view: WorkerView, stats: dict, seen: dict[int, float],
                span: float) -> None:
        if span <= 0:
            return
        # Sessions absent from the previous snapshot began since, with nothing run then.
        spent = {number: max(0.0, seconds - view.seconds_seen.get(number, 0.0))
                 for number, seconds in seen.items()}
        # The latest report alone is a lower bound: it also counts sessions that have ended.
        busy = max(sum(spent.values()), float(stats.get('busy') or 0.0))
        view.utilization = smooth(view.utilization, min(1.0, busy / span), span, self.tau)
        ops = {op: float(seconds) for op, seconds in (stats.get('ops') or {}).items()}
        total = sum(ops.values())
        if total > 0 and not view.mix:
            view.mix = {op: seconds / total for op, seconds in ops.items()}
        elif total > 0:
            for op in set(ops) | set(view.mix):
                share = smooth(view.mix.get(op, 0.0), ops.get(op, 0.0) / total, span, self.tau)
                if share > FORGOTTEN_SHARE:
                    view.mix[op] = share
                else:
                    view.mix.pop(op, None)
        for number, seconds in spent.items():
            session = self.sessions[number]
            session.share[view.index] = smooth(session.share.get(view.index),
                                               min(1.0, seconds / span), span, self.tau)

    def top_ops(self, count: int) -> list[str]:
        """The ops that take most worker time, over all workers."""
        totals: dict[str, float] = {}
        for worker in self.workers.values():
            for op, rate in worker.op_utilization():
                totals[op] = totals.get(op, 0.0) + rate
        return sorted(totals, key=lambda op: -totals[op])[:count]
