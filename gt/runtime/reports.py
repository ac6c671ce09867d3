"""What a client tells its user of work that failed or never ran, and where it was made.

A failure names the op and the user's line that recorded it (from the op locations of
the session's latest fragments), and is raised once though several workers report it.
Work that never ran (a fragment the server refused, past the session's memory limit say,
or the ops of one that msgpack cannot carry) is remembered by the value ids it would have
made: reading one, or recording an op on one, raises why at the user's line. The server
used to say only "value 1 does not exist in this session", of a tensor whose own line
had raised nothing.
"""

import builtins
import os
import warnings
from collections import deque
from typing import Callable

import msgpack

from gt.ir.ops import torch_calls
from gt.runtime.locations import describe, user_call
from gt.runtime.session_errors import (
    BY_KIND,
    FAILED,
    NOT_FAILURES,
    OUT_OF_MEMORY,
    REVERTED,
    WARNING,
    WORKER_WARNING,
    CompileWarning,
    OutOfMemoryError,
    WorkerError,
    WorkerIndexError,
)

OUT_OF_BOUNDS = 'is out of bounds for dimension'  # torch's words for an index out of range
FAILED_OPS_KEPT = 1024  # failures already raised, remembered so they are raised once
ORIGINS_KEPT = 256  # fragments whose op locations stay known for error messages
# Files of the GT functions through which the user asks for values: a worker's warning is
# warned of at such a fetch, not at one inside GT's own code (a GradScaler's step), which
# a warnings-as-errors filter would leave half done.
VALUE_ACCESS = tuple(os.sep + name for name in ('tensor.py', 'tensor_values.py',
                                                'serialization.py', 'module_state.py'))


