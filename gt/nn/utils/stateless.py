"""`functional_call(module, {name: tensor}, args)`: run a module with some of its
parameters and buffers replaced for one call (MAML's fast weights, an ensemble's
stacked weights), as torch.func.functional_call does. The given tensors keep their
history, so a gradient reaches them, and the module's own are put back after."""

from typing import Any

from gt.nn.module import Module


def functional_call(module: Module, parameters_and_buffers: Any, args: Any = None,
                    kwargs: dict | None = None, *, tie_weights: bool = True,
                    strict: bool = False) -> Any:
    replacements = _merged(parameters_and_buffers)
    entries = dict(module.named_parameters(remove_duplicate=False))
    entries.update(module.named_buffers(remove_duplicate=False))
    if tie_weights:  # a tensor registered under two names is replaced under both
        by_original = {id(entries[name]): value for name, value in replacements.items()
                       if name in entries}
        for name, original in entries.items():
            if name not in replacements and id(original) in by_original:
                replacements[name] = by_original[id(original)]
    if strict:
        missing = sorted(set(entries) - set(replacements))
        unexpected = sorted(set(replacements) - set(entries))
        if missing or unexpected:
            raise RuntimeError(f'Error(s) in reparametrizing for {type(module).__name__}: '
                               f'missing keys {missing}, unexpected keys {unexpected}')
    saved = [_swap(module, name, value) for name, value in replacements.items()]
    try:
        if args is None:
            args = ()
        elif not isinstance(args, tuple):
            args = (args,)
        return module(*args, **(kwargs or {}))
    finally:
        for owner, registry, leaf, original in reversed(saved):
            owner.__dict__[registry][leaf] = original


def _merged(parameters_and_buffers: Any) -> dict:
    dicts = parameters_and_buffers if isinstance(parameters_and_buffers, (list, tuple)) \
        else [parameters_and_buffers]
    merged: dict = {}
    for entries in dicts:
        for name in entries:
            if name in merged:
                raise ValueError(f'{name} appeared in multiple dictionaries; behavior of '
                                 'functional call is ambiguous')
            merged[name] = entries[name]
    return merged


def _swap(module: Module, name: str, value: Any) -> tuple:
    """Put `value` where `name` is registered; what was there, to put back."""
    *path, leaf = name.split('.')
    owner = module.get_submodule('.'.join(path)) if path else module
    for registry in ('_parameters', '_buffers'):
        entries = owner.__dict__[registry]
        if leaf in entries:
            original = entries[leaf]
            entries[leaf] = value
            return owner, registry, leaf, original
    raise AttributeError(f'{type(owner).__name__} has no parameter or buffer {leaf!r} '
                         f'(from {name!r})')
