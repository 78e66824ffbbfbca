"""Harness suites of the keyboard-gesture experiment: ``doeblin-gestures`` and ``doeblin-gestures-quick``.

A problem is one synthetic data set (:class:`GestureProblem`: vocabulary, training and held-out
gestures and the fitted restart law u, all fixed by its data seed); an estimator is one training
method (:class:`GestureMethod`), which trains A's weights from the Assumption 4.3 start at budget T
(transitions per chain) and returns the held-out accuracies.  Accuracies have no exact answer: the
targets are declared *measured* (``Exact(None)``), so the harness reports their means and intervals
over replicates (each replicate: training and test chains with the run's own seed).
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np

from samplers.harness import Estimator, Problem, Suite
from samplers.harness.problem import Exact

from .model import ACCURACIES, GestureModel, evaluate_gestures, fit_u, generate_gestures, make_lexicon, train_gestures

#: label -> (sampler, Doeblin gradient estimator), as in experiments/doeblin_gestures/benchmark.py
VARIANTS = {"basic-gibbs": ("basic-gibbs", "algorithm1"), "u-gibbs": ("u-gibbs", "algorithm1"),
            "doeblin": ("doeblin", "algorithm1"), "doeblin-cv": ("doeblin", "algorithm1-cv"),
            "doeblin-plugin": ("doeblin", "contrastive"), "doeblin-cv-restarts": ("doeblin-restarts", "algorithm1-cv")}


class GestureProblem(Problem):
    """One data set: ``make_lexicon(vocab, seed=s)``, training gestures (seed s + 1), held-out gestures
    (seed s + 2), u fitted for ``u_epochs`` epochs (seed s + 3) -- the seeds of the benchmark script."""

    def __init__(self, data_seed: int, *, vocab: int = 2000, n_train: int = 300, n_test: int = 150,
                 u_epochs: int = 40):
        self.data_seed, self.vocab, self.n_train, self.n_test, self.u_epochs = data_seed, vocab, n_train, n_test, u_epochs
        self.name = f"gestures-seed{data_seed}"
        self.provenance = "measured: accuracy on held-out synthetic gestures (no exact answer)"

    @cached_property
    def setup(self) -> tuple[list, list, GestureModel]:
        """``(train, test, start)``: the data and the Assumption 4.3 start (u fitted, A = u)."""
        s = self.data_seed
        lex = make_lexicon(self.vocab, seed=s)
        train = generate_gestures(lex, self.n_train, seed=s + 1)
        test = generate_gestures(lex, self.n_test, seed=s + 2)
        return train, test, fit_u(GestureModel(lex), train, n_epochs=self.u_epochs, seed=s + 3)

    def exact(self) -> dict[str, Any]:
        return {name: Exact(None, provenance=self.provenance) for name in ACCURACIES}

    def size(self) -> dict[str, int]:
        return {"vocab": self.vocab, "n_train": self.n_train, "n_test": self.n_test}


class GestureMethod(Estimator):
    """Train with one method of :data:`VARIANTS` at budget T, then test with its sampler at T."""

    budget_label = "transitions per chain (T)"
    warmup = False          # a warm-up call would be a whole training run; the suite compiles the kernels

    def __init__(self, label: str, *, n_epochs: int, lr: float, n_chains: int = 16):
        if label not in VARIANTS:
            raise ValueError(f"label must be one of {sorted(VARIANTS)}, got {label!r}")
        self.name = label
        self.method, self.gradient = VARIANTS[label]
        self.n_epochs, self.lr, self.n_chains = n_epochs, lr, n_chains

    def supports(self, problem) -> bool:
        return isinstance(problem, GestureProblem)

    def estimate(self, problem: GestureProblem, budget: int, seed: int) -> dict[str, Any]:
        train, test, start = problem.setup
        gen = np.random.default_rng(seed)
        model = train_gestures(start, train, self.method, int(budget), n_chains=self.n_chains, n_epochs=self.n_epochs,
                               lr=self.lr, seed=gen, doeblin_estimator=self.gradient)
        acc = evaluate_gestures(model, test, self.method, int(budget), n_chains=self.n_chains, seed=gen)
        return {name: acc[name] for name in ACCURACIES}


def _compile() -> None:
    """Compile (or load) the kernels on a tiny instance so no run pays for it."""
    problem = GestureProblem(0, vocab=20, n_train=2, n_test=1, u_epochs=1)
    for label in ("basic-gibbs", "u-gibbs", "doeblin", "doeblin-cv", "doeblin-cv-restarts"):
        GestureMethod(label, n_epochs=1, lr=0.3, n_chains=2).estimate(problem, 4, 0)


def gestures_suite() -> Suite:
    """The paper-scale study (docs: experiments/doeblin_gestures/README.md): data seeds 0, 1, 2 (2000
    words, 300 training and 150 held-out gestures each), basic Gibbs, u-Gibbs, Algorithm 1 and
    Algorithm 1 + control variate at T = 20, 50, 100, 6 epochs, AdaGrad lr 0.3, 16 chains; about 3 h
    of one core."""
    _compile()
    methods = [GestureMethod(m, n_epochs=6, lr=0.3) for m in ("basic-gibbs", "u-gibbs", "doeblin", "doeblin-cv")]
    return Suite(problems=[GestureProblem(s) for s in (0, 1, 2)], estimators=methods, budgets=[20, 50, 100],
                 replicates=1, description="keyboard gestures (Sec. 5): held-out accuracy of basic Gibbs, u-Gibbs "
                 "and the strong Doeblin sampler trained by Algorithm 1 (+ control variate) at equal budget T")


def gestures_quick_suite() -> Suite:
    """A reduced check (about 5 min of one core): data seed 0, T = 20, 2 epochs at lr 0.3, basic Gibbs,
    u-Gibbs and Algorithm 1 + control variate, 3 replicates."""
    _compile()
    methods = [GestureMethod(m, n_epochs=2, lr=0.3) for m in ("basic-gibbs", "u-gibbs", "doeblin-cv")]
    return Suite(problems=[GestureProblem(0)], estimators=methods, budgets=[20], replicates=3,
                 description="keyboard gestures, reduced: one data set, T = 20, 2 epochs")
