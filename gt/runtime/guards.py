"""Who may use a server and how much one session may hold.

The token is compared in constant time when a client says Hello or a worker registers;
the memory limit is checked when a fragment is planned, before any of it runs. (The
message size bound is libzmq's MAXMSGSIZE on the dispatcher's socket; CURVE keys, and
whom they admit, are gt.runtime.curve's.)
"""

import hmac
from dataclasses import dataclass

from gt.runtime.curve import ServerCurve
from gt.runtime.peers import Session, value_bytes

REFUSAL = ('wrong or missing token: set GT_TOKEN to the token the server was started with '
           '(gt.server --token)')


@dataclass(frozen=True)
class Limits:
    """What the server bounds: who may connect (`token`, and with `curve` who may even
    complete a handshake, all traffic encrypted), how large one message may be, and how
    many bytes one session may hold over all workers (None: no bound)."""

    token: str | None = None
    max_message_bytes: int = 0
    session_memory: int | None = None
    curve: ServerCurve | None = None

    def admits(self, token: object) -> bool:
        if self.token is None:
            return True
        return isinstance(token, str) and hmac.compare_digest(token.encode(),
                                                              self.token.encode())

    def check_memory(self, session: Session, kept: list, upgrades: list, releases: list,
                     external_types: list) -> None:
        """Refuse a fragment that would take the session past its limit: the values it
        keeps (`(local, shape, dtype, placement)`) and the copies its moves leave
        (`(external position, placement)`), less the values the same message releases."""
        if self.session_memory is None:
            return
        after = session.bytes_held
        after += sum(value_bytes(shape, dtype, placement) for _, shape, dtype, placement in kept)
        for position, placement in upgrades:
            shape, dtype, before = external_types[position]
            after += value_bytes(shape, dtype, placement) - value_bytes(shape, dtype, before)
        after -= sum(value_bytes(*session.values[v]) for v in set(releases)
                     if v in session.values)
        if after > self.session_memory:
            raise OutOfMemory(
                f'session {session.number} would hold {after:,} bytes, over its limit of '
                f'{self.session_memory:,} (--session-memory-limit); it holds '
                f'{session.bytes_held:,} bytes in {len(session.values)} tensors now. Free '
                'tensors (del them) or ask for a higher limit')


class OutOfMemory(Exception):
    """A session's fragment would take it past its memory limit; the client raises
    gt.OutOfMemoryError."""
