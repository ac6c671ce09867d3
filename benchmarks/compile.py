"""Training steps with and without compiling, in GT and in torch, and how soon and how
smoothly GT switches to compiled code: `python benchmarks/compile.py`.

Two models, each trained with cross-entropy and SGD (momentum 0.9) on one fixed batch:
an MLP 784-512-512-10 (ReLU, then GELU) on a batch of 128, and a transformer block
(LayerNorm, 4-head self-attention with softmax, LayerNorm, GELU MLP 128-512-128, a
10-class head on every token) on a batch of 16 sequences of 64 tokens of width 128. Both
libraries run the same model definition with their own layers (torch's LayerNorm is its
fused kernel, GT's is composed of means and a square root, as a ported script gets).

Each variant is timed in windows of 10 steps and one fetch of the loss, alternating with
torch eager windows in the same process, so every ratio comes from one process and one
run; the step time is the median window over 10:
  - torch.compile: `torch.compile(model)` (Inductor; forward and backward compiled, the
    loss, backward call and SGD step around it eager), in this process.
  - GT eager and GT auto-compile (`GT_AUTO_COMPILE=1`, Inductor): in subprocesses of this
    script (`--gt-run eager|cold|warm`), since GT reads those variables at connect.
GT auto-compile is run twice, each on a fresh auto-started server: first on a fresh,
empty TORCHINDUCTOR_CACHE_DIR (cold: the time from the first step to the first step that
ran compiled code, and the slowest window while compiling against the median eager window
before it), then again on the same directory (warm: packages load from disk), where the
steady-state step is measured once every region is compiled. torch.compile also starts
from an empty cache of its own. While GT compiles, a torch twin runs the same steps
between GT's windows (untimed) so that every window's loss is checked. One line per
model divides GT's steps by torch eager's measured alone in this process: torch beside
a GT server (whose worker shares the cores) runs slower than alone, which flatters
the same-process ratios.

Targets (reported, not asserted): GT auto-compile at most 1.0x torch eager; while GT
compiles, no window much slower than an eager one. Losses of GT and torch after the same
steps from the same initial weights must agree to 1e-3 (relative, or absolute below 1);
a line starting with WARNING says where they do not.
"""

import argparse
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import DEVICE, alternating, compile_totals  # noqa: E402

STEPS = 10  # steps per window; the loss is fetched once per window
REPEATS, WARMUP = 20, 2  # windows of each side in a steady-state comparison
TOLERANCE = 1e-3
MODELS = ('mlp', 'block')
TITLES = {'mlp': 'MLP 784-512-512-10 step (batch 128)',
          'block': 'transformer block step (16x64x128, 4 heads)'}


# ---- the models, written once for both libraries ---------------------------------------------
def mlp(nn):
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.GELU(),
                         nn.Linear(512, 10))


def block(nn):
    class Block(nn.Module):
        def __init__(self, width: int = 128, heads: int = 4, classes: int = 10) -> None:
            super().__init__()
            self.heads = heads
            self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
            self.query, self.key = nn.Linear(width, width), nn.Linear(width, width)
            self.value, self.out = nn.Linear(width, width), nn.Linear(width, width)
            self.up, self.act, self.down = nn.Linear(width, 4 * width), nn.GELU(), \
                nn.Linear(4 * width, width)
            self.head = nn.Linear(width, classes)

        def forward(self, x):
            batch, length, width = x.shape
            heads, size = self.heads, width // self.heads

            def split(t):  # (batch, length, width) -> (batch, heads, length, size)
                return t.reshape(batch, length, heads, size).transpose(1, 2)

            h = self.norm1(x)
            q, k, v = split(self.query(h)), split(self.key(h)), split(self.value(h))
            attention = (q @ k.transpose(2, 3) * (1.0 / math.sqrt(size))).softmax(-1)
            mixed = (attention @ v).transpose(1, 2).reshape(batch, length, width)
            x = x + self.out(mixed)
            x = x + self.down(self.act(self.up(self.norm2(x))))
            return self.head(x).reshape(batch * length, -1)

    return Block()


