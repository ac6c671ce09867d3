"""`python -m gt.scripts.visualize`: a PNG timeline and a Chrome trace from the instruction
log of a real run (2 clients, one of them sharding over both of 2 workers), a time window
over several logs given as a glob, clear errors for a missing or an empty log, and how a
hand-written log's events are paired into runs, fetches and flows."""

import json
import subprocess
import sys
import time

import matplotlib.image
import pytest
from gt_test_support import TRAINING_CLIENT, Cluster, finish_script, start_script

from gt.scripts.timeline import figure_size
from gt.scripts.visualize import load_trace

# Two fragments of one session on one worker, as the dispatcher writes them: the runs are
# reported after the sends (and out of time order), the fetch is answered last.
SAMPLE = """\
[TAPE 0.001s] WORKER_JOIN  | worker0         | Register  | worker=0 name=w device=cpu host=h
[TAPE 0.010s] CONNECT      | h:1             | Hello     | session=1 home=w0
[TAPE 0.020s] RECV         | h:1             | Submit    | session=1 base=0 ops=3 kinds=scalar:2,matmul:1 fetch=0 releases=0 bytes=0
[TAPE 0.020s] WORKER_SEND  | worker0         | RunProgram | session=1 worker=0 program=0 ops=3 fetch=0 releases=0 bytes=0 first=True
[TAPE 0.030s] RECV         | h:1             | Submit    | session=1 base=3 ops=1 kinds=relu:1 fetch=1 releases=0 bytes=4096
[TAPE 0.030s] WORKER_SEND  | worker0         | RunProgram | session=1 worker=0 program=1 ops=1 fetch=1 releases=0 bytes=4096 first=True
[TAPE 0.021s] WORKER_START | worker0         | Program   | session=1 worker=0 program=0 ops=3 kinds=scalar:2,matmul:1
[TAPE 0.025s] WORKER_END   | worker0         | Program   | session=1 worker=0 program=0 ops=3 kinds=scalar:2,matmul:1 seconds=0.0042 compiled=False
[TAPE 0.031s] WORKER_START | worker0         | Program   | session=1 worker=0 program=1 ops=1 kinds=relu:1
[TAPE 0.032s] WORKER_END   | worker0         | Program   | session=1 worker=0 program=1 ops=1 kinds=relu:1 seconds=0.0005 compiled=False
[TAPE 0.033s] WORKER_RECV  | worker0         | Fetched   | worker=0 request=1 success=True errors=0 bytes=4
[TAPE 0.033s] SEND         | h:1             | Fetched   | session=1 tensors=1 success=True errors=0 bytes=8
[TAPE 0.040s] DISCONNECT   | h:1             | Goodbye   | session=1 reason=goodbye ops=4
"""  # noqa: E501  (log lines)


def start_visualize(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, '-m', 'gt.scripts.visualize', *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process: subprocess.Popen) -> subprocess.CompletedProcess:
    try:
        stdout, stderr = process.communicate(timeout=60)
    finally:
        process.kill()
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def visualize(*args: str) -> subprocess.CompletedProcess:
    return finish(start_visualize(*args))


@pytest.fixture(scope='module')
def run_log(tmp_path_factory):
    """The instruction log of 2 clients on 2 workers, one sharding over both."""
    folder = tmp_path_factory.mktemp('visualize')
    log = folder / 'ops_run.log'
    cluster = Cluster(workers=2, env={'GT_INSTRUCTION_LOG': str(log)})
    try:
        cluster.wait_ready()
        clients = [start_script(TRAINING_CLIENT.format(address=cluster.address, seed=seed,
                                                       shard=shard))
                   for seed, shard in ((1, True), (2, False))]
        results = [finish_script(client) for client in clients]
        assert all(r.returncode == 0 for r in results), [r.explain() for r in results]
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and log.read_text().count('| Goodbye') < 3:
            time.sleep(0.1)  # the probe's and both clients' goodbyes: the log is complete
    finally:
        cluster.stop()
    return log


