"""RDP and Top-K as harness estimators: one class, :class:`RDPEstimator`, for every kind rdp handles.

Budget = K in percent of the number of states N (nonterminals NT for a PCFG), K = max(2, round(budget
N / 100)) capped at N, split (:func:`split_budget`) as ``K2 = 1`` (the paper's setting), ``K1 = K2``,
or Top-K (``K2 = 0``).  Targets:

* chain CRF (``"chain-crf"``): ``log_partition`` (randomized Forward, Alg. 1, log Z-hat: a lower
  bound in expectation), ``marginals`` (the gradient of log Z-hat with respect to the emissions,
  Sec. 3.3; exact when K = N, biased otherwise), ``entropy`` (randomized entropy DP, Alg. 3, a
  second run);
* synthetic chain (``"synthetic-chain"``, :mod:`rdp.problems`): ``log_partition`` and ``entropy``
  from one sweep (:func:`rdp.randomized_chain.randomized_chain_sweep`);
* tree CRF (``"tree-crf"``): ``log_partition`` (randomized Inside, Alg. 2).  RDP uses the uniform
  proposal as in Sec. 5.1; Top-K keeps the labels with the largest potentials (the local
  proposal), since the top of a uniform proposal is an arbitrary set.  The local proposal would
  make RDP exact on this tree CRF: its span potentials depend on the parent label only, so
  softmax(phi(i, j, .)) is proportional to the summands of every randomized sum (Eq. 8's oracle);
* PCFG (``"pcfg"``): ``log_probability`` (randomized Inside, Alg. 2 / Eq. 18) and ``rule_counts``
  (the gradient of log Z-hat with respect to the rule scores, exact when K = NT; span posteriors
  would need span potentials, which rdp's PCFG functions do not take).  Uniform proposal for RDP,
  local for Top-K; on the whole-sentence span both propose the root distribution
  (:func:`root_aware_proposal`).

Chains use the local+global proposal (Eq. 34) as in Sec. 5.1 unless ``chain_proposal`` names another
(Table 4 compares the four, :data:`rdp.proposals.NAMED`).  A synthetic chain's entropy DP runs only when
``entropy`` is among the targets (:meth:`~samplers.harness.KindEstimator.only`).  Every run computes its estimates
with the potentials requiring grad, so the memory column (:class:`rdp.memory.TorchMemoryMeter`) is
the autograd memory a training step would hold.  Problems of the core's kinds are converted
exactly with :mod:`rdp.convert` (float64).  ``evaluations``: chart cells kept, ``T K^2`` per chain
sweep (two sweeps with the entropy), ``T (K1 + K2)`` for a synthetic chain, ``T (T + 1) / 2 (K1 +
K2)`` for a tree, rule applications ``K^3 sum_w (T - w) w`` for the PCFG chart.
"""

from __future__ import annotations

from typing import Any

from samplers.harness import KindEstimator
from samplers.harness.problem import EVALUATIONS
from samplers.problems import CHAIN_CRF, PCFG, SYNTHETIC_CHAIN, TREE_CRF, chart_rule_entries

from ._checks import as_generator
from ._torch import torch
from .chain import at_lengths
from .convert import chain_crf_tensors, pcfg_tensors
from .memory import TorchMemoryMeter, note_output
from .proposals import NAMED
from .randomized_chain import randomized_chain_entropy, randomized_chain_log_partition, randomized_chain_sweep
from .randomized_pcfg import randomized_pcfg_log_partition
from .randomized_tree import randomized_tree_log_partition

SPLITS = ("k2=1", "k1=k2", "topk")
#: Default names per split (the cross suites' names).
NAMES = {"k2=1": "rdp-k2=1", "k1=k2": "rdp-k1=k2", "topk": "topk"}
#: The chain proposal of Sec. 5.1 (Eq. 34).
CHAIN_PROPOSAL = "local+global"


def split_budget(k: int, split: str) -> tuple[int, int]:
    """(K1, K2) for a total K: ``k2=1`` -> (K-1, 1); ``k1=k2`` -> (K - K//2, K//2); ``topk`` -> (K, 0)."""
    if split == "k2=1":
        return k - 1, 1
    if split == "k1=k2":
        return k - k // 2, k // 2
    if split == "topk":
        return k, 0
    raise ValueError(f"split must be one of {SPLITS}, got {split!r}")


def root_aware_proposal(root_scores: "torch.Tensor", *, local: bool):
    """A PCFG proposal (callable on the (B, T, T, NT) site scores): uniform (or the local softmax for
    Top-K) on every span but the whole sentence, whose proposal is the root distribution
    ``softmax(root_scores)`` (floored at 1e-12 so every site keeps positive mass).  A grammar has one
    start symbol, so a root set drawn uniformly would usually miss it and score ``-1e4``."""

    def proposal(site: "torch.Tensor") -> "torch.Tensor":
        q = torch.softmax(site, dim=-1) if local else torch.full_like(site, 1.0 / site.shape[-1])
        length = site.shape[1]
        q[:, 0, length - 1] = torch.softmax(root_scores.to(site.dtype), dim=-1).clamp_min(1e-12)
        return q

    return proposal


