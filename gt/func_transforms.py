"""torch.func's function transforms for GT: `grad`, `grad_and_value`, `vjp`, `jvp`,
`jacrev`, `jacfwd`, `hessian`, `vmap` and `stack_module_state`.

torch builds them into its dispatcher; GT composes them of its own tape. A transform
differentiates with respect to a fresh alias of each input (a view that keeps any outer
transform's history, so `grad(grad(f))` and `vmap(grad(f))` nest), with `create_graph`
when an outer level will differentiate again: when an input requires grad, or when the
function's results reach a tensor it closes over that does (a model's parameters in a
PINN's `vmap(hessian(lambda x: net(x)))`, whose residual trains the net). Arguments
and results may be pytrees (a dict of parameters, as `functional_call` takes). `vmap`
runs the function once per index of the mapped dimension and stacks the results: the
same numbers as torch's batching rules, at one call per sample (recorded lazily, so
still one program); random draws inside it are each sample's own, as
`randomness='different'` would have them, but not torch's values. `jacfwd` and the
forward half of `hessian` give the same numbers the reverse way, as GT has no
forward-mode AD.
"""

from typing import Any, Callable

from torch.utils._pytree import tree_flatten, tree_unflatten

from gt import autograd
from gt.autograd_functional import jacobian_blocks
from gt.creation import zeros_like
from gt.functional import stack
from gt.grad_mode import enable_grad
from gt.tensor import Tensor

__all__ = ['grad', 'grad_and_value', 'vjp', 'jvp', 'jacrev', 'jacfwd', 'hessian', 'vmap',
           'stack_module_state']


def _lifted(tree: Any) -> tuple[Any, list, bool]:
    """`tree` with each tensor replaced by an alias to differentiate against; the
    aliases; whether an outer level already differentiates one of them."""
    leaves, spec = tree_flatten(tree)
    nested = any(isinstance(leaf, Tensor) and leaf.requires_grad for leaf in leaves)
    lifted = [(leaf.view_as(leaf) if leaf.requires_grad else leaf.detach().requires_grad_())
              if isinstance(leaf, Tensor) else leaf for leaf in leaves]
    return tree_unflatten(lifted, spec), [leaf for leaf in lifted if isinstance(leaf, Tensor)], \
        nested


def _reaches_outer(results: Any, aliases: list) -> bool:
    """Whether `results` depend on a tensor that requires grad other than the transform's
    `aliases`: one the function closes over, which an outer backward differentiates."""
    own = {id(alias) for alias in aliases}
    tensors = [leaf for leaf in tree_flatten(results)[0] if isinstance(leaf, Tensor)]
    if any(t.grad_fn is None and t.requires_grad and id(t) not in own for t in tensors):
        return True
    nodes = autograd._reachable([t.grad_fn for t in tensors if t.grad_fn is not None])
    return any(tensor.grad_fn is None and tensor.requires_grad and id(tensor) not in own
               for node in nodes for tensor in node.inputs)


def _argnums(argnums: Any, count: int) -> tuple[int, ...]:
    numbers = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not numbers:
        raise RuntimeError('argnums must be non-empty')
    for number in numbers:
        if not isinstance(number, int) or not -count <= number < count:
            raise RuntimeError(f'Got argnums={argnums} but only {count} positional inputs')
    return tuple(number % count for number in numbers)


def _lift_args(args: tuple, argnums: Any) -> tuple[list, list, list, bool]:
    """The arguments with those at `argnums` lifted; per lifted argument its spec and
    aliases; whether any was already differentiated by an outer level."""
    args, parts, nested = list(args), [], False
    for number in _argnums(argnums, len(args)):
        lifted, leaves, outer = _lifted(args[number])
        args[number] = lifted
        parts.append((tree_flatten(lifted)[1], leaves))
        nested = nested or outer
    return args, parts, nested


def _gradients(outputs: list, inputs: list, cotangents: list | None, create_graph: bool) -> list:
    wanted = [(out, cot) for out, cot in zip(outputs, cotangents or [None] * len(outputs))
              if out.requires_grad]
    found = [None] * len(inputs)
    if wanted and inputs:
        found = autograd.grad([out for out, _ in wanted], inputs,
                              [cot for _, cot in wanted] if cotangents else None,
                              retain_graph=True, create_graph=create_graph, allow_unused=True)
    return [zeros_like(item) if value is None else value for value, item in zip(found, inputs)]


