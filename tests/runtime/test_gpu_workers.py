"""GT on GPU workers: what only a machine with CUDA can check, on a shared cluster of two
workers on the GPU, with torch on the same device as the oracle. Marked `gpu`: skipped
without CUDA. (The rest of the suite pins its workers to the CPU, where its oracles run.)"""

import time

import pytest
import torch
from gt_test_support import GPUS_ENV, connected, run_script

import gt
import gt.nn as nn
import gt.nn.functional as F

pytestmark = pytest.mark.gpu


def worker_stats() -> list[dict]:
    return gt.debug.get_worker_stats()


def total(key: str) -> float:
    return sum(worker[key] for worker in worker_stats())


def models() -> tuple[torch.nn.Module, nn.Module]:
    """The same MLP in torch (on the GPU) and in GT, from the same CPU-drawn weights."""
    torch.manual_seed(0)
    reference = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                                    torch.nn.Linear(64, 64), torch.nn.GELU(),
                                    torch.nn.Linear(64, 5))
    ported = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.GELU(),
                           nn.Linear(64, 5))
    ported.load_state_dict(reference.state_dict())
    return reference.cuda(), ported


def batch() -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(16, 32, generator=generator)
    return x.cuda(), torch.randint(0, 5, (16,), generator=generator).cuda()


def torch_losses(steps: int) -> tuple[list[float], torch.nn.Module]:
    model, _ = models()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x, y = batch()
    losses = []
    for _ in range(steps):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return losses, model


def gt_training(until=lambda steps: steps >= 6, seconds: float = 120.0):
    """Train the GT twin (its batch uploaded from CUDA tensors) until `until(steps)`."""
    _, model = models()
    optimizer = nn.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x, y = (gt.tensor(t) for t in batch())
    losses = []
    deadline = time.monotonic() + seconds
    while not until(len(losses)):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
        assert time.monotonic() < deadline, worker_stats()
    return losses, model


def test_workers_say_which_gpu_they_took(gpu_cluster):
    with connected(gpu_cluster.address):
        devices = [worker['device'] for worker in worker_stats()]
    assert devices == ['cuda:0', 'cuda:0'], devices  # --device cuda: the current GPU


def test_an_auto_started_server_gives_its_workers_the_gpus_in_turn():
    result = run_script('''
        import gt
        gt.gpu_workers(3)
        (gt.ones(2) + 1).tolist()
        print('devices', [worker['device'] for worker in gt.debug.get_worker_stats()])
    ''', env=GPUS_ENV)
    count = torch.cuda.device_count()
    expected = [f'cuda:{index % count}' for index in range(3)]
    assert f'devices {expected}' in result.stdout, result.explain()


def test_a_training_run_gives_torchs_cuda_losses_and_weights(gpu_cluster):
    with connected(gpu_cluster.address):
        losses, model = gt_training()
        weights = {name: value.numpy() for name, value in model.state_dict().items()}
    expected, reference = torch_losses(len(losses))
    torch.testing.assert_close(losses, expected, rtol=1e-5, atol=1e-6)
    for name, value in reference.state_dict().items():
        torch.testing.assert_close(torch.from_numpy(weights[name]), value.cpu(), rtol=1e-5,
                                   atol=1e-6)


def test_the_same_seed_draws_torchs_cuda_numbers(gpu_cluster):
    """A worker draws from a generator on its device: after the same seed, the numbers of
    torch on that device (CUDA's Philox), not of torch's CPU generator."""
    with connected(gpu_cluster.address):
        gt.manual_seed(3)
        got = [gt.randn(64, 8).numpy(), gt.rand(5).numpy(), gt.randint(0, 10, (7,)).numpy()]
    torch.manual_seed(3)  # seeds CUDA's default generators too
    expected = [torch.randn(64, 8, device='cuda'), torch.rand(5, device='cuda'),
                torch.randint(0, 10, (7,), device='cuda')]
    for value, oracle in zip(got, expected):
        torch.testing.assert_close(torch.from_numpy(value), oracle.cpu(), rtol=0, atol=0)


def test_dropout_on_the_gpu_is_seeded_and_scaled(gpu_cluster):
    """CUDA's dropout kernel draws differently from torch's CPU one, whose mask GT's
    dropout reproduces (`bernoulli_` on the session's generator): on a GPU the mask is not
    torch's, but it drops about p of the elements, scales the rest, and a seed repeats it."""
    with connected(gpu_cluster.address):
        masks = []
        for _ in range(2):
            gt.manual_seed(11)
            masks.append(F.dropout(gt.ones(200, 100), p=0.25).numpy())
    kept = masks[0] != 0
    assert (masks[0] == masks[1]).all()
    assert abs(kept.mean() - 0.75) < 0.02, kept.mean()
    torch.testing.assert_close(torch.from_numpy(masks[0][kept]),
                               torch.full((int(kept.sum()),), 1 / 0.75))