def problem(name: str):
    """The torch model (seeded, so every process starts from the same weights), its inputs,
    labels and learning rate, on DEVICE (where GT's worker runs too). Drawn on the CPU, so
    every device starts from the same numbers."""
    torch.manual_seed(0)
    if name == 'mlp':
        model, x = mlp(torch.nn), torch.randn(128, 784)
        y = torch.randint(0, 10, (128,))
    else:
        model, x = block(torch.nn), torch.randn(16, 64, 128)
        y = torch.randint(0, 10, (16 * 64,))
    return model.to(DEVICE), x.to(DEVICE), y.to(DEVICE), 0.01


class Trainer:
    """A model, its SGD with momentum and its batch; `window()` runs STEPS steps and
    fetches the last loss."""

    def __init__(self, model, x, y, lr, functional, optimizers) -> None:
        self.model, self.x, self.y, self.functional = model, x, y, functional
        self.optimizer = optimizers.SGD(model.parameters(), lr=lr, momentum=0.9)
        self.steps, self.loss = 0, float('nan')

    def window(self, steps: int = STEPS) -> float:
        for _ in range(steps):
            loss = self.functional.cross_entropy(self.model(self.x), self.y)
            loss.backward()
            self.optimizer.step()
            self.optimizer.zero_grad()
        self.steps += steps
        self.loss = loss.item()
        return self.loss


def torch_trainer(name: str, compiled: bool = False) -> Trainer:
    model, x, y, lr = problem(name)
    if compiled:
        model = torch.compile(model)
    return Trainer(model, x, y, lr, torch.nn.functional, torch.optim)


def gt_trainer(name: str) -> Trainer:
    import gt
    import gt.nn as gnn
    import gt.nn.functional as gF

    reference, x, y, lr = problem(name)
    model = mlp(gnn) if name == 'mlp' else block(gnn)
    model.load_state_dict(reference.state_dict())
    return Trainer(model, gt.tensor(x), gt.tensor(y), lr, gF, gnn)


def agree(a: float, b: float) -> bool:
    return abs(a - b) <= TOLERANCE * max(1.0, abs(b))


def loss_check(label: str, other: Trainer, reference: Trainer) -> dict:
    return {'label': label, 'steps': reference.steps, 'other_steps': other.steps,
            'loss': other.loss, 'reference': reference.loss,
            'ok': other.steps == reference.steps and agree(other.loss, reference.loss)}


def steady(name: str, other: Trainer, label: str, reference: Trainer | None = None) -> dict:
    """Median window of torch eager and of `other`, alternating, in this process."""
    reference = reference or torch_trainer(name)
    while reference.steps < other.steps:  # in step, for the loss check (and warm)
        reference.window()
    torch_seconds, other_seconds = alternating(reference.window, other.window, REPEATS, WARMUP)
    # alternating's untimed settling runs as many windows as fit in its time: catch up
    while reference.steps < other.steps:
        reference.window()
    while other.steps < reference.steps:
        other.window()
    return {'torch': torch_seconds / STEPS, 'other': other_seconds / STEPS,
            'check': loss_check(label, other, reference)}


# ---- GT in a subprocess of its own (the environment is read at connect) ----------------------
def worker_totals() -> dict:
    import gt

    return compile_totals(gt)


