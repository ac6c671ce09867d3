"""How the dispatcher turns a peer away (a mixin of `Dispatcher`): the peer hears why,
and the operator, on the server's stderr, who was refused, from which address, and why.

A message that is not GT's protocol (a client of another GT version, a stray tool on the
port) is answered the same way, once per peer: the sender of another version then stops
with the reason instead of waiting out its start-up timeout, and a peer that keeps
sending garbage costs one line, not one per message.
"""

import contextlib
import sys

import zmq

from gt.runtime.curve import describe_peer
from gt.runtime.guards import REFUSAL
from gt.runtime.protocol import Refused

STRANGERS_REMEMBERED = 1024  # peers told once; past this many, the set starts over


class Refusals:
    strangers_told: set[bytes]

    def _admitted(self, identity: bytes, token: object, who: str) -> bool:
        """Whether a Hello, Register or StatsRequest carries the server's token."""
        if self.limits.admits(token):
            return True
        self._refuse(identity, who, 'wrong or missing token', REFUSAL)
        return False

    def _refuse(self, identity: bytes, who: str, problem: str, reason: str | None = None) -> None:
        """Tell a peer why it was turned away (`reason`, else `problem`), and the operator
        who it was, from which address, and why."""
        address = ''
        with contextlib.suppress(zmq.ZMQError, AttributeError):
            address = self.last_header.get('Peer-Address') or address
        print(f'gt.server: refused {who} from {describe_peer(address)}: {problem}',
              file=sys.stderr, flush=True)
        self._send(identity, Refused(reason or problem))

    def _refuse_stranger(self, identity: bytes, problem: str) -> None:
        """A message the dispatcher cannot take: said once per peer, then dropped."""
        if identity in self.strangers_told:
            return
        if len(self.strangers_told) >= STRANGERS_REMEMBERED:
            self.strangers_told.clear()
        self.strangers_told.add(identity)
        self._refuse(identity, 'a message', f'{problem} (is the sender GT of this version?)')
