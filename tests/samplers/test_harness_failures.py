"""Failures are data: a raising estimator or exact(), or an invalid estimate, is recorded with its
coordinates and seed; the other estimators' rows are complete; fail_fast restores stopping."""

from __future__ import annotations

import numpy as np
import pytest

from samplers.cli import main as mcsa_main
from samplers.harness import (
    FunctionEstimator,
    FunctionProblem,
    RunFailedWarning,
    Study,
    Suite,
    register_suite,
    run_seed,
)


def _mean_problem(name="coin", p=0.5):
    return FunctionProblem(name, lambda: {"mean": p})


def _mc(name="mc"):
    return FunctionEstimator(name, lambda prob, n, s: {"mean": np.random.default_rng(s).random(n).mean()})


def _raises_on_big_budgets(prob, n, s):
    if n >= 100:
        raise FloatingPointError(f"diverged at n={n}")
    return {"mean": 0.5}


def test_raising_estimator_leaves_other_rows_complete_and_is_listed():
    study = Study([_mean_problem("a"), _mean_problem("b", 0.3)],
                  [_mc(), FunctionEstimator("flaky", _raises_on_big_budgets)], budgets=[10, 100], replicates=3, seed=4)
    with pytest.warns(RunFailedWarning, match="6 of 24 runs failed"):
        res = study.run(progress=False)
    reference = Study([_mean_problem("a"), _mean_problem("b", 0.3)], [_mc()], budgets=[10, 100], replicates=3,
                      seed=4).run(progress=False)
    mc_rows = [r for r in res.rows if r["estimator"] == "mc"]
    assert [(r["problem"], r["budget"], r["replicate"], r["estimate"]) for r in mc_rows] == \
        [(r["problem"], r["budget"], r["replicate"], r["estimate"]) for r in reference.rows]
    assert len([r for r in res.rows if r["estimator"] == "flaky"]) == 2 * 3  # budget 10 ran
    assert len(res.failures) == 2 * 3
    first = res.failures[0]
    assert (first["problem"], first["estimator"], first["budget"], first["replicate"]) == ("a", "flaky", 100, 0)
    assert first["seed"] == run_seed(4, "a", "flaky", 100, 0)
    assert "FloatingPointError: diverged at n=100" in first["error"]
    md = res.report_markdown()
    assert "## Failed runs (6)" in md and "| a | flaky | 100 | 0 |" in md
    # fail_fast stops at the first failure, with the run's coordinates
    with pytest.raises(RuntimeError, match=r"estimator 'flaky' failed on problem 'a' \(budget=100, seed=\d+\)"):
        study.run(progress=False, fail_fast=True)


def test_raising_exact_fails_that_problems_runs_only():
    def broken():
        raise LookupError("reference table missing")

    study = Study([FunctionProblem("broken", broken), _mean_problem("fine")], [_mc()], budgets=[10], replicates=2)
    with pytest.warns(RunFailedWarning):
        res = study.run(progress=False)
    assert {r["problem"] for r in res.rows} == {"fine"} and len(res.rows) == 2
    assert len(res.failures) == 2 and all("exact() of problem 'broken' failed: LookupError" in f["error"]
                                          for f in res.failures)
    with pytest.raises(LookupError):
        study.run(progress=False, fail_fast=True)


@pytest.mark.parametrize("bad, kind", [("0.5", "str"), (b"1", "bytes"), (True, "boolean"),
                                       (np.array(["a", "b"]), "dtype <U1"), ({"x": 1}, "dict"), (1 + 2j, "complex")])
def test_non_numeric_estimates_are_errors_not_converted(bad, kind):
    est = FunctionEstimator("odd", lambda prob, n, s: {"mean": bad})
    with pytest.warns(RunFailedWarning):
        res = Study([_mean_problem()], [est], budgets=[5], replicates=1).run(progress=False)
    assert len(res.rows) == 0 and "non-numeric" in res.failures[0]["error"] or "boolean" in res.failures[0]["error"]
    assert kind.split()[0] in res.failures[0]["error"] or kind == "complex"
    with pytest.raises(TypeError, match="estimator 'odd' on problem 'coin'"):
        Study([_mean_problem()], [est], budgets=[5], replicates=1).run(progress=False, fail_fast=True)


def test_bad_evaluations_are_errors_and_good_ones_recorded():
    good = FunctionEstimator("counted", lambda prob, n, s: {"mean": 0.5, "evaluations": 3 * n})
    bad = FunctionEstimator("negative", lambda prob, n, s: {"mean": 0.5, "evaluations": -1})
    with pytest.warns(RunFailedWarning):
        res = Study([_mean_problem()], [good, bad], budgets=[4, 8], replicates=2).run(progress=False)
    assert [r["evaluations"] for r in res.rows] == [12.0, 12.0, 24.0, 24.0]
    assert [c["mean_evaluations"] for c in res.summary()] == [12.0, 24.0]
    assert all("evaluations=-1" in f["error"] for f in res.failures) and len(res.failures) == 4
    with pytest.raises(ValueError, match="reserved"):
        Study([FunctionProblem("p", lambda: {"evaluations": 1.0})], [good], budgets=[1]).exact_values()


def _failing_suite():
    return Suite(problems=[_mean_problem()], estimators=[_mc(), FunctionEstimator("flaky", _raises_on_big_budgets)],
                 budgets=[10, 100], replicates=2)


def test_cli_records_failures_lists_them_and_fail_fast_stops(tmp_path, capsys):
    register_suite("failing-test", _failing_suite, "a suite with a raising estimator (tests)", replace=True)
    code = mcsa_main(["bench", "run", "--suite", "failing-test", "--out", str(tmp_path / "a"), "--no-plots"])
    err = capsys.readouterr().err
    assert code == 1 and "2 runs failed" in err and "Traceback" not in err
    assert "## Failed runs (2)" in (tmp_path / "a" / "summary.md").read_text()
    code = mcsa_main(["bench", "run", "--suite", "failing-test", "--out", str(tmp_path / "b"), "--fail-fast"])
    err = capsys.readouterr().err
    assert code == 1 and "--fail-fast" in err and "estimator 'flaky' failed on problem 'coin' (budget=100" in err
