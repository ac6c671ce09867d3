"""GT against plain PyTorch, the headline numbers in one command, as the original GT
docs run it (`cd benchmarks; python compare.py`): the overhead benchmark (a chain of
small ops, a big matmul) and the MLP training step (eager and auto-compiled), each
printing GT's time, torch's, measured in the same run, and their ratio. The other
benchmarks here (models.py, batching.py, compile.py, multiplex.py, sharding.py,
instruction_log.py) each run on their own.
"""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

for name in ('overhead.py', 'mlp_step.py'):
    print(f'--- {name}', flush=True)
    finished = subprocess.run([sys.executable, os.path.join(HERE, name)])
    if finished.returncode:
        sys.exit(f'{name} failed (exit status {finished.returncode})')
