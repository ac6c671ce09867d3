"""The lines ported training scripts carry around their work: mixed-precision wrappers,
torch.backends flags, inference_mode, thread settings and torch.utils. Each runs, and
means what it means in torch on a machine without CUDA."""

import time
import warnings

import pytest
import torch

import gt
import gt.nn as nn


def test_disabled_mixed_precision_trains_as_without_it():
    def train(use_amp_boilerplate):
        gt.manual_seed(0)
        model = nn.Linear(3, 1)
        optimizer = gt.optim.SGD(model.parameters(), lr=0.1)
        scaler = gt.cuda.amp.GradScaler(enabled=False)
        for _ in range(3):
            x = gt.randn(4, 3)
            if use_amp_boilerplate:
                with gt.autocast(device_type='cuda', enabled=False):
                    loss = model(x).pow(2).mean()
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            else:
                model(x).pow(2).mean().backward()
                optimizer.step()
            optimizer.zero_grad()
        return model.weight.tolist()
    assert train(True) == train(False)


def test_enabled_mixed_precision_says_it_is_off():
    with pytest.warns(UserWarning, match='GradScaler is enabled, but GT has no CUDA'):
        scaler = gt.amp.GradScaler('cuda')
    assert scaler.get_scale() == 1.0 and not scaler.is_enabled()
    with pytest.warns(UserWarning, match='does not autocast'):
        with gt.autocast('cpu', dtype=gt.bfloat16):
            assert (gt.ones(2) @ gt.ones(2)).dtype == gt.float32


def test_backends_flags_threads_and_utils_are_accepted():
    gt.backends.cudnn.benchmark = True
    gt.backends.cudnn.deterministic = True
    assert gt.backends.cudnn.benchmark and not gt.backends.mps.is_available()
    gt.set_num_threads(2)
    assert gt.get_num_threads() >= 1
    assert gt.utils.data.TensorDataset is not None


def test_matmul_precision_is_kept_as_torch_keeps_it():
    import torch

    assert gt.get_float32_matmul_precision() == torch.get_float32_matmul_precision()
    try:
        gt.set_float32_matmul_precision('high')
        assert gt.get_float32_matmul_precision() == 'high'
        with pytest.warns(UserWarning, match="bogus is not one of 'highest', 'high', or"):
            gt.set_float32_matmul_precision('bogus')
        assert gt.get_float32_matmul_precision() == 'high'
    finally:
        gt.set_float32_matmul_precision('highest')


def test_cuda_memory_calls_answer_as_torch_without_cuda():
    """torch.cuda without CUDA: empty_cache does nothing, its counters are 0 (what this
    CPU machine's torch says, checked where it has no CUDA); what needs a device raises,
    naming why."""
    import torch

    names = ('memory_allocated', 'max_memory_allocated', 'memory_reserved',
             'max_memory_reserved', 'is_initialized', 'empty_cache')
    answers = {name: getattr(gt.cuda, name)() for name in names}
    assert answers == {name: 0 for name in names[:4]} | {'is_initialized': False,
                                                          'empty_cache': None}
    if not torch.cuda.is_available():
        assert answers == {name: getattr(torch.cuda, name)() for name in names}
    with pytest.raises(AttributeError, match='gt.cuda has no current_device: a GT client has '
                                             'no CUDA device'):
        gt.cuda.current_device()


def test_a_ported_out_of_memory_clause_catches_gts():
    """`except torch.cuda.OutOfMemoryError:` (skip the batch) is evaluated when anything
    raises: gt.cuda names GT's error (it raised an AttributeError, hiding the error), and
    the session trains on."""
    caught = None
    try:
        gt.zeros(2 ** 42).sum().item()
    except gt.cuda.OutOfMemoryError as error:
        caught = error
    assert isinstance(caught, gt.OutOfMemoryError)
    assert gt.ones(2).sum().item() == 2.0


def test_cuda_synchronize_returns_once_the_work_sent_has_finished():
    """Ported timing code calls torch.cuda.synchronize() before it reads the clock. Each
    worker runs its programs one after another, so the time they took there (from their
    Done replies) fits inside the wait, unless synchronize returned early."""
    def worker_seconds() -> dict:
        return dict(gt.debug.get_dispatcher_stats()['session']['worker_seconds'])

    before = worker_seconds()
    start = time.perf_counter()
    x = gt.randn(1200, 1200) / 35
    for _ in range(8):
        x = (x @ x).tanh()
    gt.cuda.synchronize()
    waited = time.perf_counter() - start
    ran = {worker: seconds - before.get(worker, 0.0)
           for worker, seconds in worker_seconds().items()}
    assert max(ran.values()) > 0.02, ran  # enough work to tell a wait from none
    assert all(seconds <= waited for seconds in ran.values()), (ran, waited)


