"""What the dispatcher remembers about its peers: each worker, each client's session (and
the bytes it holds), and each request still waiting for workers to answer."""

import functools
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field

from gt.ir import Partial, Replicate
from gt.ir.dtypes import FLOATING, TORCH_DTYPES
from gt.ir.placement import Placement, local_shape
from gt.ir.type_rules import numel
from gt.runtime.compile_settings import CompileSettings

REFUSED_KEPT = 256  # a session's refused fragments whose values a later read can name


@dataclass
class WorkerHandle:
    index: int
    identity: bytes
    name: str
    device: str
    host: str
    pid: int
    last_seen: float
    alive: bool = True
    programs: OrderedDict = field(default_factory=OrderedDict)  # ids it holds, oldest first
    peer_endpoints: list = field(default_factory=list)  # where other workers reach it
    peer_key: str = ''  # its peer socket's CURVE public key ('' without CURVE)
    activity: dict = field(default_factory=dict)  # its latest heartbeat's report
    # Its latest statistics and when they came, for a monitor that asks while it is busy.
    last_stats: list = field(default_factory=list)
    last_stats_at: float = 0.0
    in_flight: int = 0  # RunPrograms sent to its main lane that it has not said Done to
    main_sessions: dict = field(default_factory=dict)  # of those, per session number
    # Its express lane (gt.runtime.express_lane): the secret from its Register, the lane's
    # identity once it said ExpressReady, its programs (mirrored apart from the main
    # lane's), and the session whose program runs there.
    express_key: str = ''
    express: bytes | None = None
    express_programs: OrderedDict = field(default_factory=OrderedDict)
    express_session: object = None

    def reset_lanes(self) -> None:
        """Nothing in flight: it was lost, or it came back with nothing."""
        self.in_flight = 0
        self.main_sessions.clear()
        self.express_session = None

    @property
    def label(self) -> str:
        """Its name in logs and monitors: `worker0`, by index."""
        return f'worker{self.index}'


class MissingValue(ValueError):
    """A fragment reads a value its session does not hold; `cause`: why the server refused
    the work that would have made it, which the refusal of this fragment repeats rather
    than nests."""

    def __init__(self, text: str, cause: str | None) -> None:
        super().__init__(text)
        self.cause = cause


