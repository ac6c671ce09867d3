"""Signals place work: data parallelism, model parallelism and a pipeline stage whose
gradients run on other workers, on a local server with 4 workers. Every result is checked
against the same computation done whole with numpy.

    python examples/signal_demo.py
"""

import os

import numpy as np

os.environ.setdefault('GT_CONFIG', os.path.join(os.path.dirname(__file__),
                                                'config_sharding.yaml'))
import gt  # noqa: E402  (GT_CONFIG is read at import)

gt.gpu_workers(4)
rng = np.random.default_rng(0)
w_data = rng.standard_normal((64, 32)).astype(np.float32)
w = gt.from_numpy(w_data)

# Data parallelism: the batch is made sharded on axis 0 over workers 0-3.
with gt.signal.context('forward_layer1'):
    x = gt.randn(128, 64)
    y = (x @ w).relu()
    total = y.sum()
gt.debug.dump_ir()
expected = np.maximum(x.numpy() @ w_data, 0)
assert np.allclose(y.numpy(), expected, atol=1e-4)
assert np.isclose(total.item(), expected.sum(), rtol=1e-4)
print(f'data parallel: y {tuple(y.shape)}, sum {total.item():.3f}: matches numpy')

# Model parallelism: a weight sharded on its feature axis over workers 0 and 1.
with gt.signal.context('model_parallel'):
    weight = gt.randn(64, 512)
hidden = gt.from_numpy(w_data.T.copy()) @ weight
assert np.allclose(hidden.numpy(), w_data.T @ weight.numpy(), atol=1e-3)
print(f'model parallel: hidden {tuple(hidden.shape)}: matches numpy')

# A pipeline stage: forward on workers 0,1; its gradients on workers 2,3.
layer = gt.nn.Linear(64, 16)
with gt.signal.context('stage_1'):
    batch = gt.signal.tensor(gt.from_numpy(rng.standard_normal((32, 64)).astype(np.float32)),
                             name='stage_1')
    loss = (layer(batch) ** 2).mean()
loss.backward()
reference = layer.weight.numpy(), layer.bias.numpy(), batch.numpy()
grad_expected = 2 * (reference[2] @ reference[0].T + reference[1]) / (32 * 16)
assert np.allclose(layer.weight.grad.numpy(), grad_expected.T @ reference[2], atol=1e-5)
print('pipeline stage: gradients computed on workers 2,3 match numpy')
gt.debug.print_worker_stats()
