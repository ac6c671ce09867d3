"""A sharded training loop with the instruction log on, drawn as a timeline: one lane per
client, the dispatcher and each of 2 workers; program runs as bars, messages as markers,
arrows following each step from the client to the workers and back.

    python examples/visualize_demo.py [DIR]     # writes DIR/timeline.png and DIR/trace.json

Open trace.json in https://ui.perfetto.dev or chrome://tracing. The same from the shell:
`GT_INSTRUCTION_LOG=ops.log python script.py`, then
`python -m gt.scripts.visualize ops.log --output timeline.png --chrome trace.json`.
"""

import os
import sys
import tempfile
import time

folder = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix='gt-visualize-')
os.makedirs(folder, exist_ok=True)
log = os.path.join(folder, 'ops.log')  # written afresh by the server this script starts
os.environ['GT_INSTRUCTION_LOG'] = log  # before the first op: the server inherits it

import gt  # noqa: E402
from gt import ShardConfig, SignalConfig  # noqa: E402
from gt.scripts.visualize import visualize  # noqa: E402

gt.gpu_workers(2)
gt.register_config('data', SignalConfig(shard=ShardConfig(axis=0, workers=[0, 1])))
gt.manual_seed(0)
with gt.signal.context('data'):  # the batch is split by rows over both workers
    x = gt.randn(256, 32)
    y = x @ gt.randn(32, 1)
w = gt.zeros(32, 1, requires_grad=True)
for step in range(15):
    loss = ((x @ w - y) ** 2).mean()
    loss.backward()
    with gt.no_grad():
        w -= 0.1 * w.grad
    w.grad = None
    if step % 5 == 0:
        print(f'step {step:2d}: loss {loss.item():.4f}')

# The server writes the log from a background thread: wait until it stops growing.
size, deadline = -1, time.monotonic() + 5
while size != os.path.getsize(log) and time.monotonic() < deadline:
    size = os.path.getsize(log)
    time.sleep(0.3)
timeline, trace = os.path.join(folder, 'timeline.png'), os.path.join(folder, 'trace.json')
visualize([log], output=timeline, chrome=trace, dpi=150)
print(f'log: {log}\ntimeline: {timeline}\nChrome trace: {trace}')
