"""Static dispatch on a model's NamedTuple type inside Numba kernels: one generic kernel, many models.

A generic kernel (the Doeblin core, the TransMS skeleton) is written against named *operations*
(``move(model, state)``, ``propose_append(model, work, k)`` ...).  An operation is a Python
placeholder (:func:`numba_operation`) that Numba resolves, at compile time, from the type of its first
argument: a model plugs in by decorating a jittable function with :func:`implements`.  The generic
kernel is then compiled once per model type, with direct calls (no function pointers in the loop).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Callable, Iterable, cast

from numba import types
from numba.extending import overload

from ._jit import _DEFAULTS, jit

if TYPE_CHECKING:  # numba's stubs type an overload's jit_options as this TypedDict (it has no "cache" key)
    from numba.core.decorators import _JITOptions

#: The overloads' compile options: the project's, less ``cache`` (so uncached, see :func:`implements`).
_OVERLOAD_OPTIONS = cast("_JITOptions", {k: v for k, v in _DEFAULTS.items() if k != "cache"})


def numba_operation(name: str, doc: str) -> Callable:
    """A named operation for :func:`implements`: callable only inside Numba kernels (Python raises)."""

    def operation(*args):
        raise NotImplementedError(f"{name} is a Numba-only operation; implement it for a model with implements()")

    operation.__name__ = operation.__qualname__ = name
    operation.__doc__ = doc
    return operation


def implements(operation: Callable, model_class: type, operations: Iterable[Callable]) -> Callable:
    """Decorator: the jitted function becomes ``operation`` for models of NamedTuple class ``model_class``.

    Parameters
    ----------
    operation : callable
        One of ``operations`` (made by :func:`numba_operation`).
    model_class : type
        A NamedTuple class; the implementation is chosen when the first argument has this type.
    operations : iterable of callables
        The operations of the generic kernel (for the check of ``operation``).

    Returns
    -------
    callable
        A decorator returning the function compiled with the project's jit helper, so it can also be
        called directly from other kernels.  It is cached on disk unless defined outside a file (a REPL
        or exec'd code, which Numba's cache cannot locate).

    Raises
    ------
    ValueError
        ``operation`` is not one of ``operations`` (their names are listed).
    TypeError
        ``model_class`` is not a NamedTuple class.
    """
    operations = tuple(operations)
    if not any(operation is op for op in operations):
        raise ValueError(f"operation must be one of {sorted(op.__name__ for op in operations)}, got {operation!r}")
    if not (isinstance(model_class, type) and issubclass(model_class, tuple) and hasattr(model_class, "_fields")):
        raise TypeError(f"model_class must be a NamedTuple class, got {model_class!r}")

    def decorator(fn: Callable) -> Callable:
        kernel = jit(fn, cache=os.path.isfile(fn.__code__.co_filename))

        # the overload's one-line body is not cached on its own: its cache index (in this file's cache) would
        # hold every model type of every caller, and one model defined in a module that another process
        # cannot import (a test module) would make the whole index fail to load there
        @overload(operation, jit_options=_OVERLOAD_OPTIONS)
        def _impl(model, *args):
            if isinstance(model, (types.NamedTuple, types.NamedUniTuple)) and model.instance_class is model_class:
                return lambda model, *args: kernel(model, *args)
            return None

        return kernel

    return decorator
