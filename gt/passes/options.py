"""What the pipeline needs to know about the cluster and the session; passes read nothing
else (never the environment)."""

from dataclasses import dataclass


@dataclass(frozen=True)
class PipelineOptions:
    workers: tuple[int, ...]  # live workers, by index
    home_worker: int  # where a session's unsharded values live
    # The session's signal configs: (name, shard axis or None, workers or None for all).
    configs: tuple[tuple[str, int | None, tuple[int, ...] | None], ...] = ()
    # Created tensors of at least this many elements are sharded over every worker when
    # there are several (the seeds' auto-shard rule); None turns it off.
    auto_shard_elements: int | None = None
    # Workers whose random generator of the session is in step with all its draws so far;
    # None before any draw (every worker's is then, all being seeded alike).
    generator_holders: tuple[int, ...] | None = None
    # The session's default floating dtype (gt.set_default_dtype): types are worked out,
    # and its worker programs run, under it.
    default_dtype: str = 'float32'

    def scope_workers(self) -> dict[str, tuple[int, tuple[int, ...]]]:
        """Signal name -> (axis, live workers) for the configs that shard: a config that
        names workers that are not there runs on those that are (or is ignored)."""
        scopes = {}
        for name, axis, workers in self.configs:
            live = tuple(w for w in (workers or self.workers) if w in self.workers)
            if axis is not None and live:
                scopes[name] = (axis, tuple(dict.fromkeys(live)))
        return scopes
