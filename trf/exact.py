"""Exact normalising constants and feature expectations of word TRFs (Sec. 6).

With n-gram features of order at most 3, ``log Z_j(lambda)`` for every length j follows from one
forward pass over 2-symbol histories (states ``(x_{i-1}, x_i)``, cost ``O(m V^3)``), and the model
expectations ``p_j[f]`` from a matching backward pass.  The backward messages depend only on the
distance to the end of the word, so both passes are shared by all lengths.  These give the exact
NLL, the exact ``zeta*_j = log Z_j - log Z_1`` and the exact gradient; :func:`fit_quasi_newton` is the
exact maximum-likelihood fit (the paper's quasi-Newton: the reference AugSA converges to).
:func:`brute_force_log_z` enumerates all words (tests only).
"""

from __future__ import annotations

import itertools
import time
from typing import Callable

import numpy as np
from scipy.optimize import minimize
from scipy.special import logsumexp

from samplers.validation import as_float_array, check_int

from . import _word_kernels as K
from .data import WordData
from .features import FeatureSet, n_dense


def _tables(w: np.ndarray, V: int):
    b = K.table_bases(V)
    U = w[b[0]:b[1]]
    B = w[b[1]:b[2]].reshape(V, V)
    T = w[b[2]:b[3]].reshape(V, V, V)
    return U, B, T, w[b[3]:b[4]], w[b[4]:b[5]], w[b[5]:b[6]].reshape(V, V), w[b[6]:b[7]].reshape(V, V)


def _forward(w: np.ndarray, V: int, m: int):
    """log Z_j (j = 1..m) and the forward messages alpha_i (i = 2..m, states (x_{i-1}, x_i))."""
    U, B, T, BU, EU, BB, EB = _tables(w, V)
    log_z = np.empty(m)
    log_z[0] = logsumexp(U + BU + EU)
    alphas = []
    if m >= 2:
        alpha = U[:, None] + U[None, :] + B + BU[:, None] + BB
        alphas.append(alpha)
        for j in range(2, m + 1):
            if j > 2:
                alpha = logsumexp(alpha[:, :, None] + T, axis=0) + B + U[None, :]
                alphas.append(alpha)
            log_z[j - 1] = logsumexp(alpha + EU[None, :] + EB)
    return log_z, alphas


def log_partition(features: FeatureSet, lam: np.ndarray, m: int) -> np.ndarray:
    """Exact ``log Z_j(lambda)`` for j = 1..m by the forward pass.

    Parameters
    ----------
    features : FeatureSet
        The word model's n-gram features.
    lam : ndarray, shape (d,)
        Feature weights.
    m : int
        Maximum length.

    Returns
    -------
    ndarray, shape (m,)
        ``log Z_j`` for j = 1..m.
    """
    lam = features.check_lambda(lam)
    m = check_int(m, "m", low=1)
    return _forward(features.dense_weights(lam), features.V, m)[0]


def exact_zeta(features: FeatureSet, lam: np.ndarray, m: int) -> np.ndarray:
    """Exact log ratios ``zeta*_j = log Z_j - log Z_1`` (zeta*_1 = 0)."""
    log_z = log_partition(features, lam, m)
    return log_z - log_z[0]


