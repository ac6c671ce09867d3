"""`gt.set_default_dtype`: what tensors take without a dtype, held against torch under the
same default (torch's default is the process's, so both run under what GT set)."""

import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch
from api_check import assert_same
from gt_test_support import assert_raises_as_torch

import gt
from gt.ir.dtypes import default_float_as
from gt.runtime import client as runtime_client


@pytest.fixture(autouse=True)
def default_float32_after():
    yield
    gt.set_default_dtype(torch.float32)
    assert torch.get_default_dtype() is torch.float32


def made(module):
    """Tensors whose dtype the default decides, made alike by `module` (gt or torch)."""
    ints = module.tensor([[1, 4], [9, -3]])
    return {
        'float data': module.tensor([[1.5, -2.0], [0.1, 3.0]]),
        'int data': module.tensor([1, 2]),
        'legacy constructor': module.Tensor([1, 2]),
        'zeros': module.zeros(2, 3),
        'full of a float': module.full((2,), 0.1),
        'full of an int': module.full((2,), 3),
        'float range': module.arange(0, 1, 0.1),
        'int range': module.arange(5),
        'linspace': module.linspace(0, 1, 7),
        'eye': module.eye(3),
        'int / number': ints / 3,
        'number / int': 7 / ints,
        'int / int': ints / module.tensor([[3, 3], [7, 2]]),
        'int * float number': ints * 0.1,
        'int + float number': ints + 1.1,
        'sqrt of ints': ints.abs().sqrt(),
        'exp of bools': (ints > 2).exp(),
        'sigmoid of ints': ints.sigmoid(),
        'erf of ints, by name': module.special.erf(ints),
        'float32 * float number': module.ones(2, dtype=torch.float32) * 0.1,
        'mean of the default': ints.to(torch.get_default_dtype()).mean(),
    }


@pytest.mark.parametrize('dtype', [torch.float64, torch.float16, torch.bfloat16],
                         ids=str)
def test_tensors_take_the_default_dtype_as_torchs_do(dtype):
    gt.set_default_dtype(dtype)
    assert gt.get_default_dtype() is dtype is torch.get_default_dtype()
    got, want = made(gt), made(torch)
    for name in want:
        assert_same(got[name], want[name]), name


def test_draws_and_a_training_step_in_float64_match_torch():
    gt.set_default_dtype(gt.float64)
    gt.manual_seed(3)
    torch.manual_seed(3)
    assert_same(gt.randn(4, 3), torch.randn(4, 3), rtol=0, atol=0)
    assert_same(gt.rand(5), torch.rand(5), rtol=0, atol=0)
    model, reference = gt.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    assert model.weight.dtype == gt.float64
    model.load_state_dict(reference.state_dict())
    optimizer = gt.optim.Adam(model.parameters(), lr=0.1)
    reference_optimizer = torch.optim.Adam(reference.parameters(), lr=0.1)
    x = np.linspace(-1, 1, 12).reshape(4, 3)
    for _ in range(3):
        for net, opt, data in ((model, optimizer, gt.tensor(x)),
                               (reference, reference_optimizer, torch.tensor(x))):
            opt.zero_grad()
            net(data).pow(2).mean().backward()
            opt.step()
    assert_same(model.weight, reference.weight.detach(), rtol=1e-12, atol=1e-12)
    assert optimizer.state_dict()['state'][0]['step'].dtype == torch.float64


def test_work_recorded_before_a_change_keeps_the_old_default():
    ints = gt.tensor([1, 2, 3])
    before = ints / 3  # recorded under float32, not yet sent
    gt.set_default_dtype(gt.float64)
    after = ints / 3
    gt.set_default_dtype(gt.float32)
    again = ints / 3
    assert_same(before, torch.tensor([1, 2, 3]) / 3)
    assert_same(after, torch.tensor([1, 2, 3], dtype=torch.float64) / 3)
    assert_same(again, torch.tensor([1, 2, 3]) / 3)