def test_placement_keywords_of_ported_gpu_code_are_accepted():
    import torch

    x = gt.randn(2, 3, device='cuda')
    for make in (gt.zeros_like, gt.ones_like, gt.rand_like, gt.randn_like):
        assert make(x, device='cuda:0', memory_format=torch.preserve_format).shape == x.shape
    assert gt.full_like(x, 7, device='cuda').numpy().tolist() == [[7.0] * 3] * 2
    assert gt.tensor([1, 2], device='cuda', dtype=gt.float64).dtype == gt.float64
    assert x.pin_memory() is x
    with pytest.raises(TypeError, match="unexpected keyword argument 'devise'"):
        gt.zeros_like(x, devise='cuda')


def test_inference_mode_is_known_inside_it_as_in_torch():
    import torch

    for lib in (gt, torch):
        states = [lib.is_inference_mode_enabled()]
        with lib.inference_mode():
            states.append(lib.is_inference_mode_enabled())
            with lib.inference_mode(False):
                states.append(lib.is_inference_mode_enabled())
            states.append(lib.is_grad_enabled())
        states.append(lib.is_inference_mode_enabled())
        assert states == [False, True, False, False, False], lib


def test_inference_mode_records_no_tape_as_a_context_and_a_decorator():
    weight = gt.ones(2, requires_grad=True)
    with gt.inference_mode():
        assert not (weight * 2).requires_grad
    with gt.inference_mode(False):
        assert (weight * 2).requires_grad

    @gt.inference_mode()
    def predict():
        return (weight * 2).requires_grad
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        assert not predict() and gt.is_grad_enabled()


def test_torch_utils_paths_import_as_in_torch():
    import torch.utils.data
    from gt.utils.data import DataLoader

    import gt.utils.checkpoint

    assert DataLoader is torch.utils.data.DataLoader and gt.utils.data is torch.utils.data
    assert gt.utils.checkpoint.__name__ == 'gt.utils.checkpoint'  # GT's own, not torch's
    assert gt.utils.hooks is torch.utils.hooks  # other submodules are torch's
    with pytest.raises(AttributeError, match='nosuch'):
        gt.utils.nosuch  # noqa: B018


def test_the_module_paths_of_pytorch_examples_import():
    """The first lines of torch's own examples (dcgan, mnist, mnist_hogwild,
    word_language_model), each of which stopped a port at its imports."""
    import importlib

    import gt.backends.cudnn as cudnn
    import gt.multiprocessing as mp
    import torch

    import gt.nn.parallel

    cudnn.benchmark = True
    assert gt.backends.cudnn.benchmark and mp is torch.multiprocessing
    assert gt.nn.parallel.DataParallel is nn.DataParallel
    assert not gt.accelerator.is_available() and gt.accelerator.current_accelerator() is None
    assert gt.serialization.safe_globals is torch.serialization.safe_globals
    for name in ['batchnorm', 'conv', 'dropout', 'linear', 'loss', 'rnn', 'module']:
        module = importlib.import_module(f'gt.nn.modules.{name}')
        assert getattr(nn.modules, name) is module
    assert isinstance(nn.BatchNorm2d(3), nn.modules.batchnorm._BatchNorm)
    assert nn.modules.conv._ConvNd is type(nn.Conv2d(1, 1, 1)).__mro__[1]
    assert nn.modules.Linear is nn.Linear and nn.modules.dropout.Dropout is nn.Dropout
    with pytest.raises(RuntimeError, match='cannot reach them'):
        nn.Linear(2, 2).share_memory()


def test_storage_flags_answer_as_for_a_dense_tensor_off_this_process():
    x = gt.ones(2)
    flags = ['is_cuda', 'is_cpu', 'is_xpu', 'is_mps', 'is_meta', 'is_sparse', 'is_quantized',
             'is_mkldnn', 'is_nested']
    assert [getattr(x, flag) for flag in flags] == [False] * len(flags)
    assert (x.is_cuda or x.is_xpu) is False and x.get_device() == -1


@pytest.mark.parametrize('reentrant', [True, False])
def test_checkpoint_gives_torchs_outputs_and_gradients(reentrant):
    import torch
    import torch.utils.checkpoint

    theirs = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    mine = gt.nn.Sequential(gt.nn.Linear(4, 8), gt.nn.Tanh(), gt.nn.Linear(8, 2))
    mine.load_state_dict(theirs.state_dict())
    data = torch.randn(3, 4)
    results = []
    for lib, model, x in ((torch, theirs, data.clone().requires_grad_()),
                          (gt, mine, gt.tensor(data, requires_grad=True))):
        half = lib.nn.Sequential(*list(model.children())[:2])
        hidden = lib.utils.checkpoint.checkpoint(half, x, use_reentrant=reentrant)
        out = lib.utils.checkpoint.checkpoint_sequential(
            lib.nn.Sequential(model[2]), 1, hidden, use_reentrant=reentrant)
        out.pow(2).sum().backward()
        results.append([out, x.grad, model[0].weight.grad])
    for got, expected in zip(results[1], results[0]):
        torch.testing.assert_close(torch.as_tensor(got.tolist()), expected.detach())


