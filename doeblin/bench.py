"""Harness suites ``doeblin-quick`` and ``doeblin-mixing``.

Problems are finite chains with exact stationary laws (GTH elimination): the base kernel's ``pi``
(target ``pi_base``) and the Doeblin chain's ``pi~`` (target ``pi_doeblin``).  Estimators spend the
same number of kernel applications (the budget; a restart draw from ``u`` counts as one):

* ``plain-mcmc`` — one run of the base kernel A from ``y0 ~ u``; visit frequencies estimate
  ``pi_base``.
* ``doeblin-ergodic`` — one run of ``A~``; visit frequencies estimate ``pi_doeblin`` (and, as an
  approximation, ``pi_base``).
* ``doeblin-exact`` — exact i.i.d. draws of ``pi~`` (Prop. 3.2) until the budget is spent.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np

from samplers.harness.estimator import Estimator
from samplers.harness.problem import Problem
from samplers.harness.registry import Suite
from samplers.rng import kernel_seed

from ._kernels import exact_doeblin_budget, simulate_doeblin, simulate_plain
from .chains import StrongDoeblinChain
from .examples import metastable_chain, random_chain, three_state_chain


class DoeblinChainProblem(Problem):
    """A finite strong Doeblin chain; targets ``pi_base`` (stationary law of A) and ``pi_doeblin``.

    Parameters
    ----------
    name : str
    chain : StrongDoeblinChain
    """

    def __init__(self, name: str, chain: StrongDoeblinChain):
        if not isinstance(chain, StrongDoeblinChain):
            raise TypeError(f"chain must be a StrongDoeblinChain, got {type(chain).__name__}")
        self.name = name
        self.chain = chain
        self.provenance = "GTH elimination of A and of (1 - eps) A + eps 1 u (doeblin.markov.stationary_gth)"

    @cached_property
    def _exact(self) -> dict[str, Any]:
        return {"pi_base": self.chain.base_stationary(), "pi_doeblin": self.chain.stationary(method="gth")}

    def exact(self) -> dict[str, Any]:
        return dict(self._exact)

    def size(self) -> dict[str, int]:
        return {"n_states": self.chain.n_states, "inv_eps": int(round(1.0 / self.chain.eps))}


def _frequencies(states: np.ndarray, n: int) -> np.ndarray:
    if states.shape[0] == 0:
        return np.full(n, 1.0 / n)
    return np.bincount(states, minlength=n) / states.shape[0]


class _ChainEstimator(Estimator):
    """Base: the budget is kernel applications, also reported as ``evaluations`` (machine-independent)."""

    budget_label = "kernel applications"

    def supports(self, problem) -> bool:
        return isinstance(getattr(problem, "chain", None), StrongDoeblinChain)


class PlainMCMCEstimator(_ChainEstimator):
    """Visit frequencies of one run of the base kernel A (``budget`` steps, start ``y0 ~ u``)."""

    name = "plain-mcmc"

    def estimate(self, problem, budget: int, seed: int) -> dict[str, Any]:
        c = problem.chain
        gen = np.random.default_rng(seed)
        y0 = int(gen.choice(c.n_states, p=c.u))
        path = simulate_plain(c._cdf_A, y0, int(budget) - 1, kernel_seed(gen))
        return {"pi_base": _frequencies(path, c.n_states), "evaluations": int(budget)}


class DoeblinErgodicEstimator(_ChainEstimator):
    """Visit frequencies of one run of ``A~`` (``budget`` kernel applications)."""

    name = "doeblin-ergodic"

    def estimate(self, problem, budget: int, seed: int) -> dict[str, Any]:
        c = problem.chain
        path, _ = simulate_doeblin(c._cdf_A, c._cdf_u, c.eps, -1, int(budget) - 1, kernel_seed(seed))
        freq = _frequencies(path, c.n_states)
        return {"pi_doeblin": freq, "pi_base": freq, "evaluations": int(budget)}


class DoeblinExactEstimator(_ChainEstimator):
    """Frequencies of exact draws of ``pi~`` (Prop. 3.2) within ``budget`` kernel applications."""

    name = "doeblin-exact"

    def estimate(self, problem, budget: int, seed: int) -> dict[str, Any]:
        c = problem.chain
        draws = exact_doeblin_budget(c._cdf_A, c._cdf_u, c.eps, int(budget), kernel_seed(seed))
        freq = _frequencies(draws, c.n_states)
        return {"pi_doeblin": freq, "pi_base": freq, "evaluations": int(budget)}


def _estimators() -> list[Estimator]:
    return [PlainMCMCEstimator(), DoeblinErgodicEstimator(), DoeblinExactEstimator()]


def warm_up_kernels() -> None:
    """Compile (or load from cache) the kernels so compile time stays out of the first run."""
    chain = StrongDoeblinChain(np.eye(2), np.array([0.5, 0.5]), 0.5)
    problem = DoeblinChainProblem("warm-up", chain)
    for est in _estimators():
        est.estimate(problem, 4, 0)


def quick_problems() -> list[DoeblinChainProblem]:
    """Fig. 1's three-state chain (delta = 1e-3, eps = 0.05), a random 6-state chain (eps = 0.1) and
    a two-well metastable 8-state chain (barrier 1e-3, eps = 0.05)."""
    uniform = lambda n: np.full(n, 1.0 / n)  # noqa: E731
    return [DoeblinChainProblem("fig1-3state", StrongDoeblinChain(three_state_chain(1e-3), uniform(3), 0.05)),
            DoeblinChainProblem("random-6", StrongDoeblinChain(random_chain(6, seed=1), uniform(6), 0.1)),
            DoeblinChainProblem("metastable-8", StrongDoeblinChain(metastable_chain(4, 1e-3, seed=2),
                                                                   uniform(8), 0.05))]


def doeblin_quick_suite() -> Suite:
    """Plain MCMC vs Doeblin ergodic averages vs exact Doeblin draws on three small chains, at
    100 / 1000 / 10000 kernel applications."""
    warm_up_kernels()
    return Suite(problems=quick_problems(), estimators=_estimators(), budgets=[100, 1000, 10000], replicates=5,
                 description="stationary laws of small (incl. slow-mixing) chains: plain MCMC vs strong Doeblin "
                             "chain (ergodic average, exact draws) at equal kernel applications",
                 extra={"convention": "row-stochastic", "cost": "one kernel application per A step or restart"})


def mixing_problems() -> list[DoeblinChainProblem]:
    """Slow chains over a range of restart rates: Fig. 1 (delta = 1e-4) with eps in {1e-1, 1e-2,
    1e-3}, and metastable 10-state chains (barrier 1e-4) with eps in {1e-1, 1e-2}."""
    out = []
    for eps in (1e-1, 1e-2, 1e-3):
        out.append(DoeblinChainProblem(f"fig1-eps{eps:g}", StrongDoeblinChain(three_state_chain(1e-4),
                                                                           np.full(3, 1 / 3), eps)))
    A = metastable_chain(5, 1e-4, seed=3)
    for eps in (1e-1, 1e-2):
        out.append(DoeblinChainProblem(f"metastable-10-eps{eps:g}", StrongDoeblinChain(A, np.full(10, 0.1), eps)))
    return out


def doeblin_mixing_suite() -> Suite:
    """Error vs cost on slow chains (budgets 1e3..1e6 kernel applications)."""
    warm_up_kernels()
    return Suite(problems=mixing_problems(), estimators=_estimators(), budgets=[1000, 10000, 100000, 1000000],
                 replicates=10,
                 description="ergodic averages vs exact Doeblin draws vs plain MCMC on slow-mixing chains, "
                             "as the restart rate varies",
                 extra={"convention": "row-stochastic"})