@dataclass(eq=False)  # compared by identity: the scheduler keeps sessions in lists
class Session:
    number: int
    identity: bytes
    client: str
    home_worker: int
    values: dict = field(default_factory=dict)  # client id -> (shape, dtype, placement)
    lost_values: dict = field(default_factory=dict)  # client id -> the lost worker, in words
    # Fragments refused whole (past the memory limit, ill-formed, reading a value that
    # never was): `[base, end, why]`, the end unknown (None) until the next Submit's base.
    refused: deque = field(default_factory=lambda: deque(maxlen=REFUSED_KEPT))
    last_seen: float = field(default_factory=time.monotonic)
    errors: list = field(default_factory=list)  # reports not yet delivered to the client
    # Its last fragment as planned: (structure, input types, options), for gt.debug.dump_ir.
    last_fragment: tuple | None = None
    shared_memory_probe: str = ''
    configs: tuple = ()  # (signal name, shard axis, workers), as PipelineOptions takes them
    auto_shard_elements: int | None = None
    generator_holders: tuple | None = None  # see gt.passes.keep_generators_in_step
    compile: CompileSettings = CompileSettings()
    default_dtype: str = 'float32'  # what its fragments are worked out and run under
    # Accounting: ops and worker programs submitted, and worker-seconds spent, per worker.
    ops: int = 0
    programs: int = 0
    worker_seconds: dict = field(default_factory=dict)
    bytes_held: int = 0  # over all workers, copies included: what its memory limit bounds
    # Scheduling (gt.runtime.scheduler): fragments not yet sent, in order; the worker-
    # seconds it was served, divided by its weight.
    queue: deque = field(default_factory=deque)
    queued_peak: int = 0  # the longest its queue has been (gt.runtime.pacing bounds it)
    weight: float = 1.0
    served: float = 0.0
    # Its longest recent program's seconds as of `longest_at`, halving every
    # LONGEST_HALF_LIFE seconds since (None before any ran): short enough, and its
    # single-worker work may take a worker's express lane (gt.runtime.scheduler).
    longest_recent: float | None = None
    longest_at: float = field(default_factory=time.monotonic)
    # When each of its programs in flight on main lanes was sent, oldest first: one that
    # has run long is long already, however long ago its last program finished.
    main_sent: deque = field(default_factory=deque)

    def hold(self, value_id: int, entry: tuple) -> None:
        """Record a value the session now holds (or holds more copies of)."""
        old = self.values.get(value_id)
        if old is not None:
            self.bytes_held -= value_bytes(*old)
        self.values[value_id] = entry
        self.bytes_held += value_bytes(*entry)

    def release(self, value_id: int) -> tuple | None:
        entry = self.values.pop(value_id, None)
        if entry is not None:
            self.bytes_held -= value_bytes(*entry)
        return entry

    def refuse(self, base: int, why: str) -> None:
        """The fragment that defines ids from `base` was refused: none of its values exist."""
        self.refused.append([base, None, why])

    def next_base(self, base: int) -> None:
        """A Submit came with `base`: a refused fragment before it defined ids below it."""
        if (self.refused and self.refused[-1][1] is None and type(base) is int
                and base > self.refused[-1][0]):
            self.refused[-1][1] = base

    def refused_why(self, value_id: int) -> str | None:
        """Why `value_id` was never made, if a refused fragment would have made it."""
        if type(value_id) is not int:
            return None
        for base, end, why in reversed(self.refused):
            if base <= value_id and (end is None or value_id < end):
                return why
        return None

    def why_missing(self, value_id: int) -> str:
        """What to tell of a read of `value_id`, which the session does not hold."""
        lost_with = self.lost_values.get(value_id)
        if lost_with is not None:
            return f'value {value_id} was lost with {lost_with}'
        why = self.refused_why(value_id)
        if why is not None:
            return (f'value {value_id} was never made: the server refused the work that '
                    f'made it ({why})')
        return f'value {value_id} does not exist in this session'

    def lose_values_on(self, worker: int, words: str) -> None:
        """Forget the values that worker held a piece of: a worker that comes back comes
        back empty, so a later read must name the loss, not find nothing. A whole copy
        held elsewhere too (a data-parallel weight) lives on in the others."""
        for value_id, (shape, dtype, placement) in list(self.values.items()):
            if worker not in placement.workers:
                continue
            others = tuple(w for w in placement.workers if w != worker)
            if isinstance(placement, Replicate) and others:
                self.hold(value_id, (shape, dtype, Replicate(others)))
            else:
                self.release(value_id)
                self.lost_values[value_id] = words

    def configure(self, configs: object, auto_shard_elements: object, compile_wish: object,
                  compile_default: list, default_dtype: object) -> None:
        """Take the client's signal configs (gt.config.wire_form), compile wish (the
        server's default fills its gaps) and default dtype; malformed entries, which GT's
        own client never sends, are skipped."""
        kept, compiled = [], []
        for name, spec in (configs.items() if isinstance(configs, dict) else ()):
            try:
                axis, workers = spec[0], spec[1]
                if not isinstance(name, str) or not (axis is None or (
                        isinstance(axis, int) and not isinstance(axis, bool) and axis >= 0)):
                    continue
                workers = tuple(w for w in workers if isinstance(w, int)) if workers else None
            except (TypeError, IndexError, KeyError):
                continue
            kept.append((name, axis, workers))
            if len(spec) > 3 and spec[3] is True:
                compiled.append(name)
        self.configs = tuple(sorted(kept, key=lambda config: config[0]))
        self.auto_shard_elements = (auto_shard_elements if isinstance(auto_shard_elements, int)
                                    else None)
        self.compile = CompileSettings.resolve(compile_wish, compile_default,
                                               tuple(sorted(compiled)))
        self.default_dtype = (default_dtype if isinstance(default_dtype, str)
                              and default_dtype in FLOATING else 'float32')


@dataclass
class PendingRequest:
    """A client's fetch or stats request, waiting for the workers involved to answer."""

    identity: bytes
    request: int
    workers: set
    is_stats: bool
    positions: dict = field(default_factory=dict)  # worker -> (place in reply, piece) of values
    layouts: list = field(default_factory=list)  # each fetched value's placement
    tensors: list = field(default_factory=list)
    frames: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    stats: list = field(default_factory=list)
    opened: float = field(default_factory=time.monotonic)

    def joined(self) -> tuple[list, list]:
        """The reply's headers and frames: a value whose pieces came from several workers
        is sent as its pieces, for the client to join (shards in order, partial sums
        added up); a value with a piece missing has no header (its error explains it)."""
        tensors, frames = [], []
        for layout, pieces, piece_frames in zip(self.layouts, self.tensors, self.frames):
            headers = [pieces.get(piece) for piece in range(len(pieces))]
            if not pieces or None in headers:
                tensors.append(None)
                continue
            frames += [piece_frames[p] for p in range(len(pieces)) if piece_frames[p] is not None]
            if len(headers) == 1:
                tensors.append(headers[0])
            else:
                axis = None if isinstance(layout, Partial) else layout.axis
                tensors.append({'axis': axis, 'pieces': headers})
        return tensors, frames


DTYPE_SIZES = {name: dtype.itemsize for name, dtype in TORCH_DTYPES.items()}


def bytes_per_worker(shape: tuple, dtype: str, placement: Placement) -> dict[int, int]:
    """The bytes of a value's pieces on each worker that holds one."""
    size = DTYPE_SIZES.get(dtype, 4)
    return {worker: numel(local_shape(shape, placement, worker)) * size
            for worker in placement.workers}


@functools.lru_cache(maxsize=4096)
def value_bytes(shape: tuple, dtype: str, placement: Placement) -> int:
    """Cached: every step holds and releases values of the same few layouts, a few dozen
    times (0.45 against 0.15 us a call)."""
    return sum(bytes_per_worker(shape, dtype, placement).values())
