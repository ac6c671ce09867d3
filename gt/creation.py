"""Making tensors: from data (`tensor`, `from_numpy`), from shapes (`randn`, `zeros`, ...),
and like other tensors (`zeros_like`, ...). Random tensors are drawn on the worker."""

import operator
from typing import Any

import numpy as np
import torch

from gt import data_loading
from gt.ir.dtypes import DTYPE_NAMES, TORCH_DTYPES, default_float, dtype_name, python_number
from gt.ir.ops.random_state import pack, unpack
from gt.runtime import client as connection
from gt.tensor import Tensor, apply, creation


def _shape(sizes: tuple, keywords: dict | None = None) -> tuple[int, ...]:
    """The shape from `randn(2, 3)`, `randn((2, 3))` or `randn(size=(2, 3))` (taken out of
    `keywords`)."""
    if keywords and 'size' in keywords:
        if sizes:
            raise TypeError("got multiple values for argument 'size'")
        sizes = (keywords.pop('size'),)
    if not sizes:  # `randn()`: torch's refusal; `randn(())` is a 0-d tensor
        raise TypeError('missing 1 required positional arguments: "size"')
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list, torch.Size)):
        sizes = tuple(sizes[0])
    return tuple(_size(size, sizes) for size in sizes)


def _size(size: Any, sizes: tuple) -> int:
    """An int, a numpy integer, or what torch also takes as one: a one-element integer
    tensor (`zeros(2, lengths.max())`, its value fetched)."""
    if isinstance(size, (int, np.integer)) and not isinstance(size, bool):
        return int(size)
    if isinstance(size, (Tensor, torch.Tensor)) and size.numel() == 1:
        try:
            return operator.index(size)
        except TypeError:
            pass
    raise TypeError(f'sizes must be integers, got {sizes!r}')


PLACEMENT_KEYWORDS = frozenset({'device', 'layout', 'pin_memory', 'memory_format'})


def _placement_only(keywords: dict) -> None:
    """torch's `device=`, `layout=`... are accepted and left to GT, which places tensors
    itself; anything else is a mistake, named as torch would."""
    unknown = sorted(set(keywords) - PLACEMENT_KEYWORDS)
    if unknown:
        raise TypeError(f'got an unexpected keyword argument {unknown[0]!r}')


def _dtype(dtype: Any, default: str | None = None) -> str:
    """The dtype asked for, else `default`, else the default floating dtype."""
    if dtype is not None:
        return dtype_name(dtype)
    return default_float() if default is None else default


def randn(*size, dtype=None, requires_grad=False, generator=None, **placement) -> Tensor:
    shape = _shape(size, placement)
    _placement_only(placement)
    if generator is not None:
        return _drawn_here(torch.randn, shape, dtype, generator, requires_grad)
    return creation('randn', shape, _dtype(dtype), requires_grad)


def rand(*size, dtype=None, requires_grad=False, generator=None, **placement) -> Tensor:
    shape = _shape(size, placement)
    _placement_only(placement)
    if generator is not None:
        return _drawn_here(torch.rand, shape, dtype, generator, requires_grad)
    return creation('rand', shape, _dtype(dtype), requires_grad)


def _drawn_here(draw, shape: tuple[int, ...], dtype: Any, generator: torch.Generator,
                requires_grad: bool) -> Tensor:
    """A draw from a torch.Generator the script made (a reproducible data set): it lives in
    this process, so torch draws here, advancing it as it would, and the values are sent."""
    if not isinstance(generator, torch.Generator):
        raise TypeError(f'generator must be a torch.Generator, got {type(generator).__name__}')
    values = draw(shape, dtype=TORCH_DTYPES[_dtype(dtype)], generator=generator)
    return tensor(values, requires_grad=requires_grad)


def zeros(*size, dtype=None, requires_grad=False, **placement) -> Tensor:
    shape = _shape(size, placement)
    _placement_only(placement)
    return creation('zeros', shape, _dtype(dtype), requires_grad)


def ones(*size, dtype=None, requires_grad=False, **placement) -> Tensor:
    shape = _shape(size, placement)
    _placement_only(placement)
    return creation('ones', shape, _dtype(dtype), requires_grad)


def full(size, fill_value, dtype=None, requires_grad=False, **placement) -> Tensor:
    _placement_only(placement)
    if isinstance(fill_value, (Tensor, torch.Tensor)):  # torch takes a 0-d tensor's number
        fill_value = fill_value.item()
    fill_value = python_number(fill_value)  # np.float64(1.5) fills float32, as in torch
    if dtype is None:
        dtype = torch.tensor(fill_value).dtype
    return creation('full', _shape((size,)), _dtype(dtype), requires_grad, value=fill_value)


