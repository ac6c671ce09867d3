"""Auto-sharding: with several workers, a created tensor whose first dimension divides by
the worker count is sharded on axis 0 (if it is big enough to be worth it); data from
numpy is not. A matmul of a sharded A with a whole B then runs on every worker at once.

    python examples/simple_auto_shard.py                 # auto-started server, 1 worker
    python examples/simple_auto_shard.py --distributed   # a server on localhost:12345
                                                         # with its workers (see README)
"""

import sys

import numpy as np

import gt

if '--distributed' in sys.argv:  # optionally followed by the server's address
    at = sys.argv.index('--distributed') + 1
    gt.connect(sys.argv[at] if at < len(sys.argv) else 'localhost:12345')

# Sharded as (1024 / n, 512) on each of n workers when n divides 1024 (2 or 4, not 3):
# 524288 elements are over GT_AUTO_SHARD_ELEMENTS (262144), below which splitting costs
# more than it saves.
a = gt.randn(1024, 512)
b_data = np.random.default_rng(0).standard_normal((512, 256)).astype(np.float32)
b = gt.tensor(b_data)  # stays on one worker (made from numpy), sent to the others
c = a @ b  # each worker computes its rows: A_shard @ B

ir = gt.debug.dump_ir(show=False)
matmul_line = next(line for line in ir.splitlines() if '= matmul(' in line)
placement = matmul_line.split('<')[1].split('>')[0]
workers = len(gt.debug.get_worker_stats())
print(f'{workers} worker(s); c = a @ b is placed {placement}')
assert np.allclose(c.numpy(), a.numpy() @ b_data, atol=1e-3)
print('c matches numpy:', tuple(c.shape))