@pytest.mark.time_limit(60)
def test_png_and_chrome_trace_of_a_real_run(run_log, tmp_path):
    png, chrome = tmp_path / 'timeline.png', tmp_path / 'trace.json'
    result = visualize(str(run_log), '--output', str(png), '--dpi', '80', '--chrome',
                       str(chrome))
    assert result.returncode == 0, result.stderr
    assert f'wrote {png}' in result.stdout and f'wrote {chrome}' in result.stdout

    trace = load_trace([str(run_log)])
    groups = [lane.group for lane in trace.lanes]
    workers = [lane.key for lane in trace.lanes if lane.group == 'worker']
    # An express-lane row follows its worker's when a light program ran there.
    assert [key for key in workers if not key.endswith(':express')] == ['worker:0', 'worker:1']
    assert groups == ['client'] * 3 + ['dispatcher'] + ['worker'] * len(workers)  # probe, 2
    assert {'worker:0', 'worker:1'} <= {run.lane for run in trace.runs} <= set(workers)
    width, height = figure_size(trace)
    image = matplotlib.image.imread(str(png))
    # matplotlib truncates the pixel count (5.225 in at 80 dpi is 417, not 418).
    assert abs(image.shape[0] - height * 80) <= 1 and abs(image.shape[1] - width * 80) <= 1, (
        image.shape, height, width)
    assert len({tuple(pixel) for pixel in image[::7, ::7].reshape(-1, image.shape[2])}) > 20

    events = json.loads(chrome.read_text())['traceEvents']
    assert all({'ph', 'ts', 'pid', 'tid', 'name'} <= event.keys() for event in events)
    tracks = {(e['pid'], e['tid']): e['args']['name'] for e in events
              if e['ph'] == 'M' and e['name'] == 'thread_name'}
    assert sorted(tracks.values()) == sorted(lane.label for lane in trace.lanes)
    timed = [e for e in events if e['ph'] != 'M']
    assert {(e['pid'], e['tid']) for e in timed} <= tracks.keys()
    assert [e['ts'] for e in timed] == sorted(e['ts'] for e in timed) and timed[0]['ts'] >= 0
    runs = [e for e in timed if e['ph'] == 'X' and e['cat'] == 'program']
    assert len(runs) == len(trace.runs) and all(e['dur'] >= 0 for e in runs)
    assert {tracks[e['pid'], e['tid']] for e in runs} == {lane.label for lane in trace.lanes
                                                          if lane.group == 'worker'}
    kinds = {e['name'].split()[0] for e in timed if e['ph'] == 'i'}
    assert {'CONNECT', 'RECV', 'WORKER_SEND', 'WORKER_RECV', 'SEND', 'DISCONNECT'} <= kinds