def gt_run(mode: str, name: str, wait: float) -> dict:
    """Eager: GT against torch eager. cold/warm (GT_AUTO_COMPILE=1 set by the parent): run
    windows until every region compiled (or `wait` seconds passed), checking each window's
    loss against torch; then, for warm, the steady state against torch eager."""
    trainer = gt_trainer(name)
    if mode == 'eager':
        trainer.window()  # the server starts and the dispatcher plans: not timed
        result = steady(name, trainer, 'GT eager')
        result['stats'] = worker_totals()
        return result

    reference = torch_trainer(name)
    windows, checks_failed, first_compiled, all_compiled = [], [], None, None
    start = time.perf_counter()
    while True:
        began = time.perf_counter()
        trainer.window()
        ended = time.perf_counter()
        reference.window()  # untimed: keeps the torch twin in step for the loss check
        twin = time.perf_counter()
        if not agree(trainer.loss, reference.loss):
            checks_failed.append([trainer.steps, trainer.loss, reference.loss])
        stats = worker_totals()
        windows.append({'seconds': ended - began, 'at': ended - start, 'twin': twin - ended,
                        'poll': time.perf_counter() - twin,
                        'pending': stats['compiles_pending'], 'runs': stats['compiled_runs']})
        if first_compiled is None and stats['compiled_runs'] > 0:
            first_compiled = len(windows)
        settled = stats['compiles_pending'] == 0 and (
            stats['compiled_regions'] + stats['compile_failures']) > 0
        if first_compiled is not None and settled and all_compiled is None:
            all_compiled = len(windows)
        elif not settled:
            all_compiled = None  # more became hot after all: wait for those too
        if all_compiled is not None and len(windows) >= all_compiled + 2:
            break  # two more windows: the last programs switch on their next run
        if ended - start > wait:
            break
    result = {'windows': windows, 'first_compiled': first_compiled,
              'all_compiled': all_compiled, 'checks_failed': checks_failed,
              'check': loss_check('GT auto-compile', trainer, reference),
              'stats': worker_totals()}
    if mode == 'warm':
        measured = steady(name, trainer, 'GT auto-compile', reference)
        result.update(torch=measured['torch'], other=measured['other'],
                      check=measured['check'], stats_after=worker_totals())
    result['leftover_helpers'] = close_and_sweep()
    return result


def close_and_sweep() -> list:
    """Close GT's auto-started server, then end any compile helper of its worker still
    alive a few seconds later (one that was building when the worker stopped); returns
    their pids. Only helpers whose --parent is this server's worker are touched."""
    from gt.runtime import client as connection

    client = connection.current()
    workers = [str(process.pid) for process in client.server.processes[1:]]
    client.close()

    def helpers() -> list[int]:
        found = []
        for entry in os.listdir('/proc'):
            if not entry.isdigit():
                continue
            try:
                with open(f'/proc/{entry}/cmdline', 'rb') as file:
                    args = file.read().decode(errors='replace').split('\0')
            except OSError:
                continue
            if 'gt.runtime.compile_helper' in args and '--parent' in args:
                parent = args[args.index('--parent') + 1]
                if parent in workers:
                    found.append(int(entry))
        return found

    deadline = time.monotonic() + 5.0
    while (left := helpers()) and time.monotonic() < deadline:
        time.sleep(0.25)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return left


def progress(text: str, began: float) -> None:
    """A line on stderr as each part ends: a cold run takes minutes."""
    print(f'  [{time.perf_counter() - began:.0f} s] {text}', file=sys.stderr, flush=True)


def spawn(mode: str, name: str, env: dict, wait: float) -> dict:
    command = [sys.executable, os.path.abspath(__file__), '--gt-run', mode, '--model', name,
               '--compile-wait', str(wait)]
    began = time.perf_counter()
    done = subprocess.run(command, env=env, stdout=subprocess.PIPE, text=True)
    progress(f'{name}: GT {mode} run done', began)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise RuntimeError(f'{" ".join(command)} exited with {done.returncode}:\n{done.stdout}')
    return json.loads(lines[-1])


# ---- the report ------------------------------------------------------------------------------
def ms(seconds: float) -> str:
    return f'{seconds * 1e3:.2f} ms'


def gt_env(**settings: str) -> dict:
    env = {key: value for key, value in os.environ.items()
           if key not in ('GT_AUTO_COMPILE', 'GT_COMPILE', 'GT_COMPILE_BACKEND')}
    env.update(settings)
    return env


def warn_checks(checks: list) -> None:
    for check in checks:
        if not check['ok']:
            print(f"WARNING: {check['label']}: loss {check['loss']:.6f} after "
                  f"{check['other_steps']} steps, torch eager {check['reference']:.6f} after "
                  f"{check['steps']}")


