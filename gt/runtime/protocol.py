"""Every message GT sends, one frozen record per kind, and how records go on the wire.

A message is a multipart ZeroMQ message: one msgpack header frame `[kind, *fields]`,
then raw tensor buffers, sent without copying. Nothing received is ever unpickled: a
header decodes to plain lists, numbers, strings and bytes, then into its record.
"""

from typing import Any, NamedTuple

import msgpack


class ProtocolError(ValueError):
    """A message that is not one of GT's."""


# ---- client -> dispatcher --------------------------------------------------------------
class Hello(NamedTuple):
    client: str  # a description for logs and stats, e.g. "host:pid"
    wait_for_workers: int  # answer only once this many workers have registered
    shared_memory_probe: str  # see gt.runtime.shared_memory; '' when the client has none
    token: str = ''  # the server's shared secret (GT_TOKEN), when it has one
    weight: float = 1.0  # the session's share of the workers against others (GT_WEIGHT)


class Submit(NamedTuple):
    """A flushed fragment (may be empty), values the client freed, and values to fetch.

    `structure` is the canonical encoding of the fragment (see gt.runtime.fragment); the
    fragment defines client ids `base, base+1, ...`; `externals` are the ids of earlier
    values it reads. Data for `from_numpy` nodes follows as frames. When `fetch` is not
    empty the dispatcher answers with `Fetched(request, ...)`.
    """

    structure: bytes
    base: int
    externals: list[int]
    literals: list  # numbers the fragment's scalar nodes read, by slot
    releases: list[int]
    reverts: list[int]  # `[new, old, ...]`: a failed `new` takes `old`'s value (gt.runtime.reverts)
    fetch: list[int]
    request: int


class Configure(NamedTuple):
    """The client's signal configs (gt.config.wire_form), auto-shard threshold (None: off),
    compile wish (gt.runtime.compile_settings.requested) and default floating dtype
    (gt.default_dtype); sent before the first Submit and whenever they change."""

    configs: dict
    auto_shard_elements: int | None
    compile: list
    default_dtype: str


class Ping(NamedTuple):
    pass


class StatsRequest(NamedTuple):
    request: int
    token: str = ''  # the server's shared secret, from a peer without a session (top, trace)


class Mark(NamedTuple):
    """A point in the client's stream of fragments, answered with `Marked(number)` once
    every fragment sent before it has left the dispatcher's queue for the workers: how a
    client learns how far ahead it is (gt.runtime.pacing)."""

    number: int


class DumpRequest(NamedTuple):
    """Ask for the IR of this client's last fragment as the passes left it: `form` is
    'ir' (text), 'workers' (the lowered per-worker programs) or 'dot' (Graphviz)."""

    request: int
    form: str


class Goodbye(NamedTuple):
    pass


class KeepAlive(NamedTuple):
    """Sent every second by a client's own thread, so the dispatcher can tell a quiet
    client from a dead one."""

    session: int


# ---- dispatcher -> client --------------------------------------------------------------
class Welcome(NamedTuple):
    session: int
    workers: list[dict]
    max_message_bytes: int = 0  # larger messages are refused unread (0: no bound)
    writes_log: bool = False  # the dispatcher writes an instruction log


class Refused(NamedTuple):
    reason: str


class Pong(NamedTuple):
    pass


class SessionEnded(NamedTuple):
    """The answer to work from a client whose session the dispatcher ended on its own (the
    client was silent for GT_SESSION_TIMEOUT): `reason` says so, in words."""

    session: int
    reason: str


class Dumped(NamedTuple):
    request: int
    text: str


class Marked(NamedTuple):
    number: int


# ---- dispatcher -> worker --------------------------------------------------------------
class RunProgram(NamedTuple):
    """Run program `program_id` (its encoding comes along the first time) for a session.

    The program reads `externals` (the session's value ids) and defines client ids
    `base + k` for the fragment-local indices k it keeps. Releases are applied after the
    run, fetches last; data frames follow the header.
    """

    session: int
    program_id: int
    program: bytes | None
    base: int
    externals: list[int]
    literals: list
    releases: list[int]
    reverts: list[int]  # applied after the run, before the releases
    fetch: list[int]
    request: int
    forget: list[int]  # program ids the worker may drop: the dispatcher will not use them
    shared_memory_probe: str  # the client's probe: large fetches may go through /dev/shm


class EndSession(NamedTuple):
    session: int


