"""Shared Numba kernels: log-space maths and categorical draws.

Kernels take plain arrays and scalars and never raise for user errors (wrappers validate).  Random
kernels draw from Numba's generator, which callers seed inside their own kernel with
``np.random.seed(seed)`` (see :func:`seed_kernel_rng`).
"""

from __future__ import annotations

import numpy as np

from ._jit import jit


@jit
def seed_kernel_rng(seed):
    """Seed Numba's internal generator (must be called from compiled code or through this kernel)."""
    np.random.seed(seed)


@jit
def logaddexp(a, b):
    """log(exp(a) + exp(b)) without overflow; -inf + -inf -> -inf."""
    if a == -np.inf:
        return b
    if b == -np.inf:
        return a
    if a > b:
        return a + np.log1p(np.exp(b - a))
    return b + np.log1p(np.exp(a - b))


@jit
def logsumexp_1d(x):
    """log(sum(exp(x))) of a 1-D array; empty or all -inf -> -inf."""
    n = x.shape[0]
    if n == 0:
        return -np.inf
    m = -np.inf
    for i in range(n):
        if x[i] > m:
            m = x[i]
    if m == -np.inf or m == np.inf:
        return m
    s = 0.0
    for i in range(n):
        s += np.exp(x[i] - m)
    return m + np.log(s)


@jit
def log_softmax_1d(x, out):
    """Write log-softmax of 1-D ``x`` into ``out`` (may alias ``x``); returns the log normaliser."""
    lz = logsumexp_1d(x)
    for i in range(x.shape[0]):
        out[i] = x[i] - lz
    return lz


@jit
def categorical_from_logits(logits):
    """One draw from softmax(logits) using Numba's generator (inverse CDF, log-space stable)."""
    n = logits.shape[0]
    m = -np.inf
    for i in range(n):
        if logits[i] > m:
            m = logits[i]
    total = 0.0
    for i in range(n):
        total += np.exp(logits[i] - m)
    u = np.random.random() * total
    acc = 0.0
    last = 0
    for i in range(n):
        w = np.exp(logits[i] - m)
        if w > 0.0:
            last = i
        acc += w
        if u < acc:
            return i
    return last


@jit
def categorical_from_probs(probs):
    """One draw from an (unnormalised, non-negative) probability vector using Numba's generator."""
    n = probs.shape[0]
    total = 0.0
    for i in range(n):
        total += probs[i]
    u = np.random.random() * total
    acc = 0.0
    last = 0
    for i in range(n):
        if probs[i] > 0.0:
            last = i
        acc += probs[i]
        if u < acc:
            return i
    return last