def log_partition_and_expectations(features: FeatureSet, lam: np.ndarray, length_weights: np.ndarray
                                   ) -> tuple[np.ndarray, np.ndarray]:
    """``log Z_j`` for every j and ``sum_j length_weights[j] * p_j[f]`` (shape (d,)), exactly.

    ``p_j[f]`` is the expectation of the feature counts under the length-j field
    ``p_j(x) = exp(lambda . f(x)) / Z_j``; with ``length_weights = pi`` this is the model
    expectation ``p_lambda[f]`` of Eq. (6).
    """
    lam = features.check_lambda(lam)
    weights = as_float_array(length_weights, "length_weights", ndim=1)
    m = weights.shape[0]
    V = features.V
    w = features.dense_weights(lam)
    U, B, T, BU, EU, BB, EB = _tables(w, V)
    log_z, alphas = _forward(w, V, m)
    dense = np.zeros(n_dense(V))
    eU, eB, eT, eBU, eEU, eBB, eEB = _tables(dense, V)  # views into ``dense``
    if weights[0] != 0.0:
        p1 = np.exp(U + BU + EU - log_z[0]) * weights[0]
        eU += p1
        eBU += p1
        eEU += p1
    if m >= 2:
        # beta[r]: log-sum over the r symbols after a pair state, end terms included.
        betas = [EU[None, :] + EB]
        step = T + B[None, :, :] + U[None, None, :]
        for _ in range(m - 2):
            betas.append(logsumexp(step + betas[-1][None, :, :], axis=2))
        for j in range(2, m + 1):
            if weights[j - 1] == 0.0:
                continue
            wj = weights[j - 1]
            for i in range(2, j + 1):
                pair = np.exp(alphas[i - 2] + betas[j - i] - log_z[j - 1]) * wj
                eB += pair
                eU += pair.sum(axis=0)
                if i == 2:
                    eU += pair.sum(axis=1)
                    eBU += pair.sum(axis=1)
                    eBB += pair
                if i == j:
                    eEU += pair.sum(axis=0)
                    eEB += pair
                if i < j:
                    eT += np.exp(alphas[i - 2][:, :, None] + step + betas[j - i - 1][None, :, :] - log_z[j - 1]) * wj
    return log_z, dense[features.position]


def brute_force_log_z(features: FeatureSet, lam: np.ndarray, m: int) -> np.ndarray:
    """``log Z_j`` by enumerating all ``V^j`` words (tiny alphabets and lengths only; for tests)."""
    V = features.V
    w = features.dense_weights(features.check_lambda(lam))
    out = np.empty(m)
    scratch = np.empty(3 * m + 4, dtype=np.int64)
    for j in range(1, m + 1):
        scores = [K.score_word(w, V, np.array(x, dtype=np.int32), 0, j, scratch)
                  for x in itertools.product(range(V), repeat=j)]
        out[j - 1] = logsumexp(scores)
    return out


def exact_nll_and_grad(features: FeatureSet, lam: np.ndarray, pi: np.ndarray, mean: np.ndarray
                       ) -> tuple[float, np.ndarray]:
    """Exact mean NLL per word (nats) and its gradient for empirical means ``mean`` and length law ``pi``."""
    log_z, expect = log_partition_and_expectations(features, lam, pi)
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy_term = np.where(pi > 0, pi * np.log(pi), 0.0).sum()
    nll = -float(mean @ lam) + float(pi @ log_z) - entropy_term
    return nll, expect - mean


def fit_quasi_newton(features: FeatureSet, train: WordData, *, max_iter: int = 500, tol: float = 1e-9,
                     callback: Callable[[np.ndarray], None] | None = None) -> tuple[np.ndarray, dict]:
    """Maximum-likelihood lambda by L-BFGS with exact gradients (the paper's "Quasi-Newton").

    Returns
    -------
    lam : ndarray, shape (d,)
    info : dict
        ``nll`` (mean exact training NLL per word), ``iterations``, ``evaluations``, ``seconds``,
        ``grad_norm``, ``converged``.
    """
    max_iter = check_int(max_iter, "max_iter", low=1)
    n_j = train.length_counts()
    pi = n_j / n_j.sum()
    mean = features.counts(train) / len(train)
    start = time.perf_counter()
    res = minimize(lambda lam: exact_nll_and_grad(features, lam, pi, mean), np.zeros(features.d), jac=True,
                   method="L-BFGS-B", callback=callback,
                   options={"maxiter": max_iter, "gtol": tol, "ftol": tol * 1e-3, "maxcor": 20})
    return res.x, {"nll": float(res.fun), "iterations": int(res.nit), "evaluations": int(res.nfev),
                   "seconds": time.perf_counter() - start, "grad_norm": float(np.abs(res.jac).max()),
                   "converged": bool(res.success)}
