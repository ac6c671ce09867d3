"""The timeline picture of a `Trace` (matplotlib, Agg: no display needed). Lanes top to
bottom: clients, the dispatcher, workers. A marker sits on the lane of the peer its log
line names, shaped by the event, coloured by its first op (a message without ops by its
kind) and sized by its bytes; program runs are bars on the worker lanes, fetches in flight
bars on the dispatcher's; arrows follow client fragments from lane to lane. Long idle
stretches are cut out (and marked) so that bursts of milliseconds stay readable.
"""

import math
from collections import Counter, defaultdict
from dataclasses import dataclass

import matplotlib

matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)
from matplotlib.colors import to_rgba  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from gt.scripts.visualize import DISPATCHER, Event, Trace  # noqa: E402

MARKERS = {'RECV': ('v', 'RECV: a client fragment'), 'SEND': ('^', 'SEND: reply to a client'),
           'WORKER_SEND': ('s', 'WORKER_SEND: a program'),
           'WORKER_RECV': ('D', 'WORKER_RECV: a worker reply'),
           'CONNECT': ('P', 'CONNECT'), 'DISCONNECT': ('X', 'DISCONNECT'),
           'WORKER_JOIN': ('*', 'WORKER_JOIN'), 'WORKER_LOST': ('H', 'WORKER_LOST'),
           'WORKER_START': ('>', 'WORKER_START (no end)')}
FLOW_KINDS = ('RECV', 'WORKER_SEND', 'WORKER_RECV', 'SEND')
OP_COLOURS = [c for i, c in enumerate(plt.get_cmap('tab10').colors) if i != 7]  # not grey
MESSAGE_COLOURS = {'Hello': '#222222', 'Register': '#5a5a5a', 'Heartbeat': '#7a7a7a',
                   'Goodbye': '#a0a0a0', 'Stats': '#cfcfcf', 'Fetched': '#ffffff',
                   'Submit': '#e8e8e8', 'RunProgram': '#e8e8e8'}  # releases only
OTHER = '#b0b0b0'
SIZES = (0, 1 << 10, 1 << 20, 100 << 20)  # bytes shown in the size legend
MAX_FLOWS = 60  # fragments drawn with arrows; past this, an even sample
WIDTH, LEFT, RIGHT = 16.0, 2.1, 2.6  # inches: the figure, the lane labels, the legend
LABEL_FONT = 6.5
WORKER_MARKS, RUN_BARS = 0.22, -0.12  # a worker lane: messages above, runs below


@dataclass(frozen=True)
class Layout:
    rows: dict  # lane -> y
    groups: dict  # lane -> 'client', 'dispatcher' or 'worker'
    fetch_rows: dict  # flow -> y of its fetch bar
    colours: dict  # op -> colour
    sampled: set  # flows drawn with arrows


def figure_size(trace: Trace) -> tuple[float, float]:
    """Inches: room for the lanes and for the legend beside them."""
    legend_rows = len(_legend(trace, _colours(trace))) + 2
    return WIDTH, round(max(4.0, 1.4 + 0.6 * len(trace.lanes), 0.9 + 0.16 * legend_rows), 2)


def marker_area(size: float) -> float:
    return 18 + 22 * math.log10(1 + size)


def draw_timeline(trace: Trace, path: str, dpi: int = 150, start: float | None = None,
                  end: float | None = None, cut_gaps: bool = True) -> None:
    """Write the picture; `start`/`end` (seconds) fix the time axis, and keep its gaps."""
    figure = plt.figure(figsize=figure_size(trace), dpi=dpi)
    try:
        if start is not None or end is not None:
            low, high = _padded(trace.times())
            segments = [(low if start is None else start, high if end is None else end)]
        else:
            segments = _segments(trace) if cut_gaps else [_padded(trace.times())]
        axes = _axes(figure, segments, trace)
        layout = _layout(trace)
        for ax in axes:
            _draw(ax, trace, layout)
            _labels(ax, trace, layout)
        _decorate(figure, axes, segments, trace, layout)
        figure.savefig(path, dpi=dpi)
    finally:
        plt.close(figure)


# ---- the time axis: segments of activity ----------------------------------------------------
def _padded(times: list[float]) -> tuple[float, float]:
    low, high = times[0], times[-1]
    pad = max(0.03 * (high - low), 0.0008)
    return max(0.0, low - pad), high + pad


