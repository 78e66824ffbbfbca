"""Numba kernels for finite-state (strong and staged) Doeblin chains: the finite models of :mod:`doeblin.core`.

Plain arrays in, plain arrays out, no validation (the wrappers in :mod:`doeblin.chains` and
:mod:`doeblin.estimators` validate).  Convention everywhere: transition matrices are **row-stochastic**,
``A[i, j] = P(next = j | current = i)``; kernels that draw take cumulative rows (``cdf[i, j] =
sum_{l <= j} A[i, l]``) so a draw is one uniform and a binary search.  A state is an int64 array of
length 1 holding the state index (the core's kernels update states in place).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from samplers._jit import jit
from samplers.models._factor_kernels import gibbs_sweep_factors
from samplers.models._kernels import gibbs_sweep
from samplers.models.factor_graph import FactorBundle

from . import core
from .core import draw_from_cdf, implements, move, restart, stage_move


class FiniteChain(NamedTuple):
    """A finite strong Doeblin chain: cumulative rows of ``A`` (n, n) and of ``u`` (n,)."""

    cdf_A: np.ndarray
    cdf_u: np.ndarray


class FiniteStagedChain(NamedTuple):
    """Stage kernels of a finite staged chain: cumulative rows (k, n, n); the restart stage's rows are u."""

    cdf_kernels: np.ndarray


@implements(restart, FiniteChain)
def _finite_restart(model, state):
    state[0] = draw_from_cdf(model.cdf_u)


@implements(move, FiniteChain)
def _finite_move(model, state):
    state[0] = draw_from_cdf(model.cdf_A[state[0]])


@implements(stage_move, FiniteStagedChain)
def _finite_stage_move(model, stage, state):
    state[0] = draw_from_cdf(model.cdf_kernels[stage, state[0]])


@jit(inline="always")
def _draw_sites(cdf_rows, state):
    """``state[i] ~ cdf_rows[i]`` for every site: one draw of a model of independent sites (the restart
    law ``u`` of the Gibbs-sweep chains, their unary-only model)."""
    for i in range(state.shape[0]):
        state[i] = draw_from_cdf(cdf_rows[i])


class GibbsSweepChain(NamedTuple):
    """The Doeblin chain of a pairwise MRF (:mod:`doeblin.estimators`): ``u`` is the unary-only model
    (cumulative rows ``cdf_unary`` (n_vars, K)), ``A`` one systematic-scan Gibbs sweep over the CSR
    neighbour structure of :mod:`samplers.models._kernels`; ``logits`` (K,) is scratch.  A state is the
    int64 configuration (n_vars,)."""

    cdf_unary: np.ndarray
    unary: np.ndarray
    nbr_ptr: np.ndarray
    nbr_var: np.ndarray
    nbr_pot: np.ndarray
    logits: np.ndarray


@implements(restart, GibbsSweepChain)
def _gibbs_restart(model, state):
    _draw_sites(model.cdf_unary, state)


@implements(move, GibbsSweepChain)
def _gibbs_move(model, state):
    gibbs_sweep(state, model.unary, model.nbr_ptr, model.nbr_var, model.nbr_pot, 1.0, model.logits)


class FactorSweepChain(NamedTuple):
    """The Doeblin chain of a factor graph (:func:`doeblin.estimators.doeblin_factor_draws`): ``u`` is the
    unary-only model (cumulative rows ``cdf_unary`` (n_vars, max_states),
    :func:`samplers.models.factor_gibbs.unary_cdf`), ``A`` one systematic-scan Gibbs sweep over the factor
    bundle (:func:`samplers.models._factor_kernels.gibbs_sweep_factors`, hard zeros kept).  ``logits``
    (max_states,) is scratch and ``no_sums`` (0, max_states) tells the sweep to accumulate nothing.  A
    state is the int64 configuration (n_vars,)."""

    cdf_unary: np.ndarray
    bundle: FactorBundle
    logits: np.ndarray
    no_sums: np.ndarray


@implements(restart, FactorSweepChain)
def _factor_restart(model, state):
    _draw_sites(model.cdf_unary, state)


@implements(move, FactorSweepChain)
def _factor_move(model, state):
    gibbs_sweep_factors(state, 1.0, -np.inf, model.bundle, model.logits, model.no_sums)


