"""Harness suites for randomized pruning: ``pruning-quick`` and ``pruning-bias``.

Problems are sentences under latent-annotation style random PCFGs (:meth:`Grammar.random_split`);
the target ``"counts"`` is the vector of span posteriors and expected binary-rule counts
(:meth:`Expectations.vector`) computed exactly by inside-outside.  Estimators:

* ``randomized`` — :func:`randomized_pruning`, budget = number of masks (``randomized-aggressive``
  in the bias suite: M' = all ambiguous spans);
* ``fixed-posterior`` — one coarse-to-fine mask (coarse span posterior >= threshold), budget =
  threshold level L (threshold ``0.5 * 10^{-(L-1)/2}``: larger L, less pruning);
* ``fixed-fom`` — one tic-tac-toe style figure-of-merit mask, same threshold levels;
* ``itg-randomized`` / ``itg-tic-tac-toe`` — the same two families on ITG sentence pairs (target:
  alignment and null posteriors plus binary-rule counts, :meth:`ITGExpectations.vector`);
* ``exact`` — exact inside-outside (budget 1), the time reference.

Per-run L2 error against the exact vector and wall time give the paper's Fig. 4(c, d) axes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..harness import Estimator, Problem, Suite
from ..models.chart import expected_counts
from ..models.pcfg import Grammar
from .itg import ITG, itg_expectations, itg_randomized_pruning, tic_tac_toe_mask
from .masks import coarse_span_posteriors, default_coarse, figure_of_merit_scores, threshold_mask, viterbi_backbone
from .randomized import randomized_pruning


class SentenceProblem(Problem):
    """One sentence under a PCFG; exact target ``counts`` by inside-outside."""

    def __init__(self, name: str, grammar: Grammar, words: list[str]):
        self.name = name
        self.grammar = grammar
        self.words = list(words)
        self.provenance = "exact inside-outside (all-keep mask)"

    def exact(self) -> dict[str, Any]:
        return {"counts": expected_counts(self.grammar, self.words).vector()}

    def size(self) -> dict[str, int]:
        return {"length": len(self.words), "nonterminals": self.grammar.n_nonterminals,
                "binary_rules": self.grammar.n_binary}


class SentencePairProblem(Problem):
    """One sentence pair under an ITG; exact target ``counts`` (alignment and null posteriors, rule
    counts: :meth:`ITGExpectations.vector`) by O(p^3 q^3) bitext inside-outside."""

    def __init__(self, name: str, itg: ITG, e: np.ndarray, f: np.ndarray):
        self.name = name
        self.itg = itg
        self.e = np.asarray(e, dtype=np.int64)
        self.f = np.asarray(f, dtype=np.int64)
        self.provenance = "exact bitext inside-outside (no mask)"

    def exact(self) -> dict[str, Any]:
        return {"counts": itg_expectations(self.itg, self.e, self.f).vector()}

    def size(self) -> dict[str, int]:
        return {"p": len(self.e), "q": len(self.f), "nonterminals": self.itg.n_nonterminals}


def level_threshold(level: int) -> float:
    """Threshold of fixed-mask level ``level`` (1 = most aggressive): ``0.5 * 10^{-(level-1)/2}``."""
    return 0.5 * 10.0 ** (-(level - 1) / 2)


def _passes(n_masks: int, options: dict[str, Any]) -> int:
    """Inside-outside passes of a randomized-pruning run: one per mask, burn-in included.

    ``evaluations`` of the pruning estimators counts (masked) inside-outside passes: randomized =
    masks + burn-in, fixed mask = 2 (coarse posteriors + fine pass), tic-tac-toe = 1, exact = 1.
    """
    return int(n_masks) + int(options.get("burn_in", 0))


class RandomizedPruningEstimator(Estimator):
    """Randomized pruning, budget = number of masks averaged."""

    budget_label = "masks"

    def __init__(self, name: str = "randomized", **options: Any):
        self.name = name
        self.options = options

    def supports(self, problem) -> bool:
        return isinstance(problem, SentenceProblem)

    def estimate(self, problem, budget: int, seed: int) -> dict[str, Any]:
        res = randomized_pruning(problem.grammar, problem.words, budget, seed=seed, **self.options)
        return {"counts": res.expectations.vector(), "evaluations": _passes(budget, self.options)}


class ITGRandomizedPruningEstimator(Estimator):
    """Randomized pruning over alignment variables of an ITG, budget = number of masks."""

    budget_label = "masks"

    def __init__(self, name: str = "itg-randomized", **options: Any):
        self.name = name
        self.options = {"confidence": 0.02, **options}

    def supports(self, problem) -> bool:
        return isinstance(problem, SentencePairProblem)

    def estimate(self, problem, budget: int, seed: int) -> dict[str, Any]:
        res = itg_randomized_pruning(problem.itg, problem.e, problem.f, budget, seed=seed, **self.options)
        return {"counts": res.expectations.vector(), "evaluations": _passes(budget, self.options)}


class TicTacToeEstimator(Estimator):
    """One fixed tic-tac-toe mask on an ITG; budget = threshold level (:func:`level_threshold`)."""

    name = "itg-tic-tac-toe"
    budget_label = "threshold level"

    def supports(self, problem) -> bool:
        return isinstance(problem, SentencePairProblem)

    def estimate(self, problem, budget: int, seed: int) -> dict[str, Any]:
        keep = tic_tac_toe_mask(problem.itg, problem.e, problem.f, level_threshold(budget))
        return {"counts": itg_expectations(problem.itg, problem.e, problem.f, keep).vector(), "evaluations": 1}


class FixedMaskEstimator(Estimator):
    """One fixed mask from coarse span posteriors (``kind="posterior"``) or a figure of merit (``"fom"``).

    The mask always keeps the coarse Viterbi tree's constituents, so it never prunes every tree.
    """

    budget_label = "threshold level"

    def __init__(self, kind: str = "posterior"):
        if kind not in ("posterior", "fom"):
            raise ValueError(f"kind must be 'posterior' or 'fom', got {kind!r}")
        self.kind = kind
        self.name = f"fixed-{kind}"

    def supports(self, problem) -> bool:
        return isinstance(problem, SentenceProblem)

    def estimate(self, problem, budget: int, seed: int) -> dict[str, Any]:
        coarse = default_coarse(problem.grammar)
        if self.kind == "posterior":
            scores = coarse_span_posteriors(problem.grammar, problem.words, coarse)
        else:
            scores = figure_of_merit_scores(problem.grammar, problem.words, coarse)
        mask = threshold_mask(scores, level_threshold(budget), viterbi_backbone(coarse, problem.words))
        return {"counts": expected_counts(problem.grammar, problem.words, mask).vector(), "evaluations": 2}


class ExactEstimator(Estimator):
    """Exact inside-outside (ignores the budget); the time reference."""

    name = "exact"
    budget_label = "none"

    def estimate(self, problem, budget: int, seed: int) -> dict[str, Any]:
        return {**problem.exact(), "evaluations": 1}


#: Dirichlet concentration of the suites' coarse grammars (:meth:`Grammar.random_split`).  At the grammar's
#: default 0.05 the 8-word quick sentence puts 99.4% of its posterior on one bracketing; every mask then forces
#: 2/3 of that bracketing's spans positive, the chain reaches the other trees about once in a few hundred masks,
#: and at 4-64 masks each replicate returns the same estimate (the error is flat: a constant 0.013, the mass not
#: yet visited).  At 0.3 the posterior is spread over many bracketings and the error falls as about N^-0.45
#: (tests/pruning/test_pruning_bench.py).  ``pruning-quick`` (make demo) uses it; ``pruning-bias`` keeps 0.05, the
#: grammar of its recorded results (experiments/pruning_bias/README.md), until that study is rerun.
SUITE_CONCENTRATION = 0.3


def sentence_problems(lengths, *, n_coarse: int = 4, n_splits: int = 2, n_terminals: int = 12,
                      concentration: float = SUITE_CONCENTRATION, seed: int = 0) -> list[SentenceProblem]:
    """One random-split PCFG (coarse ambiguity ``concentration``, see :data:`SUITE_CONCENTRATION`) and one
    random sentence with a parse per length."""
    grammar = Grammar.random_split(n_coarse, n_splits, n_terminals, concentration=concentration, seed=seed)
    rng = np.random.default_rng(seed)
    problems = []
    for n in lengths:
        words = [grammar.terminals[i] for i in rng.integers(0, n_terminals, n)]
        problems.append(SentenceProblem(f"pcfg-{grammar.n_nonterminals}nt-len{n}", grammar, words))
    return problems


def sentence_pair_problems(lengths, *, n_nonterminals: int = 2, vocabulary: int = 30, seed: int = 0,
                           noise: float = 0.2) -> list[SentencePairProblem]:
    """Random ITG and, per length n, a pair (e, f): f = each e word's likeliest translation, locally
    reordered (adjacent swaps), with a fraction ``noise`` of f words replaced at random."""
    itg = ITG.random(n_nonterminals, vocabulary, vocabulary, seed=seed, concentration=0.05)
    best = np.exp(itg.pair).sum(axis=0).argmax(axis=1)
    rng = np.random.default_rng(seed)
    problems = []
    for n in lengths:
        e = rng.integers(0, vocabulary, n)
        f = best[e]
        for i in range(0, n - 1, 2):
            if rng.random() < 0.5:
                f[i], f[i + 1] = f[i + 1], f[i]
        swap = rng.random(n) < noise
        f[swap] = rng.integers(0, vocabulary, swap.sum())
        problems.append(SentencePairProblem(f"itg-{n}x{n}", itg, e, f))
    return problems


AGGRESSIVE = {"confidence": 0.0, "max_candidates": 10**9, "compatible": False}


def _estimators(aggressive: bool = False) -> list[Estimator]:
    extra = [RandomizedPruningEstimator("randomized-aggressive", **AGGRESSIVE)] if aggressive else []
    return [RandomizedPruningEstimator(), *extra, FixedMaskEstimator("posterior"), FixedMaskEstimator("fom"),
            ITGRandomizedPruningEstimator(), TicTacToeEstimator(), ExactEstimator()]


def pruning_quick_suite() -> Suite:
    """Short sentences and pairs, few masks: randomized pruning vs fixed masks vs exact (``make demo``)."""
    return Suite(problems=[*sentence_problems([8, 12]), *sentence_pair_problems([6])], estimators=_estimators(),
                 budgets={"randomized": [4, 16, 64], "fixed-posterior": [1, 3, 5], "fixed-fom": [1, 3, 5],
                          "itg-randomized": [4, 16, 64], "itg-tic-tac-toe": [1, 3, 5], "exact": [1]},
                 replicates=3, description="randomized pruning vs fixed masks, short PCFG sentences and ITG pairs")


def pruning_bias_suite() -> Suite:
    """L2 error vs time of randomized pruning and fixed masks (the paper's Fig. 4 c, d), PCFG and ITG."""
    # the recorded Fig. 4 study (experiments/pruning_bias/README.md) used the grammar's default concentration
    return Suite(problems=[*sentence_problems([10, 16, 22], n_coarse=5, n_splits=2, concentration=0.05),
                           *sentence_pair_problems([10, 14, 18])],
                 estimators=_estimators(aggressive=True),
                 budgets={"randomized": [4, 16, 64, 256], "randomized-aggressive": [4, 16, 64, 256],
                          "fixed-posterior": [1, 2, 3, 4, 5, 6], "fixed-fom": [1, 2, 3, 4, 5, 6],
                          "itg-randomized": [4, 16, 64, 256], "itg-tic-tac-toe": [1, 2, 3, 4, 5, 6, 7, 8, 10, 12],
                          "exact": [1]},
                 replicates=5, description="L2 bias vs time of pruning estimators (PCFG, ITG)")