def _segments(trace: Trace, most: int = 4) -> list[tuple[float, float]]:
    """Stretches with activity. A gap with nothing under way (no event, run or fetch) is
    cut when it is over 50 ms and over a quarter of what is left after the longer cuts."""
    busy = sorted([(e.seconds, e.seconds) for e in trace.events]
                  + [(i.start, i.end) for i in trace.runs + trace.fetches])
    first, last = busy[0][0], max(end for _, end in busy)
    gaps, reach = [], busy[0][1]
    for start, end in busy[1:]:
        if start - reach > 0.05:
            gaps.append((start - reach, reach, start))
        reach = max(reach, end)
    cuts, left = [], last - first
    for length, low, high in sorted(gaps, reverse=True)[:most - 1]:
        if length > 0.25 * left:
            cuts += [low, high]
            left -= length
    bounds = [first, *sorted(cuts), last]
    return [_padded(bounds[i:i + 2]) for i in range(0, len(bounds), 2)]


def _axes(figure, segments: list, trace: Trace) -> list:
    """One axes per segment, side by side, each as wide as its share of the events."""
    width, height = figure.get_size_inches()
    left, right = LEFT / width, 1 - RIGHT / width
    bottom, top = 0.75 / height, 1 - 0.55 / height
    counts = [sum(low <= e.seconds <= high for e in trace.events) + 1 for low, high in segments]
    shares = [max(0.07, count / sum(counts)) for count in counts]
    gap = 0.012
    room = right - left - gap * (len(segments) - 1)
    axes, x = [], left
    for (low, high), share in zip(segments, shares, strict=True):
        ax = figure.add_axes((x, bottom, room * share / sum(shares), top - bottom),
                             sharey=axes[0] if axes else None)
        ax.set_xlim(low, high)
        ax.set_ylim(-len(trace.lanes) + 0.5, 0.5)
        axes.append(ax)
        x += room * share / sum(shares) + gap
    return axes


# ---- what goes on the lanes ------------------------------------------------------------------
def _colours(trace: Trace) -> dict:
    """The commonest ops in the whole log get colours (the same in every window of it)."""
    shown = {item.op for item in trace.events + trace.runs if item.op}
    colours = {op: colour for op, colour in zip(trace.ops, OP_COLOURS)}
    return {op: colours.get(op, OTHER) for op in trace.ops if op in shown}


def _layout(trace: Trace) -> Layout:
    rows = {lane.key: -index for index, lane in enumerate(trace.lanes)}
    clients = [lane.key for lane in trace.lanes if lane.group == 'client']
    client_of = {e.flow: e.lane for e in trace.events if e.kind == 'RECV'}
    sub = 0.7 / max(1, len(clients))  # a sub-row per client on the dispatcher's lane
    fetch_rows = {f.flow: rows[DISPATCHER] + 0.35 - sub * (clients.index(client_of[f.flow]) + 0.5)
                  if client_of.get(f.flow) in clients else rows[DISPATCHER]
                  for f in trace.fetches}
    flows = sorted({e.flow for e in trace.events if e.flow is not None})
    sampled = set(flows[::max(1, math.ceil(len(flows) / MAX_FLOWS))])
    return Layout(rows, {lane.key: lane.group for lane in trace.lanes}, fetch_rows,
                  _colours(trace), sampled)


def _marker_y(event: Event, layout: Layout) -> float:
    worker = layout.groups[event.lane] == 'worker'
    return layout.rows[event.lane] + (WORKER_MARKS if worker else 0.0)


def _draw(ax, trace: Trace, layout: Layout) -> None:
    for index in range(1, len(trace.lanes), 2):
        ax.axhspan(-index - 0.5, -index + 0.5, color='#f3f3f3', zorder=0, lw=0)
    bars = defaultdict(list)
    for run in trace.runs:
        bars[run.lane].append(run)
    for lane, runs in bars.items():
        colours = [layout.colours.get(run.op, OTHER) for run in runs]
        ax.broken_barh([(run.start, run.end - run.start) for run in runs],
                       (layout.rows[lane] + RUN_BARS - 0.18, 0.36), facecolors=colours,
                       edgecolors=colours, linewidth=0.4, zorder=2)
    height = 0.5 / max(1, sum(group == 'client' for group in layout.groups.values()))
    for fetch in trace.fetches:
        ax.barh(layout.fetch_rows[fetch.flow], fetch.end - fetch.start, left=fetch.start,
                height=height, color=to_rgba(layout.colours.get(fetch.op, OTHER), 0.45),
                edgecolor='0.25', linewidth=0.5, zorder=2)
    for kind, (marker, _) in MARKERS.items():
        chosen = [e for e in trace.events if e.kind == kind]
        if chosen:
            ax.scatter([e.seconds for e in chosen], [_marker_y(e, layout) for e in chosen],
                       s=[marker_area(float(e.fields.get('bytes') or 0)) for e in chosen],
                       c=[layout.colours[e.op] if e.op else
                          MESSAGE_COLOURS.get(e.message, OTHER) for e in chosen],
                       marker=marker, linewidths=0.5, zorder=4,
                       edgecolors='red' if kind == 'WORKER_LOST' else '0.15')
    _arrows(ax, trace, layout)