def arange(start, end=None, step=1, dtype=None, requires_grad=False, **placement) -> Tensor:
    _placement_only(placement)
    # torch takes one-element tensors as the numbers they hold (`arange(lengths[0], n)`).
    start, end, step = (value.item() if isinstance(value, (Tensor, torch.Tensor))
                        and value.numel() == 1 else value for value in (start, end, step))
    if end is None:
        start, end = 0, start
    if step == 0:
        raise ValueError('arange: step must be nonzero')
    if (end - start) * step < 0:
        raise ValueError(f'arange: upper bound {end} and lower bound {start} are inconsistent '
                         f'with step sign {step}')
    if dtype is None:
        floats = any(isinstance(v, float) for v in (start, end, step))
        dtype = torch.get_default_dtype() if floats else torch.int64
    bounds = start, end, step
    if _dtype(dtype) == 'int64':
        # torch counts an int64 range in int64: each bound truncated first, so
        # arange(0, 5, 1.5) has 5 elements (step 1), where int32's, counted in double, has 4.
        bounds = tuple(int(v) for v in bounds)
        if bounds[2] == 0:
            raise ValueError('step must be nonzero')
    count = max(0, int(np.ceil((bounds[1] - bounds[0]) / bounds[2])))
    return creation('arange', (count,), _dtype(dtype), requires_grad, start=start, step=step)


def _like(op: str, other: Tensor, dtype: Any, requires_grad: bool, **attrs: Any) -> Tensor:
    """A GT tensor shaped as `other`, which may be a torch tensor (a DataLoader's batch,
    a `.data` value): `randn_like(x_batch)` draws from the session's generator."""
    own = other._type.dtype if isinstance(other, Tensor) else dtype_name(other.dtype)
    return creation(op, tuple(other.shape), _dtype(dtype, own), requires_grad, **attrs)


def zeros_like(other, dtype=None, requires_grad=False, **placement):
    _placement_only(placement)
    return _like('zeros', other, dtype, requires_grad)


def ones_like(other, dtype=None, requires_grad=False, **placement):
    _placement_only(placement)
    return _like('ones', other, dtype, requires_grad)


def randn_like(other, dtype=None, requires_grad=False, **placement):
    _placement_only(placement)
    return _drawn_like('normal_', other, dtype, requires_grad)


def rand_like(other, dtype=None, requires_grad=False, **placement):
    _placement_only(placement)
    return _drawn_like('uniform_', other, dtype, requires_grad)


def empty_laid_out_like(other: Tensor, dtype: Any = None) -> Tensor:
    """An uninitialized tensor laid out as torch lays `other` out, for draws that fill
    memory in order (dropout's mask, `randn_like`), so a transposed `other` gets torch's
    number at each position: on one worker, the worker tensor's own layout
    (`empty_like`); on several, where `other` may arrive gathered into a fresh layout,
    the strides the client knows (a view's; other tensors are contiguous)."""
    from gt.fallback import call

    options = {} if dtype is None else {'dtype': dtype}
    if other._client.single_worker:
        return call('torch.empty_like', (other,), options)
    return call('torch.empty_strided', (tuple(other.shape), other.stride()),
                {'dtype': other.dtype, **options})


def _drawn_like(fill: str, other: Any, dtype: Any, requires_grad: bool) -> Tensor:
    """torch's `randn_like`/`rand_like`: `empty_like(other)` filled in memory order. A
    contiguous `other` (or a torch tensor) is GT's own draw of the shape, the same
    numbers."""
    if not isinstance(other, Tensor) or other.is_contiguous():
        return _like('randn' if fill == 'normal_' else 'rand', other, dtype, requires_grad)
    from gt.autograd import no_grad
    from gt.fallback import call

    own = other._type.dtype
    with no_grad():
        result = call(f'Tensor.{fill}', (empty_laid_out_like(
            other, TORCH_DTYPES[_dtype(dtype, own)]),), {})
    return result.requires_grad_() if requires_grad else result


def full_like(other, fill_value, dtype=None, requires_grad=False, **placement):
    _placement_only(placement)
    return _like('full', other, dtype, requires_grad, value=fill_value)