def describe_switch(name: str, run: dict, label: str, eager_step: float,
                    warm: bool = False) -> None:
    windows, first, done = run['windows'], run['first_compiled'], run['all_compiled']
    stats = run['stats']
    regions = (f"{stats['compiled_regions']} regions compiled, {stats['compile_failures']} "
               f"failed, {stats['compiles_pending']} pending, in "
               f"{stats['compile_seconds']:.1f} s of compiling")
    if first is None:
        print(f'  {label}: NO compiled step within {windows[-1]["at"]:.0f} s '
              f'({len(windows) * STEPS} steps); worker stats: {stats}')
        return
    eager = [window['seconds'] for window in windows[1:first - 1]]
    compiling = [window['seconds'] for window in windows[1:(done or len(windows))]]
    slowest = max(compiling or [windows[0]['seconds']])
    ninetieth = sorted(compiling)[int(0.9 * (len(compiling) - 1))] if compiling else slowest
    median = f"{ms(statistics.median(eager) / STEPS)}/step" if eager else 'n/a (no window)'
    line = (f"  {label}: first compiled step after {windows[first - 1]['at']:.1f} s "
            f"(by step {first * STEPS}); ")
    line += (f"all compiled after {windows[done - 1]['at']:.1f} s (by step {done * STEPS}); "
             if done else f"not all compiled after {windows[-1]['at']:.0f} s; ")
    if warm:  # the packages the cold run built load from disk
        line += regions.replace('of compiling', 'of compiling and loading')
    else:
        line += (f"slowest window while compiling {ms(slowest / STEPS)}/step (90th "
                 f"percentile {ms(ninetieth / STEPS)}/step) vs median eager "
                 f"window before the switch {median}, GT eager steady state "
                 f"{ms(eager_step)}; {regions}")
    print(line)
    if run['checks_failed']:
        steps, loss, expected = run['checks_failed'][0]
        print(f"WARNING: {label} {name}: loss {loss:.6f} vs torch {expected:.6f} at step "
              f"{steps} ({len(run['checks_failed'])} windows disagree)")
    if run['leftover_helpers']:
        print(f"  note: compile helper(s) {run['leftover_helpers']} outlived their worker "
              f"by 5 s and were killed")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--gt-run', choices=('eager', 'cold', 'warm'),
                        help='internal: measure GT in this process and print JSON')
    parser.add_argument('--model', choices=MODELS, default='mlp')
    parser.add_argument('--models', default=','.join(MODELS),
                        help='which models, comma-separated (mlp,block)')
    parser.add_argument('--compile-wait', type=float, default=240.0,
                        help='seconds the cold run waits for every region to compile, per '
                             'model (the warm run waits as long)')
    parser.add_argument('--backend', default='inductor',
                        help="GT_COMPILE_BACKEND for GT auto-compile (inductor; eager, "
                             "aot_eager or cudagraphs for a quick check)")
    parser.add_argument('--save', metavar='PATH',
                        help='also write every measurement, window by window, as JSON')
    args = parser.parse_args()
    if args.gt_run:
        print(json.dumps(gt_run(args.gt_run, args.model, args.compile_wait)))
        return 0

    began = time.perf_counter()
    scratch = tempfile.mkdtemp(prefix='gt-bench-compile-')
    torch_cache, gt_cache = os.path.join(scratch, 'torch'), os.path.join(scratch, 'gt')
    os.environ['TORCHINDUCTOR_CACHE_DIR'] = torch_cache  # torch.compile here starts cold
    print(f'windows of {STEPS} steps + 1 loss fetch, {REPEATS} of each side alternating; '
          f'torch on {DEVICE} ({torch.get_num_threads()} threads); GT on an auto-started local '
          f'server, 1 worker on its default device (the same)')
    print(f'cold Inductor caches: torch.compile in {torch_cache}, GT auto-compile in '
          f'{gt_cache} (GT_AUTO_COMPILE=1, GT_COMPILE_BACKEND={args.backend})')
    saved = {}
    try:
        for name in args.models.split(','):
            checks = []
            eager, compiled = torch_trainer(name), torch_trainer(name, compiled=True)
            eager.window()
            start = time.perf_counter()
            compiled.window()
            compile_seconds = time.perf_counter() - start
            progress(f'{name}: torch.compile compiled', start)
            torch_eager_s, compiled_s = alternating(eager.window, compiled.window, REPEATS,
                                                    WARMUP)
            checks.append(loss_check('torch.compile', compiled, eager))

            gt_eager = spawn('eager', name, gt_env(), args.compile_wait)
            checks.append(gt_eager['check'])
            env = gt_env(GT_AUTO_COMPILE='1', GT_COMPILE_BACKEND=args.backend,
                         TORCHINDUCTOR_CACHE_DIR=gt_cache)
            cold = spawn('cold', name, env, args.compile_wait)
            checks.append(cold['check'])
            warm = spawn('warm', name, env, args.compile_wait)
            checks.append(warm['check'])
            saved[name] = {'torch_eager': torch_eager_s / STEPS,
                           'torch_compile': compiled_s / STEPS,
                           'torch_compile_first_window': compile_seconds,
                           'gt_eager': gt_eager, 'cold': cold, 'warm': warm}
            if args.save:
                with open(args.save, 'w') as file:
                    json.dump(saved, file, indent=1)

            def ratio(other: float, torch_seconds: float) -> str:
                return f'{other / torch_seconds:.2f}x'

            auto = warm['other'] / warm['torch']
            stats = warm['stats_after']
            partly = '' if stats['compiles_pending'] == 0 and stats['compiled_regions'] else \
                f" [not fully compiled: {stats['compiled_regions']} regions, " \
                f"{stats['compiles_pending']} pending, {stats['compile_failures']} failed]"
            print(f"{TITLES[name]}: torch eager {ms(torch_eager_s / STEPS)}, torch.compile "
                  f"{ms(compiled_s / STEPS)} ({ratio(compiled_s, torch_eager_s)}), GT eager "
                  f"{ms(gt_eager['other'])} ({ratio(gt_eager['other'], gt_eager['torch'])}), "
                  f"GT auto-compile {ms(warm['other'])} ({auto:.2f}x)"
                  f"{partly}  [target auto-compile <= 1.0x: {'ok' if auto <= 1.0 else 'OVER'}]")
            print(f"  each ratio against torch eager in the same process: "
                  f"{ms(torch_eager_s / STEPS)} beside torch.compile, "
                  f"{ms(gt_eager['torch'])} beside GT eager, {ms(warm['torch'])} beside GT "
                  f"auto-compile; torch.compile's first window took {compile_seconds:.1f} s "
                  f"(compiling, blocking)")
            print(f"  against torch eager alone (this process, no GT server beside it): "
                  f"GT eager {ratio(gt_eager['other'], torch_eager_s / STEPS)}, GT "
                  f"auto-compile {ratio(warm['other'], torch_eager_s / STEPS)}")
            if gt_eager['stats']['compiled_regions'] or gt_eager['stats']['compiles_pending']:
                print(f"WARNING: GT eager compiled something: {gt_eager['stats']}")
            describe_switch(name, cold, 'GT auto-compile, cold cache', gt_eager['other'])
            describe_switch(name, warm, 'GT auto-compile, warm cache (same dir, new server)',
                            gt_eager['other'], warm=True)
            warn_checks(checks)
            if all(check['ok'] for check in checks):
                print(f"  losses agree with torch eager (within {TOLERANCE}) for torch.compile "
                      f"after {checks[0]['steps']} steps, GT eager after {checks[1]['steps']}, "
                      f"GT auto-compile after {checks[2]['steps']} (cold; every window) and "
                      f"{checks[3]['steps']} (warm)")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f'total {time.perf_counter() - began:.0f} s')
    return 0


if __name__ == '__main__':
    sys.exit(main())
