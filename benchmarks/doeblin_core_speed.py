"""Speed of the one Doeblin core (:mod:`doeblin.core`) against the per-model loops it replaced.

Usage: ``NUMBA_CACHE_DIR=.numba_cache NUMBA_NUM_THREADS=1 python benchmarks/doeblin_core_speed.py [--repeats N]``

The baselines are faithful copies of the loops of ``doeblin/_kernels.py`` and ``doeblin/_seq_kernels.py`` before
the core unified them (git revision ``5ee6880^``), kept here, compiled with the project's jit helper; the
sequence model's building blocks (``sample_u``, ``gibbs_step``, ``log_u_grad``, ``gibbs_prob_grad``) are the
unchanged ones of :mod:`doeblin._seq_kernels`, so only the loops differ.  For every path the script first
checks that both give **identical** outputs at the same seed (the behaviour check), then times them
interleaved after a warm-up (Numba compilation excluded), and prints the median seconds and the ratio
``core / old`` (the goal is <= 1.1).  Times are the process's CPU time (``time.process_time``; the kernels
run on one thread), which a loaded machine disturbs much less than wall time.

Paths: finite chain (n = 50 states) -- Doeblin path, plain path (eps = 0), exact draws (Prop. 3.2), exact
draws within a budget, staged path and staged exact draws (3 stages); sequence model (L = 8, D = 5,
K = 4) -- exact draws, Doeblin path, Algorithm 1's gradient (Sec. 4.2).

Timings on a shared machine are still noisy (the load average is printed; ratios scatter by about 0.1 at a
load of 10 on 2 cores): compare ratios, not seconds.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from doeblin import _kernels as fk
from doeblin import _seq_kernels as sk
from doeblin.markov import stationary_gth
from samplers._jit import jit

# --------------------------------------------------------------------------- the old loops (5ee6880^)
# The measured baselines, kept on purpose: they restate the core's loops (doeblin/core.py, doeblin/_seq_kernels.py)
# as they were before the unification, so a repeated-code scan pairs them with the core (not to be merged).


@jit
def _old_draw_from_cdf(cdf_row):
    u = np.random.random() * cdf_row[cdf_row.shape[0] - 1]
    j = np.searchsorted(cdf_row, u, side="right")
    if j >= cdf_row.shape[0]:
        j = cdf_row.shape[0] - 1
    return j


@jit
def old_simulate_doeblin(cdf_A, cdf_u, eps, y0, n_steps, seed):
    np.random.seed(seed)
    path = np.empty(n_steps + 1, dtype=np.int64)
    restarts = np.zeros(n_steps + 1, dtype=np.bool_)
    y = y0
    if y < 0:
        y = _old_draw_from_cdf(cdf_u)
    path[0] = y
    for t in range(1, n_steps + 1):
        if np.random.random() < eps:
            y = _old_draw_from_cdf(cdf_u)
            restarts[t] = True
        else:
            y = _old_draw_from_cdf(cdf_A[y])
        path[t] = y
    return path, restarts


@jit
def old_simulate_plain(cdf_A, y0, n_steps, seed):
    np.random.seed(seed)
    path = np.empty(n_steps + 1, dtype=np.int64)
    y = y0
    path[0] = y
    for t in range(1, n_steps + 1):
        y = _old_draw_from_cdf(cdf_A[y])
        path[t] = y
    return path


@jit
def old_exact_doeblin_draws(cdf_A, cdf_u, eps, size, seed):
    np.random.seed(seed)
    out = np.empty(size, dtype=np.int64)
    steps = np.empty(size, dtype=np.int64)
    for i in range(size):
        y = _old_draw_from_cdf(cdf_u)
        T = np.random.geometric(eps) - 1
        for _ in range(T):
            y = _old_draw_from_cdf(cdf_A[y])
        out[i] = y
        steps[i] = T
    return out, steps


@jit
def old_exact_doeblin_budget(cdf_A, cdf_u, eps, budget, seed):
    np.random.seed(seed)
    out = np.empty(budget, dtype=np.int64)
    n = 0
    spent = 0
    while True:
        T = np.random.geometric(eps) - 1
        if spent + T + 1 > budget:
            break
        y = _old_draw_from_cdf(cdf_u)
        for _ in range(T):
            y = _old_draw_from_cdf(cdf_A[y])
        out[n] = y
        n += 1
        spent += T + 1
    return out[:n]


@jit
def old_simulate_staged(cdf_C, cdf_kernels, z_restart, z0, y0, n_steps, seed):
    np.random.seed(seed)
    zs = np.empty(n_steps + 1, dtype=np.int64)
    ys = np.empty(n_steps + 1, dtype=np.int64)
    z = z0
    y = y0
    if z < 0:
        z = z_restart
    if y < 0:
        y = _old_draw_from_cdf(cdf_kernels[z_restart, 0])
    zs[0] = z
    ys[0] = y
    for t in range(1, n_steps + 1):
        z = _old_draw_from_cdf(cdf_C[z])
        y = _old_draw_from_cdf(cdf_kernels[z, y])
        zs[t] = z
        ys[t] = y
    return zs, ys


@jit
def _old_walk_back(cdf_rho, cdf_C_rev, z_restart, back):
    z = _old_draw_from_cdf(cdf_rho)
    z0 = z
    m = 0
    while z != z_restart:
        if m == back.shape[0]:
            grown = np.empty(2 * m, dtype=np.int64)
            grown[:m] = back
            back = grown
        back[m] = z
        m += 1
        z = _old_draw_from_cdf(cdf_C_rev[z])
    return z0, m, back


@jit
def old_exact_staged_draws(cdf_rho, cdf_C_rev, cdf_kernels, z_restart, size, seed):
    np.random.seed(seed)
    zs = np.empty(size, dtype=np.int64)
    ys = np.empty(size, dtype=np.int64)
    steps = np.empty(size, dtype=np.int64)
    back = np.empty(64, dtype=np.int64)
    for i in range(size):
        z0, m, back = _old_walk_back(cdf_rho, cdf_C_rev, z_restart, back)
        y = _old_draw_from_cdf(cdf_kernels[z_restart, 0])
        for j in range(m - 1, -1, -1):
            y = _old_draw_from_cdf(cdf_kernels[back[j], y])
        zs[i] = z0
        ys[i] = y
        steps[i] = m + 1
    return zs, ys, steps


@jit
def old_seq_doeblin_draws(x, W_u, W_A, P, eps, size, seed):
    np.random.seed(seed)
    L = x.shape[0]
    K = W_u.shape[1]
    out = np.empty((size, L), dtype=np.int64)
    steps = np.empty(size, dtype=np.int64)
    buf = np.empty(K)
    y = np.empty(L, dtype=np.int64)
    for s in range(size):
        sk.sample_u(x, W_u, y, buf)
        T = np.random.geometric(eps) - 1
        for _ in range(T):
            sk.gibbs_step(x, W_A, P, y, buf)
        out[s] = y
        steps[s] = T
    return out, steps


@jit
def old_seq_simulate(x, W_u, W_A, P, eps, y0, n_steps, seed):
    np.random.seed(seed)
    L = x.shape[0]
    K = W_u.shape[1]
    buf = np.empty(K)
    y = y0.copy()
    path = np.empty((n_steps + 1, L), dtype=np.int64)
    path[0] = y
    for t in range(1, n_steps + 1):
        if np.random.random() < eps:
            sk.sample_u(x, W_u, y, buf)
        else:
            sk.gibbs_step(x, W_A, P, y, buf)
        path[t] = y
    return path


@jit
def old_algorithm1_chains(x, y, W_u, W_A, P, eps, k, seed):
    np.random.seed(seed)
    L, D = x.shape
    K = W_u.shape[1]
    n_params = 2 * D * K + K * K
    G = np.zeros((k, n_params))
    Z = np.zeros(k)
    steps = np.empty(k, dtype=np.int64)
    scratch = sk.GradScratch(np.empty(K), np.empty(K), np.empty(L))
    buf, logp = scratch.buf, scratch.logp
    for c in range(k):
        T = np.random.geometric(eps) - 1
        steps[c] = T
        path = np.empty((max(T, 1), L), dtype=np.int64)
        yy = np.empty(L, dtype=np.int64)
        sk.sample_u(x, W_u, yy, buf)
        if T > 0:
            path[0] = yy
            for t in range(1, T):
                sk.gibbs_step(x, W_A, P, yy, buf)
                path[t] = yy
        g = G[c]
        w0 = eps * np.exp(sk.log_u_grad(x, W_u, y, g, 0.0, buf, logp))
        w = np.empty(T + 1)
        w[0] = w0
        for t in range(1, T + 1):
            w[t] = eps * sk.gibbs_prob_grad(x, W_A, P, path[t - 1], y, g, 0.0, scratch)
        Z[c] = w.sum()
        if Z[c] == 0.0:
            continue
        sk.log_u_grad(x, W_u, y, g, w0, buf, logp)
        suffix = 0.0
        for t in range(T, 0, -1):
            if t < T and suffix != 0.0:
                sk.gibbs_prob_grad(x, W_A, P, path[t - 1], path[t], g, suffix, scratch)
            if w[t] != 0.0:
                sk.gibbs_prob_grad(x, W_A, P, path[t - 1], y, g, w[t], scratch)
            suffix += w[t]
        if T > 0 and suffix != 0.0:
            sk.log_u_grad(x, W_u, path[0], g, suffix, buf, logp)
    return G, Z, steps


# --------------------------------------------------------------------------- problems and paths


def _cdf_rows(rng, shape, concentration=0.3):
    return np.ascontiguousarray(np.cumsum(rng.dirichlet(np.full(shape[-1], concentration), size=shape[:-1]), axis=-1))


def paths(scale: float) -> list[tuple[str, object, object]]:
    """``(name, old call, core call)`` for each path; ``scale`` multiplies the work per call."""
    rng = np.random.default_rng(0)
    n, n_stages = 50, 3
    cdf_A, cdf_u = _cdf_rows(rng, (n, n)), _cdf_rows(rng, (n,))
    C = rng.dirichlet(np.ones(n_stages), size=n_stages)
    rho = stationary_gth(C)
    C_rev = (C.T * rho[None, :]) / rho[:, None]
    cdf_C, cdf_rho, cdf_C_rev = np.cumsum(C, axis=1), np.cumsum(rho), np.cumsum(C_rev, axis=1)
    kernels = _cdf_rows(rng, (n_stages, n, n))
    kernels[0] = cdf_u[None, :]  # the restart stage's rows are u
    steps, size = int(400_000 * scale), int(40_000 * scale)
    L, D, K = 8, 5, 4
    x = rng.normal(size=(L, D))
    W_u, W_A, P = rng.normal(size=(D, K)), rng.normal(size=(D, K)), rng.normal(size=(K, K))
    model = sk.sequence_chain(x, W_u, W_A, P)
    y0 = rng.integers(0, K, size=L)
    y = rng.integers(0, K, size=L)
    seq_size, seq_steps, chains = int(4000 * scale), int(40_000 * scale), int(4000 * scale)
    return [
        ("finite Doeblin path", lambda: old_simulate_doeblin(cdf_A, cdf_u, 0.05, -1, steps, 1),
         lambda: fk.simulate_doeblin(cdf_A, cdf_u, 0.05, -1, steps, 1)),
        ("finite plain path", lambda: old_simulate_plain(cdf_A, 3, steps, 1),
         lambda: fk.simulate_plain(cdf_A, 3, steps, 1)),
        ("finite exact draws", lambda: old_exact_doeblin_draws(cdf_A, cdf_u, 0.1, size, 1),
         lambda: fk.exact_doeblin_draws(cdf_A, cdf_u, 0.1, size, 1)),
        ("finite exact draws, budget", lambda: old_exact_doeblin_budget(cdf_A, cdf_u, 0.1, steps, 1),
         lambda: fk.exact_doeblin_budget(cdf_A, cdf_u, 0.1, steps, 1)),
        ("staged path", lambda: old_simulate_staged(cdf_C, kernels, 0, -1, -1, steps, 1),
         lambda: fk.simulate_staged(cdf_C, kernels, 0, -1, -1, steps, 1)),
        ("staged exact draws", lambda: old_exact_staged_draws(cdf_rho, cdf_C_rev, kernels, 0, size, 1),
         lambda: fk.exact_staged_draws(cdf_rho, cdf_C_rev, kernels, 0, size, 1)),
        ("sequence exact draws", lambda: old_seq_doeblin_draws(x, W_u, W_A, P, 0.1, seq_size, 1),
         lambda: sk.seq_doeblin_draws(model, 0.1, seq_size, 1)),
        ("sequence Doeblin path", lambda: old_seq_simulate(x, W_u, W_A, P, 0.1, y0, seq_steps, 1),
         lambda: sk.seq_simulate(model, 0.1, y0, seq_steps, 1)),
        ("sequence Algorithm 1 gradient", lambda: old_algorithm1_chains(x, y, W_u, W_A, P, 0.2, chains, 1),
         lambda: sk.algorithm1_chains(model, y, 0.2, chains, 1)),
    ]


def _same(a, b) -> bool:
    a = a if isinstance(a, tuple) else (a,)
    b = b if isinstance(b, tuple) else (b,)
    return len(a) == len(b) and all(np.array_equal(u, v) for u, v in zip(a, b))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9, help="timed repeats per path (median)")
    parser.add_argument("--scale", type=float, default=1.0, help="work per call (1: ~10-100 ms per call)")
    args = parser.parse_args()
    if args.repeats < 1 or not args.scale > 0:
        parser.error("--repeats must be >= 1 and --scale > 0")
    print(f"load average {os.getloadavg()[0]:.1f}; {args.repeats} interleaved repeats, median CPU times; "
          "ratio = core / old")
    print("| path | old (ms) | core (ms) | ratio | identical output |")
    print("|---|---:|---:|---:|---|")
    for name, old, new in paths(args.scale):
        same = _same(old(), new())  # also the warm-up (compilation)
        t_old, t_new = [], []
        for _ in range(args.repeats):
            for fn, times in ((old, t_old), (new, t_new)):
                start = time.process_time()
                fn()
                times.append(time.process_time() - start)
        m_old, m_new = float(np.median(t_old)), float(np.median(t_new))
        print(f"| {name} | {1e3 * m_old:.1f} | {1e3 * m_new:.1f} | {m_new / m_old:.2f} | {'yes' if same else 'NO'} |",
              flush=True)


if __name__ == "__main__":
    main()
