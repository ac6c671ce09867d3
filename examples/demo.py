"""GT in a few lines: the first operation starts a local server; nothing else to set up."""

import numpy as np

import gt

a = gt.randn(1000, 1000)  # a local dispatcher and one worker start here
b = gt.randn(1000, 1000)
c = a @ b  # recorded, not yet run
print('c[:4, :4] =')
print(c[:4, :4])  # flush + fetch: the worker runs the matmul now

x = gt.tensor([1, 2, 3, 4])
y = gt.tensor([5, 6, 7, 8])
print('x + y =', (x + y).data.numpy().tolist())

data = np.arange(12, dtype=np.float64).reshape(3, 4)
t = gt.from_numpy(data)
print('row sums:', t.sum(dim=1).tolist(), 'dtype:', t.dtype)
print('softmax of the first row:', t[0].softmax(dim=0))
gt.debug.print_worker_stats()
