"""Each hot program on a CPU worker runs on the thread count its timings favour
(gt.runtime.thread_tuning): the choice rule on given timings, then real workers with two
threads whose op is made slow on purpose at one count, so the right choice is known."""

import os
import time

import pytest
import torch
from gt_test_support import connected

import gt
from gt.runtime import thread_tuning
from gt.runtime.thread_tuning import ProgramThreads, candidate_counts, predicted_cycle


def test_candidates_are_the_full_count_and_its_halvings():
    assert candidate_counts(8) == [8, 4, 2, 1]
    assert candidate_counts(6) == [6, 3, 1]
    assert candidate_counts(1) == [1]


@pytest.mark.parametrize('setting, chosen', [(None, 'checked'), ('checked', 'checked'),
                                             ('compiled', 'compiled'), ('all', 'all'),
                                             ('0', None)])
def test_the_setting_names_which_programs_are_tuned(monkeypatch, setting, chosen):
    if setting is None:
        monkeypatch.delenv('GT_THREAD_TUNING', raising=False)
    else:
        monkeypatch.setenv('GT_THREAD_TUNING', setting)
    assert thread_tuning.scope() == chosen


def test_an_unknown_setting_is_named_and_the_default_kept(monkeypatch, capsys):
    monkeypatch.setenv('GT_THREAD_TUNING', 'yes please')
    assert thread_tuning.scope() == 'checked'
    assert "GT_THREAD_TUNING='yes please' is not one of 0, compiled, checked or all" in (
        capsys.readouterr().err)


def test_the_cycle_is_the_run_or_the_cores_share_of_the_cpu_whichever_is_longer():
    assert predicted_cycle(1, 2.0, 1.2, 2) == 2.0  # one core each: the run bounds it
    assert predicted_cycle(2, 2.0, 1.2, 2) == pytest.approx(2.6)  # 5.2 s of CPU on 2 cores
    assert predicted_cycle(2, 36.0, 1.0, 2) == 36.5


def choose(run_seconds: dict, others_cpu: float, cores: int = 2, first_of_block: float = 0.0,
           compiled: bool = False) -> ProgramThreads:
    """Drive a ProgramThreads with these timings per count until it chooses. The first
    run of each block takes `first_of_block` more (a switch's cost), which must not count."""
    threads = ProgramThreads(max(run_seconds), cores)
    for _ in range(1000):
        count = threads.next_count(compiled)
        if threads.choice is not None:
            return threads
        extra = first_of_block if threads.in_block == 1 else 0.0
        threads.record(count, run_seconds[count] + extra, others_cpu)
    raise AssertionError('no choice after 1000 runs')


@pytest.fixture
def no_window(monkeypatch):
    """Choose as soon as every count has its samples (the window waits for 10 ms ticks)."""
    monkeypatch.setattr(thread_tuning, 'WINDOW_SECONDS', 0.0)


def test_a_thread_that_does_not_speed_the_run_is_given_back(no_window):
    """A small MLP step: the same time on either count while the client records beside
    it, so the second thread only takes the client's core."""
    assert choose({2: 2.0e-3, 1: 2.05e-3}, others_cpu=1.2e-3).choice == 1


def test_a_run_that_threads_speed_up_keeps_them(no_window):
    """A large matmul, its client waiting: 36 ms on two threads against 52 on one."""
    assert choose({2: 36e-3, 1: 52e-3}, others_cpu=0.5e-3).choice == 2


def test_a_busy_machine_gives_back_threads_that_speed_the_run_up_only_a_little(no_window):
    """Faster alone by 20%, but the machine's cores are taken: the cycle is the CPU's."""
    assert choose({2: 1.6e-3, 1: 2.0e-3}, others_cpu=1.5e-3).choice == 1
    assert choose({2: 1.6e-3, 1: 2.0e-3}, others_cpu=0.0).choice == 2


