"""The error of an op whose operands or arguments do not fit it."""


class InvalidOpError(RuntimeError, ValueError):
    """Shapes that do not broadcast, a dim out of range, a bad argument: raised at the
    user's line when the op is recorded. A RuntimeError, as torch raises for these, so a
    ported `except RuntimeError` still catches it; and a ValueError, what GT's type rules
    raise, so the dispatcher (which re-derives every type) and older callers see what they
    always did."""


class DimOutOfRangeError(InvalidOpError, IndexError):
    """A dim outside [-ndim, ndim): an IndexError too, as torch raises it, so a ported
    `except IndexError` still catches it."""
