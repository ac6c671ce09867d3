"""Where in the user's code each op was recorded, so that an error on a worker can name
the file and line. Every op pays for this, so it is kept to a frame lookup and a dict."""

import os
import sys

GT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Whether a code object belongs to GT, by its id (hashing a code object hashes its whole
# body): every recorded op looks for the user's frame, so this must be cheap. The code
# object is kept in the value so that its id cannot be reused.
_inside_gt: dict[int, tuple] = {}
# Every op reaches `record` through `apply`, called by a GT function the user called:
# user_location <- record <- apply <- API function <- user. Starting there skips
# materializing GT's own frames.
FRAMES_ABOVE_USER = 4


def user_location() -> tuple:
    """Where the user's code made the current call: `(code object, instruction offset)`.
    The line number is worked out only when an error needs it (see `line_of`)."""
    frame = sys._getframe(FRAMES_ABOVE_USER)
    while frame is not None:
        code = frame.f_code
        known = _inside_gt.get(id(code))
        if known is None:
            known = _inside_gt[id(code)] = (code, code.co_filename.startswith(GT_DIR))
        if not known[1]:
            return (code, frame.f_lasti)
        frame = frame.f_back
    return (None, 0)


def user_call(inside: tuple[str, ...] = (GT_DIR,)) -> tuple[int, str]:
    """Where the user's code called into GT, seen from the caller of this: the
    `stacklevel` at which its `warnings.warn` names the user's line (the first frame up
    the stack that is not GT's, nor in the other directories `inside` names), and the
    file of the GT function the user called."""
    level, frame, entry = 1, sys._getframe(1), ''
    while frame is not None and frame.f_code.co_filename.startswith(inside):
        level, entry, frame = level + 1, frame.f_code.co_filename, frame.f_back
    return level, entry


def line_of(code: object, offset: int) -> int:
    for start, end, line in code.co_lines():
        if start <= offset < end:
            return line or 0
    return 0


def describe(location: tuple) -> str:
    """`path:line` of a location from `user_location`, or '' when unknown."""
    code, offset = location
    return f'{code.co_filename}:{line_of(code, offset)}' if code is not None else ''
