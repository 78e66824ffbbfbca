"""Argument validation shared by every public wrapper.

Each check raises ``ValueError``/``TypeError`` naming the argument and what was expected, so bad
input never turns into a silent NaN inside a kernel.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np


def as_float_array(x: Any, name: str, *, ndim: int | None = None, finite: bool = True) -> np.ndarray:
    """Convert to a float64 array, checking dimensionality and (by default) finiteness."""
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be array-like of numbers: {exc}") from None
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
    if finite and not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))
        raise ValueError(f"{name} must be finite; found non-finite value at index {tuple(bad[0])}")
    return arr


def as_int_array(x: Any, name: str, *, ndim: int | None = None, low: int | None = None,
                 high: int | None = None) -> np.ndarray:
    """Convert to an int64 array, checking dimensionality and the range [low, high)."""
    arr = np.asarray(x)
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        if np.issubdtype(arr.dtype, np.floating) and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
            arr = arr.astype(np.int64)
        else:
            raise TypeError(f"{name} must hold integers, got dtype {arr.dtype}")
    arr = arr.astype(np.int64)
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
    if low is not None and arr.size and arr.min() < low:
        raise ValueError(f"{name} must be >= {low}, got minimum {arr.min()}")
    if high is not None and arr.size and arr.max() >= high:
        raise ValueError(f"{name} must be < {high}, got maximum {arr.max()}")
    return arr


def check_int(x: Any, name: str, *, low: int | None = None, high: int | None = None) -> int:
    """Check an integer scalar lies in [low, high] (inclusive bounds) and return it as int."""
    if isinstance(x, bool) or not isinstance(x, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {x!r}")
    x = int(x)
    if low is not None and x < low:
        raise ValueError(f"{name} must be >= {low}, got {x}")
    if high is not None and x > high:
        raise ValueError(f"{name} must be <= {high}, got {x}")
    return x


def check_float(x: Any, name: str, *, low: float | None = None, high: float | None = None,
                low_open: bool = False, high_open: bool = False) -> float:
    """Check a finite real scalar lies in the given interval and return it as float."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {x!r}")
    x = float(x)
    if not np.isfinite(x):
        raise ValueError(f"{name} must be finite, got {x}")
    lo_bad = low is not None and (x <= low if low_open else x < low)
    hi_bad = high is not None and (x >= high if high_open else x > high)
    if lo_bad or hi_bad:
        lb = "(" if low_open else "["
        hb = ")" if high_open else "]"
        raise ValueError(f"{name} must lie in {lb}{low}, {high}{hb}, got {x}")
    return x


def check_distribution(p: Any, name: str, *, atol: float = 1e-8, axis: int = -1) -> np.ndarray:
    """Check non-negative entries summing to 1 (within ``atol``) along ``axis``."""
    arr = as_float_array(p, name)
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    if np.any(arr < 0):
        raise ValueError(f"{name} must be non-negative; found {arr.min()}")
    sums = arr.sum(axis=axis)
    if not np.allclose(sums, 1.0, atol=atol, rtol=0):
        worst = np.max(np.abs(sums - 1.0))
        raise ValueError(f"{name} must sum to 1 along axis {axis} (within {atol}); off by up to {worst:.3g}")
    return arr
