"""Numba kernels for the log-linear sequence model (restart law u, random-scan Gibbs kernel A).

Model (see :mod:`doeblin.implicit`): ``x`` is (L, D) per-position features, labels in {0..K-1}.
``u(y | x) = prod_i softmax(x_i W_u)[y_i]``; ``A`` is random-scan Gibbs for the score
``s(y) = sum_i x_i . W_A[:, y_i] + sum_{i >= 1} P[y_{i-1}, y_i]``.  Flat parameter layout:
``theta = [W_u.ravel(), W_A.ravel(), P.ravel()]``.  No validation here.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from samplers._jit import jit
from samplers._kernels import categorical_from_logits, log_softmax_1d

from . import core
from .core import implements, move, restart, stage_move

# stage-kernel kinds of the staged sequence chain (doeblin.staged_implicit)
KIND_RESTART = 0    # y ~ u (independent of the previous y)
KIND_GIBBS = 1      # one random-scan Gibbs step of A
KIND_SWEEP = 2      # one systematic Gibbs sweep, positions 0..L-1 in order
KIND_IDENTITY = 3   # y unchanged (a waiting stage)


@jit
def unary_logits(x, W, i, out):
    """``out[k] = x_i . W[:, k]``."""
    D, K = W.shape
    for k in range(K):
        s = 0.0
        for d in range(D):
            s += x[i, d] * W[d, k]
        out[k] = s


@jit
def gibbs_logits(x, W, P, y, i, out):
    """Logits of the Gibbs conditional of position i given the other labels of ``y``."""
    unary_logits(x, W, i, out)
    L = y.shape[0]
    K = W.shape[1]
    for k in range(K):
        if i > 0:
            out[k] += P[y[i - 1], k]
        if i < L - 1:
            out[k] += P[k, y[i + 1]]


@jit
def sample_u(x, W_u, y, buf):
    """Draw ``y ~ u(. | x)`` in place."""
    for i in range(y.shape[0]):
        unary_logits(x, W_u, i, buf)
        y[i] = categorical_from_logits(buf)


@jit
def gibbs_step(x, W, P, y, buf):
    """One random-scan Gibbs step in place: pick i uniformly, resample y_i from its conditional."""
    i = np.random.randint(0, y.shape[0])
    gibbs_logits(x, W, P, y, i, buf)
    y[i] = categorical_from_logits(buf)


class SequenceChain(NamedTuple):
    """The sequence model bundled for :mod:`doeblin.core`: input ``x`` (L, D), ``W_u`` (D, K), ``W_A``
    (D, K), ``P`` (K, K), stage kernel codes ``kinds`` (k,) (``KIND_*``; empty for a strong chain)
    and scratch ``buf`` (K,)."""

    x: np.ndarray
    W_u: np.ndarray
    W_A: np.ndarray
    P: np.ndarray
    kinds: np.ndarray
    buf: np.ndarray


def sequence_chain(x, W_u, W_A, P, kinds=None) -> SequenceChain:
    """Bundle validated arrays (no checks here) into a :class:`SequenceChain`."""
    kinds = np.zeros(0, dtype=np.int64) if kinds is None else kinds
    return SequenceChain(x, W_u, W_A, P, kinds, np.empty(W_u.shape[1]))


@implements(restart, SequenceChain)
def _sequence_restart(model, y):
    sample_u(model.x, model.W_u, y, model.buf)


@implements(move, SequenceChain)
def _sequence_move(model, y):
    gibbs_step(model.x, model.W_A, model.P, y, model.buf)


@jit
def seq_doeblin_draws(model, eps, size, seed):
    """Exact draws of pi~ by the geometric trick (Prop. 3.2); returns ``(draws (size, L), steps)``."""
    return core.seeded_exact_draws(model, model.x.shape[0], eps, size, seed)


@jit
def seq_simulate(model, eps, y0, n_steps, seed):
    """Path (n_steps + 1, L) of the strong Doeblin chain from ``y0`` (restart w.p. eps, else Gibbs)."""
    np.random.seed(seed)
    path = np.empty((n_steps + 1, y0.shape[0]), dtype=np.int64)
    core.doeblin_path(model, y0.copy(), eps, path, np.empty(n_steps + 1, dtype=np.bool_))
    return path


@jit
def log_u_grad(x, W_u, y, grad, scale, buf, logp):
    """Return ``log u(y | x)``; add ``scale * d log u / d W_u`` into ``grad[:D*K]`` (flat layout)."""
    L, D = x.shape
    K = W_u.shape[1]
    total = 0.0
    for i in range(L):
        unary_logits(x, W_u, i, buf)
        log_softmax_1d(buf, logp)
        total += logp[y[i]]
        if scale != 0.0:
            for k in range(K):
                r = (1.0 if k == y[i] else 0.0) - np.exp(logp[k])
                for d in range(D):
                    grad[d * K + k] += scale * r * x[i, d]
    return total


class GradScratch(NamedTuple):
    """Scratch of :func:`gibbs_prob_grad`: ``buf``, ``logp`` (K,) and ``cond`` (L,), float64."""

    buf: np.ndarray
    logp: np.ndarray
    cond: np.ndarray


@jit
def _add_cond_grad(x, P, y, i, logp, grad, scale):
    """Add ``scale * d log p_i(y_i | y_{-i}) / d(W_A, P)`` given the conditional's log-probs ``logp``
    (flat layout: ``W_A`` from ``D * K``, ``P`` from ``2 * D * K``)."""
    L, D = x.shape
    K = logp.shape[0]
    off_W = D * K
    off_P = 2 * D * K
    for k in range(K):
        r = (1.0 if k == y[i] else 0.0) - np.exp(logp[k])
        for d in range(D):
            grad[off_W + d * K + k] += scale * r * x[i, d]
        if i > 0:
            grad[off_P + y[i - 1] * K + k] += scale * r
        if i < L - 1:
            grad[off_P + k * K + y[i + 1]] += scale * r


@jit
def gibbs_prob_grad(x, W_A, P, y_prev, y, grad, scale, scratch):
    """Return ``A(y | y_prev)`` of random-scan Gibbs; if ``scale != 0`` add ``scale * d log A / d
    (W_A, P)`` into ``grad`` (flat layout).  ``scratch`` is a :class:`GradScratch`."""
    buf, logp, cond = scratch.buf, scratch.logp, scratch.cond
    L = x.shape[0]
    diff = -1
    n_diff = 0
    for i in range(L):
        if y[i] != y_prev[i]:
            n_diff += 1
            diff = i
    if n_diff > 1:
        return 0.0
    if n_diff == 1:
        gibbs_logits(x, W_A, P, y, diff, buf)   # conditional of position diff given y_{-diff} = y_prev_{-diff}
        log_softmax_1d(buf, logp)
        p = np.exp(logp[y[diff]])
        if scale != 0.0:
            _add_cond_grad(x, P, y, diff, logp, grad, scale)
        return p / L
    total = 0.0
    for i in range(L):
        gibbs_logits(x, W_A, P, y, i, buf)
        log_softmax_1d(buf, logp)
        cond[i] = np.exp(logp[y[i]])
        total += cond[i]
    if scale != 0.0 and total > 0.0:
        for i in range(L):
            gibbs_logits(x, W_A, P, y, i, buf)
            log_softmax_1d(buf, logp)
            _add_cond_grad(x, P, y, i, logp, grad, scale * cond[i] / total)
    return total / L


@jit
def algorithm1_chains(model, y, eps, k, seed):
    """Algorithm 1 (SampleGradient) with the O(T) grouping of Sec. 4.2, one row per chain.

    For chain c: T ~ Geometric(eps) on {0, 1, ...}, y_0 ~ u, y_t ~ A(. | y_{t-1}) for t < T
    (:func:`doeblin.core.restart_path`); weights ``w_0 = eps u(y)``, ``w_t = eps A(y | y_{t-1})``; the
    chain's gradient mass is ``g_c = w_0 dlog u(y) + W_1 dlog u(y_0) + sum_{s=1}^{T-1} W_{s+1} dlog
    A(y_s | y_{s-1}) + sum_{t>=1} w_t dlog A(y | y_{t-1})`` with suffix sums ``W_s = sum_{t >= s} w_t``
    (:func:`doeblin.core.suffix_weights`).  Returns ``(g (k, n_params), Z (k,), steps (k,))``; the
    estimate is ``g.sum(0) / Z.sum()``.
    """
    np.random.seed(seed)
    x, W_u, W_A, P = model.x, model.W_u, model.W_A, model.P
    L, D = x.shape
    K = W_u.shape[1]
    n_params = 2 * D * K + K * K
    G = np.zeros((k, n_params))
    Z = np.zeros(k)
    steps = np.empty(k, dtype=np.int64)
    scratch = GradScratch(np.empty(K), np.empty(K), np.empty(L))
    buf, logp = scratch.buf, scratch.logp
    for c in range(k):
        T = np.random.geometric(eps) - 1
        steps[c] = T
        path = np.empty((max(T, 1), L), dtype=np.int64)
        core.restart_path(model, path, T)
        g = G[c]
        w = np.empty(T + 1)
        w[0] = eps * np.exp(log_u_grad(x, W_u, y, g, 0.0, buf, logp))
        for t in range(1, T + 1):
            w[t] = eps * gibbs_prob_grad(x, W_A, P, path[t - 1], y, g, 0.0, scratch)
        Z[c] = w.sum()
        if Z[c] == 0.0:
            continue
        log_u_grad(x, W_u, y, g, w[0], buf, logp)
        suffix = np.empty(T + 1)
        core.suffix_weights(w, 0.0, suffix)
        # y_t's own transition (t < T) has weight W_{t+1}; the final transition into y has weight w_t
        for t in range(T, 0, -1):
            if t < T and suffix[t + 1] != 0.0:
                gibbs_prob_grad(x, W_A, P, path[t - 1], path[t], g, suffix[t + 1], scratch)
            if w[t] != 0.0:
                gibbs_prob_grad(x, W_A, P, path[t - 1], y, g, w[t], scratch)
        if T > 0 and suffix[1] != 0.0:
            log_u_grad(x, W_u, path[0], g, suffix[1], buf, logp)
    return G, Z, steps


@jit
def gibbs_sweep(x, W, P, y, buf):
    """One systematic-scan Gibbs sweep in place: resample y_0, y_1, ..., y_{L-1} in order."""
    for i in range(y.shape[0]):
        gibbs_logits(x, W, P, y, i, buf)
        y[i] = categorical_from_logits(buf)


@jit
def sweep_prob(x, W, P, y_prev, y, buf, logp):
    """Transition probability ``prod_i p(y_i | y_{<i}, y_prev_{>i})`` of :func:`gibbs_sweep`."""
    L = y.shape[0]
    mixed = y_prev.copy()
    total = 0.0
    for i in range(L):
        gibbs_logits(x, W, P, mixed, i, buf)
        log_softmax_1d(buf, logp)
        total += logp[y[i]]
        mixed[i] = y[i]
    return np.exp(total)


@implements(stage_move, SequenceChain)
def _sequence_stage_move(model, stage, y):
    """Move ``y`` in place by stage ``stage``'s base kernel (``model.kinds[stage]``, ``KIND_*`` above)."""
    kind = model.kinds[stage]
    if kind == KIND_RESTART:
        sample_u(model.x, model.W_u, y, model.buf)
    elif kind == KIND_GIBBS:
        gibbs_step(model.x, model.W_A, model.P, y, model.buf)
    elif kind == KIND_SWEEP:
        gibbs_sweep(model.x, model.W_A, model.P, y, model.buf)