def test_each_halving_is_tried_and_the_fewest_threads_near_the_best_win(no_window):
    timings = {8: 10e-3, 4: 10.2e-3, 2: 14e-3, 1: 25e-3}
    threads = choose(timings, others_cpu=0.0, cores=8)
    assert threads.choice == 4  # within 5% of eight threads' cycle, on half the cores
    assert all(len(threads.samples[count]) >= thread_tuning.SAMPLES for count in timings)


def test_the_first_run_after_a_switch_is_not_a_sample(no_window):
    threads = choose({2: 36e-3, 1: 52e-3}, others_cpu=0.0, first_of_block=1.0)
    assert threads.choice == 2
    assert max(max(times) for times in threads.samples.values()) < 1.0


def test_the_choice_is_timed_again_when_it_is_old_or_the_program_compiles(no_window):
    threads = choose({2: 2.0e-3, 1: 2.0e-3}, others_cpu=0.0)
    assert threads.next_count(compiled=False) == 1
    threads.next_count(compiled=True)  # now running compiled: the timings were of eager
    assert threads.choice is None and not any(threads.samples.values())

    threads = choose({2: 2.0e-3, 1: 2.0e-3}, others_cpu=0.0)
    threads.retune_at = time.perf_counter()  # RETUNE_SECONDS on the choice have passed
    threads.next_count(compiled=False)
    assert threads.choice is None and threads.tunings == 1


def test_a_pause_starts_the_timing_over(no_window):
    threads = ProgramThreads(2, 2)
    for _ in range(5):
        threads.record(threads.next_count(False), 1e-3, 0.0)
    assert any(threads.samples.values())
    threads.pause()
    assert not any(threads.samples.values()) and threads.choice is None


# ---- on real workers ------------------------------------------------------------------
SLOW_AT = """
# tanh sleeps 4 ms when torch runs on {slow} thread(s): which count is faster is known.
import time

import torch

_tanh = torch.tanh


def tanh(*args, **kwargs):
    if (torch.get_num_threads() == 1) == ({slow} == 1):
        time.sleep(0.004)
    return _tanh(*args, **kwargs)


torch.tanh = tanh
"""


def run_until(x: gt.Tensor, expected: torch.Tensor, done, seconds: float = 60.0) -> dict:
    """Run the same small program until `done(worker stats)`; check each result."""
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        stats = run_for(x, expected, 0.2)
        if done(stats):
            return stats
    raise AssertionError(f'not done within {seconds} s: {stats}')


def run_for(x: gt.Tensor, expected: torch.Tensor, seconds: float) -> dict:
    """Run the same small program for `seconds`, checking each result; the worker's stats."""
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        torch.testing.assert_close(x.tanh().sum().item(), expected.item())
    return gt.debug.get_worker_stats()[0]


def slow_cluster(start_cluster, tmp_path, slow: int, env: dict):
    """A cluster of one worker on two threads whose tanh sleeps on `slow` threads."""
    (tmp_path / 'sitecustomize.py').write_text(SLOW_AT.format(slow=slow))
    path = os.pathsep.join(filter(None, [str(tmp_path), os.environ.get('PYTHONPATH')]))
    return start_cluster(workers=1, env={'PYTHONPATH': path, 'GT_WORKER_THREADS': '2', **env})


@pytest.mark.parametrize('slow, on_fewer', [(2, 1), (1, 0)], ids=['slow-on-two', 'slow-on-one'])
def test_a_worker_runs_each_program_on_its_faster_count(start_cluster, tmp_path, slow, on_fewer,
                                                        capsys):
    cluster = slow_cluster(start_cluster, tmp_path, slow, {'GT_THREAD_TUNING': 'all'})
    data = torch.randn(64, 64)
    with connected(cluster.address):
        stats = run_until(gt.tensor(data), data.tanh().sum(),
                          lambda stats: stats['programs_tuned'])
        assert stats['threads'] == 2
        assert stats['programs_on_fewer_threads'] == on_fewer, cluster.logs()
        gt.debug.print_worker_stats()
    said = capsys.readouterr().out
    assert f'{on_fewer} of 1 timed programs run on fewer than its 2 threads' in said, said


