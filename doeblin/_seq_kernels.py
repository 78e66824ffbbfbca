"""Numba kernels for the log-linear sequence model (restart law u, random-scan Gibbs kernel A).

Model (see :mod:`doeblin.implicit`): ``x`` is (L, D) per-position features, labels in {0..K-1}.
``u(y | x) = prod_i softmax(x_i W_u)[y_i]``; ``A`` is random-scan Gibbs for the score
``s(y) = sum_i x_i . W_A[:, y_i] + sum_{i >= 1} P[y_{i-1}, y_i]``.  Flat parameter layout:
``theta = [W_u.ravel(), W_A.ravel(), P.ravel()]``.  No validation here.
"""

from __future__ import annotations

import numpy as np

from samplers._jit import jit
from samplers._kernels import categorical_from_logits, log_softmax_1d

from ._kernels import draw_from_cdf, walk_back_to_restart

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


@jit
def seq_doeblin_draws(x, W_u, W_A, P, eps, size, seed):
    """Exact draws of pi~ by the geometric trick (Prop. 3.2); returns ``(draws (size, L), steps)``."""
    np.random.seed(seed)
    L = x.shape[0]
    K = W_u.shape[1]
    out = np.empty((size, L), dtype=np.int64)
    steps = np.empty(size, dtype=np.int64)
    buf = np.empty(K)
    y = np.empty(L, dtype=np.int64)
    for s in range(size):
        sample_u(x, W_u, y, buf)
        T = np.random.geometric(eps) - 1
        for _ in range(T):
            gibbs_step(x, W_A, P, y, buf)
        out[s] = y
        steps[s] = T
    return out, steps


@jit
def seq_simulate(x, W_u, W_A, P, eps, y0, n_steps, seed):
    """Path (n_steps + 1, L) of the strong Doeblin chain from ``y0`` (restart w.p. eps, else Gibbs)."""
    np.random.seed(seed)
    L = x.shape[0]
    K = W_u.shape[1]
    buf = np.empty(K)
    y = y0.copy()
    path = np.empty((n_steps + 1, L), dtype=np.int64)
    path[0] = y
    for t in range(1, n_steps + 1):
        if np.random.random() < eps:
            sample_u(x, W_u, y, buf)
        else:
            gibbs_step(x, W_A, P, y, buf)
        path[t] = y
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


@jit
def _add_cond_grad(x, P, y, i, logp, grad, scale, off_W, off_P):
    """Add ``scale * d log p_i(y_i | y_{-i}) / d(W_A, P)`` given the conditional's log-probs ``logp``."""
    L, D = x.shape
    K = logp.shape[0]
    for k in range(K):
        r = (1.0 if k == y[i] else 0.0) - np.exp(logp[k])
        for d in range(D):
            grad[off_W + d * K + k] += scale * r * x[i, d]
        if i > 0:
            grad[off_P + y[i - 1] * K + k] += scale * r
        if i < L - 1:
            grad[off_P + k * K + y[i + 1]] += scale * r


@jit
def gibbs_prob_grad(x, W_A, P, y_prev, y, grad, scale, buf, logp, cond):
    """Return ``A(y | y_prev)`` of random-scan Gibbs; if ``scale != 0`` add ``scale * d log A / d
    (W_A, P)`` into ``grad`` (flat layout).  ``cond`` is scratch of length L."""
    L, D = x.shape
    K = W_A.shape[1]
    off_W = D * K
    off_P = 2 * D * K
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
            _add_cond_grad(x, P, y, diff, logp, grad, scale, off_W, off_P)
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
            _add_cond_grad(x, P, y, i, logp, grad, scale * cond[i] / total, off_W, off_P)
    return total / L