class RDPEstimator(KindEstimator):
    """RDP / Top-K on chain CRFs, synthetic chains, tree CRFs and PCFGs; budget = K in % of N.

    Parameters
    ----------
    split : {"k2=1", "k1=k2", "topk"}
        How K is split between the top-K1 set and the K2 sampled states (:func:`split_budget`).
    name : str, optional
        Default :data:`NAMES` ``[split]`` (followed by ``chain_proposal`` when that is not the default).
    chain_proposal : {"local+global", "uniform", "local", "global"}
        The proposal on chain CRFs and synthetic chains (Sec. 4, Eq. 34); trees and PCFGs keep theirs.

    Raises
    ------
    ValueError
        ``split`` or ``chain_proposal`` is not one of the names above.
    """

    family = "rdp"
    budget_label = "K (% of N)"
    memory_meter = TorchMemoryMeter
    kinds = {CHAIN_CRF: ("log_partition", "marginals", "entropy"), PCFG: ("log_probability", "rule_counts"),
             SYNTHETIC_CHAIN: ("log_partition", "entropy"), TREE_CRF: ("log_partition",)}
    quick_budgets = (20, 50)
    budgets = (10, 20, 50, 80)

    def __init__(self, split: str = "k2=1", name: str | None = None, *, chain_proposal: str = CHAIN_PROPOSAL):
        split_budget(2, split)
        if chain_proposal not in NAMED:
            raise ValueError(f"chain_proposal must be one of {NAMED}, got {chain_proposal!r}")
        self.split, self.chain_proposal = split, chain_proposal
        suffix = "" if chain_proposal == CHAIN_PROPOSAL else f" {chain_proposal}"
        self.name = name or NAMES[split] + suffix

    def k1_k2(self, n: int, budget: int) -> tuple[int, int]:
        """(K1, K2) for N states at budget percent."""
        return split_budget(min(n, max(2, round(budget * n / 100))), self.split)

    def _estimate(self, problem, budget: int, seed: int, targets: tuple) -> dict[str, Any]:
        gen = as_generator(seed)
        if problem.kind == PCFG:
            return self._pcfg(problem, budget, gen, targets)
        if problem.kind == CHAIN_CRF:
            return self._chain_crf(problem, budget, gen, targets)
        k1, k2 = self.k1_k2(problem.n_states, budget)
        inst = problem.instance
        if problem.kind == TREE_CRF:
            spans = inst.span_potentials.detach().requires_grad_(True)
            proposal = "local" if self.split == "topk" else "uniform"
            log_z = randomized_tree_log_partition(spans, k1=k1, k2=k2, proposal=proposal, generator=gen)
            note_output(log_z)
            cells = problem.length * (problem.length + 1) // 2
            return {"log_partition": float(log_z[0].detach()), EVALUATIONS: cells * (k1 + k2)}
        emissions = inst.emissions.detach().requires_grad_(True)
        entropy = "entropy" in targets
        run = randomized_chain_sweep(emissions, state_embeddings=inst.state_embeddings, k1=k1, k2=k2,
                                     proposal=self.chain_proposal, generator=gen, entropy=entropy)
        log_z = at_lengths(run.sweep.log_z, run.lengths)
        ent = at_lengths(run.sweep.entropy, run.lengths) if entropy else None
        note_output(log_z, ent)
        out = {"log_partition": float(log_z[0].detach()), EVALUATIONS: problem.length * (k1 + k2)}
        if ent is not None:
            out["entropy"] = float(ent[0].detach())
        return out

    def _pcfg(self, problem, budget: int, gen, targets: tuple) -> dict[str, Any]:
        t = pcfg_tensors(problem.grammar, problem.words)
        k1, k2 = self.k1_k2(problem.grammar.n_nonterminals, budget)
        proposal = root_aware_proposal(t["root_scores"], local=self.split == "topk")
        out = {EVALUATIONS: chart_rule_entries(len(problem.words), (k1 + k2) ** 3)}
        with torch.enable_grad():
            rules = t.pop("rule_scores").requires_grad_("rule_counts" in targets)
            log_z = randomized_pcfg_log_partition(rules, **t, k1=k1, k2=k2, proposal=proposal, generator=gen)
            out["log_probability"] = float(log_z[0].detach())
            if "rule_counts" in targets:
                (grad,) = torch.autograd.grad(log_z.sum(), rules)
                r = problem.grammar.binary_rules
                out["rule_counts"] = grad.numpy()[r[:, 0], r[:, 1], r[:, 2]]
        note_output(log_z)
        return out

    def _chain_crf(self, problem, budget: int, gen, targets: tuple) -> dict[str, Any]:
        t = chain_crf_tensors(problem.crf)
        k1, k2 = self.k1_k2(problem.crf.n_states, budget)
        out = {EVALUATIONS: problem.crf.length * (k1 + k2) ** 2 * (2 if "entropy" in targets else 1)}
        with torch.enable_grad():
            emissions = t.pop("emissions").requires_grad_(True)
            log_z = randomized_chain_log_partition(emissions, **t, k1=k1, k2=k2, proposal=self.chain_proposal,
                                                   generator=gen)
            out["log_partition"] = float(log_z[0].detach())
            if "marginals" in targets:
                (grad,) = torch.autograd.grad(log_z.sum(), emissions)
                out["marginals"] = grad[0].numpy()
        note_output(log_z)
        if "entropy" in targets:
            with torch.no_grad():
                ent = randomized_chain_entropy(emissions.detach(), **t, k1=k1, k2=k2,
                                               proposal=self.chain_proposal, generator=gen)
            out["entropy"] = float(ent[0])
        return out


def rdp_estimators() -> list[RDPEstimator]:
    """RDP with K2 = 1, RDP with K1 = K2, and Top-K."""
    return [RDPEstimator("k2=1"), RDPEstimator("k1=k2"), RDPEstimator("topk")]