def test_attention_kernel_switches_and_torch_jit_guards_as_model_code_uses_them():
    from gt.nn.attention import SDPBackend, sdpa_kernel

    for lib in (gt, torch):
        flags = lib.backends.cuda
        flags.enable_flash_sdp(False)
        with flags.sdp_kernel(enable_math=False):
            inside = (flags.flash_sdp_enabled(), flags.math_sdp_enabled())
        assert inside == (True, False) and flags.math_sdp_enabled()
        flags.enable_flash_sdp(True)
        assert not lib.jit.is_scripting() and not lib.jit.is_tracing()
    with sdpa_kernel([SDPBackend.MATH, SDPBackend.FLASH_ATTENTION]):
        q = gt.randn(1, 2, 4, 8)
        out = gt.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
    assert out.shape == (1, 2, 4, 8)
    with pytest.raises(TypeError, match='SDPBackend'), sdpa_kernel('math'):
        pass

    @gt.jit.script
    def doubled(x):
        return x * 2
    assert doubled(gt.ones(2)).tolist() == [2.0, 2.0]
    assert gt.jit.ignore(doubled) is doubled and gt.jit.annotate(int, 3) == 3
    with pytest.raises(RuntimeError, match='TorchScript'):
        gt.jit.save(doubled, 'x.pt')


@pytest.mark.parametrize('dtype', [torch.bfloat16, torch.float16])
def test_half_precision_linear_rounds_once_as_torchs_fused_kernel(dtype):
    results = []
    for lib in (gt, torch):
        lib.manual_seed(2)
        layer = lib.nn.Linear(4, 4).to(dtype)
        x = lib.randn(2, 4, dtype=dtype, requires_grad=True)
        y = layer(x)
        y.float().sum().backward()
        direct = layer.bias.detach().addmm(x.detach(), layer.weight.detach().t(), beta=0.5)
        results.append([y.float().tolist(), x.grad.float().tolist(), direct.float().tolist()])
    assert results[0] == results[1]


def test_comparing_with_none_is_false_as_in_torch():
    for lib in (torch, gt):
        x = lib.ones(2)
        assert (x == None) is False and (x != None) is True  # noqa: E711 (the point)


def test_gt_testing_compares_gt_tensors_with_torchs_checks():
    x = gt.ones(2)
    gt.testing.assert_close({'a': [x, x * 2]}, {'a': [torch.ones(2), gt.full((2,), 2.0)]})
    with pytest.raises(AssertionError, match='Tensor-likes are not close'):
        gt.testing.assert_close(x, x + 1e-3)


def test_gt_distributed_answers_a_scripts_questions_as_torch_without_a_group():
    import gt.distributed as dist

    assert dist.is_available() is torch.distributed.is_available()
    assert dist.is_initialized() is False
    with pytest.raises(ValueError, match='Default process group has not been initialized'):
        dist.get_rank()
    with pytest.raises(RuntimeError, match='not a member of a process group'):
        dist.init_process_group('gloo')


def test_a_ddp_scripts_imports_work_and_what_it_calls_is_refused_by_name():
    """nanoGPT's train.py imports these at its top, and calls them only when launched by
    torchrun: the imports failed with a bare ImportError."""
    from gt.distributed import destroy_process_group, init_process_group
    from gt.nn.parallel import DistributedDataParallel as DDP

    for call in (lambda: init_process_group(backend='nccl'), destroy_process_group,
                 lambda: DDP(gt.nn.Linear(2, 2), device_ids=[0])):
        with pytest.raises(RuntimeError, match='not a member of a process group'):
            call()
    with pytest.raises(AttributeError, match='not a member of a process group'):
        import gt.distributed as dist
        dist.no_such_function


def cpu_boilerplate(module):
    """torch.cpu's answers and the older `torch.cpu.amp.autocast` spelling."""
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')  # GT says it does not autocast; torch may warn too
        with module.cpu.amp.autocast(dtype=module.bfloat16):
            inside = (module.ones(2) * 2).tolist()

        @module.cpu.amp.autocast()
        def decorated(x):
            return x + 1
        after = decorated(module.ones(1)).tolist()
    module.cpu.synchronize()
    return [module.cpu.is_available(), module.cpu.device_count(),
            module.cpu.current_device(), module.get_autocast_dtype('cpu'),
            module.get_autocast_dtype('cuda'), inside, after]


def test_torch_cpu_answers_as_torchs():
    assert cpu_boilerplate(gt) == cpu_boilerplate(torch)


@pytest.mark.parametrize('library', [gt, torch], ids=['gt', 'torch'])
def test_cudnn_flags_context_version_and_more_backends(library):
    """wav2vec2's CTC loss runs under `torch.backends.cudnn.flags(enabled=False)`; GT had
    no `flags`, `version`, `mha`, `mkldnn` or `cpu` there."""
    backends = library.backends
    before = backends.cudnn.enabled
    with backends.cudnn.flags(enabled=False):
        assert backends.cudnn.enabled is False
    assert backends.cudnn.enabled == before
    if library is gt:  # a client has no CUDA, as torch without it answers
        assert backends.cudnn.version() is None
    assert backends.mha.get_fastpath_enabled() is True
    assert backends.mkldnn.is_available() == torch.backends.mkldnn.is_available()
    assert backends.cpu.get_cpu_capability() == torch.backends.cpu.get_cpu_capability()