def test_a_batch_sharded_over_two_gpu_workers_gives_torchs_gradients(gpu_cluster, fresh_configs):
    """The rows of x on workers 0 and 1: the weight's gradient sums partial products from
    both, a move between the two GPU workers (through host memory, over ZeroMQ)."""
    gt.register_config('rows', gt.SignalConfig(shard=gt.ShardConfig(axis=0, workers=[0, 1])))
    x, w = torch.randn(10, 6, device='cuda'), torch.randn(6, 3, device='cuda')
    with connected(gpu_cluster.address):
        sent_before = total('peer_bytes_sent')
        with gt.signal.context('rows'):
            gx = gt.tensor(x)
        gw = gt.tensor(w, requires_grad=True)
        loss = (gx @ gw).tanh().sum()
        loss.backward()
        got_loss, got_grad = loss.item(), gw.grad.numpy()
        moved = total('peer_bytes_sent') - sent_before
    w.requires_grad_()
    expected = (x @ w).tanh().sum()
    expected.backward()
    assert moved > 0, 'no bytes moved between the workers'
    torch.testing.assert_close(got_loss, expected.item(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(torch.from_numpy(got_grad), w.grad.cpu(), rtol=1e-5, atol=1e-5)


def number_ops(x, y):
    """Ops with Python numbers beside tensors (`x` half or float), in either library."""
    z = x.clone()
    z[y > 1] = 0.25
    return [x * 0.9, x / 0.3, x + 0.1, 1 - x * 0.7, x.add(y, alpha=-0.01),
            x.addcmul(y, y, value=0.001), x.lerp(y, 0.1), x.clamp(-0.5, 0.5), x.pow(2.0),
            2 ** x, x.fmod(0.7), x.remainder(0.7), x.maximum(y * 0.5),
            x.masked_fill(x > 0, 2.0), z, (x > 0.3) & (y < 0.2)]


@pytest.mark.parametrize('dtype', [torch.float16, torch.bfloat16, torch.float32])
def test_numbers_beside_tensors_are_torchs_python_numbers(gpu_cluster, dtype):
    """torch keeps a Python number a CPU scalar that a CUDA kernel reads in float32; GT's
    number operands stay on the CPU too, so `x * 0.9` beside half tensors rounds once as
    torch's does (a 0-d CUDA tensor would be rounded to half first), and every op that
    takes a number accepts one from the CPU."""
    generator = torch.Generator().manual_seed(5)
    x, y = (torch.randn(4099, generator=generator).to(dtype) for _ in range(2))
    with connected(gpu_cluster.address):
        got = [value.numpy() if value.dtype != torch.bfloat16 else
               value.view(torch.int16).numpy() for value in number_ops(gt.tensor(x),
                                                                          gt.tensor(y))]
    expected = number_ops(x.cuda(), y.cuda())
    for index, (mine, theirs) in enumerate(zip(got, expected)):
        theirs = theirs.cpu()
        if theirs.dtype == torch.bfloat16:
            theirs = theirs.view(torch.int16)
        torch.testing.assert_close(torch.from_numpy(mine), theirs, rtol=0, atol=0,
                                   equal_nan=True, msg=lambda m: f'op {index}: {m}')


@pytest.mark.parametrize('dtype', [torch.float16, torch.bfloat16])
def test_half_precision_matmuls_give_torchs_cuda_results(gpu_cluster, dtype):
    a, b = torch.randn(64, 48).to(dtype), torch.randn(48, 32).to(dtype)
    with connected(gpu_cluster.address):
        got = (gt.tensor(a) @ gt.tensor(b)).relu().sum(0).float().numpy()
    expected = (a.cuda() @ b.cuda()).relu().sum(0).float().cpu()
    torch.testing.assert_close(torch.from_numpy(got), expected,
                               **{'rtol': 1e-2, 'atol': 1e-2} if dtype == torch.bfloat16 else {})


def test_cuda_synchronize_waits_for_the_gpus_kernels(gpu_cluster):
    """A GPU worker's program ends once its kernels are queued: gt.cuda.synchronize must
    wait for the device too. The same matmuls in torch on this GPU bound that wait from
    below (a margin of 2; without the device's sync it is milliseconds)."""
    size, count = 8192, 8
    weights = torch.randn(size, size, device='cuda') / size ** 0.5

    def torch_chain() -> None:
        x = weights
        for _ in range(count):
            x = x @ weights
        torch.cuda.synchronize()

    torch_chain()  # warm: cuBLAS, the allocator
    start = time.perf_counter()
    torch_chain()
    torch_seconds = time.perf_counter() - start
    with connected(gpu_cluster.address):
        x = gt.tensor(weights)
        (x @ x).sum().item()  # warm, as torch's was
        start = time.perf_counter()
        y = x
        for _ in range(count):
            y = y @ x
        gt.cuda.synchronize()
        waited = time.perf_counter() - start
    assert waited >= torch_seconds / 2, (waited, torch_seconds)


@pytest.mark.parametrize('backend', ['cudagraphs', 'aot_eager', 'inductor'])
def test_programs_compile_on_the_gpu(gpu_cluster, monkeypatch, backend):
    """GT_COMPILE on a GPU worker: every program compiles, runs compiled, and the losses
    are torch's on the same device (Inductor too, which compiles in the worker's compile
    thread on a GPU rather than as a package)."""
    monkeypatch.setenv('GT_COMPILE', '1')
    monkeypatch.setenv('GT_COMPILE_BACKEND', backend)
    with connected(gpu_cluster.address):
        runs_before = total('compiled_runs')
        extra: list[int] = []

        def compiled_for_a_while(steps: int) -> bool:
            if not extra and total('compiled_runs') > runs_before:
                extra.append(steps + 3)
            return bool(extra) and steps >= extra[0]

        failures_before = total('compile_failures')
        losses, _ = gt_training(until=compiled_for_a_while)
        failures = total('compile_failures') - failures_before
    assert failures == 0, f'{backend} failed to compile on the GPU'
    expected, _ = torch_losses(len(losses))
    torch.testing.assert_close(losses, expected, rtol=1e-5, atol=1e-6)
