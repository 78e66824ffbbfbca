"""Doeblin estimators, one class per method.

On finite chains (``"finite-chain"`` problems, :mod:`doeblin.problems`) every estimator spends the
same number of kernel applications (the budget; a restart draw from ``u`` counts as one):

* :class:`PlainMCMCEstimator` — one run of the base kernel A from ``y0 ~ u``; visit frequencies
  estimate ``pi_base``;
* :class:`DoeblinErgodicEstimator` — one run of ``A~``; visit frequencies estimate ``pi_doeblin``
  (and, as an approximation, ``pi_base``);
* :class:`DoeblinExactEstimator` — exact i.i.d. draws of ``pi~`` (Prop. 3.2) until the budget is spent.

On pairwise MRFs, chain CRFs and factor graphs, :class:`DoeblinGibbsEstimator` runs strong Doeblin
chains over Gibbs sweeps, as follows (on factor graphs: :func:`doeblin_factor_draws`).

The base kernel ``A`` is one systematic-scan Gibbs sweep of the model (sites 0, 1, ..., n-1, as in
:meth:`samplers.models.PairwiseMRF.gibbs_sample`) and the restart law ``u`` is the unary-only model
(independent sites).  The strong Doeblin chain ``A~ = (1 - eps) A + eps 1 u`` (Steinhardt & Liang
2015, Eq. 2) has the stationary law

    pi_eps = eps sum_{k >= 0} (1 - eps)^k u A^k,

from which **exact i.i.d. draws** cost a geometric number of sweeps (Prop. 3.2: ``y0 ~ u``,
``T ~ Geometric(eps)`` on {0, 1, ...}, then ``T`` sweeps), mean ``(1 - eps) / eps``.  So the
estimate has no burn-in and no autocorrelation, but it targets ``pi_eps``, not the model ``pi``:
its bias is ``marginals(pi_eps) - marginals(pi)``, which vanishes only as ``eps -> 0`` (or when the
sweep mixes in a few steps).  :func:`doeblin_gibbs_stationary` computes that bias exactly for small
models (the chain over all joint states, :class:`doeblin.StrongDoeblinChain`).

No log Z estimator is offered: ``pi_eps`` has no tractable density, so its draws carry no
importance weights for Z.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import logsumexp

from samplers.harness import KindEstimator
from samplers.harness.problem import EVALUATIONS
from samplers.models import FactorGraph, PairwiseMRF
from samplers.models.factor_gibbs import has_hard_zeros, unary_cdf
from samplers.problems import CHAIN_CRF, FACTOR_GRAPH, FINITE_CHAIN, PAIRWISE_MRF
from samplers.rng import kernel_seed
from samplers.validation import check_int

from ._kernels import (
    FactorSweepChain,
    GibbsSweepChain,
    exact_doeblin_budget,
    gibbs_doeblin_draws,
    simulate_doeblin,
    simulate_plain,
)
from .chains import MAX_EXPECTED_STEPS, StrongDoeblinChain, check_draw_cost, check_eps

#: Largest joint state space :func:`doeblin_gibbs_stationary` builds the chain over.
MAX_JOINT_STATES = 4096


def doeblin_gibbs_draws(mrf: PairwiseMRF, n_draws: int, eps: float, seed: Any = None, *,
                        max_steps: int = MAX_EXPECTED_STEPS) -> tuple[np.ndarray, int]:
    """Exact draws from ``pi_eps`` of the Gibbs-sweep Doeblin chain (module docstring), through the one
    exact-draw kernel :func:`doeblin.core.exact_doeblin_draws` (model :class:`doeblin._kernels.GibbsSweepChain`).

    Parameters
    ----------
    mrf : PairwiseMRF
        The model whose Gibbs sweep is the chain's base kernel ``A``.
    n_draws : int
        Number of independent exact draws.
    eps : float
        Restart probability in (0, 1].
    seed : int, Generator or None
        Randomness (SPEC 7).
    max_steps : int
        Refuse (ValueError) when the expected number of sweeps, ``n_draws (1 - eps) / eps``, exceeds it.

    Returns
    -------
    draws : ndarray of int64 (n_draws, n_vars)
    sweeps : int
        Total Gibbs sweeps spent (the cost), ``sum T_i``.
    """
    if not isinstance(mrf, PairwiseMRF):
        raise TypeError(f"mrf must be a PairwiseMRF, got {type(mrf).__name__}")
    unary = mrf.log_unary
    probs = np.exp(unary - logsumexp(unary, axis=1, keepdims=True))
    ptr, nbr, pot = mrf.neighbours
    model = GibbsSweepChain(np.ascontiguousarray(np.cumsum(probs, axis=1)), unary, ptr, nbr, pot,
                            np.empty(unary.shape[1]))
    return _exact_draws(model, n_draws, eps, seed, max_steps)


def doeblin_factor_draws(fg: FactorGraph, n_draws: int, eps: float, seed: Any = None, *,
                         max_steps: int = MAX_EXPECTED_STEPS) -> tuple[np.ndarray, int]:
    """Exact draws from ``pi_eps`` of the Doeblin chain over Gibbs sweeps of a factor graph, through the
    one exact-draw kernel :func:`doeblin.core.exact_doeblin_draws` (model
    :class:`doeblin._kernels.FactorSweepChain`): restart law ``u`` = its unary-only model
    (:func:`samplers.models.factor_gibbs.unary_cdf`), base kernel ``A`` = one Numba sweep over the factor
    bundle (as :func:`samplers.models.factor_gibbs.gibbs_move`).

    With hard zeros in factors of arity >= 2, a restart may land on an impossible configuration that
    the sweep need not leave (a variable with no possible state keeps its own), so ``pi_eps`` can put
    mass there: the bias then includes configurations of probability zero.

    Parameters
    ----------
    fg : FactorGraph
        The model whose Gibbs sweep is the chain's base kernel ``A`` (condition on evidence first).
    n_draws, eps, seed, max_steps
        As in :func:`doeblin_gibbs_draws`.

    Returns
    -------
    draws, sweeps
        As in :func:`doeblin_gibbs_draws`.
    """
    if not isinstance(fg, FactorGraph):
        raise TypeError(f"fg must be a FactorGraph, got {type(fg).__name__}")
    model = FactorSweepChain(unary_cdf(fg), fg.bundle, np.empty(fg.max_states), np.zeros((0, fg.max_states)))
    return _exact_draws(model, n_draws, eps, seed, max_steps)


def _exact_draws(model, n_draws: int, eps: float, seed: Any, max_steps: int) -> tuple[np.ndarray, int]:
    """Validate, bound the expected cost, and draw through the one exact-draw kernel (Prop. 3.2)."""
    n_draws = check_int(n_draws, "n_draws", low=1)
    eps = check_eps(eps)
    check_draw_cost((1.0 - eps) / eps, n_draws, max_steps, f"eps = {eps:g}")
    draws, steps = gibbs_doeblin_draws(model, eps, n_draws, kernel_seed(seed))
    return draws, int(steps.sum())


def gibbs_sweep_matrix(mrf: PairwiseMRF) -> np.ndarray:
    """Row-stochastic matrix of one systematic-scan Gibbs sweep over all joint states
    (:meth:`PairwiseMRF.configuration_index` order); refuses beyond :data:`MAX_JOINT_STATES`."""
    size = mrf.n_configurations
    if size > MAX_JOINT_STATES:
        raise ValueError(f"the model has {size} joint states, more than {MAX_JOINT_STATES}: the sweep matrix "
                         "would not fit")
    states = np.array(np.unravel_index(np.arange(size), tuple(int(k) for k in mrf.n_states))).T
    logp = mrf.log_unnormalized(states)
    radix = [int(np.prod(mrf.n_states[i + 1:])) for i in range(mrf.n_vars)]  # stride of each variable
    A = np.eye(size)
    for i in range(mrf.n_vars):
        k = int(mrf.n_states[i])
        base = np.arange(size) - states[:, i] * radix[i]  # index with x_i = 0
        nbrs = base[:, None] + np.arange(k)[None, :] * radix[i]  # (S, k)
        logits = logp[nbrs]
        cond = np.exp(logits - logits.max(axis=1, keepdims=True))
        cond /= cond.sum(axis=1, keepdims=True)
        G = np.zeros((size, size))
        np.put_along_axis(G, nbrs, cond, axis=1)
        A = A @ G
    return A


def doeblin_gibbs_stationary(mrf: PairwiseMRF, eps: float) -> dict[str, np.ndarray]:
    """Exact marginals of ``pi_eps`` and the bias they imply against the model's exact marginals.

    Returns
    -------
    dict
        ``{"marginals": pi_eps marginals (n_vars, max_states), "bias": marginals - exact marginals}``.
    """
    A = gibbs_sweep_matrix(mrf)
    states = np.array(np.unravel_index(np.arange(A.shape[0]), tuple(int(k) for k in mrf.n_states))).T
    logu = mrf.log_unary[np.arange(mrf.n_vars), states].sum(axis=1)
    u = np.exp(logu - logu.max())
    pi_eps = StrongDoeblinChain(A, u / u.sum(), eps).stationary()
    marg = np.stack([np.bincount(states[:, i], weights=pi_eps, minlength=mrf.max_states)
                     for i in range(mrf.n_vars)])
    return {"marginals": marg, "bias": marg - mrf.marginals_exact()}


class DoeblinGibbsEstimator(KindEstimator):
    """Marginals from exact draws of the Gibbs-sweep Doeblin chain; budget = number of draws.

    Biased by ``marginals(pi_eps) - marginals(pi)`` (:func:`doeblin_gibbs_stationary`); mean cost
    ``(1 - eps) / eps`` sweeps per draw.  Declines (:meth:`supports`) factor graphs with a zero in a
    factor of arity >= 2: its restarts from the unary-only model land on configurations the model forbids,
    which the sweep need not leave, so ``pi_eps`` would weigh impossible states (on the UAI instances
    2bitcomp_5, Promedus_33 and linkage_16, 92-100% of the draws at ``eps = 0.1``).
    """

    family = "doeblin"
    budget_label = "draws"
    kinds = {PAIRWISE_MRF: ("marginals",), CHAIN_CRF: ("marginals",), FACTOR_GRAPH: ("marginals",)}
    quick_budgets = (20, 100)
    budgets = (20, 100, 400)

    def __init__(self, eps: float = 0.1):
        self.eps = check_eps(eps)
        self.name = f"doeblin-gibbs-eps{self.eps:g}"

    def supports(self, problem) -> bool:
        """Whether ``problem`` is of a supported kind, and not a factor graph with hard zeros (class docstring)."""
        return super().supports(problem) and not (problem.kind == FACTOR_GRAPH and has_hard_zeros(problem.model))

    def _estimate(self, problem, budget: int, seed: int, targets: tuple) -> dict[str, Any]:
        if problem.kind == FACTOR_GRAPH:
            model = problem.model
            draws, sweeps = doeblin_factor_draws(model, budget, self.eps, seed)
            marg = np.stack([np.bincount(draws[:, i], minlength=model.max_states) for i in range(model.n_vars)])
            return {"marginals": problem.expand(marg / budget), EVALUATIONS: (sweeps + budget) * model.n_vars}
        draws, sweeps = doeblin_gibbs_draws(problem.mrf, budget, self.eps, seed)
        return {"marginals": problem.mrf.marginals_from_samples(draws),
                EVALUATIONS: (sweeps + budget) * problem.mrf.n_vars}  # single-site updates and restart draws


def doeblin_estimators() -> list[DoeblinGibbsEstimator]:
    """The cross estimators: Doeblin-Gibbs marginals at restart probabilities 0.05 and 0.2."""
    return [DoeblinGibbsEstimator(0.05), DoeblinGibbsEstimator(0.2)]


def _frequencies(states: np.ndarray, n: int) -> np.ndarray:
    if states.shape[0] == 0:
        return np.full(n, 1.0 / n)
    return np.bincount(states, minlength=n) / states.shape[0]


class _FiniteChainEstimator(KindEstimator):
    """Base: the budget is kernel applications, also reported as ``evaluations`` (machine-independent)."""

    family = "doeblin"
    budget_label = "kernel applications"
    kinds = {FINITE_CHAIN: ("pi_doeblin", "pi_base")}


class PlainMCMCEstimator(_FiniteChainEstimator):
    """Visit frequencies of one run of the base kernel A (``budget`` steps, start ``y0 ~ u``): ``pi_base``."""

    name = "plain-mcmc"
    kinds = {FINITE_CHAIN: ("pi_base",)}

    def _estimate(self, problem, budget, seed, targets):
        c = problem.chain
        gen = np.random.default_rng(seed)
        y0 = int(gen.choice(c.n_states, p=c.u))
        path = simulate_plain(c._cdf_A, y0, budget - 1, kernel_seed(gen))
        return {"pi_base": _frequencies(path, c.n_states), EVALUATIONS: budget}


class DoeblinErgodicEstimator(_FiniteChainEstimator):
    """Visit frequencies of one run of ``A~`` (``budget`` kernel applications)."""

    name = "doeblin-ergodic"

    def _estimate(self, problem, budget, seed, targets):
        c = problem.chain
        path, _ = simulate_doeblin(c._cdf_A, c._cdf_u, c.eps, -1, budget - 1, kernel_seed(seed))
        freq = _frequencies(path, c.n_states)
        return {"pi_doeblin": freq, "pi_base": freq, EVALUATIONS: budget}


class DoeblinExactEstimator(_FiniteChainEstimator):
    """Frequencies of exact draws of ``pi~`` (Prop. 3.2) within ``budget`` kernel applications."""

    name = "doeblin-exact"

    def _estimate(self, problem, budget, seed, targets):
        c = problem.chain
        draws = exact_doeblin_budget(c._cdf_A, c._cdf_u, c.eps, budget, kernel_seed(seed))
        freq = _frequencies(draws, c.n_states)
        return {"pi_doeblin": freq, "pi_base": freq, EVALUATIONS: budget}


def chain_estimators() -> list[_FiniteChainEstimator]:
    """Plain MCMC, Doeblin ergodic averages and exact Doeblin draws on finite chains."""
    return [PlainMCMCEstimator(), DoeblinErgodicEstimator(), DoeblinExactEstimator()]
