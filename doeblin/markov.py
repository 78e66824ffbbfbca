"""Finite Markov-chain utilities shared by the strong and staged Doeblin chains.

Convention (used throughout :mod:`doeblin`): transition matrices are **row-stochastic**,
``A[i, j] = P(y_{t+1} = j | y_t = i)``, and distributions are 1-D arrays (row vectors), so one
step maps ``p`` to ``p @ A``.  The paper writes column-stochastic matrices acting on column vectors
(``A u``); every formula here is the transpose of the paper's.
"""

from __future__ import annotations

import numpy as np

from samplers.validation import as_float_array, check_distribution

from ._kernels import gth_stationary

STOCHASTIC_ATOL = 1e-8


def check_stochastic(A, name: str, *, n: int | None = None) -> np.ndarray:
    """Validate a square row-stochastic matrix (optionally of size ``n``) and return it as float64.

    Raises
    ------
    ValueError
        If ``A`` is not square, has the wrong size, negative entries, or rows not summing to 1.
    """
    A = as_float_array(A, name, ndim=2)
    if A.shape[0] != A.shape[1] or A.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty square matrix, got shape {A.shape}")
    if n is not None and A.shape[0] != n:
        raise ValueError(f"{name} must be {n} x {n} to match the other arguments, got shape {A.shape}")
    if np.any(A < 0):
        raise ValueError(f"{name} must be non-negative (row-stochastic); found {A.min():.3g}")
    sums = A.sum(axis=1)
    if not np.allclose(sums, 1.0, atol=STOCHASTIC_ATOL, rtol=0):
        bad = int(np.argmax(np.abs(sums - 1.0)))
        raise ValueError(f"{name} must be row-stochastic (A[i, j] = P(next=j | current=i), rows sum to 1); "
                         f"row {bad} sums to {sums[bad]:.6g}")
    return A


def check_restart_law(u, name: str, *, n: int | None = None) -> np.ndarray:
    """Validate a probability vector (optionally of length ``n``)."""
    u = check_distribution(as_float_array(u, name, ndim=1), name, atol=STOCHASTIC_ATOL)
    if n is not None and u.shape[0] != n:
        raise ValueError(f"{name} must have length {n} to match the transition matrix, got {u.shape[0]}")
    return u


def cumulative_rows(A: np.ndarray) -> np.ndarray:
    """Row-wise cumulative sums (C-contiguous), the form the sampling kernels take."""
    return np.ascontiguousarray(np.cumsum(A, axis=-1))


def stationary_gth(P: np.ndarray) -> np.ndarray:
    """Stationary law of a row-stochastic matrix by GTH elimination (subtraction-free, stable)."""
    return gth_stationary(np.ascontiguousarray(P, dtype=np.float64))


def stationary_doeblin_closed_form(A: np.ndarray, u: np.ndarray, eps: float) -> np.ndarray:
    """Stationary law of ``(1 - eps) A + eps 1 u`` in closed form (Prop. 3.2 of Steinhardt & Liang).

    ``pi~ = eps * sum_j (1 - eps)^j u A^j = eps * u (I - (1 - eps) A)^{-1}`` (row-vector form of the
    paper's ``eps (I - (1 - eps) A)^{-1} u``), solved as a linear system.  Round-off negatives are
    clipped and the result renormalised; use :func:`stationary_gth` when ``eps`` is tiny.
    """
    n = A.shape[0]
    pi = np.linalg.solve((np.eye(n) - (1.0 - eps) * A).T, eps * np.asarray(u, dtype=np.float64))
    pi = np.clip(pi, 0.0, None)
    return pi / pi.sum()


def second_eigenvalue_reversible(P: np.ndarray, pi: np.ndarray) -> float:
    """Second-largest (signed) eigenvalue ``lambda_2`` of a chain reversible w.r.t. ``pi`` (Prop. 3.5).

    Computed from the symmetric matrix ``D^{1/2} P D^{-1/2}`` with ``D = diag(pi)``.
    """
    root = np.sqrt(np.asarray(pi, dtype=np.float64))
    sym = root[:, None] * np.asarray(P, dtype=np.float64) / root[None, :]
    eig = np.sort(np.linalg.eigvalsh(0.5 * (sym + sym.T)))[::-1]
    return float(eig[1]) if eig.shape[0] > 1 else 0.0


def spectral_gap(P: np.ndarray) -> float:
    """``1 - |lambda_2(P)|``, with eigenvalues ordered by modulus (the paper's Sec. 3 definition)."""
    moduli = np.sort(np.abs(np.linalg.eigvals(np.asarray(P, dtype=np.float64))))[::-1]
    if moduli.shape[0] < 2:
        return 1.0
    return float(max(0.0, 1.0 - moduli[1]))


def tv_distance(p: np.ndarray, q: np.ndarray) -> float:
    """Total-variation distance ``0.5 * sum |p - q|``."""
    return float(0.5 * np.abs(np.asarray(p) - np.asarray(q)).sum())


def tv_curve(P: np.ndarray, pi: np.ndarray, t_max: int, initial: np.ndarray | None = None) -> np.ndarray:
    """TV distance to ``pi`` after t = 0..t_max steps.

    With ``initial=None`` the worst case over point-mass starts, ``max_i ||e_i P^t - pi||_TV``;
    otherwise from the given initial distribution.
    """
    dist = np.eye(P.shape[0]) if initial is None else np.atleast_2d(np.asarray(initial, dtype=np.float64))
    out = np.empty(t_max + 1)
    for t in range(t_max + 1):
        out[t] = 0.5 * np.abs(dist - pi[None, :]).sum(axis=1).max()
        dist = dist @ P
    return out


def kl_divergence(p: np.ndarray, q: np.ndarray) -> float:
    """``KL(p || q) = sum_y p(y) log(p(y) / q(y))`` (0 log 0 = 0; inf where q = 0 < p)."""
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    mask = p > 0
    if np.any(q[mask] <= 0):
        return float("inf")
    return float(np.sum(p[mask] * (np.log(p[mask]) - np.log(q[mask]))))


def chi_distance(pi: np.ndarray, other: np.ndarray) -> float:
    """``d_pi(pi') = sqrt(-1 + sum_y pi'(y)^2 / pi(y))``, the Mahalanobis distance of Prop. 3.5."""
    pi = np.asarray(pi, dtype=np.float64)
    other = np.asarray(other, dtype=np.float64)
    return float(np.sqrt(max(0.0, np.sum(other ** 2 / pi) - 1.0)))


def is_reversible(P: np.ndarray, pi: np.ndarray, atol: float = 1e-10) -> bool:
    """Detailed balance ``pi_i P_ij = pi_j P_ji``."""
    flow = pi[:, None] * P
    return bool(np.allclose(flow, flow.T, atol=atol, rtol=0))


def doeblin_coefficient(P: np.ndarray) -> float:
    """``Gamma(P) = sum_y min_{y'} P(y | y')``: the largest eps with P = (1-eps) B + eps nu 1^T (App. A)."""
    return float(np.min(np.asarray(P), axis=0).sum())