def _arrows(ax, trace: Trace, layout: Layout) -> None:
    """Client → dispatcher → worker (to its program's run) → dispatcher → client."""
    low, high = ax.get_xlim()
    middle = layout.rows[DISPATCHER]
    for event in trace.events:
        if event.flow not in layout.sampled or event.kind not in FLOW_KINDS:
            continue
        peer, hub = (event.seconds, _marker_y(event, layout)), (event.seconds, middle)
        start, end = {'RECV': (peer, hub), 'WORKER_RECV': (peer, hub), 'SEND': (hub, peer),
                      'WORKER_SEND': (hub, (event.target or event.seconds,
                                            layout.rows[event.lane] + RUN_BARS + 0.18))
                      }[event.kind]
        if low <= start[0] <= high and low <= end[0] <= high:
            ax.annotate('', xy=end, xytext=start, zorder=3, arrowprops={
                'arrowstyle': '-|>', 'color': '0.3', 'alpha': 0.55, 'lw': 0.6,
                'mutation_scale': 6, 'shrinkA': 3, 'shrinkB': 3})


# ---- labels, axis and legend -----------------------------------------------------------------
def _labels(ax, trace: Trace, layout: Layout) -> None:
    """Instruction ids: `s1:b31` (session, first value id) on client fragments, `p2` under
    program runs, fetches with their time; one that would overlap its lane's previous
    label, or run off the plot, is left out."""
    rows = layout.rows
    recvs = [(e.seconds, rows[e.lane], f's{e.fields.get("session")}:b{e.fields.get("base")}')
             for e in trace.events if e.kind == 'RECV']
    runs = [(r.start, rows[r.lane] + RUN_BARS - 0.18, r.name) for r in trace.runs]
    fetches = [(f.start, layout.fetch_rows[f.flow], f'{f.name} {_millis(f.end - f.start)}')
               for f in trace.fetches]
    for labels, dy in ((recvs, 6), (runs, -1), (fetches, 0)):
        _place(ax, labels, dy)


def _place(ax, labels: list, dy: float) -> None:
    low, high = ax.get_xlim()
    right = ax.transData.transform((high, 0))[0]
    points = ax.figure.dpi / 72
    ends: dict = {}
    for x, row, text in labels:
        if not low <= x <= high:
            continue
        pixel = ax.transData.transform((x, row))[0]
        end = pixel + (len(text) * 0.7 * LABEL_FONT + 8) * points
        if pixel < ends.get(row, -math.inf) or end > right + 8 * points:
            continue
        ends[row] = end
        ax.annotate(text, (x, row), xytext=(0 if dy else 2, dy), textcoords='offset points',
                    fontsize=LABEL_FONT, color='0.15', zorder=5,
                    va='bottom' if dy > 0 else 'top' if dy < 0 else 'center',
                    bbox={'boxstyle': 'square,pad=0.1', 'fc': 'white', 'ec': 'none',
                          'alpha': 0.75})


