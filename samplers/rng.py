"""One way to take randomness (scientific-Python SPEC 7).

Public functions accept ``seed``/``rng`` as a ``np.random.Generator``, an int or None.  Numba
kernels receive a plain integer seed (drawn here) and seed Numba's generator inside the kernel;
parallel chains get child seeds spawned from a ``SeedSequence``.
"""

from __future__ import annotations

import numbers

import numpy as np

SeedLike = "int | np.random.Generator | np.random.SeedSequence | None"

_MAX_KERNEL_SEED = 2**31 - 1


def as_generator(seed: int | np.random.Generator | np.random.SeedSequence | None) -> np.random.Generator:
    """Resolve a SPEC-7 seed argument to a ``np.random.Generator``.

    Raises
    ------
    TypeError
        If ``seed`` is not an int, Generator, SeedSequence or None.
    """
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None or isinstance(seed, np.random.SeedSequence):
        return np.random.default_rng(seed)
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
        if seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed}")
        return np.random.default_rng(int(seed))
    raise TypeError(f"seed must be an int, np.random.Generator, SeedSequence or None, got {type(seed).__name__}")


def kernel_seed(seed: int | np.random.Generator | np.random.SeedSequence | None) -> int:
    """An integer seed for a Numba kernel, drawn from (or equal to) the given seed argument."""
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool) and 0 <= seed <= _MAX_KERNEL_SEED:
        return int(seed)
    return int(as_generator(seed).integers(0, _MAX_KERNEL_SEED))


def kernel_seeds(seed: int | np.random.Generator | np.random.SeedSequence | None, n: int) -> np.ndarray:
    """``n`` independent integer seeds (int64 array) for parallel chains, via ``SeedSequence.spawn``."""
    if isinstance(seed, np.random.SeedSequence):
        ss = seed
    elif isinstance(seed, np.random.Generator):
        ss = np.random.SeedSequence(int(seed.integers(0, 2**63 - 1)))
    else:
        ss = np.random.SeedSequence(None if seed is None else int(kernel_seed(seed)))
    return np.array([c.generate_state(1, dtype=np.uint32)[0] & _MAX_KERNEL_SEED for c in ss.spawn(n)], dtype=np.int64)
