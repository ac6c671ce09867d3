"""A malformed number in one of GT's environment variables is refused by name, where it is
read: by `import gt` in a client, by `gt.server` at its start."""

import os
import subprocess
import sys

import pytest
from gt_test_support import run_script


@pytest.mark.parametrize('name, value, wanted', [
    ('GT_MAX_QUEUED', 'lots', 'an integer'),
    ('GT_TIMEOUT', 'soon', 'a number'),
    ('GT_FRAGMENT_LIMIT', '2.5', 'an integer'),
])
def test_a_client_refuses_a_malformed_number_by_name(name, value, wanted):
    result = run_script('import gt', env={name: value})
    assert result.returncode != 0
    assert f"ValueError: {name}='{value}' is not {wanted}" in result.stderr, result.explain()


def test_the_server_refuses_a_malformed_number_by_name():
    server = subprocess.run([sys.executable, '-m', 'gt.server', '-p', '0'], timeout=60,
                            capture_output=True, text=True,
                            env={**os.environ, 'GT_WORKER_WINDOW': 'four'})
    assert server.returncode != 0
    assert "GT_WORKER_WINDOW='four' is not an integer" in server.stderr, server.stderr
