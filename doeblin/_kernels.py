"""Numba kernels for finite-state (strong and staged) Doeblin chains.

Plain arrays in, plain arrays out, no validation (the wrappers in :mod:`doeblin.chains` and
:mod:`doeblin.bench` validate).  Convention everywhere: transition matrices are **row-stochastic**,
``A[i, j] = P(next = j | current = i)``; kernels that draw take cumulative rows (``cdf[i, j] =
sum_{l <= j} A[i, l]``) so a draw is one uniform and a binary search.
"""

from __future__ import annotations

import numpy as np

from samplers._jit import jit


@jit
def draw_from_cdf(cdf_row):
    """Index j with cdf[j-1] <= U * cdf[-1] < cdf[j] (binary search; cdf need not end at exactly 1)."""
    u = np.random.random() * cdf_row[cdf_row.shape[0] - 1]
    j = np.searchsorted(cdf_row, u, side="right")
    if j >= cdf_row.shape[0]:
        j = cdf_row.shape[0] - 1
    return j


@jit
def gth_stationary(P):
    """Stationary law of a row-stochastic matrix by Grassmann-Taksar-Heyman elimination.

    Subtraction-free, hence accurate even when the chain is nearly decomposable (Fig. 1 with
    eps << delta).  For a reducible chain it returns a stationary law of the first closed class found.
    """
    A = P.copy()
    n = A.shape[0]
    m = n
    for k in range(n - 1):
        scale = 0.0
        for j in range(k + 1, m):
            scale += A[k, j]
        if scale <= 0.0:
            m = k + 1
            break
        for i in range(k + 1, m):
            A[i, k] /= scale
        for i in range(k + 1, m):
            aik = A[i, k]
            if aik != 0.0:
                for j in range(k + 1, m):
                    A[i, j] += aik * A[k, j]
    x = np.zeros(n)
    x[m - 1] = 1.0
    for k in range(m - 2, -1, -1):
        s = 0.0
        for i in range(k + 1, m):
            s += x[i] * A[i, k]
        x[k] = s
    total = x.sum()
    for i in range(n):
        x[i] /= total
    return x


@jit
def simulate_doeblin(cdf_A, cdf_u, eps, y0, n_steps, seed):
    """Path of the strong Doeblin chain (Eq. 2): each step restarts from u w.p. eps, else moves by A.

    ``y0 < 0`` draws the initial state from u.  Returns ``(path, restarts)`` where ``path`` has
    ``n_steps + 1`` states and ``restarts[t]`` says whether step t (t >= 1) was a restart.
    """
    np.random.seed(seed)
    path = np.empty(n_steps + 1, dtype=np.int64)
    restarts = np.zeros(n_steps + 1, dtype=np.bool_)
    y = y0
    if y < 0:
        y = draw_from_cdf(cdf_u)
    path[0] = y
    for t in range(1, n_steps + 1):
        if np.random.random() < eps:
            y = draw_from_cdf(cdf_u)
            restarts[t] = True
        else:
            y = draw_from_cdf(cdf_A[y])
        path[t] = y
    return path, restarts


@jit
def simulate_plain(cdf_A, y0, n_steps, seed):
    """Path of the plain chain A from ``y0`` (``n_steps + 1`` states)."""
    np.random.seed(seed)
    path = np.empty(n_steps + 1, dtype=np.int64)
    y = y0
    path[0] = y
    for t in range(1, n_steps + 1):
        y = draw_from_cdf(cdf_A[y])
        path[t] = y
    return path


@jit
def exact_doeblin_draws(cdf_A, cdf_u, eps, size, seed):
    """Exact stationary draws by Prop. 3.2: y0 ~ u, T ~ Geometric(eps) on {0,1,...}, apply A T times.

    Returns ``(draws, steps)`` with ``steps[i] = T_i`` (kernel applications of A per draw).
    """
    np.random.seed(seed)
    out = np.empty(size, dtype=np.int64)
    steps = np.empty(size, dtype=np.int64)
    for i in range(size):
        y = draw_from_cdf(cdf_u)
        T = np.random.geometric(eps) - 1
        for _ in range(T):
            y = draw_from_cdf(cdf_A[y])
        out[i] = y
        steps[i] = T
    return out, steps


