"""Harness suites for RDP: ``rdp-quick`` (small N, seconds) and ``rdp-table2`` (Table 2 of the paper).

Problems are synthetic chains and trees with controlled entropy (:mod:`rdp.synthetic`) whose exact
answers come from the exact DPs in float64 (:func:`rdp.chain.chain_exact_reference`,
:func:`rdp.tree.tree_log_partition`).  Estimators are RDP with ``K2 = 1, K1 = K - 1`` (the paper's
setting), RDP with ``K1 = K2 = K / 2``, and Top-K (``K2 = 0``); the budget is K in percent of N.
Every run computes its estimates with the potentials requiring grad, so the memory column
(:class:`rdp.memory.TorchMemoryMeter`) is the autograd memory a training step would hold.
"""

from __future__ import annotations

from typing import Any

from samplers.harness import Estimator, Problem, Suite

from ._checks import as_generator
from ._torch import torch
from .chain import at_lengths, chain_exact_reference
from .memory import TorchMemoryMeter, note_output
from .randomized_chain import randomized_chain_sweep
from .randomized_tree import randomized_tree_log_partition
from .synthetic import make_chain, make_tree
from .tree import tree_log_partition


class _SyntheticProblem(Problem):
    """A synthetic problem built lazily (in the worker that first needs it) from (N, T, regime, seed)."""

    kind = ""
    method = ""

    def __init__(self, n_states: int, length: int, regime: str, *, seed: int = 0):
        self.n_states, self.length, self.regime, self.seed = n_states, length, regime, seed
        self.name = f"{self.kind}-{regime}-N{n_states}-T{length}"
        self.provenance = f"{self.method} in float64; rdp.synthetic.make_{self.kind}(seed={seed})"
        self._built = None

    @property
    def instance(self):
        if self._built is None:
            make = make_chain if self.kind == "chain" else make_tree
            self._built = make(self.n_states, self.length, self.regime, seed=self.seed)
        return self._built

    def size(self) -> dict[str, int]:
        return {"N": self.n_states, "T": self.length}


class ChainProblem(_SyntheticProblem):
    """A synthetic chain (:func:`rdp.synthetic.make_chain`) with exact log Z and entropy."""

    kind = "chain"
    method = "exact forward and entropy DP (rdp.chain_exact_reference, chunked)"

    def exact(self) -> dict[str, Any]:
        ref = chain_exact_reference(self.instance.emissions, state_embeddings=self.instance.state_embeddings)
        return {"log_partition": float(ref["log_partition"][0]), "entropy": float(ref["entropy"][0])}


class TreeProblem(_SyntheticProblem):
    """A synthetic span-labelled tree CRF (:func:`rdp.synthetic.make_tree`) with exact log Z."""

    kind = "tree"
    method = "exact inside (rdp.tree_log_partition)"

    def exact(self) -> dict[str, Any]:
        with torch.no_grad():
            return {"log_partition": float(tree_log_partition(self.instance.span_potentials)[0])}


SPLITS = ("k2=1", "k1=k2", "topk")


def split_budget(k: int, split: str) -> tuple[int, int]:
    """(K1, K2) for a total K: ``k2=1`` -> (K-1, 1); ``k1=k2`` -> (K - K//2, K//2); ``topk`` -> (K, 0)."""
    if split == "k2=1":
        return k - 1, 1
    if split == "k1=k2":
        return k - k // 2, k // 2
    if split == "topk":
        return k, 0
    raise ValueError(f"split must be one of {SPLITS}, got {split!r}")


class RDPEstimator(Estimator):
    """RDP / Top-K estimates of log Z (chains and trees) and entropy (chains); budget = K in % of N.

    ``evaluations`` = chart cells kept: T x (K1 + K2) for a chain, T (T + 1) / 2 x (K1 + K2) for a
    tree (exact DP: N in place of K1 + K2).

    Chains use the local+global proposal (Eq. 34) as in Sec. 5.1.  Trees: RDP uses the uniform
    proposal as in Sec. 5.1; Top-K keeps the labels with the largest potentials (the local proposal),
    since the top of a uniform proposal is an arbitrary set.  The local proposal would make RDP exact
    on this tree CRF: its span potentials depend on the parent label only, so softmax(phi(i, j, .))
    is proportional to the summands of every randomized sum (the oracle proposal of Eq. 8).
    """

    budget_label = "K (% of N)"
    memory_meter = TorchMemoryMeter

    def __init__(self, split: str = "k2=1", name: str | None = None):
        split_budget(2, split)
        self.split = split
        self.name = name or {"k2=1": "RDP (K2=1)", "k1=k2": "RDP (K1=K2)", "topk": "TopK"}[split]

    def estimate(self, problem, budget: int, seed: int) -> dict[str, Any]:
        n = problem.n_states
        k1, k2 = split_budget(max(2, round(budget * n / 100)), self.split)
        gen = as_generator(seed)
        inst = problem.instance
        if problem.kind == "tree":
            spans = inst.span_potentials.detach().requires_grad_(True)
            proposal = "local" if self.split == "topk" else "uniform"
            log_z = randomized_tree_log_partition(spans, k1=k1, k2=k2, proposal=proposal, generator=gen)
            note_output(log_z)
            spans = problem.length * (problem.length + 1) // 2
            return {"log_partition": float(log_z[0].detach()), "evaluations": spans * (k1 + k2)}
        emissions = inst.emissions.detach().requires_grad_(True)
        run = randomized_chain_sweep(emissions, state_embeddings=inst.state_embeddings, k1=k1, k2=k2,
                                     proposal="local+global", generator=gen, entropy=True)
        log_z, ent = at_lengths(run.sweep.log_z, run.lengths), at_lengths(run.sweep.entropy, run.lengths)
        note_output(log_z, ent)
        return {"log_partition": float(log_z[0].detach()), "entropy": float(ent[0].detach()),
                "evaluations": problem.length * (k1 + k2)}


REGIMES = ("dense", "intermediate", "long-tail")


def rdp_quick_suite(replicates: int = 10) -> Suite:
    """Small chains (N = 200, T = 20) and trees (N = 60, T = 8): RDP vs Top-K in seconds."""
    problems = [ChainProblem(200, 20, r) for r in ("dense", "long-tail")] + [TreeProblem(60, 8, "dense")]
    estimators = [RDPEstimator("k2=1"), RDPEstimator("topk")]
    budgets = {"RDP (K2=1)": [5, 20], "TopK": [20, 50]}
    return Suite(problems, estimators, budgets, replicates=replicates,
                 description="RDP (K2=1) at 5%/20% of N vs Top-K at 20%/50% on small synthetic chains and a tree")


def rdp_table2_suite(n_states: int = 2000, chain_length: int = 50, tree_length: int = 20, replicates: int = 100,
                     regimes: tuple[str, ...] = REGIMES) -> Suite:
    """The paper's Table 2 grid: chain log Z, tree log Z, chain entropy on dense/intermediate/long-tail
    problems; RDP (K2=1) at 1/10/20% of N, RDP (K1=K2) at 10/20%, Top-K at 20/50%; MSE vs exact."""
    problems = [ChainProblem(n_states, chain_length, r) for r in regimes]
    problems += [TreeProblem(n_states, tree_length, r) for r in regimes]
    estimators = [RDPEstimator("k2=1"), RDPEstimator("k1=k2"), RDPEstimator("topk")]
    budgets = {"RDP (K2=1)": [1, 10, 20], "RDP (K1=K2)": [10, 20], "TopK": [20, 50]}
    return Suite(problems, estimators, budgets, replicates=replicates,
                 description=f"Table 2 of Fu et al. (2022) at N = {n_states}")
