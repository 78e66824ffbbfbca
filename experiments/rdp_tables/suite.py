"""Harness suites for Tables 3 and 4 of the RDP paper (Fu, Cunningham & Lapata, ICML 2022).

* ``rdp-bias-variance`` (Table 3): bias and variance of the randomized Forward estimate of the chain
  log partition function as the budget K grows, Top-K at 20/50% of N and RDP at 1/10/20% of N, on
  dense and long-tailed chains.  The harness summary's ``bias`` and ``variance`` columns are the
  table; the split K2 = 1, K1 = K - 1 is the paper's (Sec. 5.1), K1 = K2 is added.
* ``rdp-proposals`` (Table 4): MSE of the randomized Forward with the four proposals of Sec. 4
  (uniform, local, global, local + global, Eq. 34) on dense / intermediate / long-tailed chains.

Problems are :class:`rdp.problems.SyntheticChainProblem` (synthetic chains with controlled entropy, exact log Z
by the chunked exact forward in float64).  The estimator is rdp's one :class:`rdp.estimators.RDPEstimator`
(a K1/K2 split and a chain proposal), restricted to ``log_partition``; it runs with the potentials requiring
grad (memory column = autograd state a training step would hold).
"""

from __future__ import annotations

from rdp.estimators import RDPEstimator
from rdp.proposals import NAMED as PROPOSALS
from samplers.harness import Suite

#: The paper's names of the splits (the tables' rows).
LABELS = {"k2=1": "RDP (K2=1)", "k1=k2": "RDP (K1=K2)", "topk": "TopK"}


def forward_estimator(proposal: str = "local+global", split: str = "k2=1") -> RDPEstimator:
    """Randomized Forward (Alg. 1) estimate of a chain's log Z with ``proposal`` and a K1/K2 ``split``,
    named as in the tables (``"RDP (K2=1)"``, ``"TopK uniform"`` ...).  Budget: K in percent of N."""
    est = RDPEstimator(split, chain_proposal=proposal)  # checks split and proposal
    est.name = LABELS[split] if proposal == "local+global" else f"{LABELS[split]} {proposal}"
    return est.only(["log_partition"])


def bias_variance_suite(n_states: int = 2000, chain_length: int = 50, replicates: int = 100,
                        regimes: tuple[str, ...] = ("dense", "long-tail")) -> Suite:
    """Table 3: bias and variance of randomized Forward log Z vs K (Top-K 20/50%, RDP 1/10/20% of N)."""
    from rdp.problems import SyntheticChainProblem as ChainProblem

    problems = [ChainProblem(n_states, chain_length, r) for r in regimes]
    estimators = [forward_estimator(split=split) for split in ("topk", "k2=1", "k1=k2")]
    budgets = {"TopK": [20, 50], "RDP (K2=1)": [1, 10, 20], "RDP (K1=K2)": [1, 10, 20]}
    return Suite(problems, estimators, budgets, replicates=replicates,
                 description=f"Table 3 of Fu et al. (2022): bias/variance of randomized Forward, N = {n_states}")


def proposals_suite(n_states: int = 2000, chain_length: int = 50, replicates: int = 100, budget: int = 10,
                    regimes: tuple[str, ...] = ("dense", "intermediate", "long-tail")) -> Suite:
    """Table 4: MSE of randomized Forward log Z with the four proposals, K = ``budget``% of N, two splits."""
    from rdp.problems import SyntheticChainProblem as ChainProblem

    problems = [ChainProblem(n_states, chain_length, r) for r in regimes]
    estimators = [forward_estimator(p, split) for split in ("k2=1", "k1=k2") for p in PROPOSALS]
    return Suite(problems, estimators, {e.name: [budget] for e in estimators}, replicates=replicates,
                 description=f"Table 4 of Fu et al. (2022): proposals for randomized Forward, N = {n_states}")


def bias_variance_quick_suite(replicates: int = 20) -> Suite:
    """A seconds-scale version of ``rdp-bias-variance`` (N = 200, T = 20) for smoke tests."""
    return bias_variance_suite(200, 20, replicates)


def proposals_quick_suite(replicates: int = 20) -> Suite:
    """A seconds-scale version of ``rdp-proposals`` (N = 200, T = 20) for smoke tests."""
    return proposals_suite(200, 20, replicates)