def _decorate(figure, axes: list, segments: list, trace: Trace, layout: Layout) -> None:
    scale, unit = (1000, 'ms') if max(high - low for low, high in segments) < 2 else (1, 's')
    for ax in axes:
        inches = ax.get_position().width * WIDTH
        ax.xaxis.set_major_locator(MaxNLocator(max(1, int(inches)), steps=[1, 2, 5, 10],
                                               min_n_ticks=1))
        ax.xaxis.set_major_formatter(
            lambda value, _, ax=ax: f'{value * scale:.{_decimals(ax, scale)}f}')
        ax.tick_params(labelsize=7)
        ax.grid(axis='x', color='0.85', lw=0.5, zorder=0)
        ax.spines[['top', 'right']].set_visible(False)
    axes[0].set_yticks(list(layout.rows.values()), [lane.label for lane in trace.lanes],
                       fontsize=8)
    for before, after, ax in zip(segments, segments[1:], axes[1:], strict=False):
        ax.spines['left'].set_visible(False)
        ax.tick_params(axis='y', left=False, labelleft=False)
        ax.plot([0, 0], [0, 1], transform=ax.transAxes, color='0.4', lw=1, ls=(0, (2, 2)),
                clip_on=False)
        ax.annotate(f'… {after[0] - before[1]:.2f} s idle …', (0, 1), xycoords='axes fraction',
                    xytext=(-4, 3), textcoords='offset points', ha='center', fontsize=6.5,
                    color='0.4')
    figure.text((LEFT + (WIDTH - LEFT - RIGHT) / 2) / WIDTH, 0.2 / figure.get_figheight(),
                f'time since the dispatcher started ({unit})', ha='center', fontsize=8)
    flows = len({e.flow for e in trace.events if e.flow is not None})
    note = '' if len(layout.sampled) == flows else \
        f'; arrows for {len(layout.sampled)} of {flows} fragments'
    groups = Counter(layout.groups.values())
    groups['worker'] -= sum(lane.endswith(':express') for lane in layout.groups)  # not workers
    sources = ', '.join(trace.sources[:2]) + (f' and {len(trace.sources) - 2} more'
                                              if len(trace.sources) > 2 else '')
    figure.suptitle(f'GT instruction timeline: {sources} — {_count(len(trace.events), "event")}'
                    f', {_count(len(trace.runs), "program run")}, '
                    f'{_count(groups["client"], "client")}, '
                    f'{_count(groups["worker"], "worker")}{note}', fontsize=9, y=0.985)
    legend = figure.legend(handles=_legend(trace, layout.colours), loc='upper left', fontsize=7,
                           bbox_to_anchor=(1 - (RIGHT - 0.1) / WIDTH, 0.93), frameon=False,
                           handletextpad=0.4, borderaxespad=0, labelspacing=0.35)
    for text in legend.get_texts():
        if text.get_text().endswith(':'):
            text.set_fontweight('bold')


def _decimals(ax, scale: float) -> int:
    """As many decimals as the tick step needs (0.05 ms steps: 2)."""
    ticks = ax.xaxis.get_major_locator()()
    step = (ticks[1] - ticks[0]) * scale if len(ticks) > 1 else 1.0
    return next((d for d in range(7) if abs(step * 10 ** d - round(step * 10 ** d)) < 1e-6), 6)


def _legend(trace: Trace, colours: dict) -> list:
    def header(text):
        return Line2D([], [], ls='none', label=text)

    def dot(label, **style):
        return Line2D([], [], ls='none', markeredgecolor='0.15', label=label, **style)

    handles = [header('colour, by first op:')]
    handles += [Patch(color=colour, label=op) for op, colour in colours.items() if colour != OTHER]
    if OTHER in colours.values():
        handles.append(Patch(color=OTHER, label='other ops'))
    messages = {e.message for e in trace.events if not e.op}
    handles += [dot(f'{message} (no ops known)' if message in ('Submit', 'RunProgram') else
                    f'{message} (no ops)', marker='o', markerfacecolor=colour)
                for message, colour in MESSAGE_COLOURS.items() if message in messages]
    handles.append(header('marker, by event:'))
    kinds = {e.kind for e in trace.events}
    handles += [dot(label, marker=marker, color='0.5')
                for kind, (marker, label) in MARKERS.items() if kind in kinds]
    handles.append(header('marker size, by bytes:'))
    handles += [dot(_bytes(size), marker='o', color='0.6',
                    markersize=math.sqrt(marker_area(size))) for size in SIZES]
    handles.append(header('bars and arrows:'))
    handles.append(Patch(color='0.5', label='program run (worker)'))
    handles.append(Patch(facecolor=to_rgba('0.5', 0.45), edgecolor='0.25',
                         label='fetch in flight (dispatcher)'))
    handles.append(Line2D([], [], color='0.3', lw=0.8, marker='>', markersize=4,
                          label='message flow'))
    return handles


def _millis(seconds: float) -> str:
    """A fetch's time: the log stamps milliseconds, so no decimals pretend more."""
    millis = round(seconds * 1000)
    return f'{millis} ms' if millis else '<1 ms'


def _count(number: int, noun: str) -> str:
    return f'{number} {noun}' + ('' if number == 1 else 's')


def _bytes(size: int) -> str:
    for unit, factor in (('MB', 1 << 20), ('KB', 1 << 10)):
        if size >= factor:
            return f'{size / factor:g} {unit}'
    return f'{size} B'
