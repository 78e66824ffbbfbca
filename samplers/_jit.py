"""The project's one jit helper (numba-stats style).

Every Numba kernel in mcsa is compiled through :func:`jit` so caching and the error model are the
same everywhere: ``cache=True`` (point ``NUMBA_CACHE_DIR`` at a scratch folder in CI) and
``error_model="numpy"`` (division by zero gives inf/nan like NumPy instead of raising, so kernels
never raise for user errors; wrappers validate first).
"""

from __future__ import annotations

from typing import Any, Callable

import numba

_DEFAULTS: dict[str, Any] = {"cache": True, "error_model": "numpy", "nogil": True}


def jit(func: Callable | None = None, **options: Any):
    """``numba.njit`` with the project defaults; usable as ``@jit`` or ``@jit(parallel=True)``."""
    opts = {**_DEFAULTS, **options}
    if func is None:
        return lambda f: numba.njit(**opts)(f)
    return numba.njit(**opts)(func)