class Peers(NamedTuple):
    """The worker's own index and every worker's peer socket: `[index, host, endpoints,
    alive, key]` (`key`: its CURVE public key, '' without CURVE); sent whenever a worker
    joins or is lost. `salt` seeds every worker's random
    generator for a session alike, so that copies of a random value agree."""

    index: int
    peers: list
    salt: int
    report_programs: bool  # send each program's start and end with heartbeats (a log is on)


class Reregister(NamedTuple):
    """From a dispatcher that does not know this worker (it restarted): start afresh."""


# ---- worker -> dispatcher --------------------------------------------------------------
class Register(NamedTuple):
    name: str
    device: str
    host: str
    pid: int
    peer_endpoints: list  # where other workers send it pieces of moves
    token: str = ''  # the server's shared secret, as for clients
    peer_key: str = ''  # the CURVE public key of its peer socket ('' without CURVE)
    express_key: str = ''  # a secret its express lane's ExpressReady repeats


class Done(NamedTuple):
    """RunPrograms are finished (after their replies, if they fetched): `programs` is
    `[session, seconds]` for each, in order. The dispatcher may send this worker more,
    and charges each session its seconds. A busy worker reports several at once (see
    Worker.execute)."""

    programs: list


class Heartbeat(NamedTuple):
    """`activity` since the last beat (gt.runtime.activity), or None when idle."""

    worker: bytes  # the worker's main socket identity
    activity: dict | None


class ExpressReady(NamedTuple):
    """From a worker's express lane (its second socket and thread, which runs light
    sessions' programs beside a long one: see gt.runtime.scheduler), now and then while
    idle, so that a dispatcher, restarted or not, knows the lane is connected."""

    worker: bytes  # the worker's main socket identity
    key: str  # its Register's express_key: clients see identities, never this


# ---- both directions between dispatcher and the others ---------------------------------
class Fetched(NamedTuple):
    """Fetched tensors as `[dtype, shape]` headers, one frame each, or `[dtype, shape,
    path]` for a tensor written to a shared-memory file; `errors` are runtime
    errors found since the last fetch, as `[base, location, op, message]`: the
    fragment and position of the client op that failed (None when unknown)."""

    request: int
    tensors: list[list]
    errors: list[list]
    seconds: float = 0.0  # from a worker: how long its RunProgram took (it ends it, as Done)


class Stats(NamedTuple):
    """Per-worker statistics; from the dispatcher also its own, under `dispatcher`."""

    request: int
    workers: list[dict]
    dispatcher: dict


MESSAGES = [
    Hello, Submit, Ping, StatsRequest, DumpRequest, Goodbye, KeepAlive, Welcome, Refused, Pong,
    Dumped, RunProgram, EndSession, Reregister, Register, Heartbeat, Fetched, Stats, Configure,
    Peers, Done, ExpressReady, Mark, Marked, SessionEnded,
]
_KIND = {message: index for index, message in enumerate(MESSAGES)}
_ARITY = {message: len(message._fields) for message in MESSAGES}


def encode(message: Any) -> bytes:
    return msgpack.packb((_KIND[type(message)], *message), use_bin_type=True)


def check_size(message: Submit, frames: list, bound: int) -> None:
    """The server drops messages over `bound` bytes unread: a client says so at the
    user's line instead."""
    data = sum(memoryview(frame).nbytes for frame in frames)
    # msgpack spends at most 9 bytes on a number and 5 on a length: a bound that spares
    # encoding every message twice.
    numbers = (len(message.externals) + len(message.literals) + len(message.releases)
               + len(message.reverts) + len(message.fetch))
    if len(message.structure) + 9 * numbers + 64 + data <= bound:
        return
    size = len(encode(message)) + data
    if size > bound:
        raise ValueError(f'this work is a {size:,}-byte message, over the server\'s bound of '
                         f'{bound:,} bytes (gt.server --max-message-bytes): send the data in '
                         'smaller tensors')


def decode(header: bytes) -> Any:
    try:
        kind, *values = msgpack.unpackb(header, raw=False, strict_map_key=False)
        message = MESSAGES[kind]
    except Exception as error:
        raise ProtocolError(f'not a GT message ({type(error).__name__})') from None
    if not isinstance(kind, int) or kind < 0 or len(values) != _ARITY[message]:
        raise ProtocolError(f'malformed {message.__name__} message')
    return message(*values)
