"""Which torch functions GT runs by name (the `torch_call` fallback), and how to find them.

A name is `torch.sin`, `Tensor.topk`, `torch.nn.functional.pad`, `torch.linalg.norm`,
`torch.special.erf` or `torch.fft.rfft`: a public function of a namespace that computes
on tensors. Functions that read or write files, load code, or change process-wide
settings are refused, and so is anything that is not a plain function (classes,
modules). The client checks a name when it records a call; the dispatcher checks it
again when it decodes one, and a worker only ever runs a name that passed.
"""

import inspect
import types
from typing import Any, Callable

import torch
import torch.nn.functional

NAMESPACES: dict[str, Any] = {
    'torch': torch,
    'Tensor': torch.Tensor,
    'torch.nn.functional': torch.nn.functional,
    'torch.linalg': torch.linalg,
    'torch.special': torch.special,
    'torch.fft': torch.fft,
}

# I/O, code loading, process-wide state, and values GT keeps to itself.
REFUSED = frozenset({
    'torch.load', 'torch.save', 'torch.from_file', 'torch.export',
    'torch.manual_seed', 'torch.seed', 'torch.initial_seed', 'torch.get_rng_state',
    'torch.cond', 'torch.vmap', 'torch.while_loop', 'torch.typename', 'torch.from_numpy',
    'torch.from_dlpack', 'torch.frombuffer', 'torch.asarray', 'torch.tensor', 'torch.as_tensor',
    'torch.use_deterministic_algorithms', 'torch.compiled_with_cxx11_abi', 'torch.sym_int',
    'torch.sym_float', 'torch.sym_max', 'torch.sym_min', 'torch.sym_not', 'torch.sym_ite',
    'torch.sym_sum', 'torch.sym_fresh_size', 'torch.get_default_dtype', 'torch.get_device',
    'torch.get_num_threads', 'torch.get_num_interop_threads', 'torch.import_ir_module',
    'torch.import_ir_module_from_buffer', 'torch.autocast',
    'Tensor.tolist', 'Tensor.numpy', 'Tensor.item', 'Tensor.data_ptr', 'Tensor.storage',
    'Tensor.untyped_storage', 'Tensor.backward', 'Tensor.register_hook',
    'Tensor.register_post_accumulate_grad_hook', 'Tensor.retain_grad', 'Tensor.requires_grad_',
    'Tensor.share_memory_', 'Tensor.cuda', 'Tensor.cpu', 'Tensor.to',
    'Tensor.record_stream', 'Tensor.apply_', 'Tensor.map_', 'Tensor.map2_', 'Tensor.set_',
    'Tensor.resize_', 'Tensor.resize_as_', 'Tensor.dim_order',
    'Tensor.storage_offset', 'Tensor.is_pinned', 'Tensor.is_shared', 'Tensor.get_device',
    'Tensor.module_load', 'Tensor.new', 'Tensor.type', 'Tensor.to_dense', 'Tensor.to_sparse',
})
# Private torch functions GT runs all the same: the gamma family's samplers and their
# implicit gradients, which torch.distributions calls (gt/distributions/worker_draws.py).
PRIVATE_ALLOWED = frozenset({'torch._standard_gamma', 'torch._sample_dirichlet',
                             'torch._standard_gamma_grad', 'torch._dirichlet_grad'})
REFUSED_PREFIXES = ('_', 'set_', 'is_inference', 'is_grad', 'is_anomaly', 'is_autocast',
                    'is_deterministic', 'is_warn', 'are_deterministic', 'get_', 'save',
                    'load', 'to_dlpack')
FUNCTION_TYPES = (types.BuiltinFunctionType, types.FunctionType, types.MethodDescriptorType,
                  types.WrapperDescriptorType, types.MethodWrapperType)

