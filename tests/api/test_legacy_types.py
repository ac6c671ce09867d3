"""torch's legacy spellings that older scripts and tutorials use, against torch:
`torch.FloatTensor(...)` and friends, `torch.Tensor(...)`, `x.new(...)`, `Variable`,
the in-place view ops (`unsqueeze_`, `t_`), and where a tensor is (`x.device`, `.cuda()`)."""

import numpy as np
import pytest
import torch
from torch.autograd import Variable as TorchVariable

import gt
from gt.autograd import Variable

DATA_FORMS = [
    ('FloatTensor', ([1, 2.5],)), ('DoubleTensor', ([[1, 2], [3, 4]],)),
    ('LongTensor', ([1.7, -2.2],)), ('IntTensor', ((3, 4),)), ('ByteTensor', ([1, 255],)),
    ('BoolTensor', ([0, 1, 2],)), ('HalfTensor', ([0.1],)), ('ShortTensor', ([7],)),
    ('CharTensor', ([-3],)), ('BFloat16Tensor', ([1.5],)),
    ('Tensor', ([1, 2],)), ('Tensor', ((2, 3),)), ('Tensor', (np.arange(6.).reshape(2, 3),)),
    ('FloatTensor', (np.array([1, 2], dtype=np.int64),)),
    ('LongTensor', (range(4),)), ('FloatTensor', (range(1, 7, 2),)),  # pygcn's split
]


@pytest.mark.parametrize('name, args', DATA_FORMS, ids=lambda v: str(v)[:30])
def test_a_constructor_on_data_gives_torchs_tensor(name, args):
    expected = getattr(torch, name)(*args)
    got = getattr(gt, name)(*args)
    assert got.dtype == expected.dtype
    torch.testing.assert_close(got.data, expected)


SIZE_FORMS = [(), (3,), (2, 3), (0,), (torch.Size([2, 1]),), (np.int64(4),)]


@pytest.mark.parametrize('name', ['Tensor', 'FloatTensor', 'LongTensor', 'BoolTensor'])
@pytest.mark.parametrize('sizes', SIZE_FORMS, ids=str)
def test_a_constructor_on_sizes_gives_torchs_shape_and_dtype_in_zeros(name, sizes):
    expected = getattr(torch, name)(*sizes)
    got = getattr(gt, name)(*sizes)
    assert (got.shape, got.dtype) == (expected.shape, expected.dtype)
    assert not got.data.any()  # torch leaves the memory uninitialized; GT gives zeros


def test_new_makes_a_tensor_of_the_same_dtype():
    for dtype in (torch.float32, torch.int64, torch.float64):
        expected, got = torch.ones(2, dtype=dtype), gt.ones(2, dtype=dtype)
        for args in [(3,), (2, 2), ([1, 2],), (), (torch.Size([1, 3]),)]:
            made, wanted = got.new(*args), expected.new(*args)
            assert (made.shape, made.dtype) == (wanted.shape, wanted.dtype)
        torch.testing.assert_close(got.new([[1, 2]]).data, expected.new([[1, 2]]))
    assert gt.ones(2).new(2).fill_(7).tolist() == [7.0, 7.0]


def test_a_constructor_on_a_tensor_of_its_dtype_shares_the_value_and_not_otherwise():
    x = gt.tensor([1.0, 2.0], requires_grad=True)
    y = gt.FloatTensor(x)
    assert y is not x and y.tolist() == [1.0, 2.0] and not y.requires_grad
    assert gt.Tensor(torch.tensor([3.0])).tolist() == [3.0]
    with pytest.raises(TypeError):
        torch.FloatTensor(torch.ones(2, dtype=torch.int64))  # the oracle refuses too
    with pytest.raises(TypeError, match=r'expected torch.FloatTensor \(got torch.LongTensor\)'):
        gt.FloatTensor(gt.ones(2, dtype=gt.int64))


@pytest.mark.parametrize('args, error, text', [
    ((-1,), RuntimeError, 'negative dimension -1'),
    ((2, 'a'), TypeError, 'sizes'),
    ((2.5,), TypeError, 'must be a sequence'),
])
def test_bad_arguments_raise_torchs_error_type(args, error, text):
    with pytest.raises(error):
        torch.Tensor(*args)
    with pytest.raises(error, match=text):
        gt.Tensor(*args)


def test_a_failed_construction_leaves_nothing_behind(recwarn):
    with pytest.raises(TypeError):
        gt.Tensor(2.5)
    with pytest.raises(RuntimeError, match='infer dtype'):
        gt.nn.Parameter(object())
    import gc
    gc.collect()
    assert not [w for w in recwarn if 'Exception ignored' in str(w.message)]
    assert gt.Tensor([1]).tolist() == [1.0]


def test_legacy_types_answer_isinstance_by_dtype_as_torchs_do():
    cases = [(torch.float32, 'FloatTensor'), (torch.int64, 'LongTensor'),
             (torch.float64, 'DoubleTensor'), (torch.bool, 'BoolTensor')]
    for dtype, name in cases:
        for other_dtype, other in cases:
            expected = isinstance(torch.ones(1, dtype=dtype), getattr(torch, other))
            assert isinstance(gt.ones(1, dtype=dtype), getattr(gt, other)) == expected
    assert not isinstance(torch.ones(1), gt.FloatTensor)  # a torch tensor is not GT's
    assert gt.FloatTensor.dtype == torch.float32
    assert repr(gt.LongTensor) == "<class 'gt.LongTensor'>"


