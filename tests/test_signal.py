"""Signal scopes on the client (gt/signal.py): nesting, per-thread stacks, backward signals
from configs or given explicitly, manual enter/exit, and the warnings that name signals
without a config (misspelled ones, a config's backward, all under GT_VERBOSE)."""

import threading

import pytest

import gt
from gt import SignalConfig

pytestmark = pytest.mark.usefixtures('fresh_configs')


def test_no_scope_is_open_by_default():
    assert gt.signal.current_scope() is None
    assert gt.signal.current_backward() is None


def test_scopes_nest_and_the_innermost_wins():
    gt.register_config('stage', SignalConfig(backward_signal='stage_backward'))
    with gt.signal.context('outer', backward='outer_backward'):
        assert gt.signal.current_backward() == 'outer_backward'
        with gt.signal.context('stage'):
            assert gt.signal.current_scope() == 'stage'
            assert gt.signal.current_backward() == 'stage_backward'  # from its config
            with gt.signal.context('plain'):  # neither config nor backward: none, not outer's
                assert gt.signal.current_backward() is None
            with gt.signal.context('stage', backward='explicit'):  # overrides the config
                assert gt.signal.current_backward() == 'explicit'
            assert gt.signal.current_backward() == 'stage_backward'
        assert gt.signal.current_scope() == 'outer'
    assert gt.signal.current_scope() is None and gt.signal.current_backward() is None


def test_the_backward_signal_follows_configs_registered_after_entering():
    with gt.signal.context('late'):
        assert gt.signal.current_backward() is None
        gt.register_config('late', SignalConfig(backward_signal='late_backward'))
        assert gt.signal.current_backward() == 'late_backward'


def test_a_scope_is_seen_only_in_its_own_thread():
    entered, release, seen = threading.Event(), threading.Event(), []

    def worker():
        with gt.signal.context('in_thread', backward='thread_backward'):
            entered.set()
            release.wait(10)
            seen.append((gt.signal.current_scope(), gt.signal.current_backward()))

    thread = threading.Thread(target=worker)
    thread.start()
    assert entered.wait(10)
    assert gt.signal.current_scope() is None and gt.signal.current_backward() is None
    with gt.signal.context('in_main'):
        release.set()
        thread.join(10)
        assert gt.signal.current_scope() == 'in_main'
    assert seen == [('in_thread', 'thread_backward')]


def test_many_threads_entering_at_once_leave_no_scope_counted_open():
    def churn():
        for _ in range(2000):
            with gt.signal.context('churn'):
                assert gt.signal.current_scope() == 'churn'

    threads = [threading.Thread(target=churn) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert gt.signal._open_anywhere == 0


def test_enter_and_exit_by_hand_and_their_mismatches():
    gt.signal.enter('signal_name', backward='signal_backward')
    assert gt.signal.current_scope() == 'signal_name'
    assert gt.signal.current_backward() == 'signal_backward'
    with pytest.raises(RuntimeError, match="innermost signal is 'signal_name'"):
        gt.signal.exit('other')
    assert gt.signal.current_scope() == 'signal_name'  # a refused exit leaves it open
    gt.signal.exit('signal_name')
    with pytest.raises(RuntimeError, match='without a matching'):
        gt.signal.exit()
    with pytest.raises(TypeError, match='non-empty string'):
        gt.signal.enter('x', backward='')


def test_a_context_closes_when_its_body_raises():
    with pytest.raises(KeyError):
        with gt.signal.context('failing'):
            raise KeyError('boom')
    assert gt.signal.current_scope() is None


def test_gt_verbose_names_a_signal_without_config_once(monkeypatch, capsys):
    gt.register_config('configured', SignalConfig())
    with gt.signal.context('timeline_label'):  # not verbose, no configured name alike: silent
        pass
    assert capsys.readouterr().err == ''
    monkeypatch.setenv('GT_VERBOSE', '1')
    for _ in range(2):
        with gt.signal.context('timeline_label'), gt.signal.context('configured'):
            pass
    assert capsys.readouterr().err == (
        "gt: signal 'timeline_label' has no config; ops in it run unsharded\n")


def test_a_misspelled_signal_is_named_once_with_the_configured_one(capsys):
    gt.register_config('encoder_layer', SignalConfig())
    for _ in range(2):
        with gt.signal.context('encoder_layr'), gt.signal.context('annotation_only'):
            pass
    assert capsys.readouterr().err == (
        "gt: signal 'encoder_layr' has no config; ops in it run unsharded "
        "(did you mean 'encoder_layer'?)\n")


def test_a_yaml_backward_naming_a_signal_without_config_is_named_once(tmp_path, capsys):
    path = tmp_path / 'stages.yaml'
    path.write_text('stage_one:\n  shard: {axis: 0, workers: [0]}\n'
                    '  backward: stage_one_bwd\n')
    gt.load_config(path)
    for _ in range(2):
        with gt.signal.context('stage_one'):
            pass
    assert capsys.readouterr().err == (
        "gt: backward signal 'stage_one_bwd', named by the config of 'stage_one', has no "
        "config; gradient ops in it run unsharded\n")
    gt.register_config('stage_one_bwd', SignalConfig())
    with gt.signal.context('stage_one'), gt.signal.context('x', backward='stage_one_bwdd'):
        pass
    assert capsys.readouterr().err == (
        "gt: backward signal 'stage_one_bwdd' (of 'x') has no config; gradient ops in it run "
        "unsharded (did you mean 'stage_one_bwd'?)\n")
