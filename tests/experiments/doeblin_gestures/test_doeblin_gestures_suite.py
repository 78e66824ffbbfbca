"""The gesture harness suites: a run trains and tests with its own seed; targets are measured."""

from __future__ import annotations

from experiments.doeblin_gestures.model import ACCURACIES
from experiments.doeblin_gestures.suite import GestureMethod, GestureProblem
from samplers.harness import Study, list_suites


def test_study_rows_are_accuracies_and_reproducible():
    problem = GestureProblem(0, vocab=30, n_train=4, n_test=3, u_epochs=1)
    methods = [GestureMethod("u-gibbs", n_epochs=1, lr=0.3, n_chains=2),
               GestureMethod("doeblin-cv", n_epochs=1, lr=0.3, n_chains=2)]
    res = Study([problem], methods, budgets=[6], replicates=2, seed=3).run(progress=False)
    assert len(res.rows) == 2 * 2 * len(ACCURACIES)
    for row in res.rows:
        assert row["error"] is None and row["exact"] is None
        assert 0.0 <= row["estimate"] <= 1.0
    again = Study([problem], methods, budgets=[6], replicates=2, seed=3).run(progress=False)
    assert [r["estimate"] for r in res.rows] == [r["estimate"] for r in again.rows]
    other = Study([problem], methods, budgets=[6], replicates=2, seed=4).run(progress=False)
    assert [r["seed"] for r in res.rows] != [r["seed"] for r in other.rows]


def test_registered():
    assert {"doeblin-gestures", "doeblin-gestures-quick"} <= set(list_suites())
