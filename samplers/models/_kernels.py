"""Numba kernels for pairwise discrete MRFs: Gibbs sweeps over a CSR neighbour structure and the
annealed-importance-sampling loop.

Kernels take plain arrays or the model bundled as one :class:`MRFArrays` (a NamedTuple of arrays, one
Numba argument) and an integer seed, never raise for user errors (the wrappers in
:mod:`samplers.models.mrf` and :mod:`samplers.ais` validate), and seed Numba's generator once per
chain so every chain is reproducible on its own.

Layout shared by all kernels
----------------------------
``unary`` (n_vars, K)
    log unary potentials; states a variable cannot take hold ``-inf``.
``nbr_ptr`` (n_vars + 1,), ``nbr_var`` (2E,), ``nbr_pot`` (2E, K, K)
    CSR incidence lists: the incidences of variable ``i`` are ``m in range(nbr_ptr[i], nbr_ptr[i+1])``,
    ``nbr_var[m]`` is the neighbour ``j`` and ``nbr_pot[m, k, l]`` the log pairwise potential of
    ``x_i = k, x_j = l`` (each edge appears twice, once per orientation).
``edge_u``, ``edge_v`` (E,), ``pairwise`` (E, K, K)
    the edge list, used to evaluate the pairwise log potential of a configuration.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._jit import jit
from .._kernels import categorical_from_logits


class MRFArrays(NamedTuple):
    """A pairwise MRF bundled for :func:`gibbs_chains`: ``unary`` (n_vars, K) and the CSR incidence lists
    ``nbr_ptr``, ``nbr_var``, ``nbr_pot`` laid out as above."""

    unary: np.ndarray
    nbr_ptr: np.ndarray
    nbr_var: np.ndarray
    nbr_pot: np.ndarray


@jit
def gibbs_sweep(x, unary, nbr_ptr, nbr_var, nbr_pot, beta, logits):
    """One systematic-scan Gibbs sweep of the model ``unary + beta * pairwise`` (in place).

    Each site is redrawn from its full conditional
    ``p(x_i = k | x_-i) ∝ exp(unary[i, k] + beta * sum_m nbr_pot[m, k, x_nbr(m)])``.
    ``logits`` is a scratch buffer of length K.
    """
    n_states = unary.shape[1]
    for i in range(unary.shape[0]):
        for k in range(n_states):
            acc = 0.0
            for m in range(nbr_ptr[i], nbr_ptr[i + 1]):
                acc += nbr_pot[m, k, x[nbr_var[m]]]
            logits[k] = unary[i, k] + beta * acc
        x[i] = categorical_from_logits(logits)


@jit
def gibbs_chains(init, mrf, beta, n_sweeps, burn_in, thin, seeds):
    """Run ``init.shape[0]`` independent Gibbs chains of ``mrf`` (an :class:`MRFArrays`); keep every
    ``thin``-th sweep after ``burn_in``.

    ``seeds`` holds one seed per chain (each chain reproducible on its own), or a single seed for one
    stream through all chains in order: seeding Numba's Mersenne Twister costs about 2 us, which is the
    whole cost of a sweep of a small model, so AIS (one sweep per chain and temperature) seeds once.

    Returns an int64 array (n_chains, n_kept, n_vars) with ``n_kept = (n_sweeps - burn_in) // thin``;
    the kept sweeps are ``burn_in + thin, burn_in + 2 thin, ...`` (1-based sweep counts).
    """
    unary, nbr_ptr, nbr_var, nbr_pot = mrf.unary, mrf.nbr_ptr, mrf.nbr_var, mrf.nbr_pot
    n_chains, n_vars = init.shape
    n_kept = (n_sweeps - burn_in) // thin
    out = np.empty((n_chains, n_kept, n_vars), dtype=np.int64)
    logits = np.empty(unary.shape[1])
    one_stream = seeds.shape[0] == 1
    if one_stream:
        np.random.seed(seeds[0])
    for c in range(n_chains):
        if not one_stream:
            np.random.seed(seeds[c])
        x = init[c].copy()
        kept = 0
        for s in range(1, n_sweeps + 1):
            gibbs_sweep(x, unary, nbr_ptr, nbr_var, nbr_pot, beta, logits)
            if s > burn_in and (s - burn_in) % thin == 0 and kept < n_kept:
                out[c, kept] = x
                kept += 1
    return out