@jit
def seq_staged_simulate(model, cdf_C, z0, y0, n_steps, seed):
    """Path of the staged chain (Sec. 3.1, :func:`doeblin.core.staged_path`).

    Returns ``(z_path (n_steps + 1,), y_path (n_steps + 1, L))``.
    """
    np.random.seed(seed)
    zs = np.empty(n_steps + 1, dtype=np.int64)
    ys = np.empty((n_steps + 1, y0.shape[0]), dtype=np.int64)
    core.staged_path(model, cdf_C, z0, y0.copy(), zs, ys)
    return zs, ys


@jit
def seq_staged_draws(model, cdf_rho, cdf_C_rev, z_restart, size, seed):
    """Exact stationary draws of the staged chain (:func:`doeblin.core.exact_staged_draws`).

    Returns ``(z (size,), y (size, L), steps)`` with ``steps`` the kernel applications per draw (the
    restart counts as one).
    """
    np.random.seed(seed)
    L = model.x.shape[0]
    zs = np.empty(size, dtype=np.int64)
    ys = np.empty((size, L), dtype=np.int64)
    steps = np.empty(size, dtype=np.int64)
    core.exact_staged_draws(model, cdf_rho, cdf_C_rev, z_restart, np.zeros(L, dtype=np.int64), zs, ys, steps)
    return zs, ys, steps
