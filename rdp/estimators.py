"""RDP and Top-K as cross-family estimators (see :mod:`samplers.harness.cross`).

Budget = K in percent of the number of states N (nonterminals NT for a PCFG), K = max(2, round(budget
N / 100)), split as in :mod:`rdp.bench`: ``K2 = 1`` (the paper's setting), ``K1 = K2``, or Top-K
(``K2 = 0``).  Targets:

* chain CRF: ``log_partition`` (randomized Forward, Alg. 1, log Z-hat: a lower bound in
  expectation), ``marginals`` (the gradient of log Z-hat with respect to the emissions, Sec. 3.3;
  exact when K = N, biased otherwise), ``entropy`` (randomized entropy DP, Alg. 3, a second run);
* PCFG: ``log_probability`` (randomized Inside, Alg. 2 / Eq. 18) and ``rule_counts`` (expected uses
  of each binary rule: the gradient of log Z-hat with respect to the rule scores, exact when
  K = NT; span posteriors would need span potentials, which rdp's PCFG functions do not take).
  Uniform proposal for RDP as in Sec. 5.1, the local proposal for Top-K since the top of a uniform
  proposal is arbitrary; on the whole-sentence span both propose the root distribution
  (:func:`root_aware_proposal`).

Problems are converted exactly with :mod:`rdp.convert` (float64).  ``evaluations``: transition
entries ``T K^2`` per chain sweep (two sweeps with the entropy), rule applications
``K^3 sum_w (T - w) w`` for the PCFG chart.
"""

from __future__ import annotations

from typing import Any

from samplers.harness.cross import KindEstimator, chart_rule_entries
from samplers.harness.problem import EVALUATIONS

from ._checks import as_generator
from ._torch import torch
from .bench import split_budget
from .convert import chain_crf_tensors, pcfg_tensors
from .memory import TorchMemoryMeter, note_output
from .randomized_chain import randomized_chain_entropy, randomized_chain_log_partition
from .randomized_pcfg import randomized_pcfg_log_partition

NAMES = {"k2=1": "rdp-k2=1", "k1=k2": "rdp-k1=k2", "topk": "topk"}


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


class RDPCrossEstimator(KindEstimator):
    """RDP / Top-K on chain CRFs and PCFGs; budget = K in % of N (module docstring)."""

    family = "rdp"
    budget_label = "K (% of N)"
    memory_meter = TorchMemoryMeter
    kinds = {"chain-crf": ("log_partition", "marginals", "entropy"), "pcfg": ("log_probability", "rule_counts")}
    quick_budgets = (20, 50)
    budgets = (10, 20, 50, 80)

    def __init__(self, split: str = "k2=1"):
        split_budget(2, split)
        self.split = split
        self.name = NAMES[split]

    def k1_k2(self, n: int, budget: int) -> tuple[int, int]:
        """(K1, K2) for N states at budget percent."""
        return split_budget(min(n, max(2, round(budget * n / 100))), self.split)

    def _estimate(self, problem, budget: int, seed: int, targets: tuple) -> dict[str, Any]:
        gen = as_generator(seed)
        if problem.kind == "pcfg":
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
        t = chain_crf_tensors(problem.crf)
        k1, k2 = self.k1_k2(problem.crf.n_states, budget)
        out = {EVALUATIONS: problem.crf.length * (k1 + k2) ** 2 * (2 if "entropy" in targets else 1)}
        with torch.enable_grad():
            emissions = t.pop("emissions").requires_grad_(True)
            log_z = randomized_chain_log_partition(emissions, **t, k1=k1, k2=k2, proposal="local+global",
                                                   generator=gen)
            out["log_partition"] = float(log_z[0].detach())
            if "marginals" in targets:
                (grad,) = torch.autograd.grad(log_z.sum(), emissions)
                out["marginals"] = grad[0].numpy()
        note_output(log_z)
        if "entropy" in targets:
            with torch.no_grad():
                ent = randomized_chain_entropy(emissions.detach(), **t, k1=k1, k2=k2, proposal="local+global",
                                               generator=gen)
            out["entropy"] = float(ent[0])
        return out


def rdp_estimators() -> list[RDPCrossEstimator]:
    """RDP with K2 = 1, RDP with K1 = K2, and Top-K."""
    return [RDPCrossEstimator("k2=1"), RDPCrossEstimator("k1=k2"), RDPCrossEstimator("topk")]
