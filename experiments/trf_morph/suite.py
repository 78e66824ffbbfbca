"""Harness suites of the word-morphology experiment: ``trf-morph`` and ``trf-morph-quick``.

A problem is one split of an installed English word list (:class:`MorphProblem`: train and test words,
fixed by its split seed); an estimator is one training method of Sec. 6 (:class:`MorphMethod`: AugSA with
``pi0 = n_j / n`` or Eq. (26), quasi-Newton, WB3) at a budget (AugSA iterations, L-BFGS iterations; WB3
ignores it).  The targets are the exact train and test NLL per word (nats): the model's likelihood is
computed exactly, but the best achievable NLL is unknown, so the targets are *measured* (``Exact(None)``)
and the harness reports means and intervals over replicates (each replicate an AugSA run with its own
seed).  A run stopped by a divergence guard, or with an exact NLL that is not finite and positive, raises,
so the harness records a failure instead of a number.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from samplers.harness import Estimator, Problem, Suite
from samplers.harness.problem import Exact
from trf.data import ENGLISH_LOWER, WORD_LISTS, Alphabet, encode_words
from trf.exact import fit_quasi_newton
from trf.model import TRF
from trf.transms import WordBackend

from .baselines import fit_wb3, wb3_nll
from .morph import MorphSettings, _augsa_run, rankable

TARGETS = ("train_nll", "test_nll")
METHODS = ("augsa-empirical", "augsa-eq26", "quasi-newton", "wb3")


class MorphProblem(Problem):
    """``WORD_LISTS[words](m=m, seed=split_seed)``, optionally cut to the first ``n_train`` / ``n_test``
    words (test words of a length absent from the training words are dropped)."""

    def __init__(self, words: str = "wordfreq", split_seed: int = 0, *, m: int = 25, n_train: int | None = None,
                 n_test: int | None = None):
        if words not in WORD_LISTS:
            raise ValueError(f"words must be one of {sorted(WORD_LISTS)}, got {words!r}")
        self.words, self.split_seed, self.m, self.n_train, self.n_test = words, split_seed, m, n_train, n_test
        self.name = f"morph-{words}-seed{split_seed}" + (f"-{n_train}" if n_train else "")
        self.provenance = "measured: exact NLL per word of the trained model (the optimum is unknown)"

    @cached_property
    def data(self):
        """``(train, test, features)`` as :class:`trf.data.WordData` and the shared feature set."""
        train_words, test_words = WORD_LISTS[self.words](m=self.m, seed=self.split_seed)
        train_words = train_words[: self.n_train] if self.n_train else train_words
        lengths = {len(w) for w in train_words}
        test_words = [w for w in (test_words[: self.n_test] if self.n_test else test_words) if len(w) in lengths]
        alphabet = Alphabet(ENGLISH_LOWER)
        opts = {"on_unknown": "skip", "too_long": "skip"}
        train = encode_words(train_words, alphabet, self.m, **opts)
        test = encode_words(test_words, alphabet, self.m, **opts)
        return train, test, WordBackend(train, n_chains=1).features

    def exact(self) -> dict[str, Any]:
        return {name: Exact(None, provenance=self.provenance) for name in TARGETS}

    def size(self) -> dict[str, int]:
        train, test, features = self.data
        return {"train_words": len(train), "test_words": len(test), "features": int(features.d)}


class MorphMethod(Estimator):
    """One method of Sec. 6 at a budget: AugSA iterations (K = ``samples``), L-BFGS iterations, or none."""

    warmup = False  # a warm-up would be a whole training run

    def __init__(self, label: str, *, samples: int = 100):
        if label not in METHODS:
            raise ValueError(f"label must be one of {METHODS}, got {label!r}")
        self.name, self.samples = label, samples
        self.budget_label = {"quasi-newton": "L-BFGS iterations", "wb3": "unused"}.get(label, "AugSA iterations")

    def supports(self, problem) -> bool:
        return isinstance(problem, MorphProblem)

    def estimate(self, problem: MorphProblem, budget: int, seed: int) -> dict[str, Any]:
        train, test, features = problem.data
        if self.name.startswith("augsa"):
            pi0 = "empirical" if self.name == "augsa-empirical" else "eq26"
            settings = MorphSettings(iters=int(budget), samples=self.samples, seed=int(seed) % (2**31 - 1),
                                     eval_every=int(budget), progress=False)
            record = _augsa_run(train, test, features, pi0, settings)
        elif self.name == "quasi-newton":
            backend = WordBackend(train, n_chains=1)
            lam, _ = fit_quasi_newton(features, train, max_iter=int(budget))
            model = TRF(features, backend.pi, lam)
            record = {"train_nll_exact": model.nll(train), "test_nll_exact": model.nll(test)}
        else:
            wb3 = fit_wb3(train)
            record = {"train_nll_exact": wb3_nll(wb3, train), "test_nll_exact": wb3_nll(wb3, test)}
        refused = rankable(record)
        if refused is not None:
            raise ValueError(f"{self.name}: not ranked: {refused}")
        return {"train_nll": record["train_nll_exact"], "test_nll": record["test_nll_exact"]}


def morph_suite() -> Suite:
    """The Sec. 6 setting (experiments/trf_morph/README.md): the ``wordfreq`` split (seed 0, 139K / 15K
    words, m = 25), AugSA with both length proposals at t_max = 1000 (K = 100), quasi-Newton at 500
    L-BFGS iterations, WB3; 5 replicates (AugSA seeds from the study seed).  About 15 min of one core."""
    methods = [MorphMethod(label) for label in METHODS]
    return Suite(problems=[MorphProblem("wordfreq", 0)], estimators=methods,
                 budgets={"augsa-empirical": [1000], "augsa-eq26": [1000], "quasi-newton": [500], "wb3": [1]},
                 replicates=5, description="word morphology (Sec. 6): exact train/test NLL per word of AugSA "
                 "(pi0 = n_j/n and Eq. 26), quasi-Newton and WB3")


def morph_quick_suite() -> Suite:
    """A reduced check (about a minute): 3000 training and 500 test words of the ``wordfreq`` split,
    m = 12, AugSA at 200 iterations (K = 50), quasi-Newton at 100 L-BFGS iterations, WB3; 2 replicates."""
    methods = [MorphMethod(label, samples=50) for label in METHODS]
    return Suite(problems=[MorphProblem("wordfreq", 0, m=12, n_train=3000, n_test=500)], estimators=methods,
                 budgets={"augsa-empirical": [200], "augsa-eq26": [200], "quasi-newton": [100], "wb3": [1]},
                 replicates=2, description="word morphology, reduced: 3000 words, m = 12, 200 AugSA iterations")
