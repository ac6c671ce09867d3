"""Every gt.optim optimizer on bfloat16 and float16 parameters against torch.optim's
single-tensor update (`foreach=False`), bit for bit over several steps. torch's half
kernels round a Python number differently in their vectorized body and in the scalar
loop over the last elements, so the shapes have such a tail ((5, 3), (37,)) or none
((64, 32) on AVX2 and AVX-512). Bits are compared, so that the NaNs a float16 Adam
makes (its eps of 1e-8 rounds to 0 there) compare too. On a GPU (marked `gpu`) the same
steps run on GPU workers against torch's CUDA kernels, which compute in float32 from the
number throughout."""

import pytest
import torch
from gt_test_support import connected
from optim_check import seeded

import gt
import gt.optim as optim

CASES = [
    ('SGD', dict(lr=0.01)),
    ('SGD', dict(lr=0.1, momentum=0.9)),
    ('SGD', dict(lr=0.1, momentum=0.9, dampening=0.3, weight_decay=0.01)),
    ('SGD', dict(lr=0.1, momentum=0.8, nesterov=True, weight_decay=0.01, maximize=True)),
    ('Adam', dict(lr=0.01)),
    ('Adam', dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    ('AdamW', dict(lr=0.01)),
    ('AdamW', dict(lr=0.01, betas=(0.8, 0.9), amsgrad=True, maximize=True)),
    ('RMSprop', dict(lr=0.01)),
    ('RMSprop', dict(lr=0.01, centered=True, weight_decay=0.1)),
    ('RMSprop', dict(lr=0.01, momentum=0.9, centered=True)),
    ('Adagrad', dict(lr=0.01)),
    ('Adagrad', dict(lr=0.01, lr_decay=0.1, weight_decay=0.1, initial_accumulator_value=0.1)),
    ('Adamax', dict(weight_decay=0.1)),
    ('NAdam', dict(weight_decay=0.1)),
    ('NAdam', dict(weight_decay=0.1, decoupled_weight_decay=True)),
    ('RAdam', dict(lr=0.01, betas=(0.5, 0.6), weight_decay=0.1)),  # rectified from step 3
    ('Adadelta', dict(lr=0.5, weight_decay=0.1)),
    ('ASGD', dict(lr=0.05, weight_decay=0.1, t0=2)),
    ('Rprop', dict(lr=0.05)),
]
SHAPES = [(5, 3), (37,), (64, 32)]
STEPS = 4


def train(library, name: str, options: dict, start: torch.Tensor, grads: list,
          device: str = 'cpu') -> list:
    """The parameter after each step of `library`'s optimizer, given the same gradients
    (torch's on `device`; GT's where its workers run), each step's fetched to the CPU."""
    if library is torch:
        param = torch.nn.Parameter(start.to(device, copy=True))
        options = dict(options, foreach=False)
        upload = lambda grad: grad.to(device)  # noqa: E731
    else:
        param = gt.nn.Parameter(gt.tensor(start))
        upload = gt.tensor
    optimizer = getattr(library.optim, name)([param], **options)
    after = []
    for grad in grads:
        param.grad = upload(grad)
        optimizer.step()
        after.append(param.detach().to('cpu', copy=True) if library is torch else
                     torch.from_numpy(param.data.view(torch.int16).numpy()).view(start.dtype))
    return after


def check_steps(case: tuple, dtype: torch.dtype, device: str = 'cpu') -> None:
    name, options = case
    assert hasattr(optim, name)
    generator = seeded()
    for shape in SHAPES:
        start, *grads = (torch.randn(shape, generator=generator).to(dtype)
                         for _ in range(STEPS + 1))
        want = train(torch, name, options, start, grads, device)
        got = train(gt, name, options, start, grads)
        for step, (mine, theirs) in enumerate(zip(got, want), 1):
            differ = mine.view(torch.int16) != theirs.view(torch.int16)
            assert not differ.any(), (f'{shape}, step {step}: {differ.sum().item()} of '
                                      f'{differ.numel()} elements differ')


@pytest.mark.parametrize('dtype', [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize('case', CASES, ids=[f'{n}-{i}' for i, (n, _) in enumerate(CASES)])
def test_half_precision_step_is_torchs(case, dtype):
    check_steps(case, dtype)


@pytest.mark.gpu
@pytest.mark.parametrize('dtype', [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize('case', CASES, ids=[f'{n}-{i}' for i, (n, _) in enumerate(CASES)])
def test_half_precision_step_is_torchs_on_cuda(gpu_cluster, case, dtype):
    with connected(gpu_cluster.address):
        check_steps(case, dtype, 'cuda')
