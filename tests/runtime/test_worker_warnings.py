"""torch's warnings from calls GT runs by name obey the script's filters and name the
script's line: the client warns of them as it works out the call's types, and the
dispatcher and the worker, which run the call again, no longer print their own copies to
the stderr an auto-started server shares with the script; a warning only the worker
meets goes to its session's client (gt.runtime.worker_warnings)."""

import warnings

import pytest
from gt_test_support import run_script

from gt.runtime.session_errors import WORKER_WARNING
from gt.runtime.worker_warnings import WorkerWarnings

CALLS = """
    import warnings
    import torch
    import gt
    {filters}
    x = gt.randn(1, 1, 4, 4)
    y = gt.nn.functional.upsample(x, scale_factor=2)
    factors = torch.lu(gt.randn(3, 3))
    print(y.sum().item() * 0, factors[0].sum().item() * 0)
"""
UPSAMPLE = '`nn.functional.upsample` is deprecated'
LU = 'torch.lu is deprecated'


@pytest.mark.time_limit(90)
def test_a_scripts_ignore_filter_silences_every_process():
    silenced = run_script(CALLS.format(filters="warnings.simplefilter('ignore')"))
    assert silenced.returncode == 0, silenced.explain()
    assert 'deprecated' not in silenced.stderr, silenced.explain()


@pytest.mark.time_limit(90)
def test_each_warning_is_told_once_at_the_scripts_line():
    told = run_script(CALLS.format(filters=''))
    assert told.returncode == 0, told.explain()
    for message, line in ((UPSAMPLE, 7), (LU, 8)):
        assert told.stderr.count(message) == 1, told.explain()
        assert f'<string>:{line}: UserWarning: {message}' in told.stderr, told.explain()


@pytest.mark.time_limit(90)
def test_an_error_filter_raises_at_the_scripts_line():
    raised = run_script(CALLS.format(filters="warnings.simplefilter('error')") + """
    """)
    assert raised.returncode != 0
    assert f'UserWarning: {UPSAMPLE}' in raised.stderr, raised.explain()
    assert 'line 7' in raised.stderr, raised.explain()


def test_a_workers_warnings_go_to_the_session_that_ran_into_them_once_each():
    sink = WorkerWarnings()
    with warnings.catch_warnings():  # install() changes this process's warnings
        sink.install()
        for session in (3, 3, 4):
            sink.run_for(session)
            warnings.warn('a note', FutureWarning)
            warnings.warn('an old name', DeprecationWarning)  # hidden, as by default
        sink.run_for(None)
    assert sink.take(3) == [[None, None, WORKER_WARNING, ['FutureWarning', 'a note']]]
    assert sink.take(3) == []
    assert sink.take(4) == [[None, None, WORKER_WARNING, ['FutureWarning', 'a note']]]
    sink.end_session(4)
    assert sink.take(4) == []
