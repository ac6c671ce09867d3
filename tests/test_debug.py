"""gt.debug through the real runtime: the dispatcher's IR for this client, worker stats."""

import gt


def test_dump_ir_shows_the_last_fragment_with_placements_and_signals(capsys):
    gt.sync()
    a = gt.randn(4, 3)
    w = gt.ones(3, 2)
    with gt.signal.context('layer1'):
        y = (a @ w).relu()
    total = y.sum(dim=0)
    del y  # freed before the flush: not kept, so not returned
    text = gt.debug.dump_ir()
    worker = text.split('<R@', 1)[1].split('>', 1)[0]  # this session's home worker
    assert text == '\n'.join([
        'graph fragment() {',
        f'  %0: f32[4,3]<R@{worker}> = randn(shape=[4,3], dtype=float32)',
        f'  %1: f32[3,2]<R@{worker}> = ones(shape=[3,2], dtype=float32)',
        f'  %2: f32[4,2]<R@{worker}> = matmul(%0, %1)                 # signal=layer1',
        f'  %3: f32[4,2]<R@{worker}> = relu(%2)                       # signal=layer1',
        f'  %4: f32[2]<R@{worker}> = sum(%3, dim=0, keepdim=False)',
        '  return %0, %1, %4',
        '}',
    ])
    assert capsys.readouterr().out.strip() == text
    assert total.shape == (2,)


def test_dump_ir_after_passes_has_no_dead_or_repeated_work():
    gt.sync()
    x = gt.randn(5)
    y = x.exp() + x.exp()  # the second exp is the same expression
    x.abs()  # unused: dead code
    text = gt.debug.dump_ir(show=False)
    assert text.count('exp(') == 1 and 'abs(' not in text
    assert y.shape == (5,)


def test_worker_stats_report_device_tensors_and_ops(capsys):
    kept = gt.ones(10, 10)
    kept.sum().item()
    stats = gt.debug.get_worker_stats()
    assert stats and all(s['device'] in ('cpu', 'cuda') or s['device'].startswith('cuda')
                         for s in stats)
    assert sum(s['tensors'] for s in stats) >= 1
    assert sum(s['bytes'] for s in stats) >= 400
    gt.debug.print_worker_stats()
    assert 'tensors' in capsys.readouterr().out


def test_gt_debug_dispatcher_says_where_each_signal_placed_its_ops():
    """The seeds' "View Applied Sharding: GT_DEBUG_DISPATCHER=1 python train.py"."""
    from gt_test_support import run_script

    result = run_script("""
import gt
from gt import ShardConfig, SignalConfig
gt.gpu_workers(2)
gt.register_config('rows', SignalConfig(shard=ShardConfig(axis=0, workers=[0, 1])))
with gt.signal.context('rows'):
    x = gt.randn(8, 4)
    y = (x * 2).relu()
print(y.sum().item() >= 0)
""", env={'GT_DEBUG_DISPATCHER': '1'})
    assert result.returncode == 0, result.explain()
    # randn, mul, relu sharded by rows; the number 2 made on both workers.
    assert 'signal rows: 4 ops on S0@w0,w1 (3), R@w0,w1 (1)' in result.stderr, result.explain()
