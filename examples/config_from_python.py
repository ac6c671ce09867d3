"""Signal configs from Python, as in the seeds' guide: data parallelism, a pipeline and a
configuration chosen at run time, mixed with a YAML file. Runs on 4 local workers.

    python examples/config_from_python.py
"""

import os
import tempfile

import numpy as np

import gt
from gt import ShardConfig, SignalConfig

gt.gpu_workers(4)

# Data parallelism
gt.register_config('data_parallel', SignalConfig(shard=ShardConfig(axis=0, workers=[0, 1, 2, 3])))

# Pipeline parallelism: forward on workers [0, 1], backward on [2, 3]
gt.register_config('forward_stage', SignalConfig(shard=ShardConfig(axis=0, workers=[0, 1]),
                                                 backward_signal='backward_stage'))
gt.register_config('backward_stage', SignalConfig(shard=ShardConfig(axis=0, workers=[2, 3])))


def configure_for_batch_size(batch_size: int) -> None:
    """Dynamic configuration: more workers for bigger batches."""
    workers = [0, 1, 2, 3] if batch_size >= 256 else [0, 1]
    gt.register_config('training', SignalConfig(shard=ShardConfig(axis=0, workers=workers)))


# YAML for the static part, Python for the rest; the later registration wins.
with tempfile.NamedTemporaryFile('w', suffix='.yaml', delete=False) as file:
    file.write('dynamic_layer:\n  shard:\n    axis: 1\n    workers: [0, 1, 2, 3]\n')
gt.load_config(file.name)
os.unlink(file.name)
gt.register_config('dynamic_layer', SignalConfig(shard=ShardConfig(axis=0, workers=[0, 1])))

model = gt.nn.Linear(784, 10)
with gt.signal.context('data_parallel'):
    batch = gt.randn(128, 784)  # 32 rows per worker
    output = model(batch)
print('data parallel output:', tuple(output.shape))

for batch_size in (64, 256):
    configure_for_batch_size(batch_size)
    with gt.signal.context('training'):
        x = gt.randn(batch_size, 784)
        loss = (model(x) ** 2).mean()
    print(f'batch {batch_size}: loss {loss.item():.4f}')

with gt.signal.context('forward_stage'):
    x = gt.randn(64, 784)
    loss = model(x).sum()
loss.backward()
expected = np.tile(x.numpy().sum(axis=0), (10, 1))
assert np.allclose(model.weight.grad.numpy(), expected, atol=1e-3)
print('pipeline: weight gradient (computed on workers 2,3) matches numpy')

with gt.signal.context('dynamic_layer'):
    print('dynamic_layer (axis 0 over [0, 1]):', tuple(gt.zeros(8, 8).shape))
