"""Signal configs: how the ops recorded under each signal name are placed.

Configs come from YAML (`GT_CONFIG` at import, `gt.load_config(path)`) or from Python
(`gt.register_config(name, SignalConfig(...))`); the later registration of a name wins.
The client sends them to the dispatcher with its session (`wire_form`), whose passes
apply them. A config never changes results, only placement and speed.
"""

import os
from dataclasses import dataclass

import yaml


class ConfigError(ValueError):
    """A config that cannot be used; the message names the file, signal and field."""


# The largest shard axis or worker number: no tensor has that many dimensions, nor a server
# that many workers. Past 2**64 msgpack cannot carry a number at all: such a config was
# once accepted, and the next flush failed and lost the session's pending work.
LARGEST_INDEX = 2**31 - 1


@dataclass(frozen=True)
class ShardConfig:
    axis: int = 0
    workers: tuple[int, ...] | None = None  # None: every worker

    def __post_init__(self) -> None:
        if not isinstance(self.axis, int) or isinstance(self.axis, bool) or self.axis < 0:
            raise ConfigError(f'shard.axis must be a non-negative integer, got {self.axis!r}')
        if self.axis > LARGEST_INDEX:
            raise ConfigError(f'shard.axis {self.axis} is out of range: a dimension is numbered '
                              f'from 0 to at most {LARGEST_INDEX}')
        if self.workers is not None:
            workers = self.workers
            if not isinstance(workers, (list, tuple)) or not workers or not all(
                    isinstance(w, int) and not isinstance(w, bool) and w >= 0 for w in workers):
                raise ConfigError('shard.workers must be a non-empty list of worker numbers, '
                                  f'got {workers!r}')
            if len(set(workers)) != len(workers):
                raise ConfigError(f'shard.workers names a worker twice: {list(workers)}')
            if max(workers) > LARGEST_INDEX:
                raise ConfigError(f'shard.workers names worker {max(workers)}, out of range: '
                                  f'workers are numbered from 0 to at most {LARGEST_INDEX}')
            object.__setattr__(self, 'workers', tuple(workers))


@dataclass(frozen=True)
class SignalConfig:
    shard: ShardConfig | None = None
    backward_signal: str | None = None  # the config that places this signal's gradient ops
    compile: bool = False

    def __post_init__(self) -> None:
        if self.shard is not None and not isinstance(self.shard, ShardConfig):
            raise ConfigError(f'shard must be a ShardConfig, got {self.shard!r}')
        if self.backward_signal is not None and (
                not isinstance(self.backward_signal, str) or not self.backward_signal):
            raise ConfigError('backward_signal must be the name of a signal, got '
                              f'{self.backward_signal!r}')
        if not isinstance(self.compile, bool):
            raise ConfigError(f'compile must be true or false, got {self.compile!r}')


_configs: dict[str, SignalConfig] = {}
_version = 0

SIGNAL_KEYS = ('shard', 'backward', 'compile')
SHARD_KEYS = ('axis', 'workers')


def register_config(name: str, config: SignalConfig) -> None:
    global _version
    if not isinstance(name, str) or not name:
        raise ConfigError(f'a signal name must be a non-empty string, got {name!r}')
    if not isinstance(config, SignalConfig):
        raise ConfigError(f'signal {name!r}: expected a SignalConfig, got {config!r}')
    _configs[name] = config
    _version += 1


def get_config(name: str) -> SignalConfig | None:
    return _configs.get(name)


def names() -> list[str]:
    """The signals that have a config."""
    return list(_configs)


def clear_configs() -> None:
    global _version
    _configs.clear()
    _version += 1


def version() -> int:
    """Increases with every change, so the client knows when to send configs again."""
    return _version


def wire_form() -> dict[str, list]:
    return {name: [config.shard.axis if config.shard else None,
                   list(config.shard.workers) if config.shard and config.shard.workers else None,
                   config.backward_signal, config.compile]
            for name, config in _configs.items()}


def load_config(path: str | os.PathLike[str]) -> None:
    """Register every signal of a YAML file; a malformed file registers nothing."""
    try:
        # Bytes, so that yaml detects the encoding and a bad byte is a YAMLError naming the file.
        with open(path, 'rb') as file:
            document = yaml.safe_load(file)
    except yaml.YAMLError as error:
        mark = getattr(error, 'problem_mark', None)
        where = f' (line {mark.line + 1})' if mark is not None else ''
        raise ConfigError(f'{path}: not valid YAML{where}: {error}') from None
    if document is None:
        return
    if not isinstance(document, dict):
        raise ConfigError(f'{path}: expected a mapping of signal names to configs, got '
                          f'{type(document).__name__}')
    parsed = {name: _parse(path, name, body) for name, body in document.items()}
    for name, config in parsed.items():
        register_config(name, config)


def _parse(path: str | os.PathLike[str], name: object, body: object) -> SignalConfig:
    where = f'{path}: signal {name!r}'
    if not isinstance(name, str) or not name:
        raise ConfigError(f'{where}: a signal name must be a non-empty string')
    if body is None:
        return SignalConfig()
    if not isinstance(body, dict):
        raise ConfigError(f'{where}: expected a mapping with {", ".join(SIGNAL_KEYS)}, got '
                          f'{body!r}')
    try:
        _check_keys('', body, SIGNAL_KEYS)
        shard = body.get('shard')
        if shard is not None:
            if not isinstance(shard, dict):
                raise ConfigError(f'shard must be a mapping with axis and workers, got {shard!r}')
            _check_keys('shard.', shard, SHARD_KEYS)
            shard = ShardConfig(axis=shard.get('axis', 0), workers=shard.get('workers'))
        backward = body.get('backward')
        if backward is not None and (not isinstance(backward, str) or not backward):
            # Checked here, not by SignalConfig, so the message uses the file's name for it.
            raise ConfigError(f'backward must be the name of a signal, got {backward!r}')
        return SignalConfig(shard=shard, backward_signal=backward,
                            compile=body.get('compile', False))
    except ConfigError as error:
        raise ConfigError(f'{where}: {error}') from None


def _check_keys(prefix: str, mapping: dict, allowed: tuple) -> None:
    for key in mapping:
        if key not in allowed:
            raise ConfigError(f'unknown field {prefix}{key} (expected '
                              f'{", ".join(prefix + a for a in allowed)})')