def _detached(tree: Any, keep: bool) -> Any:
    if keep:
        return tree
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([leaf.detach() if isinstance(leaf, Tensor) else leaf
                           for leaf in leaves], spec)


def _rebuilt(parts: list, values: list, argnums: Any) -> Any:
    """Per lifted argument, `values` (one per alias, in order) in that argument's shape."""
    results, start = [], 0
    for spec, leaves in parts:
        chunk = values[start:start + len(leaves)]
        start += len(leaves)
        results.append(tree_unflatten(chunk, spec))
    return results[0] if isinstance(argnums, int) else tuple(results)


def grad_and_value(func: Callable, argnums: Any = 0, has_aux: bool = False) -> Callable:
    """A function returning (the gradient of `func`'s scalar output with respect to the
    arguments at `argnums`, the output); with `has_aux`, `func` returns (output, aux)
    and the second item is (output, aux)."""
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with enable_grad():
            args, parts, nested = _lift_args(args, argnums)
            result = func(*args, **kwargs)
            output, aux = _split_aux(result, has_aux, 'grad_and_value(f)(*args)')
            if not isinstance(output, Tensor):
                raise RuntimeError(f'grad_and_value(f)(*args): Expected f(*args) to return a '
                                   f'Tensor, got {type(output)}')
            if output.ndim != 0:
                raise RuntimeError(f'grad_and_value(f)(*args): Expected f(*args) to return a '
                                   f'scalar Tensor, got tensor with {output.ndim} dims. Maybe '
                                   'you wanted to use the vjp or jacrev APIs instead?')
            inputs = [leaf for _, leaves in parts for leaf in leaves]
            nested = nested or _reaches_outer((output, aux), inputs)
            grads = _gradients([output], inputs, None, nested)
        gradient = _detached(_rebuilt(parts, grads, argnums), nested)
        value = _detached(output, nested)
        return gradient, ((value, _detached(aux, nested)) if has_aux else value)
    return wrapper


def grad(func: Callable, argnums: Any = 0, has_aux: bool = False) -> Callable:
    """A function returning the gradient of `func`'s scalar output with respect to the
    arguments at `argnums` (with `has_aux`: the gradient and the aux)."""
    transformed = grad_and_value(func, argnums, has_aux)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        gradient, value = transformed(*args, **kwargs)
        return (gradient, value[1]) if has_aux else gradient
    return wrapper


def _split_aux(result: Any, has_aux: bool, name: str) -> tuple[Any, Any]:
    if not has_aux:
        return result, None
    if not (isinstance(result, tuple) and len(result) == 2):
        raise RuntimeError(f'{name}: output of function f should be a tuple: (output, aux) '
                           'if has_aux is True')
    return result


def vjp(func: Callable, *primals: Any, has_aux: bool = False) -> tuple:
    """`func(*primals)` and a function of cotangents (the output's shape) giving the
    vector-Jacobian products, one per primal; with `has_aux`, the aux after them."""
    with enable_grad():
        lifted, leaves, nested = _lifted(primals)
        result = func(*lifted)
    output, aux = _split_aux(result, has_aux, 'vjp(f, *primals)')
    nested = nested or _reaches_outer(result, leaves)
    out_leaves, out_spec = tree_flatten(output)

    def vjp_fn(cotangents: Any) -> tuple:
        cot_leaves, cot_spec = tree_flatten(cotangents)
        if cot_spec != out_spec:
            raise RuntimeError('Expected pytree structure of cotangents to be the same as '
                               f'pytree structure of outputs to the function. cotangents: '
                               f'{cot_spec}, primal output: {out_spec}')
        with enable_grad():
            grads = _gradients(out_leaves, leaves, cot_leaves, nested)
        return _detached(tree_unflatten(_replaced(primals, grads), tree_flatten(primals)[1]),
                         nested)

    output = _detached(output, nested)
    return (output, vjp_fn, _detached(aux, nested)) if has_aux else (output, vjp_fn)


