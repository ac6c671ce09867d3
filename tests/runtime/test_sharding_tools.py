"""What users see of sharding: the examples (on an auto-started server and against a
hand-started one) and gt.debug.view_ir's picture."""

import os

import numpy as np
import pytest
from gt_test_support import connected, run_script

import gt
from gt import ShardConfig, SignalConfig

pytestmark = pytest.mark.usefixtures('fresh_configs')
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.time_limit(150)
@pytest.mark.parametrize('example', ['signal_demo.py', 'config_from_python.py',
                                     'simple_auto_shard.py', 'debug_demo.py'])
def test_examples_run(example):
    result = run_script(f'import runpy; runpy.run_path({os.path.join(ROOT, "examples", example)!r},'
                        f' run_name="__main__")', timeout=140)
    assert result.returncode == 0, result.explain()


@pytest.mark.time_limit(90)
def test_simple_auto_shard_against_a_hand_started_server(four):
    path = os.path.join(ROOT, 'examples', 'simple_auto_shard.py')
    result = run_script(f'import sys, runpy; sys.argv = [{path!r}, "--distributed", '
                        f'{four.address!r}]; runpy.run_path({path!r}, run_name="__main__")')
    assert result.returncode == 0, result.explain()
    assert '4 worker(s); c = a @ b is placed S0@w0,w1,w2,w3' in result.stdout


@pytest.mark.time_limit(90)
def test_view_ir_draws_one_cluster_per_worker_with_moves_in_red(four, tmp_path):
    pytest.importorskip('shutil').which('dot') or pytest.skip("Graphviz's dot is not installed")
    gt.register_config('rows', SignalConfig(shard=ShardConfig(axis=0, workers=[0, 1, 2])))
    with connected(four.address):
        with gt.signal.context('rows'):
            x = gt.randn(12, 6)
        weight = gt.from_numpy(np.ones((6, 3), dtype=np.float32))
        total = (x @ weight).relu().sum()
        picture = gt.debug.view_ir(str(tmp_path / 'step.svg'))
        png = gt.debug.view_ir(str(tmp_path / 'step.png'))
        source = gt.debug.view_ir(str(tmp_path / 'step.dot'))
        with pytest.raises(ValueError, match='format'):
            gt.debug.view_ir(str(tmp_path / 'step.txt'))
        assert total.item() == pytest.approx(np.maximum(x.numpy() @ np.ones((6, 3)), 0).sum(),
                                             rel=1e-4)
    svg = open(picture).read()
    assert svg.lstrip().startswith(('<?xml', '<svg', '<!DOCTYPE'))
    for worker in range(3):
        assert f'worker {worker}' in svg
    assert open(png, 'rb').read(8) == b'\x89PNG\r\n\x1a\n'
    dot = open(source).read()
    assert 'color="#d93025"' in dot  # the transfer of the weight from its home worker
    assert 'S0@w0,w1,w2' in dot


def test_view_ir_says_why_it_cannot_draw(tmp_path):
    """Before any fragment, and when Graphviz fails (a folder that is not there): a bare
    CalledProcessError hid Graphviz's own words (found by an audit)."""
    result = run_script(f"""
import gt
try:
    gt.debug.view_ir({str(tmp_path / 'early.svg')!r})
except RuntimeError as error:
    print(error)
(gt.ones(2) + 1).tolist()
try:
    gt.debug.view_ir({str(tmp_path / 'missing' / 'x.svg')!r})
except RuntimeError as error:
    print(error)
""")
    assert result.returncode == 0, result.stderr
    first, second = result.stdout.strip().splitlines()[:2]
    assert first.startswith('view_ir: nothing to draw: no fragment planned yet'), first
    assert 'Graphviz could not draw' in second and 'x.svg' in second, second
