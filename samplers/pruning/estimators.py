"""Pruning-side cross-family estimators for the ``"pcfg"`` problem kind (see :mod:`samplers.harness.cross`).

* ``exact-inside`` — exact inside-outside (budget ignored): ``log_probability``, ``span_posteriors``,
  ``rule_counts``; the time reference.
* ``pruning-randomized`` — auxiliary-variable randomized pruning (Bouchard-Cote, Petrov & Klein 2009,
  Algorithm 1): averages of masked expectations over ``budget`` masks; ``span_posteriors`` and
  ``rule_counts`` only (an average of masked log Z has no meaning as log P).
* ``pruning-fixed`` — one coarse-to-fine mask (coarse span posterior >= threshold, always keeping the
  coarse Viterbi tree), budget = threshold level ``L`` (threshold ``0.5 * 10^{-(L-1)/2}``, larger
  ``L`` prunes less): ``log_probability`` of the pruned chart (a lower bound of log P), and the
  masked ``span_posteriors`` / ``rule_counts`` (biased, deterministic).

``evaluations`` counts binary-rule applications of an unpruned chart (inside + outside) per mask:
an upper bound for pruned charts.
"""

from __future__ import annotations

from typing import Any

from ..harness.cross import KindEstimator, chart_rule_entries
from ..harness.problem import EVALUATIONS
from ..models.chart import expected_counts
from .bench import level_threshold
from .masks import coarse_span_posteriors, default_coarse, threshold_mask, viterbi_backbone
from .randomized import randomized_pruning

PCFG = "pcfg"


def _targets(e, span_vector) -> dict[str, Any]:
    return {"log_probability": e.log_z, "span_posteriors": span_vector(e.span_posteriors),
            "rule_counts": e.binary_counts}


class ExactInsideEstimator(KindEstimator):
    """Exact inside-outside (budget ignored)."""

    name = "exact-inside"
    family = "pruning"
    budget_label = "none"
    kinds = {PCFG: ("log_probability", "span_posteriors", "rule_counts")}

    def _estimate(self, problem, budget, seed, targets):
        from ..problems import span_vector

        out = _targets(expected_counts(problem.grammar, problem.words), span_vector)
        out[EVALUATIONS] = 2 * chart_rule_entries(len(problem.words), problem.grammar.n_binary)  # inside + outside
        return out


class RandomizedPruningCrossEstimator(KindEstimator):
    """Randomized pruning; budget = masks averaged."""

    name = "pruning-randomized"
    family = "pruning"
    budget_label = "masks"
    kinds = {PCFG: ("span_posteriors", "rule_counts")}
    quick_budgets = (5, 20)
    budgets = (5, 20, 80, 320)

    def _estimate(self, problem, budget, seed, targets):
        from ..problems import span_vector

        res = randomized_pruning(problem.grammar, problem.words, budget, seed=seed, progress=False)
        return {"span_posteriors": span_vector(res.expectations.span_posteriors),
                "rule_counts": res.expectations.binary_counts,
                EVALUATIONS: 2 * budget * chart_rule_entries(len(problem.words), problem.grammar.n_binary)}


class FixedMaskCrossEstimator(KindEstimator):
    """One fixed coarse-posterior mask; budget = threshold level."""

    name = "pruning-fixed"
    family = "pruning"
    budget_label = "threshold level"
    kinds = {PCFG: ("log_probability", "span_posteriors", "rule_counts")}
    quick_budgets = (1, 3)
    budgets = (1, 3, 5, 7)

    def _estimate(self, problem, budget, seed, targets):
        from ..problems import span_vector

        coarse = default_coarse(problem.grammar)
        scores = coarse_span_posteriors(problem.grammar, problem.words, coarse)
        mask = threshold_mask(scores, level_threshold(budget), viterbi_backbone(coarse, problem.words))
        out = _targets(expected_counts(problem.grammar, problem.words, mask), span_vector)
        out[EVALUATIONS] = 2 * chart_rule_entries(len(problem.words), problem.grammar.n_binary)
        return out


def pruning_estimators() -> list[KindEstimator]:
    """Exact inside-outside, randomized pruning and a fixed coarse-posterior mask."""
    return [ExactInsideEstimator(), RandomizedPruningCrossEstimator(), FixedMaskCrossEstimator()]
