"""Randomized-pruning estimators, one class per method, for the ``"pcfg"`` and ``"itg-pair"`` kinds.

* :class:`RandomizedPruningEstimator` — auxiliary-variable randomized pruning (Bouchard-Cote,
  Petrov & Klein 2009, Algorithm 1): averages of masked expectations over ``budget`` masks;
  ``span_posteriors``, ``rule_counts`` and their joint vector ``counts`` (an average of masked
  log Z has no meaning as log P).
* :class:`FixedMaskEstimator` — one coarse-to-fine mask (coarse span posterior, or a tic-tac-toe
  style figure of merit, >= threshold; always keeping the coarse Viterbi tree), budget = threshold
  level ``L`` (:func:`level_threshold`, larger ``L`` prunes less): ``log_probability`` of the
  pruned chart (a lower bound of log P) and the masked expectations (biased, deterministic).
* :class:`ITGRandomizedPruningEstimator` / :class:`TicTacToeEstimator` — the same two families on
  ITG sentence pairs (target ``counts``: alignment and null posteriors plus rule counts).

The exact inside-outside is the problem's own method (:class:`samplers.estimators.ExactEstimator`).
``evaluations`` counts binary-rule applications of an unpruned chart (inside + outside) per mask
for PCFGs (an upper bound for pruned charts), and masked bitext inside-outside passes for ITGs.
"""

from __future__ import annotations

from typing import Any

from ..estimators import ExactEstimator
from ..harness import KindEstimator
from ..harness.problem import EVALUATIONS
from ..problems import ITG_PAIR, PCFG, chart_rule_entries, pcfg_targets
from .chart import expected_counts
from .itg import itg_expectations, itg_randomized_pruning, tic_tac_toe_mask
from .masks import coarse_span_posteriors, default_coarse, figure_of_merit_scores, threshold_mask, viterbi_backbone
from .randomized import randomized_pruning

#: Options of the bias suite's ``randomized-aggressive`` (M' = all ambiguous spans).
AGGRESSIVE = {"confidence": 0.0, "max_candidates": 10**9, "compatible": False}


def level_threshold(level: int) -> float:
    """Threshold of fixed-mask level ``level`` (1 = most aggressive): ``0.5 * 10^{-(level-1)/2}``."""
    return 0.5 * 10.0 ** (-(level - 1) / 2)


def _chart_passes(problem, passes: int) -> int:
    return passes * 2 * chart_rule_entries(len(problem.words), problem.grammar.n_binary)


class RandomizedPruningEstimator(KindEstimator):
    """Randomized pruning on a PCFG sentence; budget = masks averaged.

    Parameters
    ----------
    name : str
        Name in result tables.
    **options
        Passed to :func:`samplers.pruning.randomized_pruning` (``burn_in``, ``confidence`` ...).
    """

    family = "pruning"
    budget_label = "masks"
    kinds = {PCFG: ("span_posteriors", "rule_counts", "counts")}
    quick_budgets = (5, 20)
    budgets = (5, 20, 80, 320)

    def __init__(self, name: str = "pruning-randomized", **options: Any):
        self.name = name
        self.options = options

    def _estimate(self, problem, budget, seed, targets):
        res = randomized_pruning(problem.grammar, problem.words, budget, seed=seed, progress=False, **self.options)
        passes = budget + int(self.options.get("burn_in", 0))
        return {**pcfg_targets(res.expectations), EVALUATIONS: _chart_passes(problem, passes)}


class FixedMaskEstimator(KindEstimator):
    """One fixed mask from coarse span posteriors (``scores="posterior"``) or a figure of merit
    (``"fom"``); budget = threshold level (:func:`level_threshold`).  The mask always keeps the
    coarse Viterbi tree's constituents, so it never prunes every tree.

    Parameters
    ----------
    scores : {"posterior", "fom"}
        What the threshold is applied to.
    name : str, optional
        Default ``"fixed-posterior"`` / ``"fixed-fom"``.
    """

    family = "pruning"
    budget_label = "threshold level"
    kinds = {PCFG: ("log_probability", "span_posteriors", "rule_counts", "counts")}
    quick_budgets = (1, 3)
    budgets = (1, 3, 5, 7)

    def __init__(self, scores: str = "posterior", name: str | None = None):
        if scores not in ("posterior", "fom"):
            raise ValueError(f"scores must be 'posterior' or 'fom', got {scores!r}")
        self.scores = scores
        self.name = name or f"fixed-{scores}"

    def _estimate(self, problem, budget, seed, targets):
        coarse = default_coarse(problem.grammar)
        score = coarse_span_posteriors if self.scores == "posterior" else figure_of_merit_scores
        scores = score(problem.grammar, problem.words, coarse)
        mask = threshold_mask(scores, level_threshold(budget), viterbi_backbone(coarse, problem.words))
        # the coarse pass and the masked fine pass
        return {**pcfg_targets(expected_counts(problem.grammar, problem.words, mask)),
                EVALUATIONS: _chart_passes(problem, 2)}


class ITGRandomizedPruningEstimator(KindEstimator):
    """Randomized pruning over the alignment variables of an ITG; budget = masks."""

    family = "pruning"
    budget_label = "masks"
    kinds = {ITG_PAIR: ("counts",)}

    def __init__(self, name: str = "itg-randomized", **options: Any):
        self.name = name
        self.options = {"confidence": 0.02, **options}

    def _estimate(self, problem, budget, seed, targets):
        res = itg_randomized_pruning(problem.itg, problem.e, problem.f, budget, seed=seed, **self.options)
        return {"counts": res.expectations.vector(), EVALUATIONS: budget + int(self.options.get("burn_in", 0))}


class TicTacToeEstimator(KindEstimator):
    """One fixed tic-tac-toe mask on an ITG; budget = threshold level (:func:`level_threshold`)."""

    name = "itg-tic-tac-toe"
    family = "pruning"
    budget_label = "threshold level"
    kinds = {ITG_PAIR: ("counts",)}

    def _estimate(self, problem, budget, seed, targets):
        keep = tic_tac_toe_mask(problem.itg, problem.e, problem.f, level_threshold(budget))
        return {"counts": itg_expectations(problem.itg, problem.e, problem.f, keep).vector(), EVALUATIONS: 1}


def pruning_estimators() -> list[KindEstimator]:
    """The cross estimators: exact inside-outside, randomized pruning and a fixed coarse-posterior mask."""
    return [ExactEstimator("exact-inside", (PCFG,), family="pruning"), RandomizedPruningEstimator(),
            FixedMaskEstimator("posterior", name="pruning-fixed")]
