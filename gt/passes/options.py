"""What the pipeline needs to know about the cluster; passes read nothing else."""

from dataclasses import dataclass


@dataclass(frozen=True)
class PipelineOptions:
    workers: tuple[int, ...]  # live workers, by index
    home_worker: int  # where a session's unsharded values live