def test_the_same_loop_under_two_defaults_runs_each_its_own():
    """A fragment's structure is the same under both defaults: its plan and its worker
    program must not be."""
    ints = gt.tensor([[1, 2], [3, 4]])
    for dtype in (torch.float64, torch.float32, torch.float64, torch.float32):
        gt.set_default_dtype(dtype)
        for _ in range(3):  # past the hot-path threshold: the generated form runs too
            result = (ints / 7).sqrt() + 0.1
            assert_same(result, (torch.tensor([[1, 2], [3, 4]]) / 7).sqrt() + 0.1)


def test_another_session_keeps_its_own_default():
    """Two scripts on one server, one in float64: each gets its own types (the worker
    runs each program under its session's default, the express lane held off)."""
    gt.tensor([1.0]).item()  # this process's server, started if it is not yet
    client = runtime_client.current()
    script = f"""
import gt, torch
gt.connect({client.endpoint!r}, token={client.token!r})
gt.set_default_dtype(gt.float64)
ints = gt.tensor([1, 2, 3])
for _ in range(200):
    got = (ints / 3).exp()
assert got.dtype == torch.float64, got.dtype
torch.testing.assert_close(got.data, (torch.tensor([1, 2, 3]) / 3).exp(), rtol=0, atol=0)
print('ok')
"""
    other = subprocess.Popen([sys.executable, '-c', script], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    ints = gt.tensor([1, 2, 3])
    want = (torch.tensor([1, 2, 3]) / 3).exp()
    for _ in range(100):
        assert_same((ints / 3).exp(), want, rtol=0, atol=0)
    output, _ = other.communicate(timeout=120)
    assert other.returncode == 0 and output.strip().endswith('ok'), output


def test_a_program_under_another_default_is_never_compiled():
    """Compiles run beside the worker's loop, where torch's default dtype is float32."""
    from gt.ir import Graph
    from gt.passes import PipelineOptions
    from gt.runtime.compile_settings import CompileSettings
    from gt.runtime.planner import _compile_spec

    compiling = CompileSettings('always', 'eager')
    graph = Graph((), (), ())
    assert _compile_spec(compiling, PipelineOptions((0,), 0), graph) is not None
    assert _compile_spec(compiling, PipelineOptions((0,), 0, default_dtype='float64'),
                         graph) is None


def test_a_worker_program_restores_the_workers_default_after_it_fails():
    from gt.ir import Graph
    from gt.runtime.engines import make_engine
    from gt.runtime.program import Program, encode_program

    engine = make_engine('torch', 'cpu')
    program = Program(encode_program(Graph((), (), ()), [], None, 'float64'),
                      engine.implementation)
    with pytest.raises(ZeroDivisionError), default_float_as('float32'):
        program._run = lambda *args: 1 / 0
        program.run([], None, 0)
    assert torch.get_default_dtype() is torch.float32


@pytest.mark.parametrize('dtype', [torch.int64, torch.complex64, 'float64', None])
def test_what_torch_refuses_as_a_default_gt_refuses_alike(dtype):
    assert_raises_as_torch(TypeError, lambda library: library.set_default_dtype(dtype))
    assert torch.get_default_dtype() is torch.float32


def test_set_default_tensor_type_takes_types_and_their_names():
    for kind in (gt.DoubleTensor, 'torch.DoubleTensor', torch.DoubleTensor):
        with pytest.warns(UserWarning, match='set_default_tensor_type.* is deprecated'):
            gt.set_default_tensor_type(kind)
        assert_same(gt.tensor([0.1]), torch.tensor([0.1]))
        gt.set_default_dtype(gt.float32)
    with warnings.catch_warnings(), pytest.raises(TypeError, match='floating-point'):
        warnings.simplefilter('ignore')
        gt.set_default_tensor_type('torch.IntTensor')
    with warnings.catch_warnings(), pytest.raises(TypeError, match='invalid type'):
        warnings.simplefilter('ignore')
        gt.set_default_tensor_type('torch.NoSuchTensor')
