"""The debug switches on real processes: by default GT prints nothing but errors;
GT_VERBOSE prints start-up and connection messages; GT_DEBUG_CLIENT, _DISPATCHER and
_WORKER each turn on their own component's messages, stamped with component and time."""

import re

import pytest
from gt_test_support import run_script

SCRIPT = """
import gt
x = gt.randn(20, 20)
print((x @ x).sum().item() is not None)
"""
LINE = re.compile(r'^\[gt (client|dispatcher|worker|compile) \d\d:\d\d:\d\d\.\d{3}\] \S')


def _messages(env: dict) -> list[str]:
    result = run_script(SCRIPT, env=env)
    assert result.returncode == 0 and result.stdout.strip() == 'True', result.explain()
    return [line for line in result.stderr.splitlines() if line.strip()]


def test_by_default_nothing_is_printed():
    assert _messages({}) == []


def test_verbose_says_what_started_and_who_connected():
    lines = _messages({'GT_VERBOSE': '1'})
    text = '\n'.join(lines)
    for expected in ('started a local server', 'worker 0 joined', 'registering with',
                     'connected to', 'gt.server: listening on'):
        assert expected in text, text
    assert 'sent fragment' not in text and 'ran program' not in text


@pytest.mark.parametrize('component, expected', [
    ('client', ['sent fragment 0: 3 ops', 'fetched 1 value(s) in']),
    ('dispatcher', ['planned in', 'worker program(s)']),
    ('worker', ['program 0 decoded', 'ran program 0 (run 1) in']),
])
def test_each_debug_switch_turns_on_its_component(component, expected):
    lines = [line for line in _messages({f'GT_DEBUG_{component.upper()}': '1'})
             if LINE.match(line)]
    assert lines and all(f'[gt {component} ' in line for line in lines
                         if 'joined' not in line and 'connected' not in line
                         and 'registering' not in line and 'started a local' not in line
                         and 'left' not in line), lines
    text = '\n'.join(lines)
    for phrase in expected:
        assert phrase in text, text
