"""The digits example trains to >90% held-out accuracy on an auto-started server, and
its PyTorch twin differs from it only in imports and in `gt` being called `torch`."""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, 'examples', 'train_mlp.py')


def test_train_mlp_example_reaches_90_percent():
    result = subprocess.run([sys.executable, EXAMPLE], capture_output=True, text=True,
                            timeout=120, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert re.findall(r'epoch +\d+: train loss', result.stdout)
    accuracy = float(re.search(r'test accuracy: ([0-9.]+)', result.stdout).group(1))
    assert accuracy > 0.9, result.stdout


def test_torch_twin_differs_only_in_names():
    def body(name: str) -> list[str]:
        with open(os.path.join(ROOT, 'examples', name)) as file:
            text = file.read()
        lines = text[text.index('"""', 3) + 3:].splitlines()  # past the docstring
        while not lines[0] or lines[0].startswith(('import', 'from')):  # and the imports
            lines.pop(0)
        return lines

    ported = [line.replace('gt.', 'torch.') for line in body('train_mlp.py')]
    assert ported == body('train_mlp_torch.py')
