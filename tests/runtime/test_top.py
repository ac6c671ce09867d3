"""The model behind `python -m gt.scripts.top`: its rates and shares from synthetic stats
messages."""

import math

import pytest

from gt.scripts.top_model import Model, human_bytes, smooth


# ---- the model --------------------------------------------------------------------------------
def worker(index: int, time: float | None = None, busy: float = 0.0, ops: dict | None = None,
           **more) -> dict:
    stats = {'index': index, 'name': f'w-{index}', 'device': 'cpu', 'host': 'box',
             'alive': True}
    if time is not None:
        stats.update(busy=busy, programs=1, ops=ops or {}, sessions={}, time=time,
                     memory=1 << 20, compiled_programs=2)
    return {**stats, **more}


def session(number: int, ops: int, seconds: dict, held: dict | None = None) -> dict:
    return {'number': number, 'client': f'box:{100 + number}', 'ops': ops, 'programs': ops,
            'values': 3, 'worker_seconds': seconds, 'bytes': held or {}}


def stats(time: float, workers: list, sessions: list) -> dict:
    return {'time': time, 'workers': workers, 'sessions': sessions}


def steady(model: Model, steps: int, start: int = 0) -> None:
    """Worker 0 reports every 0.5 s: busy 0.25 s (matmul 0.2, add 0.05), of which session 1
    ran 0.15 s and session 2 0.1 s; session 1 submits 100 ops per step, session 2 50."""
    for step in range(start, start + steps):
        model.update(stats(
            0.5 * step,
            [worker(0, 1000 + 0.5 * step, 0.25, {'matmul': 0.2, 'add': 0.05}), worker(1)],
            [session(1, 100 * step, {0: 0.15 * step}, {0: 4096, 1: 2048}),
             session(2, 50 * step, {0: 0.1 * step})]))


def test_smooth_weighs_a_sample_by_its_interval():
    assert smooth(None, 3.0, 0.5) == 3.0
    assert smooth(1.0, 2.0, 1.0, tau=1.0) == pytest.approx(2.0 - math.exp(-1.0))
    assert smooth(1.0, 2.0, 0.0) == 1.0
    assert smooth(1.0, 2.0, 100.0) == pytest.approx(2.0)


def test_human_bytes():
    assert [human_bytes(n) for n in (None, 0, 1023, 1536, 5 << 20, 3 << 40)] == [
        '-', '0 B', '1023 B', '1.5 KiB', '5.0 MiB', '3.0 TiB']


def test_steady_load_gives_utilization_op_split_rates_and_shares():
    model = Model()
    steady(model, 40)
    busy = model.workers[0]
    assert busy.utilization == pytest.approx(0.5)
    assert busy.idle == pytest.approx(0.5)
    assert dict(busy.op_utilization()) == pytest.approx({'matmul': 0.4, 'add': 0.1})
    assert [op for op, _ in busy.op_utilization()] == ['matmul', 'add']
    assert (busy.memory, busy.compiled_programs) == (1 << 20, 2)
    first, second = model.sessions[1], model.sessions[2]
    assert first.ops_rate == pytest.approx(200) and second.ops_rate == pytest.approx(100)
    assert first.share == pytest.approx({0: 0.3}) and second.share == pytest.approx({0: 0.2})
    assert first.client == 'box:101' and first.bytes_held == 6144
    assert model.top_ops(1) == ['matmul'] and model.top_ops(5) == ['matmul', 'add']
    idle = model.workers[1]  # no heartbeat yet
    assert idle.utilization is None and idle.memory is None and idle.op_utilization() == []
    assert model.uptime == pytest.approx(19.5)


def test_a_report_repeated_in_later_messages_counts_once():
    model = Model()
    steady(model, 3)
    before = model.workers[0].utilization
    for later in (1.2, 1.4):  # the same report (time 1001.0) with the dispatcher's time moving on
        model.update(stats(later, [worker(0, 1001.0, 0.25, {'matmul': 0.25}), worker(1)],
                           [session(1, 200, {0: 0.3}), session(2, 100, {0: 0.2})]))
    assert model.workers[0].utilization == before
    assert model.workers[0].mix == pytest.approx({'matmul': 0.8, 'add': 0.2})


def test_busy_time_of_reports_that_no_message_carried_still_counts():
    """Reports may replace each other between two messages (a worker also reports before
    each fetch): the sessions' cumulative seconds hold what the dropped ones said."""
    model = Model()
    model.update(stats(0.0, [worker(0, 1000.0)], [session(1, 0, {0: 0.0})]))
    # 1 s later: the report carried covers only its last 0.1 s (0.1 busy), but the session's
    # seconds on worker 0 went up by 0.8.
    model.update(stats(1.0, [worker(0, 1001.0, 0.1, {'relu': 0.1})], [session(1, 10, {0: 0.8})]))
    assert model.workers[0].utilization == pytest.approx(0.8)
    assert model.sessions[1].share == pytest.approx({0: 0.8})
    # A session that ended took its seconds with it: the report's own busy time is a floor.
    model.update(stats(1.5, [worker(0, 1001.5, 0.5, {'relu': 0.5})], []))
    assert model.workers[0].utilization == pytest.approx(smooth(0.8, 1.0, 0.5))
    assert model.sessions == {}


def test_sessions_come_and_go_and_workers_get_lost():
    model = Model()
    steady(model, 4)
    # A new session, seen 0.5 s after the previous message with 30 ops already: 60 ops/s.
    model.update(stats(2.0, [worker(0, 1002.0, 0.25, {'matmul': 0.25}, alive=False)],
                       [session(1, 400, {0: 0.6}), session(3, 30, {})]))
    assert model.sessions[3].ops_rate == pytest.approx(60)
    assert model.sessions[3].share == {0: 0.0}  # nothing ran for it
    assert 2 not in model.sessions
    assert model.workers[0].alive is False
    # A session already there at the first message gives no rate until the next one.
    fresh = Model()
    fresh.update(stats(5.0, [], [session(7, 1000, {})]))
    assert fresh.sessions[7].ops_rate is None


def test_ops_that_stop_running_fade_out_of_the_mix():
    model = Model()
    steady(model, 4)
    for step in range(4, 40):
        model.update(stats(0.5 * step, [worker(0, 1000 + 0.5 * step, 0.25, {'sum': 0.25})],
                           [session(1, 100 * step, {0: 0.25 * step})]))
    assert model.workers[0].mix == pytest.approx({'sum': 1.0}, abs=1e-3)
    assert set(model.workers[0].mix) == {'sum'}
