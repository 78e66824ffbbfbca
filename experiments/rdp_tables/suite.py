"""Harness suites for Tables 3 and 4 of the RDP paper (Fu, Cunningham & Lapata, ICML 2022).

* ``rdp-bias-variance`` (Table 3): bias and variance of the randomized Forward estimate of the chain
  log partition function as the budget K grows, Top-K at 20/50% of N and RDP at 1/10/20% of N, on
  dense and long-tailed chains.  The harness summary's ``bias`` and ``variance`` columns are the
  table; the split K2 = 1, K1 = K - 1 is the paper's (Sec. 5.1), K1 = K2 is added.
* ``rdp-proposals`` (Table 4): MSE of the randomized Forward with the four proposals of Sec. 4
  (uniform, local, global, local + global, Eq. 34) on dense / intermediate / long-tailed chains.

Problems are :class:`rdp.problems.SyntheticChainProblem` (synthetic chains with controlled entropy, exact log Z
by the chunked exact forward in float64).  Estimates use the public
:func:`rdp.randomized_chain_log_partition` with the potentials requiring grad (memory column = autograd
state a training step would hold).
"""

from __future__ import annotations

from typing import Any

from rdp.estimators import split_budget
from samplers.harness import Estimator, Suite

PROPOSALS = ("uniform", "local", "global", "local+global")


class ForwardEstimator(Estimator):
    """Randomized Forward (Alg. 1) estimate of a chain's log Z with a given proposal and K1/K2 split.

    Budget: K in percent of N (at least 2 states).
    """

    budget_label = "K (% of N)"

    def __init__(self, proposal: str = "local+global", split: str = "k2=1", name: str | None = None):
        if proposal not in PROPOSALS:
            raise ValueError(f"proposal must be one of {PROPOSALS}, got {proposal!r}")
        split_budget(2, split)
        self.proposal, self.split = proposal, split
        label = {"k2=1": "RDP (K2=1)", "k1=k2": "RDP (K1=K2)", "topk": "TopK"}[split]
        self.name = name or (label if proposal == "local+global" else f"{label} {proposal}")
        from rdp.memory import TorchMemoryMeter

        self.memory_meter = TorchMemoryMeter

    def supports(self, problem) -> bool:
        return getattr(problem, "kind", None) == "synthetic-chain"

    def estimate(self, problem, budget: int, seed: int) -> dict[str, Any]:
        import torch

        from rdp import randomized_chain_log_partition
        from rdp.memory import note_output

        k1, k2 = split_budget(max(2, round(budget * problem.n_states / 100)), self.split)
        inst = problem.instance
        emissions = inst.emissions.detach().requires_grad_(True)
        log_z = randomized_chain_log_partition(emissions, state_embeddings=inst.state_embeddings, k1=k1, k2=k2,
                                               proposal=self.proposal,
                                               generator=torch.Generator().manual_seed(seed))
        note_output(log_z)
        return {"log_partition": float(log_z[0].detach())}


def bias_variance_suite(n_states: int = 2000, chain_length: int = 50, replicates: int = 100,
                        regimes: tuple[str, ...] = ("dense", "long-tail")) -> Suite:
    """Table 3: bias and variance of randomized Forward log Z vs K (Top-K 20/50%, RDP 1/10/20% of N)."""
    from rdp.problems import SyntheticChainProblem as ChainProblem

    problems = [ChainProblem(n_states, chain_length, r) for r in regimes]
    estimators = [ForwardEstimator(split="topk"), ForwardEstimator(split="k2=1"), ForwardEstimator(split="k1=k2")]
    budgets = {"TopK": [20, 50], "RDP (K2=1)": [1, 10, 20], "RDP (K1=K2)": [1, 10, 20]}
    return Suite(problems, estimators, budgets, replicates=replicates,
                 description=f"Table 3 of Fu et al. (2022): bias/variance of randomized Forward, N = {n_states}")


def proposals_suite(n_states: int = 2000, chain_length: int = 50, replicates: int = 100, budget: int = 10,
                    regimes: tuple[str, ...] = ("dense", "intermediate", "long-tail")) -> Suite:
    """Table 4: MSE of randomized Forward log Z with the four proposals, K = ``budget``% of N, two splits."""
    from rdp.problems import SyntheticChainProblem as ChainProblem

    problems = [ChainProblem(n_states, chain_length, r) for r in regimes]
    estimators = [ForwardEstimator(p, split) for split in ("k2=1", "k1=k2") for p in PROPOSALS]
    return Suite(problems, estimators, {e.name: [budget] for e in estimators}, replicates=replicates,
                 description=f"Table 4 of Fu et al. (2022): proposals for randomized Forward, N = {n_states}")


def bias_variance_quick_suite(replicates: int = 20) -> Suite:
    """A seconds-scale version of ``rdp-bias-variance`` (N = 200, T = 20) for smoke tests."""
    return bias_variance_suite(200, 20, replicates)


def proposals_quick_suite(replicates: int = 20) -> Suite:
    """A seconds-scale version of ``rdp-proposals`` (N = 200, T = 20) for smoke tests."""
    return proposals_suite(200, 20, replicates)