# Draws from the session's generator: run where the generator is in step, never merged.
RANDOM = frozenset({
    'torch.rand', 'torch.randn', 'torch.randint', 'torch.randperm', 'torch.normal',
    'torch.bernoulli', 'torch.multinomial', 'torch.poisson', 'torch.rand_like',
    'torch.randn_like', 'torch.randint_like', 'torch.dropout', 'torch.alpha_dropout',
    'torch.feature_dropout', 'torch.feature_alpha_dropout', 'torch.native_dropout',
    'torch.dropout_', 'torch.alpha_dropout_', 'torch.feature_dropout_',
    'torch.feature_alpha_dropout_', 'torch.rrelu', 'torch.rrelu_',
    'torch.binomial', 'torch._standard_gamma', 'torch._sample_dirichlet', 'Tensor.random_',
    'Tensor.uniform_', 'Tensor.normal_',
    'Tensor.bernoulli', 'Tensor.bernoulli_', 'Tensor.exponential_', 'Tensor.geometric_',
    'Tensor.cauchy_', 'Tensor.log_normal_', 'Tensor.multinomial',
    'torch.nn.functional.dropout', 'torch.nn.functional.dropout1d',
    'torch.nn.functional.dropout2d', 'torch.nn.functional.dropout3d',
    'torch.nn.functional.alpha_dropout', 'torch.nn.functional.feature_alpha_dropout',
    'torch.nn.functional.rrelu', 'torch.nn.functional.rrelu_',
    'torch.nn.functional.gumbel_softmax', 'torch.nn.functional.fractional_max_pool2d',
    'torch.nn.functional.fractional_max_pool3d',
    'torch.nn.functional.fractional_max_pool2d_with_indices',
    'torch.nn.functional.fractional_max_pool3d_with_indices',
})

# Those of RANDOM that draw nothing when given their random numbers: a call with them is
# a pure call, which differentiates (gt/nn/fractional_max_pool.py draws them first).
SAMPLES_GIVEN = frozenset({
    'torch.nn.functional.fractional_max_pool2d', 'torch.nn.functional.fractional_max_pool3d',
    'torch.nn.functional.fractional_max_pool2d_with_indices',
    'torch.nn.functional.fractional_max_pool3d_with_indices'})


def draws(name: str, kwargs: dict) -> bool:
    """Whether the call `name(..., **kwargs)` draws from the session's generator."""
    return name in RANDOM and not (
        name in SAMPLES_GIVEN and kwargs.get('_random_samples') is not None)


# Those of RANDOM that take `generator=`: they draw from the session's generator given
# so, the same numbers as torch's default generator in its state gives (checked), without
# lending it that global state (gt/ir/borrowed_generator.py).
TAKES_GENERATOR = frozenset({
    'torch.rand', 'torch.randn', 'torch.randint', 'torch.randperm', 'torch.normal',
    'torch.bernoulli', 'torch.multinomial', 'torch.poisson', 'torch.binomial',
    'torch._standard_gamma', 'torch._sample_dirichlet', 'torch.rand_like',
    'torch.randn_like', 'torch.randint_like', 'Tensor.random_', 'Tensor.uniform_',
    'Tensor.normal_', 'Tensor.bernoulli', 'Tensor.bernoulli_', 'Tensor.exponential_',
    'Tensor.geometric_', 'Tensor.cauchy_', 'Tensor.log_normal_', 'Tensor.multinomial'})

_resolved: dict[str, Callable] = {}


def resolve(name: str) -> Callable:
    """The function `name` names, or a ValueError saying why GT will not run it."""
    function = _resolved.get(name)
    if function is not None:
        return function
    if not isinstance(name, str):
        raise ValueError(f'torch_call: a function name must be a string, got {name!r}')
    namespace, _, attribute = name.rpartition('.')
    owner = NAMESPACES.get(namespace)
    if owner is None:
        raise ValueError(f'torch_call: {name!r} is not in a namespace GT runs '
                         f'({", ".join(NAMESPACES)})')
    dunder = attribute in ('__getitem__', '__setitem__') and namespace == 'Tensor'
    if name in REFUSED or (attribute.startswith(REFUSED_PREFIXES) and not dunder
                           and name not in PRIVATE_ALLOWED):
        raise ValueError(f'torch_call: GT does not run {name} (it does I/O, loads code, '
                         'changes process-wide settings, or has a GT form of its own)')
    function = getattr(owner, attribute, None)
    if function is None or not isinstance(function, FUNCTION_TYPES):
        raise ValueError(f'torch_call: {name} is not a torch function')
    _resolved[name] = function
    return function


