"""Randomized-pruning suites ``pruning-quick`` and ``pruning-bias``, as data.

Problems are sentences under latent-annotation style random PCFGs (:meth:`Grammar.random_split`)
and sentence pairs under a random ITG; the target ``"counts"`` is the vector of span posteriors and
expected binary-rule counts (:meth:`Expectations.vector`; for ITGs alignment and null posteriors
plus rule counts) computed exactly by inside-outside.  Per-run L2 error against the exact vector
and wall time give the paper's Fig. 4(c, d) axes.  Estimators: :mod:`samplers.pruning.estimators`.
"""

from __future__ import annotations

import numpy as np

from ..estimators import ExactEstimator
from ..harness import Suite
from ..problems import ITG_PAIR, PCFG, PCFGProblem
from .estimators import (
    AGGRESSIVE,
    FixedMaskEstimator,
    ITGRandomizedPruningEstimator,
    RandomizedPruningEstimator,
    TicTacToeEstimator,
)
from .grammar import Grammar
from .itg import ITG
from .problems import ITGPairProblem


def sentence_problems(lengths, *, n_coarse: int = 4, n_splits: int = 2, n_terminals: int = 12,
                      seed: int = 0) -> list[PCFGProblem]:
    """One random-split PCFG and one random sentence per length (target ``counts``)."""
    grammar = Grammar.random_split(n_coarse, n_splits, n_terminals, seed=seed)
    rng = np.random.default_rng(seed)
    problems = []
    for n in lengths:
        words = [grammar.terminals[i] for i in rng.integers(0, n_terminals, n)]
        problems.append(PCFGProblem(f"pcfg-{grammar.n_nonterminals}nt-len{n}", grammar, words, targets=("counts",)))
    return problems


def sentence_pair_problems(lengths, *, n_nonterminals: int = 2, vocabulary: int = 30, seed: int = 0,
                           noise: float = 0.2) -> list[ITGPairProblem]:
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
        problems.append(ITGPairProblem(f"itg-{n}x{n}", itg, e, f))
    return problems


def _estimators(aggressive: bool = False) -> list:
    extra = [RandomizedPruningEstimator("randomized-aggressive", **AGGRESSIVE)] if aggressive else []
    return [RandomizedPruningEstimator("randomized"), *extra, FixedMaskEstimator("posterior"),
            FixedMaskEstimator("fom"), ITGRandomizedPruningEstimator(), TicTacToeEstimator(),
            ExactEstimator("exact", (PCFG, ITG_PAIR), family="pruning")]


def pruning_quick_suite() -> Suite:
    """Short sentences and pairs, few masks: randomized pruning vs fixed masks vs exact (``make demo``)."""
    return Suite(problems=[*sentence_problems([8, 12]), *sentence_pair_problems([6])], estimators=_estimators(),
                 budgets={"randomized": [4, 16, 64], "fixed-posterior": [1, 3, 5], "fixed-fom": [1, 3, 5],
                          "itg-randomized": [4, 16, 64], "itg-tic-tac-toe": [1, 3, 5], "exact": [1]},
                 replicates=3, description="randomized pruning vs fixed masks, short PCFG sentences and ITG pairs")


def pruning_bias_suite() -> Suite:
    """L2 error vs time of randomized pruning and fixed masks (the paper's Fig. 4 c, d), PCFG and ITG."""
    return Suite(problems=[*sentence_problems([10, 16, 22], n_coarse=5, n_splits=2),
                           *sentence_pair_problems([10, 14, 18])],
                 estimators=_estimators(aggressive=True),
                 budgets={"randomized": [4, 16, 64, 256], "randomized-aggressive": [4, 16, 64, 256],
                          "fixed-posterior": [1, 2, 3, 4, 5, 6], "fixed-fom": [1, 2, 3, 4, 5, 6],
                          "itg-randomized": [4, 16, 64, 256], "itg-tic-tac-toe": [1, 2, 3, 4, 5, 6, 7, 8, 10, 12],
                          "exact": [1]},
                 replicates=5, description="L2 bias vs time of pruning estimators (PCFG, ITG)")
