"""The seeds' signal snippets, as written, on a local server with 4 workers: each block of
the README (seed 001) and the sharding guide (seed 004), with only the names it leaves
undefined (`w`, `model`, `input`, ...) defined first, and its results checked."""

import textwrap

import pytest
from gt_test_support import run_script

README_YAML = """\
# config.yaml
forward_layer1:
  shard:
    axis: 0                  # Shard batch dimension
    workers: [0, 1, 2, 3]    # Use workers 0-3
  backward: backward_layer1  # Different config for gradients

pipeline_stage_1:
  shard:
    axis: 0
    workers: [0, 1]          # Stage 1 on workers 0-1
  backward: pipeline_stage_1_bwd

pipeline_stage_1_bwd:
  shard:
    axis: 0
    workers: [2, 3]          # Backward on workers 2-3
"""

README_SNIPPET = """\
import os
os.environ['GT_CONFIG'] = 'config.yaml'
import gt

# Context manager - shards tensors AND compute
with gt.signal.context('forward_layer1'):
    x = gt.randn(100, 64)  # Sharded across workers [0,1,2,3]
    y = x @ w              # Compute happens in sharded mode

# Function call - copy-shard tensor only
x_sharded = gt.signal.tensor(x, name='forward_layer1')

# Pipeline parallelism - forward/backward on different workers
with gt.signal.context('pipeline_stage_1', backward='pipeline_stage_1_bwd'):
    loss = model(input)
    loss.backward()  # Gradients computed on workers [2,3]
"""

# Defined after the snippet's own `import gt` (which loads GT_CONFIG), before its first use.
README_SETUP = """\
import numpy as np
gt.gpu_workers(4)
w = gt.from_numpy(np.ones((64, 8), dtype=np.float32))
layer = gt.nn.Linear(64, 1)
def model(batch):
    return layer(batch).sum()
input = gt.from_numpy(np.ones((6, 64), dtype=np.float32))
"""

README_CHECK = """\
assert np.allclose(y.numpy(), x.numpy() @ np.ones((64, 8)), atol=1e-4)
assert np.array_equal(x_sharded.numpy(), x.numpy())
assert np.allclose(layer.weight.grad.numpy(), np.full((1, 64), 6.0))
ir = gt.debug.dump_ir(show=False)
assert '@w2,w3>' in ir and 'signal=pipeline_stage_1_bwd' in ir, ir
print('README snippet ok')
"""

GUIDE_SNIPPETS = """\
from gt import SignalConfig, ShardConfig

# Create configuration
config = SignalConfig(
    shard=ShardConfig(
        axis=0,
        workers=[0, 1, 2, 3]
    ),
    backward_signal='backward_layer1',
    compile=False
)

# Register it
gt.register_config('forward_layer1', config)

# Use it
with gt.signal.context('forward_layer1'):
    x = gt.randn(128, 64)

config = SignalConfig(
    shard=ShardConfig(axis=0, workers=[0, 1, 2, 3])
)
gt.register_config('data_parallel', config)

# Forward on workers [0, 1]
forward_config = SignalConfig(
    shard=ShardConfig(axis=0, workers=[0, 1]),
    backward_signal='backward_stage'
)
gt.register_config('forward_stage', forward_config)

# Backward on workers [2, 3]
backward_config = SignalConfig(
    shard=ShardConfig(axis=0, workers=[2, 3])
)
gt.register_config('backward_stage', backward_config)

def configure_for_batch_size(batch_size):
    if batch_size >= 256:
        workers = [0, 1, 2, 3]  # All workers
    else:
        workers = [0, 1]  # Fewer workers

    config = SignalConfig(
        shard=ShardConfig(axis=0, workers=workers)
    )
    gt.register_config('training', config)

# Adjust based on batch size
configure_for_batch_size(batch_size)
with gt.signal.context('training'):
    output = model(batch)

with gt.signal.context('forward', backward='backward'):
    loss = model(input).sum()
    # Forward uses 'forward' config

    loss.backward()
    # Backward uses 'backward' config

# Create tensor normally
x = gt.randn(100, 64)

# Shard it according to signal config
x_sharded = gt.signal.tensor(x, name='signal_name')

# Enter signal scope
gt.signal.enter('signal_name')

# Operations in this scope use signal config
x = gt.randn(100, 64)

# Exit signal scope
gt.signal.exit('signal_name')

# A sharded and B not sharded
# Each worker computes: A_shard @ B
# Result is sharded on axis 0 (same as A)

with gt.signal.context('data_parallel'):
    A = gt.randn(128, 64)     # Sharded: 32 per worker
    B = gt.randn(64, 32)      # Not sharded (replicated)
    C = A @ B                 # Result sharded: 32 rows per worker

# Both A and B sharded on axis 0
# Dispatcher all-gathers B, then each worker computes: A_shard @ B_full

with gt.signal.context('both_sharded'):
    A = gt.randn(128, 64)     # Sharded
    B = gt.randn(64, 32)      # Sharded
    C = A @ B                 # All-gather B, compute sharded matmul

with gt.signal.context('data_parallel'):
    x = gt.randn(128, 64)     # Sharded across workers
    total = x.sum()           # All-reduce: sum partial results
    avg = x.mean()            # Weighted average across shards
"""

GUIDE_SETUP = """\
import numpy as np
import gt
gt.gpu_workers(4)
model = gt.nn.Linear(64, 4)
batch = gt.from_numpy(np.ones((256, 64), dtype=np.float32))
input = gt.from_numpy(np.ones((3, 64), dtype=np.float32))
batch_size = 256
gt.register_config('both_sharded', gt.SignalConfig(shard=gt.ShardConfig(axis=0)))
"""

GUIDE_CHECK = """\
assert np.allclose(C.numpy(), A.numpy() @ B.numpy(), atol=1e-4)
assert np.isclose(total.item(), x.numpy().sum(), rtol=1e-4, atol=1e-3)
assert np.isclose(avg.item(), x.numpy().mean(), rtol=1e-4, atol=1e-5)
assert output.shape == (256, 4)
assert np.allclose(model.weight.grad.numpy(), np.full((4, 64), 3.0))
print('guide snippets ok')
"""


@pytest.mark.time_limit(150)
def test_the_readme_signal_snippet_runs_as_written(tmp_path):
    (tmp_path / 'config.yaml').write_text(README_YAML)
    imports, _, rest = README_SNIPPET.partition('import gt\n')
    code = imports + 'import gt\n' + README_SETUP + rest + README_CHECK
    result = run_script(f'import os; os.chdir({str(tmp_path)!r})\n' + code, timeout=140)
    assert result.returncode == 0, result.explain()
    assert 'README snippet ok' in result.stdout


@pytest.mark.time_limit(150)
def test_the_sharding_guides_snippets_run_as_written():
    code = GUIDE_SETUP + textwrap.dedent(GUIDE_SNIPPETS) + GUIDE_CHECK
    result = run_script(code, timeout=140)
    assert result.returncode == 0, result.explain()
    assert 'guide snippets ok' in result.stdout