class Reports:
    def __init__(self) -> None:
        self.origins: deque = deque(maxlen=ORIGINS_KEPT)  # (base, locations, op names)
        self.failed_ops: dict[tuple, None] = {}  # (fragment, node) of failures raised
        self.lost: deque = deque(maxlen=ORIGINS_KEPT)  # (first id, end id, error class, why)
        # A worker's, not yet warned of (`warn`): `(category, text)`
        self.warnings: list[tuple[type, str]] = []
        # Ids in `lost` that hold the value they replaced (gt.runtime.reverts.revive)
        self.revived: set[int] = set()

    def sent(self, base: int, locations: list, ops: list, outputs: dict) -> None:
        """A fragment left: its ops' names and locations, and the records that made more
        than one value (`outputs`: record -> count), to find a value's op."""
        self.origins.append((base, locations, ops, dict(outputs)))

    def made_at(self, value_id: int) -> str:
        """Where the op that made `value_id` was recorded, if that is still known."""
        for base, locations, ops, outputs in reversed(self.origins):
            if value_id < base:
                continue
            local, position = value_id - base, value_id - base
            if outputs:
                position = 0
                while position < len(ops) and local >= outputs.get(position, 1):
                    local -= outputs.get(position, 1)
                    position += 1
            if position < len(ops):
                where = describe(locations[position])
                return f'{where} ({ops[position]})' if where else ''
            return ''
        return ''

    def lose(self, first: int, end: int, kind: type, why: str) -> None:
        """Ids from `first` to `end` (exclusive) were never made, for `why`."""
        if end > first:
            self.lost.append((first, end, kind, why))

    def failed(self, errors: list) -> Callable[[int], bool] | None:
        """After `raise_errors`: whether a value failed on its worker (a fetch's `FAILED`
        reports) or was never made (its work refused, and not revived); None when the
        fetch told of neither. A value that failed and went back (`REVERTED`: a gradient
        accumulated into, a parameter updated) holds its old value, and has not failed."""
        failed = {value_id for error in errors if error[2] == FAILED for value_id in error[3]}
        failed.difference_update(value_id for error in errors if error[2] == REVERTED
                                 for value_id, *_ in error[3])
        if not failed and not any(error[2] == 'submit' for error in errors):
            return None
        lost = list(self.lost)
        return lambda value_id: value_id in failed or (value_id not in self.revived and any(
            first <= value_id < end for first, end, _, _ in lost))

    def check(self, value_id: int) -> None:
        """Raise why `value_id` was never made, if it was not."""
        if value_id in self.revived:
            return
        for first, end, kind, why in reversed(self.lost):
            if first <= value_id < end:
                raise kind(f'this tensor was never computed: {why}')

    def raise_errors(self, errors: list, value_failed: bool, next_base: int,
                     fetched: list = ()) -> None:
        """Raise the first failure not raised before. An op that ran on several workers
        fails on each, and each worker hands its report to the next fetch that involves
        it: the user hears of the op once, not again at an unrelated later fetch. A fetch
        of a value that failed (`value_failed`) always raises, naming the op again. Every
        refused fragment among them is remembered (`next_base`: where the last one sent
        ends), though only the first failure is raised. A failure of no op (a worker
        lost) names where the first of the `fetched` values was made. A worker's warnings
        among them are kept for `warn`, with the lines their ops were recorded at."""
        self.warnings += [(CompileWarning, text + self._recorded(base, places))
                          for base, places, kind, text in errors if kind == WARNING]
        self.warnings += [(warning_class(name), text) for _, _, kind, (name, text) in
                          (error for error in errors if error[2] == WORKER_WARNING)
                          if (name, text) not in torch_calls.WARNED_AT_THE_CALL]
        # An update undone because it read a failure told at an earlier fetch (state a
        # failed step made, that is not an optimizer's): raised again, as a fetch of a
        # failed value is, or every later step would be undone in silence.
        again = []
        for error in errors:
            for value_id, report, told in error[3] if error[2] == REVERTED else ():
                if report is None:  # its work was refused: the value it replaced is kept
                    self.revived.add(value_id)
                elif told:
                    again.append(report)
        errors = [error for error in errors if error[2] not in NOT_FAILURES]
        fresh = []
        for error in errors:
            key = (error[0], error[1])
            if error[2] == 'submit' and isinstance(key[0], int):
                self._refused(key[0], str(error[3]), next_base)
            if key[0] is None or key[1] is None:
                fresh.append(error)
            elif key not in self.failed_ops:
                self.failed_ops[key] = None
                fresh.append(error)
        while len(self.failed_ops) > FAILED_OPS_KEPT:
            del self.failed_ops[next(iter(self.failed_ops))]
        if value_failed and not fresh:
            fresh = errors or [[None, None, 'fetch', 'the value failed on a worker']]
        if again and not fresh:
            fresh = again
        errors = fresh
        if not errors:
            return
        base, location, op, message = errors[0]
        where = self.where(base, location)
        made = next(filter(None, map(self.made_at, fetched)), '') if base is None else ''
        if made:
            where = f'\n  while fetching the tensor made at {made}'

        found = self._origin(base) if op == 'submit' and base is not None else None
        if found is not None:
            _, (_, locations, _, _) = found
            where = (f'\n  the work refused was {span(locations)}: the tensors it made were '
                     'never computed')
        more = f' (and {len(errors) - 1} more)' if len(errors) > 1 else ''
        raise _kind(message)(f'{op} failed: {message}{where}{more}')

    def where(self, base: int | None, location: int | None) -> str:
        for origin_base, locations, ops, _ in self.origins:
            if origin_base == base and location is not None and location < len(locations):
                where = describe(locations[location])
                return f'\n  recorded at {where} ({ops[location]})' if where else ''
        return ''

    def warn(self) -> None:
        """Warn of the workers' warnings at the user's line, after a fetch succeeded
        (its values are assembled: a filter that raises a warning loses nothing), if the
        user asked for the values (VALUE_ACCESS); else they wait for such a fetch."""
        if not self.warnings:
            return  # every fetch comes here: the stack is looked at only when needed
        level, entry = user_call()
        while self.warnings and entry.endswith(VALUE_ACCESS):
            category, text = self.warnings.pop(0)
            warnings.warn(text, category, stacklevel=level)

    def _recorded(self, base: int | None, places: list | None) -> str:
        """Where a warning's ops were recorded (`places`: the first's and the last's
        positions in the fragment at `base`), or '' when that fragment is forgotten."""
        found = self._origin(base) if base is not None else None
        if found is None:
            return ''
        _, (_, locations, ops, _) = found
        if not all(isinstance(place, int) and 0 <= place < len(locations) for place in places):
            return ''  # an op the passes made, recorded nowhere
        first, last = places
        where = [describe(locations[place]) for place in (first, last)]
        if not all(where):
            return ''
        if first == last:
            return f'\n  recorded at {where[0]} ({ops[first]})'
        # Not "from ... to": a fragment may span a loop's turns, its last op's line first.
        return (f'\n  its first op recorded at {where[0]} ({ops[first]}), its last at '
                f'{where[1]} ({ops[last]})')

    def unsent(self, pending: object, position: int | None, error: Exception, first: int,
               end: int) -> Exception:
        """Remember ids from `first` to `end` as never made: a fragment (`pending`) could
        not be sent, from its record at `position` (the first msgpack cannot encode) on,
        or whole (None: too large). Return the error to raise."""
        if position is None:
            if pending.records:
                self.lose(first, end, type(error), f'the work that made it '
                          f'({span(pending.locations)}) was not sent: {error}')
            return error
        where = span(pending.locations[position:position + 1])
        after = len(pending.records) - position - 1
        why = (f'{pending.records[position][0]} ({where}) has an argument GT cannot send to '
               f'its server ({type(error).__name__}: {error}); it did not run'
               + (f', nor the {after} op(s) recorded after it' if after else ''))
        self.lose(first, end, type(error), why)
        return type(error)(why)

    def _origin(self, base: int) -> tuple | None:
        """The position and entry of the fragment sent with `base`, if still known."""
        for position, origin in enumerate(self.origins):
            if origin[0] == base:
                return position, origin
        return None

    def _refused(self, base: int, message: str, next_base: int) -> None:
        """The server refused the fragment from `base`: its ids end where the next
        fragment sent begins."""
        found = self._origin(base)
        if found is None:
            return
        position, (_, locations, _, _) = found
        end = self.origins[position + 1][0] if position + 1 < len(self.origins) else next_base
        self.lose(base, end, _kind(message),
                  f'the server refused the work that made it ({span(locations)}): {message}')