def _replaced(tree: Any, tensors: list) -> list:
    """The leaves of `tree`, its tensors replaced in order by `tensors`."""
    values = iter(tensors)
    return [next(values) if isinstance(leaf, Tensor) else leaf for leaf in tree_flatten(tree)[0]]


def jvp(func: Callable, primals: Any, tangents: Any, *, strict: bool = False,
        has_aux: bool = False) -> tuple:
    """`func(*primals)` and the Jacobian-vector product with `tangents`, by the
    double-backward trick (GT has no forward-mode AD; the numbers are the same)."""
    if not isinstance(primals, tuple) or not isinstance(tangents, tuple):
        raise RuntimeError('jvp(f, primals, tangents): Expected primals and tangents to be '
                           'tuples')
    with enable_grad():
        lifted, leaves, nested = _lifted(primals)
        result = func(*lifted)
        output, aux = _split_aux(result, has_aux, 'jvp(f, primals, tangents)')
        nested = nested or _reaches_outer(result, leaves)
        out_leaves, out_spec = tree_flatten(output)
        dummies = [zeros_like(out).requires_grad_() for out in out_leaves]
        pulled = _gradients(out_leaves, leaves, dummies, True)
        tangent_leaves = [leaf for leaf in tree_flatten(tangents)[0]]
        pushed = _gradients(pulled, dummies, tangent_leaves, nested)
    results = (_detached(output, nested), _detached(tree_unflatten(pushed, out_spec), nested))
    return (*results, _detached(aux, nested)) if has_aux else results


def jacrev(func: Callable, argnums: Any = 0, *, has_aux: bool = False,
           chunk_size: int | None = None, _preallocate_and_copy: bool = False) -> Callable:
    """A function returning the Jacobian of `func` with respect to the arguments at
    `argnums`: for each output tensor, shape output.shape + argument.shape, in the
    arguments' and outputs' structures; one backward pass per output element."""
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with enable_grad():
            args, parts, nested = _lift_args(args, argnums)
            result = func(*args, **kwargs)
            output, aux = _split_aux(result, has_aux, 'jacrev(f, ...)(*args)')
            out_leaves, out_spec = tree_flatten(output)
            inputs = [leaf for _, leaves in parts for leaf in leaves]
            nested = nested or _reaches_outer(result, inputs)
            jacobians = []
            for out in out_leaves:
                blocks = jacobian_blocks(out, inputs, lambda picked: _gradients(
                    [picked], inputs, None, nested))
                jacobians.append(_rebuilt(parts, blocks, argnums))
        jacobian = _detached(tree_unflatten(jacobians, out_spec), nested)
        return (jacobian, _detached(aux, nested)) if has_aux else jacobian
    return wrapper


def jacfwd(func: Callable, argnums: Any = 0, has_aux: bool = False, *,
           randomness: str = 'error') -> Callable:
    """`jacrev`'s numbers: GT computes the Jacobian the reverse way."""
    return jacrev(func, argnums, has_aux=has_aux)


def hessian(func: Callable, argnums: Any = 0) -> Callable:
    """A function returning the Hessian of a scalar `func`: the Jacobian of its gradient."""
    return jacfwd(jacrev(func, argnums), argnums)


def vmap(func: Callable, in_dims: Any = 0, out_dims: Any = 0, randomness: str = 'error', *,
         chunk_size: int | None = None) -> Callable:
    """`func` mapped over dimension `in_dims` of its arguments (None: not mapped; a
    tuple: per argument; nested to match an argument's structure), its results stacked
    along `out_dims`."""
    if randomness not in ('error', 'different', 'same'):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not isinstance(in_dims, (int, tuple)):
            raise ValueError(f'vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>): expected '
                             '`in_dims` to be int or a (potentially nested) tuple matching the '
                             f'structure of inputs, got: {type(in_dims)}.')
        leaves, spec = tree_flatten(args)
        dims = _leaf_dims(in_dims, args)
        size = _batch_size(leaves, dims, func)
        results = []
        for index in range(size):
            sliced = [leaf.select(dim, index) if dim is not None else leaf
                      for leaf, dim in zip(leaves, dims)]
            results.append(func(*tree_unflatten(sliced, spec), **kwargs))
        out_leaves = [tree_flatten(result)[0] for result in results]
        out_spec = tree_flatten(results[0])[1]
        targets = _leaf_dims(out_dims, results[0], outputs=True)
        stacked = []
        for position, dim in enumerate(targets):
            column = [leaves_of_one[position] for leaves_of_one in out_leaves]
            if not all(isinstance(value, Tensor) for value in column):
                raise ValueError(f'vmap({_name(func)}, ...): `{_name(func)}` must only return '
                                 f'Tensors, got type {type(column[0])}. Did you mean to set '
                                 'out_dims= to None for output?')
            stacked.append(column[0] if dim is None else stack(column, dim))
        return tree_unflatten(stacked, out_spec)
    return wrapper


