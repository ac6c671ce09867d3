"""What the dispatcher remembers about its peers: each worker, each client's session, and
each request still waiting for workers to answer."""

import time
from collections import OrderedDict
from dataclasses import dataclass, field


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


@dataclass
class Session:
    number: int
    identity: bytes
    client: str
    home_worker: int
    values: dict = field(default_factory=dict)  # client id -> (shape, dtype, placement)
    last_seen: float = field(default_factory=time.monotonic)
    errors: list = field(default_factory=list)  # reports not yet delivered to the client
    last_plan: object = None
    shared_memory_probe: str = ''
    configs: tuple = ()  # (signal name, shard axis, workers), as PipelineOptions takes them
    auto_shard_elements: int | None = None


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
