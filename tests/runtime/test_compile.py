"""Compiling hot programs on real workers: GT_AUTO_COMPILE, GT_COMPILE and `compile: true`
give torch's numbers, runs go on while compiles run, a failing compile falls back with
one warning, changing shapes compile within bounds, sessions share compiled programs,
programs with moves compile, and Inductor's packages survive a worker restart (with a
step whose gradient of a function run by name stays eager between regions). torch is
the oracle throughout.

Most tests use torch's cheap `eager` and `aot_eager` backends; the Inductor test
compiles for real (tens of seconds on a loaded 2-core machine)."""

import os
import pathlib
import re
import subprocess
import sys
import time
import warnings

import pytest
import torch
from gt_test_support import connected, run_script

import gt
import gt.nn as nn
import gt.nn.functional as F
from gt.runtime import aot_package, compiler

STEPS_AFTER_COMPILED = 3


def worker_stats() -> list[dict]:
    return gt.debug.get_worker_stats()


def total(key: str) -> float:
    return sum(worker[key] for worker in worker_stats())


def mlp(library, activation: str = 'Softsign'):
    """Softsign is a torch function GT runs by name: its gradient is a `torch_vjp`, which
    runs eagerly between the compiled regions (torch.export refuses it)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(12, 16), getattr(torch.nn, activation)(),
                                torch.nn.Linear(16, 16), torch.nn.GELU(),
                                torch.nn.Linear(16, 4))
    if library is torch:
        return model, torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    ported = nn.Sequential(nn.Linear(12, 16), getattr(nn, activation)(), nn.Linear(16, 16),
                           nn.GELU(), nn.Linear(16, 4))
    ported.load_state_dict(model.state_dict())
    return ported, nn.SGD(ported.parameters(), lr=0.05, momentum=0.9)


def batch():
    generator = torch.Generator().manual_seed(1)
    return torch.randn(8, 12, generator=generator), torch.randint(0, 4, (8,),
                                                                   generator=generator)


def torch_losses(steps: int, activation: str = 'Softsign') -> list[float]:
    model, optimizer = mlp(torch, activation)
    x, y = batch()
    losses = []
    for _ in range(steps):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return losses


def train_until_compiled(seconds: float = 60.0, extra: int = STEPS_AFTER_COMPILED,
                         check_every: int = 1) -> tuple[list[float], list[dict]]:
    """Train the GT MLP until its programs run compiled, then `extra` steps more; return
    the losses and the stats seen at each check."""
    model, optimizer = mlp(gt)
    x, y = batch()
    x, y = gt.tensor(x), gt.tensor(y)
    start_runs = total('compiled_runs')
    losses, seen, left = [], [], None
    deadline = time.monotonic() + seconds
    while left is None or left > 0:
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
        if left is not None:
            left -= 1
        elif len(losses) % check_every == 0:
            stats = worker_stats()
            seen.append(stats)
            if sum(w['compiled_runs'] for w in stats) > start_runs:
                left = extra
            assert time.monotonic() < deadline, f'no compiled run within {seconds} s: {stats}'
    return losses, seen


@pytest.mark.parametrize('mode, backend', [('GT_AUTO_COMPILE', 'eager'),
                                           ('GT_COMPILE', 'aot_eager')])
def test_a_training_run_gives_torchs_losses_when_compiled(cluster, monkeypatch, mode, backend):
    monkeypatch.setenv(mode, '1')
    monkeypatch.setenv('GT_COMPILE_BACKEND', backend)
    with connected(cluster.address):
        losses, _ = train_until_compiled()
        assert total('compile_failures') == 0
    torch.testing.assert_close(losses, torch_losses(len(losses)), rtol=1e-5, atol=1e-6)


def test_gt_compile_turns_compiling_on_for_the_session(cluster, monkeypatch):
    """A ported script's `model = torch.compile(model)`: the model comes back wrapped as
    torch's does (`_orig_mod`, and its attributes reached through the wrapper), and the
    session's hot programs compile with the backend named."""
    for name in ('GT_AUTO_COMPILE', 'GT_COMPILE', 'GT_COMPILE_BACKEND'):
        monkeypatch.delenv(name, raising=False)
    with connected(cluster.address):
        model = nn.Linear(2, 2)
        with pytest.warns(UserWarning, match="callable backend .* the server's backend"):
            assert gt.compile(model, backend=lambda gm, inputs: gm)._orig_mod is model
        compiled = gt.compile(model, backend='eager', mode='max-autotune')
        assert compiled._orig_mod is model and compiled.weight is model.weight
        assert list(compiled.state_dict()) == ['_orig_mod.weight', '_orig_mod.bias']
        assert type(compiled).__name__ == type(torch.compile(torch.nn.Linear(2, 2))).__name__

        def step():
            pass
        assert gt.compile(backend='eager')(step) is step  # as a decorator
        with pytest.raises(RuntimeError, match="backend='tvm' is not a backend GT compiles"):
            gt.compile(model, backend='tvm')  # torch's InvalidBackend is a RuntimeError
        losses, _ = train_until_compiled()
        assert total('compile_failures') == 0
    torch.testing.assert_close(losses, torch_losses(len(losses)), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('arguments', [
    {'mode': 'fastest'}, {'mode': 'default', 'options': {}}, {'fulgraph': True}],
    ids=['unknown mode', 'mode and options', 'misspelled argument'])
def test_gt_compile_refuses_what_torch_compile_refuses(arguments):
    model = nn.Linear(2, 2)
    with pytest.raises(Exception) as torchs:
        torch.compile(torch.nn.Linear(2, 2), **arguments)
    with pytest.raises(type(torchs.value)) as gts:
        gt.compile(model, **arguments)
    assert str(gts.value).replace('gt.compile', 'compile') == str(torchs.value).replace(
        'torch.compile', 'compile').replace('compile_fx', 'compile'), (gts.value, torchs.value)


def test_gt_compile_disabled_or_without_a_backend(cluster, monkeypatch):
    """`torch.compile(model, disable=not args.compile)`: disabled, the model comes back
    as it is and nothing is asked of the server; without `backend=`, the session asks for
    none, so a server started with GT_COMPILE_BACKEND keeps its choice."""
    for name in ('GT_AUTO_COMPILE', 'GT_COMPILE', 'GT_COMPILE_BACKEND'):
        monkeypatch.delenv(name, raising=False)
    with connected(cluster.address) as client:
        model = nn.Linear(2, 2)
        before = list(client.compile_wish)
        assert gt.compile(model, disable=True) is model
        assert gt.compile(disable=True)(model) is model
        assert client.compile_wish == before == [None, None]
        gt.compile(model, mode='reduce-overhead', fullgraph=True, dynamic=True)
        assert client.compile_wish == ['hot', None]


def _regions_started_by_training(steps: int, backend: str | None = None) -> int:
    """Regions compiled or pending after `steps` MLP steps (with `gt.compile(model,
    backend=backend)` first when a backend is given), less those before. Compiles that
    earlier tests on the shared cluster left under way settle first."""
    deadline = time.monotonic() + 60
    while total('compiles_pending'):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    before = total('compiled_regions')
    model, optimizer = mlp(gt)
    if backend is not None:
        gt.compile(model, backend=backend)
    x, y = (gt.tensor(t) for t in batch())
    for _ in range(steps):
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
    gt.sync()
    return total('compiled_regions') + total('compiles_pending') - before


def test_the_environment_wins_over_gt_compile(cluster, monkeypatch):
    monkeypatch.setenv('GT_AUTO_COMPILE', '0')
    monkeypatch.delenv('GT_COMPILE', raising=False)
    with connected(cluster.address):
        assert _regions_started_by_training(6, backend='eager') == 0


def test_without_compile_settings_nothing_compiles(cluster, monkeypatch):
    for name in ('GT_AUTO_COMPILE', 'GT_COMPILE'):
        monkeypatch.delenv(name, raising=False)
    with connected(cluster.address):
        assert _regions_started_by_training(4) == 0


def test_a_compile_signal_compiles_the_nodes_in_its_scope(cluster, monkeypatch, fresh_configs,
                                                          capsys):
    for name in ('GT_AUTO_COMPILE', 'GT_COMPILE'):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv('GT_COMPILE_BACKEND', 'eager')
    gt.register_config('hot', gt.SignalConfig(compile=True))
    w = torch.randn(6, 6)
    with connected(cluster.address):
        before = total('compiled_regions')
        gw, h = gt.tensor(w), gt.tensor(torch.ones(3, 6))
        expected = torch.ones(3, 6)
        deadline = time.monotonic() + 60
        while total('compiled_runs') == 0 or total('compiled_regions') == before:
            with gt.signal.context('hot'):
                h = (h @ gw).tanh() * 0.5
            h = h + 1.0  # outside the scope: stays eager
            expected = (expected @ w).tanh() * 0.5 + 1.0
            torch.testing.assert_close(h.numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)
            assert time.monotonic() < deadline
        assert total('compiled_regions') == before + 1
        while total('compiles_pending'):  # the loop's last programs may still be compiling
            assert time.monotonic() < deadline
            time.sleep(0.05)
        capsys.readouterr()
        gt.debug.print_worker_stats()
        shown = capsys.readouterr().out
        assert re.search(r'compiled \d+ programs \(\d+ regions\) in [0-9.]+ s, 0 failed, '
                         r'0 pending, 0 deferred, [1-9]\d* runs used them', shown), shown


def test_changing_shapes_compile_a_few_forms_then_only_programs_that_come_back(
        start_cluster, monkeypatch):
    """A sequence growing by one a step makes a new program at each length, hot after two
    runs and never run again: compiling stops after a few, and starts again for a
    program that keeps running, and for another session."""
    private = start_cluster(workers=1)  # a compiler of its own: counts start at zero
    monkeypatch.setenv('GT_AUTO_COMPILE', '1')
    monkeypatch.setenv('GT_COMPILE_BACKEND', 'eager')
    w = torch.randn(8, 8)
    with connected(private.address):
        gw = gt.tensor(w)
        gt.sync()  # in a program of its own, not the first length's
        for length in range(2, 40):
            x = torch.randn(length, 8)
            for _ in range(2):  # the reshape's target makes each length a program of its own
                got = (gt.tensor(x) @ gw).tanh().reshape(length * 8) * 2
                torch.testing.assert_close(got.data, (x @ w).tanh().reshape(length * 8) * 2)
        wait_for_compiles()
        stats = worker_stats()[0]
        started = stats['compiled_regions'] + stats['compile_failures']
        assert 0 < started <= compiler.MAX_UNUSED_LAYOUTS + compiler.MAX_PENDING_LAYOUTS, stats
        assert stats['compiles_deferred'] >= 38 - started, stats

        x = torch.randn(5, 8)
        deadline, run = time.monotonic() + 60, 0
        while not total('compiled_runs'):
            run += 1
            got = (gt.tensor(x) @ gw).relu().sum(0) * 3
            torch.testing.assert_close(got.data, (x @ w).relu().sum(0) * 3)
            if run > compiler.PERSISTENT_RUNS:  # its compile is queued: give it time
                assert time.monotonic() < deadline, worker_stats()
                time.sleep(0.05)
        assert compiler.PERSISTENT_RUNS < run, worker_stats()

    with connected(private.address):  # another session's budget is its own
        before = total('compiled_runs')
        gw = gt.tensor(w)
        gt.sync()
        for run in range(1, compiler.PERSISTENT_RUNS):
            got = (gt.tensor(x) @ gw).sigmoid().sum(1)
            torch.testing.assert_close(got.data, (x @ w).sigmoid().sum(1))
            if total('compiled_runs') > before:
                break
            time.sleep(0.1)  # an eager compile takes a fraction of a second
        assert total('compiled_runs') > before, worker_stats()


def train(steps: int) -> list[float]:
    model, optimizer = mlp(gt)
    x, y = (gt.tensor(t) for t in batch())
    losses = []
    for _ in range(steps):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return losses


def wait_for_compiles(seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while total('compiles_pending'):
        assert time.monotonic() < deadline, worker_stats()
        time.sleep(0.05)


def test_clients_running_the_same_model_share_one_compile(start_cluster, monkeypatch):
    monkeypatch.setenv('GT_AUTO_COMPILE', '1')
    monkeypatch.setenv('GT_COMPILE_BACKEND', 'eager')
    """The second and third users' steps run the first's compiled regions, and compile
    nothing of their own: a program is hot for compiling by one session's runs, so the
    set-up programs each user runs once never are (counted over every session, they were
    hot with the second user, and their compiles queued ahead of the step's)."""
    private = start_cluster(workers=1)
    compiled = []
    for _ in range(3):
        with connected(private.address):
            runs = total('compiled_runs')
            losses = train(6)
            wait_for_compiles()
            if compiled:  # the first user's compiles may finish after its last step
                assert total('compiled_runs') > runs
            compiled.append(total('compiled_regions'))
        torch.testing.assert_close(losses, torch_losses(6), rtol=1e-5, atol=1e-6)
    assert 0 < compiled[0] == compiled[1] == compiled[2], compiled


def test_programs_with_moves_compile_between_them(four, monkeypatch, fresh_configs):
    monkeypatch.setenv('GT_COMPILE', '1')
    monkeypatch.setenv('GT_COMPILE_BACKEND', 'eager')
    gt.register_config('rows', gt.SignalConfig(shard=gt.ShardConfig(axis=0)))
    x, w = torch.randn(8, 5), torch.randn(5, 3)
    with connected(four.address):
        with gt.signal.context('rows'):
            gx = gt.tensor(x)
        gw = gt.tensor(w)
        deadline = time.monotonic() + 60
        while True:
            total_sum = ((gx @ gw).relu() * 2.0).sum() + 1.0  # partial sums: an all_reduce
            torch.testing.assert_close(total_sum.item(), ((x @ w).relu() * 2.0).sum().item() + 1,
                                       rtol=1e-5, atol=1e-5)
            stats = worker_stats()
            if sum(1 for worker in stats if worker['compiled_runs']) >= 2:
                break
            assert time.monotonic() < deadline, stats


def test_random_draws_stay_eager_and_match_torch_for_the_same_seed(cluster, monkeypatch):
    monkeypatch.setenv('GT_COMPILE', '1')
    monkeypatch.setenv('GT_COMPILE_BACKEND', 'eager')
    with connected(cluster.address):
        before = total('compiled_runs')
        gt.manual_seed(7)
        torch.manual_seed(7)
        for _ in range(8):
            got = ((gt.randn(4, 4) * 2.0).relu() + gt.rand(4, 4) * 3.0).tanh().numpy()
            expected = ((torch.randn(4, 4) * 2.0).relu() + torch.rand(4, 4) * 3.0).tanh()
            torch.testing.assert_close(torch.from_numpy(got), expected, rtol=0, atol=0)
            time.sleep(0.1)  # let the compile finish, so later steps run compiled
        assert total('compiled_runs') > before


def _train_until_two_compiles_failed(steps_after: int = 0, activation: str = 'Softsign'
                                     ) -> list[float]:
    """Train the GT MLP, with a no-grad forward as a second program, until both programs'
    compiles have failed; then `steps_after` training steps more. Returns the losses."""
    model, optimizer = mlp(gt, activation)
    x, y = (gt.tensor(t) for t in batch())
    losses = []

    def step() -> None:
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())

    deadline = time.monotonic() + 90
    while total('compile_failures') < 2 or total('compiles_pending'):
        step()
        with gt.no_grad():
            model(x).sum().item()
        assert time.monotonic() < deadline, worker_stats()
    for _ in range(steps_after):
        step()
    return losses


def test_a_failing_compile_falls_back_to_eager_with_one_warning(start_cluster, tmp_path,
                                                               monkeypatch):
    not_a_directory = tmp_path / 'cache'
    not_a_directory.write_text('a file where the compile cache should be')
    private = start_cluster(workers=1, env={'TORCHINDUCTOR_CACHE_DIR': str(not_a_directory)})
    monkeypatch.setenv('GT_AUTO_COMPILE', '1')
    monkeypatch.delenv('GT_COMPILE_BACKEND', raising=False)  # inductor
    with connected(private.address), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        # ReLU, a row: torch types a function run by name on meta tensors through code
        # that imports dynamo, which makes the cache directory, and fails here.
        losses = _train_until_two_compiles_failed(steps_after=2, activation='ReLU')
        assert total('compiled_runs') == 0  # the fallback is stable
    torch.testing.assert_close(losses, torch_losses(len(losses), 'ReLU'), rtol=1e-5, atol=1e-6)
    log = private.logs()
    assert log.count('did not compile with inductor') == 1, log
    assert 'GT_DEBUG_COMPILE=1' in log
    # The user hears of it too (the worker's log may be on another machine): once for the
    # session's two failed regions, at the line of the fetch that brought the news.
    told = [warning for warning in caught if warning.category is gt.CompileWarning]
    assert len(told) == 1, [str(warning.message) for warning in caught]
    assert 'did not compile with inductor (RuntimeError: NotADirectoryError' in str(
        told[0].message)
    assert 'it runs eagerly, with the same results' in str(told[0].message)
    assert f'its first op recorded at {__file__}:' in str(told[0].message)  # its ops
    assert told[0].filename == __file__
    # A second session is told once too; the operator's line was the worker's first.
    with connected(private.address), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        _train_until_two_compiles_failed(steps_after=3, activation='ReLU')
    told = [warning for warning in caught if warning.category is gt.CompileWarning]
    assert len(told) == 1, [str(warning.message) for warning in caught]
    assert private.logs().count('did not compile with inductor') == 1


def test_a_compile_warning_waits_for_a_fetch_the_user_asked_for(cluster, monkeypatch):
    """Not at a fetch inside GT's own code (clip_grad_norm_ looking at the norm, a
    GradScaler's step), which a warnings-as-errors filter would break off half done;
    at the user's next `.item()`, once its value is there."""
    monkeypatch.setenv('GT_COMPILE', '1')
    monkeypatch.setenv('GT_COMPILE_BACKEND', 'cudagraphs')  # fails at once on a CPU worker
    with connected(cluster.address), warnings.catch_warnings():
        warnings.simplefilter('error')
        weight = gt.ones(4, 4, requires_grad=True)
        loss = ((weight * 2.0).relu() + 1.0).sum()
        loss.backward()
        deadline = time.monotonic() + 60
        while not total('compile_failures'):
            assert time.monotonic() < deadline, worker_stats()
            time.sleep(0.05)
        norm = nn.utils.clip_grad_norm_([weight], 1.0, error_if_nonfinite=True)  # fetches
        with pytest.raises(gt.CompileWarning, match='did not compile with cudagraphs'):
            norm.item()
        assert norm.item() == pytest.approx(8.0)  # the session goes on, told once
        assert loss.item() == 48.0


def test_an_auto_started_worker_leaves_a_failed_compile_to_the_scripts_warning(tmp_path):
    """The auto-started worker's stderr is the script's: its user reads one warning, the
    gt.CompileWarning at the script's line, not the operator's line besides."""
    not_a_directory = tmp_path / 'cache'
    not_a_directory.write_text('a file where the compile cache should be')
    result = run_script("""
        import time
        import gt
        import gt.nn as nn

        model = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 4))
        x = gt.randn(8, 12)
        deadline = time.monotonic() + 90
        while not gt.debug.get_worker_stats()[0]['compile_failures']:
            assert time.monotonic() < deadline, gt.debug.get_worker_stats()
            model(x).sum().item()
        print('value after the failure:', model(x).sum().item())
        print('failures:', gt.debug.get_worker_stats()[0]['compile_failures'])
        """, env={'GT_AUTO_COMPILE': '1', 'GT_COMPILE_BACKEND': 'inductor',
                  'TORCHINDUCTOR_CACHE_DIR': str(not_a_directory)})
    assert result.returncode == 0, result.explain()
    assert 'value after the failure:' in result.stdout, result.explain()
    assert result.stderr.count('CompileWarning: a region of') == 1, result.explain()
    assert 'did not compile with inductor' in result.stderr
    assert re.search(r'<string>:\d+: CompileWarning', result.stderr), result.explain()
    assert re.search(r'first op recorded at <string>:\d+ \(\w+\), its last at <string>:\d+',
                     result.stderr), result.explain()
    assert 'gt worker' not in result.stderr, result.explain()


def test_cudagraphs_on_a_cpu_worker_is_refused_once_and_the_run_goes_on_eagerly(
        start_cluster, monkeypatch):
    private = start_cluster(workers=1)
    monkeypatch.setenv('GT_AUTO_COMPILE', '1')
    monkeypatch.setenv('GT_COMPILE_BACKEND', 'cudagraphs')
    with connected(private.address):
        losses = _train_until_two_compiles_failed(steps_after=2)
        assert total('compiled_runs') == 0
    torch.testing.assert_close(losses, torch_losses(len(losses)), rtol=1e-5, atol=1e-6)
    log = private.logs()
    assert log.count('did not compile with cudagraphs') == 1, log
    assert 'captures CUDA graphs, and this region runs on the CPU' in log
    assert 'skipping cudagraphs' not in log  # torch's own warning, many lines long


BROKEN_PACKAGES = """
# Every AOTInductor package built in this process is written at once and fails as it is
# loaded: its loader reads address 0 (the SIGSEGV that torch 2.11's packages gave on an
# H200), or raises.
import ctypes
import pathlib

import torch._inductor


def compile_and_package(exported, package_path):
    pathlib.Path(package_path).write_bytes(b'a package that fails whoever loads it')
    return package_path


class BrokenLoader:
    def __init__(self, *arguments):
        if {crash}:
            ctypes.string_at(0)
        raise MemoryError('out of memory as it loaded')


torch._inductor.aoti_compile_and_package = compile_and_package
torch._C._aoti.AOTIModelPackageLoader = BrokenLoader
"""


@pytest.mark.parametrize('crash, said', [
    (True, 'died while building or trying the package: Segmentation fault (signal 11)'),
    (False, 'MemoryError: out of memory as it loaded')])
def test_a_package_that_fails_its_trial_is_dropped_and_the_worker_runs_on(
        start_cluster, tmp_path, monkeypatch, crash, said):
    """A crash ends the helper, not the worker; either way no package is kept."""
    (tmp_path / 'sitecustomize.py').write_text(BROKEN_PACKAGES.format(crash=crash))
    cache = tmp_path / 'inductor'
    path = os.pathsep.join(filter(None, [str(tmp_path), os.environ.get('PYTHONPATH')]))
    private = start_cluster(workers=1, env={'PYTHONPATH': path,
                                            'TORCHINDUCTOR_CACHE_DIR': str(cache)})
    monkeypatch.setenv('GT_AUTO_COMPILE', '1')
    monkeypatch.delenv('GT_COMPILE_BACKEND', raising=False)  # inductor
    with connected(private.address):
        losses = _train_until_two_compiles_failed()  # after a crash, in a new helper
        assert total('compiled_runs') == 0
        assert private.workers[0].poll() is None, private.logs()
    torch.testing.assert_close(losses, torch_losses(len(losses)), rtol=1e-5, atol=1e-6)
    log = private.logs()
    assert log.count('did not compile with inductor') == 1, log
    assert said in log
    assert not list(cache.rglob('*.pt2')), 'a failing package was kept'


@pytest.mark.parametrize('device, backend, compiling_interval', [
    ('cpu', 'eager', compiler.COMPILING_SWITCH_SECONDS),
    ('cuda', 'inductor', compiler.COMPILING_SWITCH_SECONDS),
    ('cpu', 'inductor', None)])
def test_a_compile_in_the_workers_thread_hands_the_interpreter_back_promptly(
        monkeypatch, device, backend, compiling_interval):
    """A compile in the worker's compile thread (the cheap backends; Inductor on a GPU)
    shortens the interpreter's switch interval while it runs, and restores it after; an
    Inductor package builds in the helper process, leaving it alone."""
    usual = sys.getswitchinterval()
    seen = []

    def compile_noting_the_interval(self, steps, region, examples, backend):
        seen.append(sys.getswitchinterval())
        return lambda *values: values

    monkeypatch.setattr(compiler.Compiler, '_compile', compile_noting_the_interval)
    worker_compiler = compiler.Compiler(device)
    done = worker_compiler.submit([], compiler.Region((), (), ()), (), backend, session=1,
                                  origin=lambda session: [None, [None, None]])
    done.result(timeout=10)
    assert seen == [pytest.approx(compiling_interval or usual)]
    assert sys.getswitchinterval() == usual


def test_a_bad_backend_name_is_refused_at_the_first_op():
    result = run_script('''
        import gt
        try:
            gt.ones(2) + 1
        except ValueError as error:
            print('refused:', error)
    ''', env={'GT_COMPILE_BACKEND': 'tvm-please', 'GT_AUTO_COMPILE': '1'})
    assert "refused: GT_COMPILE_BACKEND='tvm-please' is not a backend" in result.stdout, (
        result.explain())
    assert 'inductor, eager, aot_eager, cudagraphs' in result.stdout


@pytest.mark.time_limit(600)
def test_inductor_compiles_beside_running_steps_and_its_packages_survive_a_restart(
        start_cluster, tmp_path, monkeypatch):
    """A cold Inductor compile takes tens of seconds here: the steps must go on meanwhile."""
    monkeypatch.setenv('GT_AUTO_COMPILE', '1')
    monkeypatch.delenv('GT_COMPILE_BACKEND', raising=False)
    env = {'TORCHINDUCTOR_CACHE_DIR': str(tmp_path / 'inductor')}
    private = start_cluster(workers=1, env=env)
    with connected(private.address):
        losses, seen = train_until_compiled(seconds=400, check_every=5)
        waiting = [stats[0] for stats in seen if stats[0]['compiles_pending']]
        assert len(waiting) >= 2, 'expected steps to run while the compile was pending'
        first_compile = total('compile_seconds')
        assert total('compile_failures') == 0
        assert '= torch_vjp(' in gt.debug.dump_ir(show=False)  # what once failed to export
    torch.testing.assert_close(losses, torch_losses(len(losses)), rtol=1e-4, atol=1e-5)
    private.stop()
    packages = list((tmp_path / 'inductor').rglob('*.pt2'))
    assert packages
    _load_without_inductor(packages, env)

    restarted = start_cluster(workers=1, env=env)
    with connected(restarted.address):
        losses, seen = train_until_compiled(seconds=120)
        assert total('compile_seconds') < first_compile / 3, seen[-1]  # loaded, not built
    torch.testing.assert_close(losses, torch_losses(len(losses)), rtol=1e-4, atol=1e-5)


def _load_without_inductor(packages: list, env: dict) -> None:
    """The worker's loading path, in a new process: each package loads and takes its
    inputs as one flat list, and torch._inductor (seconds of imports, which in a worker
    stall its loop) is never imported."""
    result = run_script(f'''
        import sys
        import torch
        from gt.runtime import aot_package
        for path in {[str(path) for path in packages]!r}:
            assert aot_package.cache_dir() in aot_package.Path(path).parents, path
            loader = torch._C._aoti.AOTIModelPackageLoader(path, 'model', False, 1, -1)
            inputs = torch.utils._pytree.treespec_loads(loader.get_call_spec()[0])
            aot_package.load(path, [[[], [], 'float32', 'cpu']] * inputs.num_leaves)
        print('imported torch._inductor:', 'torch._inductor' in sys.modules)
    ''', env=env)
    assert 'imported torch._inductor: False' in result.stdout, result.explain()


@pytest.mark.parametrize('setting', [None, 'relative/inductor'])
def test_packages_live_in_inductors_cache_directory(tmp_path, monkeypatch, setting):
    """Where Inductor keeps its cache (the worker finds it without importing Inductor)."""
    monkeypatch.chdir(tmp_path)
    if setting is None:
        monkeypatch.delenv('TORCHINDUCTOR_CACHE_DIR', raising=False)
    else:
        monkeypatch.setenv('TORCHINDUCTOR_CACHE_DIR', setting)
    found = aot_package.cache_dir()
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    assert found == pathlib.Path(cache_dir()) / 'gt_aoti'


def test_the_compile_demo_runs_and_matches_torch():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    result = subprocess.run([sys.executable, os.path.join(root, 'examples', 'compile_demo.py')],
                            capture_output=True, text=True, timeout=120, cwd=root,
                            env=dict(os.environ, GT_COMPILE_BACKEND='eager'))
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'every loss matches PyTorch' in result.stdout
    compiled = re.search(r'compiled (\d+) programs', result.stdout)
    assert compiled and int(compiled.group(1)) >= 1, result.stdout


def test_a_packages_trial_on_zeros_tolerates_what_zeros_raise():
    """The trial checks that a package's call does not end the process: `x % n` with n
    a number (a 0 there) or an inverse (of a zero matrix) raise on zeros, and such a
    package is kept (it failed to compile for good before)."""
    specs = [[[2, 2], [2, 1], 'float32', 'cpu']]
    aot_package.try_on_zeros(lambda x: torch.linalg.inv(x), specs)
    aot_package.try_on_zeros(lambda x: torch.ones(2, dtype=torch.int64) % x.long(), specs)
    with pytest.raises(TypeError):  # not an error of the values: the package is wrong
        aot_package.try_on_zeros(lambda x, y: x, specs)


def test_a_package_is_keyed_by_gts_op_code_too(monkeypatch):
    """A package built before an op's code changed (a GT upgrade) is not the one found."""
    wire, specs = [[['relu', [0], {}, [1]]], [0], [1], 'cpu'], [[[2], [1], 'float32', 'cpu']]
    before = aot_package.package_path(wire, specs)
    assert aot_package.package_path(wire, specs) == before
    monkeypatch.setattr(aot_package, '_op_code', lambda: 'another version')
    assert aot_package.package_path(wire, specs) != before


def test_a_package_is_keyed_by_the_cpus_features(monkeypatch):
    """Inductor builds for the CPU it runs on: a cache shared between machines must not
    hand one's package to another CPU, where it could end the worker (SIGILL)."""
    wire, specs = [[['relu', [0], {}, [1]]], [0], [1], 'cpu'], [[[2], [1], 'float32', 'cpu']]
    before = aot_package.package_path(wire, specs)
    monkeypatch.setattr(aot_package, '_cpu_features', lambda: 'a CPU without AVX-512')
    assert aot_package.package_path(wire, specs) != before


def test_a_damaged_package_on_disk_is_built_again(tmp_path, monkeypatch):
    """A package file that does not load (a torn copy) used to fail its region at every
    start of every worker; it is removed and built again."""
    monkeypatch.setenv('TORCHINDUCTOR_CACHE_DIR', str(tmp_path))
    wire, specs = [[['relu', [0], {}, [1]]], [0], [1], 'cpu'], [[[2], [1], 'float32', 'cpu']]
    monkeypatch.setattr(compiler.graph_module, 'to_wire', lambda *_: wire)
    path = aot_package.package_path(wire, specs)
    path.parent.mkdir(parents=True)
    path.write_bytes(b'half a package')
    built = []

    def build(self, wire, specs, target):
        built.append(target)
        pathlib.Path(target).write_bytes(b'a whole package')

    def load(found, specs):
        if found.read_bytes() != b'a whole package':
            raise RuntimeError('Failed to initialize zip archive: failed finding central '
                               'directory')
        return lambda *values: ['ran']

    monkeypatch.setattr(compiler.CompileHelper, 'build', build)
    monkeypatch.setattr(aot_package, 'load', load)
    monkeypatch.setattr(aot_package, 'try_on_zeros', lambda *_: None)
    worker_compiler = compiler.Compiler('cpu')
    try:
        package = worker_compiler._compile([], compiler.Region((), (), ()), tuple(specs),
                                           'inductor')
        assert package() == ['ran'] and built == [str(path)]
        worker_compiler._compile([], compiler.Region((), (), ()), tuple(specs), 'inductor')
        assert built == [str(path)]  # whole now: loaded, not built again
    finally:
        worker_compiler.close()


def test_a_hung_compile_helper_is_ended_and_its_region_fails(monkeypatch):
    """A helper that never answers (stopped, or a compiler hung) kept its region pending
    for good, and the worker yielding it a core."""
    import signal as signals

    from gt.runtime import compile_helper

    monkeypatch.setattr(compile_helper, 'BUILD_SECONDS', 1.0)
    helper = compile_helper.CompileHelper()
    helper._start()
    stopped = helper.process
    os.kill(stopped.pid, signals.SIGSTOP)
    try:
        started = time.monotonic()
        with pytest.raises(RuntimeError, match=r'built for over 1 s \(hung, or stopped\)'):
            helper.build([], [], '/nonexistent/package.pt2')
        assert time.monotonic() - started < 30
        assert stopped.poll() is not None and helper.process is None
    finally:
        if stopped.poll() is None:
            stopped.kill()
        helper.close()