@jit
def exact_doeblin_budget(cdf_A, cdf_u, eps, budget, seed):
    """Exact draws until ``budget`` kernel applications are spent (a restart and each A step cost 1).

    The last draw is kept only if it finished within the budget.  Returns the completed draws.
    """
    np.random.seed(seed)
    out = np.empty(budget, dtype=np.int64)
    n = 0
    spent = 0
    while True:
        T = np.random.geometric(eps) - 1
        if spent + T + 1 > budget:
            break
        y = draw_from_cdf(cdf_u)
        for _ in range(T):
            y = draw_from_cdf(cdf_A[y])
        out[n] = y
        n += 1
        spent += T + 1
    return out[:n]


@jit
def simulate_staged(cdf_C, cdf_kernels, z_restart, z0, y0, n_steps, seed):
    """Path of a staged chain (Sec. 3.1): z_t ~ C(. | z_{t-1}), then y_t ~ A_{z_t}(. | y_{t-1}).

    ``cdf_kernels`` has shape (k, n, n); the restart stage's rows are all the cdf of u.  Negative
    ``z0``/``y0`` start from (z*, y ~ u).  Returns ``(z_path, y_path)`` of length ``n_steps + 1``.
    """
    np.random.seed(seed)
    zs = np.empty(n_steps + 1, dtype=np.int64)
    ys = np.empty(n_steps + 1, dtype=np.int64)
    z = z0
    y = y0
    if z < 0:
        z = z_restart
    if y < 0:
        y = draw_from_cdf(cdf_kernels[z_restart, 0])
    zs[0] = z
    ys[0] = y
    for t in range(1, n_steps + 1):
        z = draw_from_cdf(cdf_C[z])
        y = draw_from_cdf(cdf_kernels[z, y])
        zs[t] = z
        ys[t] = y
    return zs, ys


@jit
def walk_back_to_restart(cdf_rho, cdf_C_rev, z_restart, back):
    """Draw ``z_0 ~ rho`` and walk the time-reversed stage chain back to the last visit of ``z*``.

    Returns ``(z_0, m, back)``: ``back[:m]`` holds the stages visited before reaching ``z*``
    (``back[0] = z_0``), so the forward kernels to apply after the restart are ``back[m-1], ...,
    back[0]``; ``back`` is grown (doubled) when needed and returned.
    """
    z = draw_from_cdf(cdf_rho)
    z0 = z
    m = 0
    while z != z_restart:
        if m == back.shape[0]:
            grown = np.empty(2 * m, dtype=np.int64)
            grown[:m] = back
            back = grown
        back[m] = z
        m += 1
        z = draw_from_cdf(cdf_C_rev[z])
    return z0, m, back


@jit
def exact_staged_draws(cdf_rho, cdf_C_rev, cdf_kernels, z_restart, size, seed):
    """Exact stationary draws of a staged chain by walking the stage chain backwards to the last restart.

    Draw z_0 ~ rho (stationary law of C), walk the time-reversed stage chain C_rev back until the
    most recent time tau <= 0 with z_tau = z*, draw y_tau ~ u and run the stage kernels forward to
    time 0.  The reversed path is a stationary stage path, and y_tau ~ u is independent of
    everything before tau, so (z_0, y_0) is an exact draw of the joint stationary law.
    Returns ``(z, y, steps)`` with ``steps`` the kernel applications per draw (restart included).
    """
    np.random.seed(seed)
    zs = np.empty(size, dtype=np.int64)
    ys = np.empty(size, dtype=np.int64)
    steps = np.empty(size, dtype=np.int64)
    buf = np.empty(64, dtype=np.int64)
    for i in range(size):
        zs[i], m, buf = walk_back_to_restart(cdf_rho, cdf_C_rev, z_restart, buf)
        y = draw_from_cdf(cdf_kernels[z_restart, 0])
        for j in range(m - 1, -1, -1):
            y = draw_from_cdf(cdf_kernels[buf[j], y])
        ys[i] = y
        steps[i] = m + 1
    return zs, ys, steps
