"""The trf-morph harness suites: measured targets, seeds from the study seed, refusal to rank."""

from __future__ import annotations

import numpy as np
import pytest

from experiments.trf_morph.suite import MorphMethod, MorphProblem, morph_quick_suite
from samplers.harness import Study, list_suites


@pytest.fixture(scope="module")
def problem():
    return MorphProblem("wordfreq", 0, m=8, n_train=1500, n_test=300)


def test_study_rows_are_exact_nlls_and_reproducible(problem):
    methods = [MorphMethod("augsa-eq26", samples=20), MorphMethod("wb3")]
    budgets = {"augsa-eq26": [40], "wb3": [1]}
    res = Study([problem], methods, budgets=budgets, replicates=2, seed=3).run(progress=False)
    assert len(res.rows) == 2 * 2 * 2
    for row in res.rows:
        assert row["error"] is None and row["exact"] is None
        assert 0.0 < row["estimate"] < 40.0  # nats per word: positive and finite
    again = Study([problem], methods, budgets=budgets, replicates=2, seed=3).run(progress=False)
    assert [r["estimate"] for r in res.rows] == [r["estimate"] for r in again.rows]
    augsa = [r["estimate"] for r in res.rows if r["estimator"] == "augsa-eq26" and r["target"] == "test_nll"]
    assert augsa[0] != augsa[1]  # two replicates, two seeds
    # quasi-Newton on the exact likelihood fits the training words at least as well as 40 AugSA iterations
    qn = MorphMethod("quasi-newton").estimate(problem, 100, 0)
    train_augsa = [r["estimate"] for r in res.rows if r["estimator"] == "augsa-eq26" and r["target"] == "train_nll"]
    assert qn["train_nll"] <= min(train_augsa) + 1e-9 and np.isfinite(qn["test_nll"])


def test_registered_and_bad_input():
    assert {"trf-morph", "trf-morph-quick"} <= set(list_suites())
    suite = morph_quick_suite()
    assert {e.name for e in suite.estimators} == {"augsa-empirical", "augsa-eq26", "quasi-newton", "wb3"}
    with pytest.raises(ValueError, match="label"):
        MorphMethod("sgd")
    with pytest.raises(ValueError, match="words"):
        MorphProblem("klingon")