def test_a_window_over_a_glob_of_logs(run_log, tmp_path):
    lines = run_log.read_text().splitlines(keepends=True)
    for index, part in enumerate((lines[:len(lines) // 2], lines[len(lines) // 2:])):
        (tmp_path / f'trace_{index}.log').write_text(''.join(part))
    times = [run.start for run in load_trace([str(run_log)]).runs]
    start, end = times[len(times) // 3], times[2 * len(times) // 3]
    chrome = tmp_path / 'window.json'
    result = visualize(str(tmp_path / 'trace_*.log'), '--chrome', str(chrome), '--start',
                       str(start), '--end', str(end))
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / 'timeline.png').exists()  # --chrome alone draws no picture
    timed = [e for e in json.loads(chrome.read_text())['traceEvents'] if e['ph'] != 'M']
    assert timed and all(e['ts'] <= end * 1e6 + 1 and e['ts'] + e.get('dur', 0) >= start * 1e6 - 1
                         for e in timed)
    assert {e['ph'] for e in timed} == {'i', 'X'}


def test_missing_and_empty_logs_say_so(tmp_path):
    other = tmp_path / 'other.log'
    other.write_text('not a log line\n')
    empty = tmp_path / 'empty.log'  # a trace of an idle server
    empty.write_text('')
    started = [start_visualize(str(log), '--output', str(tmp_path / 'x.png'))
               for log in (tmp_path / 'nowhere.log', other, empty)]  # at once: each imports torch
    missing, result, idle = map(finish, started)
    assert missing.returncode != 0
    assert 'no such log file' in missing.stderr and 'Traceback' not in missing.stderr
    assert result.returncode != 0 and 'Traceback' not in result.stderr
    assert 'no instruction-log events' in result.stderr and str(other) in result.stderr
    assert idle.returncode != 0 and f'{empty} is empty: nothing was logged' in idle.stderr
    assert not (tmp_path / 'x.png').exists()


def test_runs_fetches_and_flows_from_a_hand_written_log(tmp_path):
    log = tmp_path / 'sample.log'
    log.write_text(SAMPLE)
    trace = load_trace([str(log)])
    assert [lane.key for lane in trace.lanes] == ['client:h:1', 'dispatcher', 'worker:0']
    assert [(run.name, run.op, run.start) for run in trace.runs] == [
        ('p0', 'matmul', 0.021), ('p1', 'relu', 0.031)]
    assert trace.runs[0].end == pytest.approx(0.0252)  # the worker's own duration
    (fetch,) = trace.fetches
    assert (fetch.name, fetch.start, fetch.end, fetch.op) == ('s1:b3', 0.03, 0.033, 'relu')
    flows = {(e.kind, e.fields.get('program')): e.flow for e in trace.events}
    recv_flows = [e.flow for e in trace.events if e.kind == 'RECV']
    assert flows['WORKER_SEND', '0'] == trace.runs[0].flow == recv_flows[0]
    assert flows['WORKER_SEND', '1'] == flows['WORKER_RECV', None] == flows['SEND', None] \
        == trace.runs[1].flow == fetch.flow == recv_flows[1]
    sends = [e for e in trace.events if e.kind == 'WORKER_SEND']
    assert [(e.op, e.target) for e in sends] == [('matmul', 0.021), ('relu', 0.031)]
    assert trace.window(0.029, 0.031).runs == [trace.runs[1]]


# A light session's program on worker 0's express lane while a heavy one runs there.
EXPRESS_SAMPLE = """\
[TAPE 0.001s] WORKER_JOIN  | worker0         | Register  | worker=0 name=w device=cpu host=h
[TAPE 0.010s] CONNECT      | h:1             | Hello     | session=1 home=w0
[TAPE 0.011s] CONNECT      | h:2             | Hello     | session=2 home=w0
[TAPE 0.020s] RECV         | h:1             | Submit    | session=1 base=0 ops=1 kinds=matmul:1 fetch=0 releases=0 bytes=0
[TAPE 0.020s] WORKER_SEND  | worker0         | RunProgram | session=1 worker=0 program=0 ops=1 fetch=0 releases=0 bytes=0 first=True
[TAPE 0.030s] RECV         | h:2             | Submit    | session=2 base=0 ops=2 kinds=mul:1,sum:1 fetch=1 releases=0 bytes=0
[TAPE 0.030s] WORKER_SEND  | worker0         | RunProgram | session=2 worker=0 program=1 ops=2 fetch=1 releases=0 bytes=0 first=True lane=express
[TAPE 0.031s] WORKER_START | worker0         | Program   | session=2 worker=0 program=1 ops=2 kinds=mul:1,sum:1 lane=express
[TAPE 0.032s] WORKER_END   | worker0         | Program   | session=2 worker=0 program=1 ops=2 kinds=mul:1,sum:1 seconds=0.0006 compiled=False lane=express
[TAPE 0.033s] WORKER_RECV  | worker0         | Fetched   | worker=0 request=1 success=True errors=0 bytes=4 lane=express
[TAPE 0.033s] SEND         | h:2             | Fetched   | session=2 tensors=1 success=True errors=0 bytes=8
[TAPE 0.021s] WORKER_START | worker0         | Program   | session=1 worker=0 program=0 ops=1 kinds=matmul:1
[TAPE 0.080s] WORKER_END   | worker0         | Program   | session=1 worker=0 program=0 ops=1 kinds=matmul:1 seconds=0.059 compiled=False
"""  # noqa: E501  (log lines)


def test_express_lane_runs_get_a_row_of_their_own(tmp_path):
    log = tmp_path / 'express.log'
    log.write_text(EXPRESS_SAMPLE)
    trace = load_trace([str(log)])
    labels = {lane.key: lane.label for lane in trace.lanes}
    assert labels['worker:0:express'] == 'worker 0 express lane'
    assert [lane.key for lane in trace.lanes][-2:] == ['worker:0', 'worker:0:express']
    runs = {run.name: run for run in trace.runs}
    assert (runs['p0'].lane, runs['p0'].op) == ('worker:0', 'matmul')
    assert (runs['p1'].lane, runs['p1'].op) == ('worker:0:express', 'mul')
    assert runs['p0'].start < runs['p1'].start < runs['p1'].end < runs['p0'].end
    (fetch,) = trace.fetches
    light = [e.flow for e in trace.events if e.kind == 'RECV' and e.fields['session'] == '2']
    assert runs['p1'].flow == fetch.flow == light[0] != runs['p0'].flow


def test_a_bad_field_is_skipped_and_an_unwritable_picture_says_so(tmp_path):
    """A run whose seconds are no number counts as none, as a line that does not parse
    is skipped (it ended the drawing with a traceback); a picture that cannot be written
    says so in a line (matplotlib's traceback did)."""
    log = tmp_path / 'sample.log'
    log.write_text(SAMPLE.replace('seconds=0.0042', 'seconds=notanumber'))
    assert 'seconds=notanumber' in log.read_text()
    assert len(load_trace([str(log)]).runs) == 2
    result = visualize(str(log), '-o', str(tmp_path / 'missing' / 'a.png'))
    assert result.returncode == 1
    assert result.stderr.strip().endswith("cannot write '" + str(tmp_path / 'missing' / 'a.png')
                                          + "': No such file or directory"), result.stderr
    assert 'Traceback' not in result.stderr