@jit
def gibbs_doeblin_draws(model, eps, size, seed):
    """Exact draws of a Gibbs-sweep Doeblin chain (Prop. 3.2), :class:`GibbsSweepChain` or
    :class:`FactorSweepChain`; returns ``(draws (size, n_vars), sweeps)``."""
    return core.seeded_exact_draws(model, model.cdf_unary.shape[0], eps, size, seed)


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
def _start(model, y0):
    """A length-1 state at ``y0``, or drawn from u when ``y0 < 0``."""
    state = np.zeros(1, dtype=np.int64)
    if y0 < 0:
        _finite_restart(model, state)
    else:
        state[0] = y0
    return state


@jit
def simulate_doeblin(cdf_A, cdf_u, eps, y0, n_steps, seed):
    """Path of the strong Doeblin chain (Eq. 2): each step restarts from u w.p. eps, else moves by A.

    ``y0 < 0`` draws the initial state from u.  Returns ``(path, restarts)`` where ``path`` has
    ``n_steps + 1`` states and ``restarts[t]`` says whether step t (t >= 1) was a restart.
    """
    np.random.seed(seed)
    model = FiniteChain(cdf_A, cdf_u)
    state = _start(model, y0)
    path = np.empty((n_steps + 1, 1), dtype=np.int64)
    restarts = np.zeros(n_steps + 1, dtype=np.bool_)
    core.doeblin_path(model, state, eps, path, restarts)
    return path[:, 0], restarts


@jit
def simulate_plain(cdf_A, y0, n_steps, seed):
    """Path of the plain chain A (the Doeblin chain with eps = 0) from ``y0 >= 0`` (``n_steps + 1`` states)."""
    np.random.seed(seed)
    model = FiniteChain(cdf_A, cdf_A[0])
    path = np.empty((n_steps + 1, 1), dtype=np.int64)
    core.doeblin_path(model, _start(model, y0), 0.0, path, np.empty(n_steps + 1, dtype=np.bool_))
    return path[:, 0]


@jit
def exact_doeblin_draws(cdf_A, cdf_u, eps, size, seed):
    """Exact stationary draws (Prop. 3.2); returns ``(draws, steps)`` with ``steps[i] = T_i``."""
    out, steps = core.seeded_exact_draws(FiniteChain(cdf_A, cdf_u), 1, eps, size, seed)
    return out[:, 0], steps


@jit
def exact_doeblin_budget(cdf_A, cdf_u, eps, budget, seed):
    """Exact draws until ``budget`` kernel applications are spent (a restart and each A step cost 1)."""
    np.random.seed(seed)
    out = np.empty((budget, 1), dtype=np.int64)
    n = core.exact_doeblin_budget(FiniteChain(cdf_A, cdf_u), np.zeros(1, dtype=np.int64), eps, budget, out)
    return out[:n, 0].copy()


@jit
def simulate_staged(cdf_C, cdf_kernels, z_restart, z0, y0, n_steps, seed):
    """Path of a staged chain (Sec. 3.1): z_t ~ C(. | z_{t-1}), then y_t ~ A_{z_t}(. | y_{t-1}).

    Negative ``z0``/``y0`` start from (z*, y ~ u).  Returns ``(z_path, y_path)`` of length ``n_steps + 1``.
    """
    np.random.seed(seed)
    model = FiniteStagedChain(cdf_kernels)
    z = z_restart if z0 < 0 else z0
    state = np.zeros(1, dtype=np.int64)
    if y0 < 0:
        _finite_stage_move(model, z_restart, state)
    else:
        state[0] = y0
    zs = np.empty(n_steps + 1, dtype=np.int64)
    ys = np.empty((n_steps + 1, 1), dtype=np.int64)
    core.staged_path(model, cdf_C, z, state, zs, ys)
    return zs, ys[:, 0]


@jit
def exact_staged_draws(cdf_rho, cdf_C_rev, cdf_kernels, z_restart, size, seed):
    """Exact stationary draws of a finite staged chain (:func:`doeblin.core.exact_staged_draws`).

    Returns ``(z, y, steps)`` with ``steps`` the kernel applications per draw (restart included).
    """
    np.random.seed(seed)
    zs = np.empty(size, dtype=np.int64)
    ys = np.empty((size, 1), dtype=np.int64)
    steps = np.empty(size, dtype=np.int64)
    core.exact_staged_draws(FiniteStagedChain(cdf_kernels), cdf_rho, cdf_C_rev, z_restart, np.zeros(1, dtype=np.int64),
                            zs, ys, steps)
    return zs, ys[:, 0], steps