def from_numpy(array: np.ndarray, requires_grad: bool = False) -> Tensor:
    """A tensor holding a copy of `array`, with its dtype (float64 stays float64)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f'from_numpy expects a numpy array, got {type(array).__name__}')
    return _from_data(array, dtype_name(array.dtype), requires_grad)


def _from_data(array: np.ndarray, dtype: str, requires_grad: bool) -> Tensor:
    """Send `array` along with the pending fragment; `dtype` is its GT dtype."""
    slot = connection.current().add_data(array, dtype)
    result = apply('from_numpy', [], shape=list(array.shape), dtype=dtype, slot=slot)
    if requires_grad:
        result.requires_grad_()
    return result


def tensor(data: Any, dtype: Any = None, requires_grad: bool = False,
           **placement: Any) -> Tensor:
    """A tensor from nested lists, numbers, numpy arrays or torch tensors, as torch.tensor;
    GT tensors among them (`gt.tensor([loss_a, loss_b])`) are fetched, in one round trip,
    since torch.tensor copies values and infers the dtype from them. Python integers that
    require grad (no dtype given) make the default float dtype, where torch raises."""
    _placement_only(placement)
    if isinstance(data, Tensor):
        data = data.data
    elif isinstance(data, (list, tuple)):
        data = _with_values(data)
    wanted = None if dtype is None else TORCH_DTYPES[dtype_name(dtype)]
    if isinstance(data, torch.Tensor):
        source = data.detach().cpu()
    elif isinstance(data, np.ndarray):
        source = torch.tensor(np.asarray(data))
    else:
        # Numbers go straight to the dtype asked for, as torch.tensor takes them: by way of
        # float32, 0.1 would reach float64 as 0.10000000149011612.
        source = torch.tensor(data, dtype=wanted)
        if requires_grad and wanted is None and not source.is_floating_point() \
                and source.dtype != torch.bool:
            # `gt.tensor([1, 2, 3], requires_grad=True)`, the seeds' autograd example:
            # torch refuses integers that require grad, so no torch script says this.
            source = source.to(torch.get_default_dtype())
    if wanted is not None:
        source = source.to(wanted)
    if source.dtype == torch.bfloat16:  # numpy has no bfloat16: send the raw 16-bit words
        return _from_data(source.view(torch.uint16).numpy(), 'bfloat16', requires_grad)
    if source.dtype not in DTYPE_NAMES:
        raise TypeError(f'gt.tensor: the data has dtype {source.dtype}, which GT has not '
                        f'(GT has {", ".join(DTYPE_NAMES.values())})')
    return _from_data(source.numpy(), DTYPE_NAMES[source.dtype], requires_grad)


def _with_values(data: list | tuple) -> list | tuple:
    """`data` with each GT tensor in it replaced by its value."""
    found: list[Tensor] = []

    def collect(item: Any) -> None:
        if isinstance(item, Tensor):
            found.append(item)
        elif isinstance(item, (list, tuple)):
            for element in item:
                collect(element)

    collect(data)
    if not found:
        return data
    values = iter(connection.current().fetch([t._id for t in found]))

    def replace(item: Any) -> Any:
        if isinstance(item, Tensor):
            return next(values)
        if isinstance(item, (list, tuple)):
            return type(item)(replace(element) for element in item)
        return item

    return replace(data)


def asarray(obj: Any, *, dtype: Any = None, device: Any = None, copy: bool | None = None,
            requires_grad: bool = False) -> Tensor:
    """torch.asarray: `obj` as a tensor, a GT tensor itself unless `copy` (or a cast);
    other data is always copied (to the workers)."""
    made = as_tensor(obj, dtype)
    if copy and made is obj:
        made = obj.clone()
    return made.requires_grad_() if requires_grad else made


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """torch.as_tensor: a GT tensor is returned as it is (cast if `dtype` differs);
    anything else becomes one as `tensor` makes it. `device` is GT's to choose."""
    if isinstance(data, Tensor):
        return data if dtype is None or data.dtype == dtype else data.to(dtype)
    return tensor(data, dtype)


def get_rng_state() -> Tensor:
    """torch.get_rng_state(): where this session's random draws are, as a uint8 tensor
    (the workers' generator and this process's, which a DataLoader shuffles with; format
    in gt/ir/ops/random_state.py). `set_rng_state` puts both back."""
    client = tensor(torch.get_rng_state().numpy())
    return apply('rng_state', [client])


_TORCH_STATE_SHAPE = torch.get_rng_state().shape


def set_rng_state(new_state: Any) -> None:
    """torch.set_rng_state(state), for a state `get_rng_state` gave (a GT tensor, or the
    torch tensor a checkpoint saved it as): the next draws repeat those that followed it.
    Reading the client's part fetches the state (one round trip) when it is a GT tensor.
    torch's own state (`torch.get_rng_state()`, as a torch checkpoint holds it) sets both
    the workers' generator and this process's, as it set torch's one generator."""
    if isinstance(new_state, Tensor) and new_state.shape == _TORCH_STATE_SHAPE:
        new_state = torch.from_numpy(new_state.numpy())  # torch's, loaded by gt.load
    if isinstance(new_state, torch.Tensor) and new_state.shape == _TORCH_STATE_SHAPE:
        own = new_state.cpu().numpy().tobytes()
        new_state = torch.from_numpy(pack(own, own))
    state = as_tensor(new_state)
    apply('set_rng_state', [state])
    values = new_state if isinstance(new_state, torch.Tensor) else state._value()
    _, client = unpack(values.cpu().numpy())
    torch.set_rng_state(torch.frombuffer(bytearray(client), dtype=torch.uint8))
    data_loading.left_torch_generator()


def manual_seed(seed: int) -> torch.Generator:
    """Seed this client's random stream on every worker; same seed, same tensors. torch's
    own generator in this process is seeded too, as torch.manual_seed seeds it: a
    DataLoader shuffles with it, so the batches come in torch's order. Returns that
    generator, as torch does (`DataLoader(..., generator=torch.manual_seed(3))`)."""
    generator = torch.manual_seed(int(seed))
    data_loading.left_torch_generator()
    apply('manual_seed', [], seed=int(seed))
    return generator
