"""Doeblin's suites, as data: ``doeblin-quick`` and ``doeblin-mixing``.

Problems are finite chains with exact stationary laws (:class:`doeblin.problems.DoeblinChainProblem`);
estimators spend the same number of kernel applications (:mod:`doeblin.estimators`).
"""

from __future__ import annotations

import numpy as np

from samplers.harness import Suite

from .chains import StrongDoeblinChain
from .estimators import chain_estimators
from .examples import metastable_chain, random_chain, three_state_chain
from .problems import DoeblinChainProblem


def warm_up_kernels() -> None:
    """Compile (or load from cache) the kernels so compile time stays out of the first run."""
    problem = DoeblinChainProblem("warm-up", StrongDoeblinChain(np.eye(2), np.array([0.5, 0.5]), 0.5))
    for est in chain_estimators():
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
    return Suite(problems=quick_problems(), estimators=chain_estimators(), budgets=[100, 1000, 10000], replicates=5,
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
    return Suite(problems=mixing_problems(), estimators=chain_estimators(), budgets=[1000, 10000, 100000, 1000000],
                 replicates=10,
                 description="ergodic averages vs exact Doeblin draws vs plain MCMC on slow-mixing chains, "
                             "as the restart rate varies",
                 extra={"convention": "row-stochastic"})