def exists(name: str) -> bool:
    try:
        resolve(name)
    except ValueError:
        return False
    return True


def in_place(name: str) -> bool:
    """`Tensor.add_`, `torch.relu_`, `Tensor.__setitem__`: the call updates its first
    argument. GT runs it on a copy and rebinds the tensor to the copy."""
    attribute = name.rpartition('.')[2]
    return attribute == '__setitem__' or (attribute.endswith('_') and not attribute.endswith('__'))


# Functions that write into tensors they were given as a side effect, when a flag says so:
# torch's running statistics. On a worker that would change a value GT treats as
# immutable (which other tensors may share), so GT refuses them with those tensors given;
# gt.nn.functional.batch_norm is GT's own form. name: (running tensors as (name,
# position)), then the flag's name, position and default.
RUNNING_STATISTICS = {
    'torch.nn.functional.instance_norm': ((('running_mean', 1), ('running_var', 2)),
                                          ('use_input_stats', 5, True)),
    'torch.batch_norm': ((('running_mean', 3), ('running_var', 4)), ('training', 5, False)),
    'torch.instance_norm': ((('running_mean', 3), ('running_var', 4)),
                            ('use_input_stats', 5, False)),
    'torch.native_batch_norm': ((('running_mean', 3), ('running_var', 4)),
                                ('training', 5, False)),
}
_inplace_positions: dict[str, int | None] = {}


def inplace_position(name: str) -> int | None:
    """Where `name` takes `inplace=` positionally (`F.relu(x, True)`), or None if it
    has no such parameter: with it set, the call writes its result into its input."""
    if name not in _inplace_positions:
        try:
            parameters = list(inspect.signature(resolve(name)).parameters)
        except (TypeError, ValueError):  # a builtin without a signature
            parameters = []
        _inplace_positions[name] = parameters.index('inplace') if 'inplace' in parameters \
            else None
    return _inplace_positions[name]


def _argument(args: list, kwargs: dict, name: str, position: int, default: Any) -> Any:
    if name in kwargs:
        return kwargs[name]
    return args[position] if position < len(args) else default


def side_effects(name: str, args: list, kwargs: dict, is_tensor: Callable) -> list[str]:
    """The arguments the call would write into besides an in-place method's target:
    `input` under `inplace=True`, running statistics under their flag."""
    written = []
    position = inplace_position(name)
    if position is not None and _argument(args, kwargs, 'inplace', position, False):
        written.append('input')
    if name in RUNNING_STATISTICS:
        tensors, flag = RUNNING_STATISTICS[name]
        if _argument(args, kwargs, *flag):
            written += [tensor for tensor, at in tensors
                        if is_tensor(_argument(args, kwargs, tensor, at, None))]
    return written


def name_of(function: Any) -> str | None:
    """The name under which `function` (as `__torch_function__` receives it) is allowed."""
    return _names().get(function)


_by_function: dict[Any, str] = {}


def _names() -> dict[Any, str]:
    if not _by_function:
        for namespace, owner in NAMESPACES.items():
            for attribute in dir(owner):
                name = f'{namespace}.{attribute}'
                if exists(name):
                    _by_function.setdefault(getattr(owner, attribute), name)
        for attribute in ('__getitem__', '__setitem__'):
            _by_function[getattr(torch.Tensor, attribute)] = f'Tensor.{attribute}'
    return _by_function
