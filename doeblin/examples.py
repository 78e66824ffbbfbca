"""Small finite chains with known behaviour, used by the tests, the harness suites and the docs."""

from __future__ import annotations

import numpy as np

from samplers.rng import as_generator
from samplers.validation import check_float, check_int


def three_state_chain(delta: float = 1e-4) -> np.ndarray:
    """Fig. 1 of Steinhardt & Liang (row-stochastic, states 1, 2, 3 -> indices 0, 1, 2):
    1 -> 2 w.p. delta, 3 -> 2 w.p. 2 delta, 2 -> 1 w.p. 1/3, 2 -> 3 w.p. 2/3.

    Its stationary law puts ``1 / (2 + 3 delta)`` on states 1 and 3; with uniform restarts,
    ``pi~(state 1)`` tends to 4/9 for ``eps >> delta`` and to 1/2 for ``eps << delta``.
    """
    delta = check_float(delta, "delta", low=0.0, high=0.5, low_open=True)
    return np.array([[1.0 - delta, delta, 0.0],
                     [1.0 / 3.0, 0.0, 2.0 / 3.0],
                     [0.0, 2.0 * delta, 1.0 - 2.0 * delta]])


def metastable_chain(n_per_well: int = 4, barrier: float = 1e-3, *, seed=None) -> np.ndarray:
    """Two wells of ``n_per_well`` states each with random dense moves inside a well and total
    probability ``barrier`` of crossing to the other well from each state (slow mixing)."""
    n = check_int(n_per_well, "n_per_well", low=1)
    barrier = check_float(barrier, "barrier", low=0.0, high=1.0, low_open=True, high_open=True)
    gen = as_generator(seed)
    A = np.zeros((2 * n, 2 * n))
    for w in range(2):
        inside = slice(w * n, (w + 1) * n)
        other = slice((1 - w) * n, (2 - w) * n)
        A[inside, inside] = (1.0 - barrier) * gen.dirichlet(np.ones(n), size=n)
        A[inside, other] = barrier * gen.dirichlet(np.ones(n), size=n)
    return A


def random_chain(n: int, *, concentration: float = 1.0, seed=None) -> np.ndarray:
    """Random dense row-stochastic ``n x n`` matrix with Dirichlet(concentration) rows."""
    n = check_int(n, "n", low=1)
    return as_generator(seed).dirichlet(np.full(n, check_float(concentration, "concentration", low=0.0,
                                                                 low_open=True)), size=n)


def random_reversible_chain(n: int, *, seed=None) -> tuple[np.ndarray, np.ndarray]:
    """Random lazy Metropolis chain reversible w.r.t. a random ``pi`` (returns ``(P, pi)``)."""
    n = check_int(n, "n", low=2)
    gen = as_generator(seed)
    pi = gen.dirichlet(np.ones(n))
    Q = gen.dirichlet(np.ones(n), size=n)
    Q = 0.5 * (Q + Q.T) / n                      # symmetric proposal with row sums <= 1
    P = Q * np.minimum(1.0, pi[None, :] / pi[:, None])
    np.fill_diagonal(P, 0.0)
    P = 0.5 * P
    P[np.diag_indices(n)] = 1.0 - P.sum(axis=1)
    return P, pi
