"""What a session asks to have compiled, and how that reaches each worker program.

`GT_AUTO_COMPILE=1` compiles programs once hot (run `GT_HOTPATH_THRESHOLD` times),
`GT_COMPILE=1` compiles every program from its first run, `GT_COMPILE_BACKEND` picks
the backend (inductor by default), and a signal whose config says `compile: true` has
the nodes recorded in its scope compiled once their program is hot. The client sends
what its environment says (None where unset); the dispatcher fills the gaps from its
own environment, so a hand-started server can turn compiling on for everyone. The
planner writes the result into each worker program as `[when, backend, steps]`.
"""

import os
from dataclasses import dataclass
from typing import Mapping

from gt.ir import Graph
from gt.runtime import environment

BACKENDS = ('inductor', 'eager', 'aot_eager', 'cudagraphs')
WHEN = ('never', 'hot', 'always')


def requested(environ: Mapping[str, str] = os.environ) -> list:
    """The client's wish, `[when or None, backend or None]`; a bad backend raises here,
    at the user's first op, naming the variable."""
    backend = environ.get('GT_COMPILE_BACKEND') or None
    if backend is not None:
        check_backend(backend, 'GT_COMPILE_BACKEND')
    always = environment.switch('GT_COMPILE', None, environ)
    hot = environment.switch('GT_AUTO_COMPILE', None, environ)
    if always:
        when = 'always'
    elif hot:
        when = 'hot'
    elif always is None and hot is None:
        when = None
    else:
        when = 'never'
    return [when, backend]


def check_backend(backend: object, spelled: str) -> None:
    """Raise, naming where it was given (`spelled`), unless GT compiles with `backend`."""
    if not isinstance(backend, str) or backend not in BACKENDS:
        raise ValueError(f'{spelled}={backend!r} is not a backend GT compiles with '
                         f'(choose one of {", ".join(BACKENDS)})')


@dataclass(frozen=True)
class CompileSettings:
    when: str = 'never'
    backend: str = 'inductor'
    signals: tuple[str, ...] = ()  # signals whose config says compile: true

    @classmethod
    def resolve(cls, wish: object, server: list, signals: tuple[str, ...]) -> 'CompileSettings':
        """The client's wish where it has one, else the server's; nonsense (which GT's own
        client never sends) counts as no wish."""
        when, backend = wish if isinstance(wish, list) and len(wish) == 2 else (None, None)
        when = when if when in WHEN else server[0] if server[0] in WHEN else 'never'
        backend = backend if backend in BACKENDS else server[1] or 'inductor'
        return cls(when, backend, signals)

    def program_spec(self, graph: Graph) -> list | None:
        """`[when, backend, steps]` for one worker's program, or None: nothing to compile."""
        if self.when != 'never':
            return [self.when, self.backend, None]
        marked = [index for index, node in enumerate(graph.nodes) if node.scope in self.signals]
        return ['hot', self.backend, marked] if marked else None
