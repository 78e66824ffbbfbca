"""Generic single-site MCMC moves for discrete models given by a log-density callback.

These are the small, readable reference moves (pure Python, one callback call per candidate state);
the fast path for pairwise MRFs is :meth:`samplers.models.PairwiseMRF.gibbs_sample` (Numba).  Both
moves leave ``p(x) ∝ exp(log_density(x))`` invariant:

* :func:`gibbs_sweep`: systematic scan; each site is redrawn from its full conditional
  ``p(x_i = k | x_-i) ∝ exp(log_density(x with x_i = k))`` (Geman & Geman 1984).
* :func:`metropolis_step`: random-scan single-site Metropolis; a site ``i`` is chosen uniformly and
  a new value uniformly among its other states (a symmetric proposal), accepted with probability
  ``min(1, p(x') / p(x))`` (Metropolis et al. 1953).

State in, state out (BlackJAX style): the moves return a new array and never modify their input.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .rng import as_generator
from .validation import as_int_array, check_int

LogDensity = Callable[[np.ndarray], float]
MOVES = ("gibbs", "metropolis")


def _states(n_states: Any, n_vars: int) -> np.ndarray:
    counts = as_int_array(np.broadcast_to(n_states, (n_vars,)) if np.ndim(n_states) == 0 else n_states,
                          "n_states", ndim=1, low=1)
    if counts.shape != (n_vars,):
        raise ValueError(f"n_states must be an int or have shape (n_vars,) = ({n_vars},), got {counts.shape}")
    return counts


def _check_state(x: Any, counts: np.ndarray) -> np.ndarray:
    arr = as_int_array(x, "x", ndim=1, low=0)
    if arr.shape != counts.shape or np.any(arr >= counts):
        raise ValueError(f"x must have shape ({counts.size},) with 0 <= x[i] < n_states[i], got {arr.tolist()}")
    return arr


def gibbs_sweep(x: Any, log_density: LogDensity, n_states: Any, seed: Any = None) -> np.ndarray:
    """One systematic-scan Gibbs sweep over all sites of a discrete model.

    Parameters
    ----------
    x : array_like of int, shape (n_vars,)
        Current state.
    log_density : callable
        ``log_density(x) -> float``, the unnormalised log probability of an int array of shape (n_vars,).
    n_states : int or array_like of int, shape (n_vars,)
        Number of states of each site.
    seed : int, Generator or None
        Randomness (SPEC 7).

    Returns
    -------
    ndarray of int64, shape (n_vars,)
        The new state.
    """
    counts = _states(n_states, np.size(x))
    x = _check_state(x, counts).copy()
    gen = as_generator(seed)
    for i in range(x.size):
        logits = np.empty(counts[i])
        for k in range(counts[i]):
            x[i] = k
            logits[k] = log_density(x)
        p = np.exp(logits - logits.max())
        x[i] = gen.choice(counts[i], p=p / p.sum())
    return x


def metropolis_step(x: Any, log_density: LogDensity, n_states: Any, seed: Any = None) -> np.ndarray:
    """One random-scan single-site Metropolis step with a uniform proposal among the other states.

    Parameters are as in :func:`gibbs_sweep`.  A site with a single state is left unchanged.
    """
    counts = _states(n_states, np.size(x))
    x = _check_state(x, counts).copy()
    gen = as_generator(seed)
    i = int(gen.integers(x.size))
    if counts[i] < 2:
        return x
    proposal = x.copy()
    proposal[i] = (x[i] + 1 + gen.integers(counts[i] - 1)) % counts[i]
    if np.log(gen.random()) < log_density(proposal) - log_density(x):
        return proposal
    return x


def sample_chain(log_density: LogDensity, n_states: Any, x0: Any, n_steps: int, seed: Any = None, *,
                 move: str = "gibbs", burn_in: int = 0, thin: int = 1) -> np.ndarray:
    """Run one chain of :func:`gibbs_sweep` or :func:`metropolis_step` moves.

    Parameters
    ----------
    log_density, n_states
        As in :func:`gibbs_sweep`.
    x0 : array_like of int, shape (n_vars,)
        Initial state.
    n_steps : int
        Moves to apply (sweeps for ``"gibbs"``, single-site steps for ``"metropolis"``).
    seed : int, Generator or None
        Seed of the chain (SPEC 7: an int, a ``np.random.Generator`` or None).
    move : {"gibbs", "metropolis"}
        Systematic-scan Gibbs sweeps or single-site Metropolis steps.
    burn_in, thin : int
        Discard the first ``burn_in`` states, then keep every ``thin``-th.

    Returns
    -------
    ndarray of int64, shape ((n_steps - burn_in) // thin, n_vars)
    """
    if move not in MOVES:
        raise ValueError(f"move must be one of {MOVES}, got {move!r}")
    n_steps = check_int(n_steps, "n_steps", low=1)
    burn_in = check_int(burn_in, "burn_in", low=0, high=n_steps - 1)
    thin = check_int(thin, "thin", low=1, high=n_steps - burn_in)
    step = gibbs_sweep if move == "gibbs" else metropolis_step
    counts = _states(n_states, np.size(x0))
    x = _check_state(x0, counts)
    gen = as_generator(seed)
    kept = []
    for s in range(1, n_steps + 1):
        x = step(x, log_density, counts, gen)
        if s > burn_in and (s - burn_in) % thin == 0:
            kept.append(x)
    return np.array(kept[: (n_steps - burn_in) // thin], dtype=np.int64).reshape(-1, counts.size)