def _name(func: Callable) -> str:
    return getattr(func, '__name__', repr(func))


def _leaf_dims(dims: Any, tree: Any, outputs: bool = False) -> list:
    """One dimension (or None) per leaf of `tree`, from `dims`: one for all, or a
    structure matching a prefix of the tree's."""
    leaves, _ = tree_flatten(tree)
    if dims is None or isinstance(dims, int):
        return [dims] * len(leaves)
    if not outputs and isinstance(tree, tuple) and isinstance(dims, (tuple, list)) \
            and len(dims) != len(tree):
        raise ValueError(f'vmap(f, in_dims={dims}, ...)(<inputs>): in_dims is not compatible '
                         f'with the structure of `inputs`. in_dims has structure with '
                         f'{len(dims)} entries but inputs has {len(tree)}.')
    if isinstance(dims, (tuple, list)) and isinstance(tree, (tuple, list)):
        return [dim for part, sub in zip(tree, dims) for dim in _leaf_dims(sub, part, outputs)]
    if isinstance(dims, dict) and isinstance(tree, dict):
        return [dim for key in tree for dim in _leaf_dims(dims[key], tree[key], outputs)]
    raise ValueError(f'vmap: dims {dims!r} do not match the structure of {type(tree).__name__}')


def _batch_size(leaves: list, dims: list, func: Callable) -> int:
    sizes = []
    for index, (leaf, dim) in enumerate(zip(leaves, dims)):
        if dim is None:
            continue
        if not isinstance(leaf, Tensor):
            raise ValueError(f'vmap({_name(func)}, in_dims=..., ...)(<inputs>): Got in_dim='
                             f'{dim} for an input but the input is of type {type(leaf)}. We '
                             'cannot vmap over non-Tensor arguments, please use None as the '
                             'respective in_dim')
        if not -leaf.ndim <= dim < leaf.ndim:
            raise ValueError(f'vmap({_name(func)}, in_dims=..., ...)(<inputs>): Got in_dim='
                             f'{dim} for some input, but that input is a Tensor of '
                             f'dimensionality {leaf.ndim} so expected in_dim to satisfy '
                             f'-{leaf.ndim} <= in_dim < {leaf.ndim}.')
        sizes.append(leaf.shape[dim])
    if not sizes:
        raise ValueError('vmap: Expected at least one Tensor to vmap over')
    if len(set(sizes)) != 1:
        raise ValueError(f'vmap: Expected all tensors to have the same size in the mapped '
                         f'dimension, got sizes {sizes} for the mapped dimension')
    return sizes[0]


def stack_module_state(models: Any) -> tuple[dict, dict]:
    """The parameters and buffers of same-shaped `models`, each name's stacked along a
    new first dimension: new leaves (requiring grad as the models' do), for `vmap`
    over `functional_call` (model ensembling)."""
    models = list(models)
    if not models:
        raise RuntimeError('stack_module_state: Expected at least one model, got 0.')
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError('stack_module_state: Expected all models to have the same '
                           'training/eval mode.')
    reference = type(models[0])
    if not all(type(m) is reference for m in models):
        raise RuntimeError('stack_module_state: Expected all models to be of the same class.')

    def stacked(named: Callable) -> dict:
        entries = [dict(named(m)) for m in models]
        return {name: stack([entry[name] for entry in entries]).detach()
                .requires_grad_(entries[0][name].requires_grad) for name in entries[0]}

    return (stacked(lambda m: m.named_parameters()), stacked(lambda m: m.named_buffers()))
