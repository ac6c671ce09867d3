"""numpy's argument names beside torch's, as the seeds' API takes them: `axis` for `dim`
and `keepdims` for `keepdim` (torch itself accepts both in most functions)."""

import functools
from typing import Any, Callable


def numpy_names(function: Callable) -> Callable:
    @functools.wraps(function)
    def accepting(*args: Any, **kwargs: Any) -> Any:
        if 'axis' in kwargs:
            if 'dim' in kwargs:
                raise TypeError(f'{function.__name__}() got both dim and axis')
            kwargs['dim'] = kwargs.pop('axis')
        if 'keepdims' in kwargs:
            kwargs['keepdim'] = kwargs.pop('keepdims')
        return function(*args, **kwargs)
    return accepting
