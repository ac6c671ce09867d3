"""Recording: how the client appends ops, data and numbers to the pending fragment, and
notes the values the script dropped. A mixin of gt.runtime.client.Client, which sends.

A record is all or nothing: a KeyboardInterrupt (Ctrl-C in a notebook) that lands while
an op is appended takes the op back (`_take_back`), since ids are positions in the
fragment and one left half made would give every later op the value of the one before.
"""

import numpy as np

from gt.runtime import environment
from gt.runtime.fragment import NO_ATTRS
from gt.runtime.locations import user_location

# Pending ops are sent unasked once there are this many. Not fewer after a fetch, though
# the workers are idle then: a step cut in two costs a message and a program more than
# its head start gains (benchmarks/mlp_step.py, fetching every step: 1.3-1.7 ms against
# 1.7-2.1 ms with a 32-op head), and its pieces compile as regions of their own.
FRAGMENT_LIMIT = environment.integer('GT_FRAGMENT_LIMIT')
# Room left in a bounded message for what is not an upload's bytes (ops, headers).
DATA_MARGIN = 1 << 16


class Recording:
    """The recording half of a client: `pending`, `next_id`, `releases`, `reports`,
    `closed`, `max_message_bytes` and `flush` are the client's."""

    def record(self, op: str, operands: list[int], attrs: dict, n_outputs: int = 1,
               scope: str | None = None, location: tuple | None = None) -> int:
        """Append a node; return the client id of its first output. `location` is the
        user's line (`user_location()`), looked up here unless the caller knows it."""
        pending = self.pending
        base = pending.base
        refs = []
        for value_id in operands:
            if value_id >= base:
                refs.append(value_id - base)
            else:
                index = pending.external_index.get(value_id)
                refs.append(-1 - (self._external(value_id) if index is None else index))
        location = location or user_location()
        first = self.next_id
        try:
            if n_outputs != 1:
                pending.outputs[len(pending.records)] = n_outputs
            pending.records.append((op, refs, attrs, scope))
            pending.locations.append(location)
            self.next_id = first + n_outputs
        except BaseException:
            self._take_back(first)
            raise
        if len(pending.records) >= FRAGMENT_LIMIT:
            self.flush()
        return first

    def record_binary(self, op: str, left: int, right: int, scope: str | None) -> int:
        """`record` of a two-operand op without attrs, the commonest in elementwise loops,
        with the loop over operands unrolled: measured, a tenth of the 1.3 us an add takes
        to record. Its append is `record`'s, written out again: a method both call cost
        40 ns of the 1.03 us."""
        pending = self.pending
        base = pending.base
        known = pending.external_index
        if left >= base:
            left_ref = left - base
        else:
            index = known.get(left)
            left_ref = -1 - (self._external(left) if index is None else index)
        if right >= base:
            right_ref = right - base
        else:
            index = known.get(right)
            right_ref = -1 - (self._external(right) if index is None else index)
        location = user_location()
        first = self.next_id
        try:
            pending.records.append((op, [left_ref, right_ref], NO_ATTRS, scope))
            pending.locations.append(location)
            self.next_id = first + 1
        except BaseException:
            self._take_back(first)
            raise
        if len(pending.records) >= FRAGMENT_LIMIT:
            self.flush()
        return first

    def _take_back(self, first: int) -> None:
        """A KeyboardInterrupt (Ctrl-C in a notebook) stopped a record half made: undo it,
        or every later op would name the value of the one before it."""
        pending = self.pending
        count = sum(pending.outputs.get(index, 1) for index in range(len(pending.records)))
        while pending.base + count > first:  # the record of `first` went in
            count -= pending.outputs.pop(len(pending.records) - 1, 1)
            pending.records.pop()
        pending.outputs.pop(len(pending.records), None)
        del pending.locations[len(pending.records):]
        self.next_id = first

    def _external(self, value_id: int) -> int:
        """Name an earlier value as an input of the pending fragment, the first time it
        reads it; a value whose work never ran raises why, here at the user's line."""
        if self.reports.lost:
            self.reports.check(value_id)
        return self.pending.add_external(value_id)

    def add_data(self, array: np.ndarray, dtype: str) -> int:
        """Attach an array to the pending fragment; return its slot for `from_numpy`.
        `dtype` names the GT dtype (bfloat16 travels as the raw 16-bit words of a uint16
        array). Under a server's message bound, an array over it raises here, at the
        user's line, and one that would take the pending fragment over it sends the work
        before it first: the whole message was refused at the next flush, losing the
        work recorded before the upload with it."""
        bound = self.max_message_bytes
        if bound:
            if array.nbytes + DATA_MARGIN > bound:
                raise ValueError(f'this tensor is {array.nbytes:,} bytes, over the server\'s '
                                 f'bound of {bound:,} bytes a message (gt.server '
                                 '--max-message-bytes): send the data in smaller tensors')
            if sum(d.nbytes for d in self.pending.data) + array.nbytes + DATA_MARGIN > bound:
                self.flush(pace=False)
        self.pending.data_headers.append([dtype, list(array.shape)])
        self.pending.data.append(np.ascontiguousarray(array).copy())
        return len(self.pending.data) - 1

    def add_literal(self, value: bool | int | float) -> int:
        """Attach a number to the pending fragment; return its slot for `scalar`."""
        if type(value) is int and not -(1 << 63) <= value < 1 << 64:
            raise OverflowError(f'{value} does not fit in 64 bits, as GT sends integers')
        self.pending.literals.append(value)
        return len(self.pending.literals) - 1

    def release(self, value_id: int) -> None:
        if self.closed:
            return
        if value_id >= self.pending.base:
            self.pending.dropped.add(value_id)
        else:
            self.releases.append(value_id)
