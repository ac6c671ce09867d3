"""The auto-started local server: a dispatcher and N workers as child processes.

It binds an ipc:// socket in a private directory (so two scripts never collide), and
stops every child and removes the directory when the script exits. If the script is
killed outright, the children notice their parent is gone and stop themselves. The
children run in a session of their own, so a Ctrl-C reaches only the script, which
then stops them in order.
"""

import os
import subprocess
import sys
import tempfile
import time

from gt.runtime import diagnostics, environment

STOP_SECONDS = 5.0


def gpu_placements(workers: int) -> list[list[str]]:
    """Each worker's --device: the GPUs its workers will see in turn (one per worker while
    there are enough; CUDA_VISIBLE_DEVICES chooses which), or none without CUDA, where
    workers take the CPU. The workers inherit this process's environment as it is now: a
    script that took its GPU and then set CUDA_VISIBLE_DEVICES to '' (as GT's test suite
    does, whose oracles run on the CPU) gets CPU workers."""
    import torch

    count = torch.cuda.device_count()
    visible = os.environ.get('CUDA_VISIBLE_DEVICES')
    if visible is not None:
        count = min(count, len([name for name in visible.split(',') if name.strip()]))
    return [['--device', f'cuda:{index % count}'] if count else [] for index in range(workers)]


class LocalServer:
    def __init__(self, workers: int = 1):
        environment.check_all()  # the children's variables: one error here, not theirs
        self.runtime_dir = tempfile.mkdtemp(prefix='gt-')
        self.endpoint = f'ipc://{self.runtime_dir}/dispatcher.ipc'
        parent = ['--exit-with-parent', str(os.getpid())]
        # Its sockets are private to this user (ipc in a fresh directory): no CURVE, and a
        # script's keys for a remote server must not make this one a CURVE server.
        env = {name: value for name, value in os.environ.items()
               if not name.startswith('GT_CURVE_')}
        # Several local workers would each take every core; share them out instead.
        env.setdefault('GT_WORKER_THREADS', str(max(1, (os.cpu_count() or 1) // workers)))
        self.processes = [subprocess.Popen(
            [sys.executable, '-m', 'gt.server', '--endpoint', self.endpoint,
             '--runtime-dir', self.runtime_dir, *parent], env=env, start_new_session=True)]
        for placement in gpu_placements(workers):
            self.processes.append(subprocess.Popen(
                [sys.executable, '-m', 'gt.worker', '--endpoint', self.endpoint, *placement,
                 '--auto-started', *parent], env=env, start_new_session=True))
        diagnostics.verbose('client', f'started a local server (a dispatcher and {workers} '
                            f'worker(s)) on {self.endpoint}')

    def check_alive(self, starting: bool = False) -> None:
        """Raise if the dispatcher has exited, or while `starting` any child: the client
        waits for every worker then. A worker lost later is the dispatcher's to report, as
        with any server (gt.WorkerError for the values it held; the session goes on with
        the others): its exit used to fail every later call of the script."""
        for process in self.processes if starting else self.processes[:1]:
            if process.poll() is not None:
                raise ConnectionError(
                    f'the auto-started GT server process {process.args[2]} (pid {process.pid}) '
                    f'exited with code {process.returncode}')

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        deadline = time.monotonic() + STOP_SECONDS
        for process in self.processes:
            try:
                process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        # The dispatcher removes this itself; this covers a dispatcher that was killed.
        import shutil

        shutil.rmtree(self.runtime_dir, ignore_errors=True)
