"""Run a ``nogil`` Numba kernel over contiguous blocks of an index range, one block per Numba thread (private).

The project does not compile ``prange`` loops (:func:`trf.transms_core._run_chains` says why: parfor lowering of
nested bundles fails on a cold cache, and ``cache=True`` may then load the serial build silently).  An elementwise
pass over millions of entries -- AugSA's lambda step, the SMC bundle's successor weights -- instead runs its serial
kernel on blocks in threads (the kernels release the GIL).  Each block writes only its own entries, so the result
is the serial one whatever the number of threads.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Callable, Iterable, TypeVar

import numba
import numpy as np

MIN_BLOCK = 1 << 16
"""Entries below which an elementwise pass stays on the calling thread (handing two blocks to the kept threads
costs about 70 us on the project's 2-core machines: some 30,000 entries of a lambda step)."""

T = TypeVar("T")
X = TypeVar("X")

_POOLS: dict[tuple[int, int], ThreadPoolExecutor] = {}
"""The main thread's pools, by (process id, workers): kept for the process, since starting a thread cost about a
millisecond on the project's 2-core machines and a training iteration starts about ten (the SMC runs, the bundle's
passes, the lambda step)."""


def thread_map(fn: Callable[[X], T], items: Iterable[X], workers: int,
               on_interrupt: Callable[[], None] | None = None) -> list[T]:
    """``[fn(x) for x in items]`` on ``workers`` threads, results in order.

    From the main thread the threads are a pool kept for the process (:data:`_POOLS`; a forked child makes its own);
    from any other thread a pool of its own, closed after, so that no task ever waits on the pool that runs it.  When
    a task raises or the caller is interrupted (Ctrl-C), the tasks not yet started are cancelled, ``on_interrupt`` is
    called (a kernel's stop flag: the running tasks end at their next check) and the running ones are waited for
    before the exception goes on."""
    if threading.current_thread() is not threading.main_thread():
        with ThreadPoolExecutor(max_workers=workers) as own:
            return _map_in(own, fn, items, on_interrupt)
    key = (os.getpid(), workers)
    pool = _POOLS.get(key)
    if pool is None:
        pool = _POOLS[key] = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="mcsa-blocks")
    return _map_in(pool, fn, items, on_interrupt)


def _map_in(pool: ThreadPoolExecutor, fn: Callable[[X], T], items: Iterable[X],
            on_interrupt: Callable[[], None] | None) -> list[T]:
    futures = [pool.submit(fn, x) for x in items]
    try:
        return [f.result() for f in futures]
    except BaseException:
        for f in futures:
            f.cancel()
        if on_interrupt is not None:
            on_interrupt()
        wait(futures)
        raise


def block_edges(n: int, threads: int | None = None, starts: np.ndarray | None = None,
                min_block: int | None = None) -> np.ndarray:
    """Edges ``e[0] = 0 < ... < e[-1]`` of at most ``threads`` (default ``numba.get_num_threads()``) blocks of
    ``range(n)`` with about equal work, at least ``min_block`` entries each (default :data:`MIN_BLOCK`; a pass whose
    entries cost more, such as a sentence's words to score, takes smaller blocks).

    With ``starts`` (``n + 1`` non-decreasing offsets, e.g. the start of each context's list) the blocks split the
    ``n`` items so that their entries ``starts[e[b]]:starts[e[b + 1]]`` are about equal instead."""
    total = int(n if starts is None else starts[-1] - starts[0])
    blocks = max(1, min(threads or numba.get_num_threads(), total // (min_block or MIN_BLOCK)))
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
    return thread_map(lambda span: fn(*span), spans, len(spans))
