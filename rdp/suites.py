"""rdp's suites, as data: ``rdp-quick`` (small N, seconds) and ``rdp-table2`` (Table 2 of the paper).

Problems: synthetic chains and tree CRFs (:mod:`rdp.problems`); estimators: RDP with ``K2 = 1,
K1 = K - 1`` (the paper's setting), RDP with ``K1 = K2 = K / 2`` and Top-K (``K2 = 0``)
(:class:`rdp.estimators.RDPEstimator`); the budget is K in percent of N.
"""

from __future__ import annotations

from samplers.harness import Suite

from .estimators import RDPEstimator
from .problems import SyntheticChainProblem, TreeCRFProblem

REGIMES = ("dense", "intermediate", "long-tail")
#: The names of the paper's tables.
TABLE_NAMES = {"k2=1": "RDP (K2=1)", "k1=k2": "RDP (K1=K2)", "topk": "TopK"}


def rdp_quick_suite(replicates: int = 10) -> Suite:
    """Small chains (N = 200, T = 20) and trees (N = 60, T = 8): RDP vs Top-K in seconds."""
    problems = [SyntheticChainProblem(200, 20, r) for r in ("dense", "long-tail")] + [TreeCRFProblem(60, 8, "dense")]
    estimators = [RDPEstimator(s, TABLE_NAMES[s]) for s in ("k2=1", "topk")]
    budgets = {"RDP (K2=1)": [5, 20], "TopK": [20, 50]}
    return Suite(problems, estimators, budgets, replicates=replicates,
                 description="RDP (K2=1) at 5%/20% of N vs Top-K at 20%/50% on small synthetic chains and a tree")


def rdp_table2_suite(n_states: int = 2000, chain_length: int = 50, tree_length: int = 20, replicates: int = 100,
                     regimes: tuple[str, ...] = REGIMES) -> Suite:
    """The paper's Table 2 grid: chain log Z, tree log Z, chain entropy on dense/intermediate/long-tail
    problems; RDP (K2=1) at 1/10/20% of N, RDP (K1=K2) at 10/20%, Top-K at 20/50%; MSE vs exact."""
    problems = [SyntheticChainProblem(n_states, chain_length, r) for r in regimes]
    problems += [TreeCRFProblem(n_states, tree_length, r) for r in regimes]
    estimators = [RDPEstimator(s, TABLE_NAMES[s]) for s in ("k2=1", "k1=k2", "topk")]
    budgets = {"RDP (K2=1)": [1, 10, 20], "RDP (K1=K2)": [10, 20], "TopK": [20, 50]}
    return Suite(problems, estimators, budgets, replicates=replicates,
                 description=f"Table 2 of Fu et al. (2022) at N = {n_states}")