def test_type_takes_a_legacy_type():
    x = gt.tensor([1.5, 2.5])
    for target in (gt.LongTensor, torch.LongTensor, gt.DoubleTensor):
        expected = torch.tensor([1.5, 2.5]).type(getattr(torch, target.__name__))
        assert x.type(target).dtype == expected.dtype
        assert x.type(target).tolist() == expected.tolist()


def test_variable_is_a_new_leaf_on_the_value_as_in_torch():
    base, torch_base = gt.tensor([1.0, 2.0]) * 3, torch.tensor([1.0, 2.0]) * 3
    v, expected = Variable(base, requires_grad=True), TorchVariable(torch_base, requires_grad=True)
    assert (v.requires_grad, v.is_leaf, v is base) == (
        expected.requires_grad, expected.is_leaf, expected is torch_base)
    (v * v).sum().backward()
    (expected * expected).sum().backward()
    torch.testing.assert_close(v.grad.data, expected.grad)
    assert isinstance(v, Variable) and isinstance(gt.ones(1), Variable)
    assert not Variable(gt.ones(1)).requires_grad
    with pytest.raises(TypeError, match='has to be a tensor'):
        Variable([1.0])


@pytest.mark.parametrize('method, args', [
    ('unsqueeze_', (0,)), ('unsqueeze_', (-1,)), ('squeeze_', ()), ('squeeze_', (1,)),
    ('t_', ()), ('transpose_', (0, 1)), ('swapdims_', (1, 0)), ('swapaxes_', (0, 1)),
])
def test_in_place_view_ops_change_the_shape_and_keep_the_gradient(method, args):
    start = np.arange(6.0, dtype=np.float32).reshape(2, 1, 3)[:, 0] if method != 'squeeze_' \
        else np.arange(6.0, dtype=np.float32).reshape(2, 1, 3)
    results = []
    for library in (torch, gt):
        leaf = library.tensor(start, requires_grad=True)
        y = leaf * 2
        returned = getattr(y, method)(*args)
        assert returned is y
        (y * library.arange(y.numel()).reshape(y.shape)).sum().backward()
        results.append((tuple(y.shape), y.detach().numpy(), leaf.grad.numpy()))
    (torch_shape, torch_y, torch_grad), (shape, y, grad) = results
    assert shape == torch_shape
    np.testing.assert_array_equal(y, torch_y)
    np.testing.assert_array_equal(grad, torch_grad)


def test_in_place_view_ops_on_a_leaf_that_requires_grad_are_refused_as_in_torch():
    with pytest.raises(RuntimeError, match='leaf'):
        torch.ones(2, requires_grad=True).unsqueeze_(0)
    with pytest.raises(RuntimeError, match='leaf'):
        gt.ones(2, requires_grad=True).unsqueeze_(0)
    with gt.no_grad():
        leaf = gt.ones(2, 3, requires_grad=True)
        leaf.t_()
    assert leaf.shape == (3, 2) and leaf.requires_grad and leaf.is_leaf


def test_a_tensor_is_on_the_gt_device_and_goes_back_where_torch_takes_a_device():
    x = gt.ones(2, 3)
    assert x.device.type == 'gt' and x.device.index is None
    assert str(x.device) == 'gt' and x.device == 'gt' and repr(x.device) == "device(type='gt')"
    assert gt.zeros(2, device=x.device).tolist() == [0.0, 0.0]
    assert x.to(x.device) is x and gt.nn.Linear(2, 2).to(x.device).weight.shape == (2, 2)
    assert not x.is_cuda and x.get_device() == -1
    assert x.cuda() is x and x.cuda(0) is x
    # gt.device is torch.device that takes GT's own too (torch.device('gt') raised)
    assert gt.device(x.device) == gt.device('gt') == x.device
    assert gt.device('cuda', 1) == torch.device('cuda:1') and gt.device('cpu').type == 'cpu'
    assert isinstance(x.device, gt.device) and isinstance(torch.device('cpu'), gt.device)
    assert gt.zeros(1, device=gt.device('gt')).tolist() == [0.0]


def test_a_tensors_device_serves_as_a_context_and_a_generators_device():
    """gpt-fast's `with torch.device(x.device):` and `torch.Generator(device=x.device)`:
    the context changes nothing (GT makes tensors on the cluster anyway), and the
    generator is torch's, in this process, on the CPU, drawing torch's numbers."""
    x = gt.ones(2)
    with gt.device(x.device) as chosen:
        assert chosen == x.device and gt.zeros(2).tolist() == [0.0, 0.0]
    generator = gt.Generator(device=x.device).manual_seed(0)
    assert isinstance(generator, gt.Generator) and isinstance(generator, torch.Generator)
    assert isinstance(torch.Generator(), gt.Generator) and generator.device.type == 'cpu'
    assert gt.randperm(6, generator=generator).tolist() == torch.randperm(
        6, generator=torch.Generator().manual_seed(0)).tolist()


def test_cuda_on_a_module_is_the_module():
    model = gt.nn.Linear(2, 2)
    assert model.cuda() is model and model.cpu() is model
