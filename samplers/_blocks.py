"""Run a ``nogil`` Numba kernel over contiguous blocks of an index range, one block per Numba thread (private).

The project does not compile ``prange`` loops (:func:`trf.transms_core._run_chains` says why: parfor lowering of
nested bundles fails on a cold cache, and ``cache=True`` may then load the serial build silently).  An elementwise
pass over millions of entries -- AugSA's lambda step, the SMC bundle's successor weights -- instead runs its serial
kernel on blocks in threads (the kernels release the GIL).  Each block writes only its own entries, so the result
is the serial one whatever the number of threads.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Callable, TypeVar

import numba
import numpy as np

MIN_BLOCK = 1 << 16
"""Entries below which a pass stays on the calling thread (a thread's start costs more than the work)."""

T = TypeVar("T")


def block_edges(n: int, threads: int | None = None, starts: np.ndarray | None = None) -> np.ndarray:
    """Edges ``e[0] = 0 < ... < e[-1]`` of at most ``threads`` (default ``numba.get_num_threads()``) blocks of
    ``range(n)`` with about equal work, at least :data:`MIN_BLOCK` entries each.

    With ``starts`` (``n + 1`` non-decreasing offsets, e.g. the start of each context's list) the blocks split the
    ``n`` items so that their entries ``starts[e[b]]:starts[e[b + 1]]`` are about equal instead."""
    total = int(n if starts is None else starts[-1] - starts[0])
    blocks = max(1, min(threads or numba.get_num_threads(), total // MIN_BLOCK))
    if blocks == 1 or n <= 1:
        return np.array([0, n], dtype=np.int64)
    if starts is None:
        edges = np.linspace(0, n, blocks + 1).astype(np.int64)
    else:
        edges = np.searchsorted(starts, np.linspace(starts[0], starts[-1], blocks + 1)).astype(np.int64)
        edges[0], edges[-1] = 0, n
    return np.unique(edges)


def run_blocks(fn: Callable[[int, int], T], edges: np.ndarray) -> list[T]:
    """``[fn(e[b], e[b + 1]) for each block]``, the blocks on threads when there are several (results in order)."""
    spans = [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:])]
    if len(spans) == 1:
        return [fn(*spans[0])]
    with ThreadPoolExecutor(max_workers=len(spans)) as pool:
        return list(pool.map(lambda span: fn(*span), spans))
