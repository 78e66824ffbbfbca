"""Peak-memory meters for one estimator run.

A meter is a context manager; after the ``with`` block, ``peak_bytes`` holds what it measured and
``kind`` says what that is.  The default, :class:`TracemallocMeter`, reports the peak of Python
allocations traced by :mod:`tracemalloc` during the run — this includes NumPy array buffers but not
memory that Numba kernels or torch allocate outside Python's allocator.  Torch estimators use the
meter in :mod:`rdp.memory` (autograd saved-tensor bytes plus outputs on CPU, the CUDA allocator's
peak on a GPU).
"""

from __future__ import annotations

import tracemalloc


class MemoryMeter:
    """Base meter: measures nothing (peak_bytes = 0)."""

    kind = "none"

    def __init__(self) -> None:
        self.peak_bytes = 0

    def __enter__(self) -> "MemoryMeter":
        return self

    def __exit__(self, *exc) -> None:
        return None


class TracemallocMeter(MemoryMeter):
    """Peak bytes of Python/NumPy allocations during the block, via :mod:`tracemalloc`."""

    kind = "tracemalloc"

    def __enter__(self) -> "TracemallocMeter":
        self._was_tracing = tracemalloc.is_tracing()
        if not self._was_tracing:
            tracemalloc.start()
        tracemalloc.reset_peak()
        self._base = tracemalloc.get_traced_memory()[0]
        return self

    def __exit__(self, *exc) -> None:
        _, peak = tracemalloc.get_traced_memory()
        self.peak_bytes = max(0, int(peak - self._base))
        if not self._was_tracing:
            tracemalloc.stop()
