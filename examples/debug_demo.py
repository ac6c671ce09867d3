"""What GT's debug utilities show: the autograd tape, the IR of the last fragment (on
each worker too, and drawn), backward passes replayed, the workers' statistics with this session's
share, and the switches that print each component's messages.

    python examples/debug_demo.py
    GT_VERBOSE=1 python examples/debug_demo.py          # start-up and connections
    GT_DEBUG_DISPATCHER=1 python examples/debug_demo.py  # each fragment's planning
    GT_DEBUG_WORKER=1 GT_DEBUG_CLIENT=1 python examples/debug_demo.py
"""

import os
import shutil
import tempfile
import time

import gt

gt.gpu_workers(2)
a = gt.randn(10, 10, requires_grad=True)
b = gt.randn(10, 10, requires_grad=True)
loss = (a + b).relu().sum()

print('The autograd tape (what backward() would walk):')
gt.debug.print_tape()

loss.backward()
print('\nThe last fragment, as the dispatcher planned it:')
gt.debug.dump_ir()
print('\nThe same fragment as each worker runs it, with its local shapes:')
gt.debug.dump_ir(workers=True)
drawing = os.path.join(tempfile.gettempdir(), 'gt_debug_demo.svg' if shutil.which('dot')
                       else 'gt_debug_demo.dot')  # .dot: Graphviz's source, without Graphviz
print(f'\nDrawn with gt.debug.view_ir: {gt.debug.view_ir(drawing)}')
print(f'\nloss = {loss.item():.4f}, |grad a| = {a.grad.abs().sum().item():.4f}')

# The same tape again: the second backward records its ops, the third replays them.
for _ in range(2):
    a.grad = b.grad = None
    (a + b).relu().sum().backward()
print('\nbackward() calls:', gt.debug.get_backward_stats())

time.sleep(0.6)  # a worker heartbeat brings this session's busy seconds
print('\nThe workers, and this session:')
gt.debug.print_worker_stats()
print('\nThe dispatcher:', gt.debug.get_dispatcher_stats())