@jit
def algorithm1_chains(x, y, W_u, W_A, P, eps, k, seed):
    """Algorithm 1 (SampleGradient) with the O(T) grouping of Sec. 4.2, one row per chain.

    For chain c: T ~ Geometric(eps) on {0, 1, ...}, y_0 ~ u, y_t ~ A(. | y_{t-1}) for t < T;
    weights ``w_0 = eps u(y)``, ``w_t = eps A(y | y_{t-1})``; the chain's gradient mass is
    ``g_c = w_0 dlog u(y) + W_1 dlog u(y_0) + sum_{s=1}^{T-1} W_{s+1} dlog A(y_s | y_{s-1})
    + sum_{t>=1} w_t dlog A(y | y_{t-1})`` with suffix sums ``W_s = sum_{t >= s} w_t``.
    Returns ``(g (k, n_params), Z (k,), steps (k,))``; the estimate is ``g.sum(0) / Z.sum()``.
    """
    np.random.seed(seed)
    L, D = x.shape
    K = W_u.shape[1]
    n_params = 2 * D * K + K * K
    G = np.zeros((k, n_params))
    Z = np.zeros(k)
    steps = np.empty(k, dtype=np.int64)
    buf = np.empty(K)
    logp = np.empty(K)
    cond = np.empty(L)
    for c in range(k):
        T = np.random.geometric(eps) - 1
        steps[c] = T
        path = np.empty((max(T, 1), L), dtype=np.int64)
        yy = np.empty(L, dtype=np.int64)
        sample_u(x, W_u, yy, buf)
        if T > 0:
            path[0] = yy
            for t in range(1, T):
                gibbs_step(x, W_A, P, yy, buf)
                path[t] = yy
        g = G[c]
        w0 = eps * np.exp(log_u_grad(x, W_u, y, g, 0.0, buf, logp))
        w = np.empty(T + 1)
        w[0] = w0
        for t in range(1, T + 1):
            w[t] = eps * gibbs_prob_grad(x, W_A, P, path[t - 1], y, g, 0.0, buf, logp, cond)
        Z[c] = w.sum()
        if Z[c] == 0.0:
            continue
        log_u_grad(x, W_u, y, g, w0, buf, logp)
        suffix = 0.0
        for t in range(T, 0, -1):
            # here suffix = sum_{t' > t} w_t'; y_t's transition term (t < T) has weight W_{t+1}
            if t < T and suffix != 0.0:
                gibbs_prob_grad(x, W_A, P, path[t - 1], path[t], g, suffix, buf, logp, cond)
            if w[t] != 0.0:
                gibbs_prob_grad(x, W_A, P, path[t - 1], y, g, w[t], buf, logp, cond)
            suffix += w[t]
        if T > 0 and suffix != 0.0:
            log_u_grad(x, W_u, path[0], g, suffix, buf, logp)
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


@jit
def apply_stage_kernel(kind, x, W_u, W_A, P, y, buf):
    """Move ``y`` in place by the base kernel of one stage (``KIND_*`` codes above)."""
    if kind == KIND_RESTART:
        sample_u(x, W_u, y, buf)
    elif kind == KIND_GIBBS:
        gibbs_step(x, W_A, P, y, buf)
    elif kind == KIND_SWEEP:
        gibbs_sweep(x, W_A, P, y, buf)


@jit
def seq_staged_simulate(x, W_u, W_A, P, kinds, cdf_C, z0, y0, n_steps, seed):
    """Path of the staged chain (Sec. 3.1): ``z_t ~ C(. | z_{t-1})``, then ``y_t ~ A_{z_t}(. | y_{t-1})``.

    ``kinds[z]`` is stage z's kernel code.  Returns ``(z_path (n_steps + 1,), y_path (n_steps + 1, L))``.
    """
    np.random.seed(seed)
    L = x.shape[0]
    buf = np.empty(W_u.shape[1])
    y = y0.copy()
    z = z0
    zs = np.empty(n_steps + 1, dtype=np.int64)
    ys = np.empty((n_steps + 1, L), dtype=np.int64)
    zs[0] = z
    ys[0] = y
    for t in range(1, n_steps + 1):
        z = draw_from_cdf(cdf_C[z])
        apply_stage_kernel(kinds[z], x, W_u, W_A, P, y, buf)
        zs[t] = z
        ys[t] = y
    return zs, ys


@jit
def seq_staged_draws(x, W_u, W_A, P, kinds, cdf_rho, cdf_C_rev, z_restart, size, seed):
    """Exact stationary draws of the staged chain: ``z_0 ~ rho``, walk the reversed stage chain back
    to the last visit of ``z*``, draw ``y ~ u`` there and apply the stage kernels forward to time 0
    (as :func:`doeblin._kernels.exact_staged_draws`).  Returns ``(z (size,), y (size, L), steps)``
    with ``steps`` the kernel applications per draw (the restart counts as one).
    """
    np.random.seed(seed)
    L = x.shape[0]
    buf = np.empty(W_u.shape[1])
    y = np.empty(L, dtype=np.int64)
    zs = np.empty(size, dtype=np.int64)
    ys = np.empty((size, L), dtype=np.int64)
    steps = np.empty(size, dtype=np.int64)
    back = np.empty(64, dtype=np.int64)
    for s in range(size):
        zs[s], m, back = walk_back_to_restart(cdf_rho, cdf_C_rev, z_restart, back)
        sample_u(x, W_u, y, buf)
        for j in range(m - 1, -1, -1):
            apply_stage_kernel(kinds[back[j]], x, W_u, W_A, P, y, buf)
        ys[s] = y
        steps[s] = m + 1
    return zs, ys, steps