@pytest.mark.parametrize('setting, tuned', [(None, True), ('0', False)],
                         ids=['default', 'off'])
def test_by_default_compiled_programs_are_tuned(start_cluster, tmp_path, monkeypatch, setting,
                                                tuned):
    monkeypatch.setenv('GT_AUTO_COMPILE', '1')
    monkeypatch.setenv('GT_COMPILE_BACKEND', 'eager')
    env = {'GT_THREAD_TUNING': setting} if setting else {}
    cluster = slow_cluster(start_cluster, tmp_path, 2, env)
    data = torch.randn(64, 64)
    with connected(cluster.address):
        x = gt.tensor(data)
        run_until(x, data.tanh().sum(), lambda stats: stats['compiled_runs'])
        if tuned:
            run_until(x, data.tanh().sum(), lambda stats: stats['programs_tuned'])
        else:
            assert run_for(x, data.tanh().sum(), 1.5)['programs_tuned'] == 0


def test_a_program_whose_compile_failed_is_tuned_as_an_eager_one(start_cluster, tmp_path,
                                                                 monkeypatch):
    """It runs eagerly for good, so it is checked and tuned as eager programs are; it
    was left untuned (on both threads here, where its tanh is slow)."""
    monkeypatch.setenv('GT_AUTO_COMPILE', '1')
    monkeypatch.setenv('GT_COMPILE_BACKEND', 'cudagraphs')  # refused on a CPU worker
    cluster = slow_cluster(start_cluster, tmp_path, 2, {})
    data = torch.randn(64, 64)
    with connected(cluster.address):
        x = gt.tensor(data)
        run_until(x, data.tanh().sum(), lambda stats: stats['compile_failures'])
        stats = run_until(x, data.tanh().sum(), lambda stats: stats['programs_tuned'])
        assert stats['compiled_runs'] == 0 and stats['eager_programs_checked'] == 1, stats
        assert stats['programs_on_fewer_threads'] == 1, cluster.logs()


@pytest.mark.parametrize('setting', [None, 'compiled'], ids=['default', 'compiled'])
def test_an_eager_program_is_tuned_only_once_one_thread_gives_its_bits(start_cluster, tmp_path,
                                                                       setting, capsys):
    """Eager programs keep torch's bits. By default a hot one runs once on one thread and
    once on two: 64x64 values are too small to split over threads, so the bits agree and
    it is tuned (and moves to the one thread its tanh is fast on); a sum of 1024x1024 is
    split, and that program keeps both threads. With `compiled`, none is checked."""
    env = {'GT_THREAD_TUNING': setting} if setting else {}
    cluster = slow_cluster(start_cluster, tmp_path, 2, env)
    small, large = torch.randn(64, 64), torch.randn(1024, 1024)
    with connected(cluster.address):
        if setting is None:
            stats = run_until(gt.tensor(small), small.tanh().sum(),
                              lambda stats: stats['programs_tuned'])
            assert stats['programs_on_fewer_threads'] == 1, cluster.logs()
            assert stats['eager_programs_same_bits_on_one_thread'] == 1
            threads = torch.get_num_threads()
            torch.set_num_threads(2)  # the worker's count
            x, expected = gt.tensor(large), large.tanh().sum()
            torch.set_num_threads(threads)
            for _ in range(20):
                assert torch.equal(x.tanh().sum().data, expected)  # torch's bits, 2 threads
            stats = gt.debug.get_worker_stats()[0]
            assert stats['eager_programs_checked'] == 2, stats
            assert stats['eager_programs_same_bits_on_one_thread'] == 1, stats
            assert stats['programs_tuned'] == 1, stats
            capsys.readouterr()
            gt.debug.print_worker_stats()
            said = capsys.readouterr().out
            assert '1 of 2 eager programs checked gave the same bits on one thread' in said
        else:
            stats = run_for(gt.tensor(small), small.tanh().sum(), 1.5)
            assert stats['programs_run'] > 50 and stats['programs_tuned'] == 0
            assert stats['eager_programs_checked'] == 0
