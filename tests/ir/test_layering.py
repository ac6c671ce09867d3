"""gt.ir and gt.passes are pure: they import no sockets, threads or runtime code."""

import ast
from pathlib import Path

import gt

FORBIDDEN = ('zmq', 'threading', 'socket', 'gt.runtime', 'torch.distributed', 'gt.tensor')
ROOT = Path(gt.__file__).parent


def imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f'{node.module}.{alias.name}' for alias in node.names)
    return names


def test_ir_and_passes_import_nothing_from_the_runtime():
    files = sorted((ROOT / 'ir').rglob('*.py')) + sorted((ROOT / 'passes').rglob('*.py'))
    assert len(files) > 5
    for path in files:
        for name in imported_modules(path):
            for forbidden in FORBIDDEN:
                assert name != forbidden and not name.startswith(forbidden + '.'), \
                    f'{path.relative_to(ROOT)} imports {name}'