def _kind(message: object) -> type:
    """The error class a worker's failure is raised as. An index out of range is an
    IndexError (still a RuntimeError) even where torch's kernel words it as a
    RuntimeError (`index_add`, `gather`): GT may run only a lookup's backward, the
    forward's value being unused, and a ported `except IndexError` must still catch it."""
    text = str(message)
    if any(m in text for m in OUT_OF_MEMORY):
        return OutOfMemoryError
    kind = BY_KIND.get(text.partition(':')[0], WorkerError)
    if kind is WorkerError and OUT_OF_BOUNDS in text:
        return WorkerIndexError
    return kind


def first_unsendable(records: list) -> int | None:
    """The position of the first record msgpack cannot encode (an integer past 64 bits in
    its attributes, an object it does not know), or None if each one encodes."""
    for position, record in enumerate(records):
        try:
            msgpack.packb(record, use_bin_type=True)
        except (OverflowError, TypeError, ValueError):
            return position
    return None


def ids_made(records: int, outputs: dict) -> int:
    """How many ids the first `records` records of a fragment define: one each, but for
    those in `outputs` (position -> count)."""
    return records + sum(count - 1 for position, count in outputs.items()
                         if position < records)


def span(locations: list) -> str:
    """Where ops were recorded: `path:line` of the first and the last."""
    first, last = describe(locations[0]), describe(locations[-1])
    if not first:
        return 'recorded at an unknown place'
    return f'recorded at {first}' if first == last else f'recorded from {first} to {last}'


def warning_class(name: str) -> type:
    """Python's warning class of that name (torch's notes are UserWarnings, FutureWarnings
    and the like); any other, a UserWarning."""
    found = getattr(builtins, name, None)
    return found if isinstance(found, type) and issubclass(found, Warning) else UserWarning
