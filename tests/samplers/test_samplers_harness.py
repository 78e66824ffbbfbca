"""The evaluation harness: seeds, parallel determinism, summaries, writers, CLI and bad input."""

from __future__ import annotations

import csv
import math
import re

import numpy as np
import pytest

from samplers.cli import main as mcsa_main
from samplers.harness import (
    Estimator,
    FunctionEstimator,
    FunctionProblem,
    Problem,
    Results,
    RunFailedWarning,
    Study,
    Suite,
    list_suites,
    load_suite,
    register_suite,
    run_seed,
    run_suite,
)


class GaussianMean(Problem):
    """Mean (scalar) and the first three moments (array) of N(mu, 1)."""

    def __init__(self, mu: float):
        self.mu = mu
        self.name = f"gauss-{mu:g}"

    def exact(self):
        return {"mean": self.mu, "moments": np.array([self.mu, self.mu ** 2 + 1.0, self.mu ** 3 + 3 * self.mu])}


class MonteCarloMean(Estimator):
    """Plain Monte Carlo with ``budget`` draws: unbiased, variance 1/budget for the mean."""

    name = "mc"

    def estimate(self, problem, budget, seed):
        x = np.random.default_rng(seed).normal(problem.mu, 1.0, size=budget)
        return {"mean": x.mean(), "moments": np.array([x.mean(), (x ** 2).mean(), (x ** 3).mean()])}


class ShiftedMean(MonteCarloMean):
    """A biased estimator (adds 0.5): the summary must show the bias."""

    name = "shifted"

    def estimate(self, problem, budget, seed):
        return {"mean": super().estimate(problem, budget, seed)["mean"] + 0.5}


def _study(**kw):
    args = dict(problems=[GaussianMean(0.0), GaussianMean(1.5)], estimators=[MonteCarloMean(), ShiftedMean()],
                budgets=[50, 400], replicates=6, seed=11)
    args.update(kw)
    return Study(**args)


def _estimates(results: Results) -> list:
    return [(r["problem"], r["estimator"], r["budget"], r["replicate"], r["target"], r["seed"], r["estimate"],
             r["error"]) for r in results.rows]


def test_seeds_are_derived_from_coordinates_and_differ():
    study = _study()
    seeds = [s.seed for s in study.runs()]
    assert len(set(seeds)) == len(seeds)
    assert seeds == [s.seed for s in _study().runs()]
    assert seeds != [s.seed for s in _study(seed=12).runs()]
    # the seed of a run does not depend on which other problems/estimators are in the study
    alone = Study([GaussianMean(1.5)], [ShiftedMean()], budgets=[400], replicates=6, seed=11).runs()
    assert [s.seed for s in alone] == [run_seed(11, "gauss-1.5", "shifted", 400, r) for r in range(6)]
    assert set(s.seed for s in alone) <= set(seeds)


def test_parallel_run_gives_identical_estimates():
    serial = _study().run(n_jobs=1, progress=False)
    parallel = _study().run(n_jobs=2, progress=False)
    assert _estimates(serial) == _estimates(parallel)
    for i, (est, truth) in serial.arrays.items():
        np.testing.assert_array_equal(est, parallel.arrays[i][0])
        np.testing.assert_array_equal(truth, parallel.arrays[i][1])


@pytest.mark.dask
def test_dask_backend_gives_identical_estimates():
    distributed = pytest.importorskip("distributed")
    import joblib

    serial = _study(budgets=[50], replicates=3).run(n_jobs=1, progress=False)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster):
        with joblib.parallel_config(backend="dask"):
            on_dask = _study(budgets=[50], replicates=3).run(n_jobs=2, progress=False)
    assert _estimates(serial) == _estimates(on_dask)


def test_summary_statistics_match_direct_computation():
    res = _study().run(progress=False)
    summary = {(r["problem"], r["estimator"], r["budget"], r["target"]): r for r in res.summary()}
    assert len(summary) == 2 * 2 * 2 + 2 * 2  # shifted only reports "mean"
    for (problem, est, budget, target), row in summary.items():
        values = res.estimates(problem, est, budget, target)
        assert row["n"] == 6
        if target == "mean":
            exact = row["exact"]
            assert row["bias"] == pytest.approx(values.mean() - exact)
            assert row["variance"] == pytest.approx(values.var(ddof=1))
            assert row["mse"] == pytest.approx(np.mean((values - exact) ** 2))
            assert row["mse"] == pytest.approx(row["bias"] ** 2 + row["variance"] * 5 / 6)
        else:
            truth = GaussianMean(float(problem.split("-", 1)[1])).exact()["moments"]
            assert row["bias"] == pytest.approx(np.linalg.norm(values.mean(axis=0) - truth))
            assert row["mse"] == pytest.approx(np.mean(np.sum((values - truth) ** 2, axis=1)))
        assert row["mean_seconds"] >= 0 and row["max_peak_bytes"] >= 0 and row["memory_kind"] == "tracemalloc"
    # the biased estimator's bias is visible and the unbiased one's is within noise
    shifted = summary[("gauss-0", "shifted", 400, "mean")]
    assert shifted["bias"] == pytest.approx(0.5, abs=4 * math.sqrt(1 / 400 / 6))
    unbiased = summary[("gauss-0", "mc", 400, "mean")]
    assert abs(unbiased["bias"]) < 4 * math.sqrt(1 / 400 / 6)


def test_writers_produce_csv_markdown_json_and_plots(tmp_path):
    res = _study(replicates=3).run(progress=False)
    written = res.save(tmp_path)
    for name in ("results.csv", "summary.csv", "summary.md", "results.json"):
        assert (tmp_path / name).stat().st_size > 0
    pngs = sorted(p for p in written if p.endswith(".png"))
    assert pngs, "expected error-vs-cost plots"
    with (tmp_path / "results.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == len(res.rows)
    assert {"problem", "estimator", "budget", "replicate", "seed", "target", "estimate", "exact", "error", "seconds",
            "peak_bytes"} <= set(rows[0])
    md = (tmp_path / "summary.md").read_text()
    table = res.to_markdown()
    assert table.startswith("| problem | target | estimator | budget | unit | n | bias [95% CI] (L2 norm for array "
                            "targets) |")
    assert table.count("\n") == 2 + len(res.summary()) and table in md
    assert "Budget units" in md and "`tracemalloc` = peak of Python/NumPy allocations" in md
    assert not list(tmp_path.glob(".partial-*")), "the temporary folder is moved into place and removed"


def test_concat_keeps_array_rows_aligned():
    a = _study(problems=[GaussianMean(0.0)], replicates=2).run(progress=False)
    b = _study(problems=[GaussianMean(1.5)], replicates=2).run(progress=False)
    both = Results.concat([a, b])
    assert len(both) == len(a) + len(b)
    np.testing.assert_array_equal(both.estimates("gauss-1.5", "mc", 50, "moments"),
                                  b.estimates("gauss-1.5", "mc", 50, "moments"))
    assert both.meta["problems"] == ["gauss-0", "gauss-1.5"]


# -- bad input -------------------------------------------------------------------------------------

@pytest.mark.parametrize("kw, match", [
    (dict(replicates=0), "replicates"),
    (dict(budgets=[10, 0]), "budgets"),
    (dict(budgets=[-5]), "budgets"),
    (dict(budgets=[]), "budgets"),
    (dict(budgets={"mc": [10]}), "budgets has no entry"),
    (dict(seed=-1), "seed"),
])
def test_study_rejects_bad_arguments(kw, match):
    with pytest.raises(ValueError, match=match):
        _study(**kw)


def test_duplicate_names_and_bad_n_jobs_are_rejected():
    with pytest.raises(ValueError, match="problems"):
        Study([GaussianMean(0.0), GaussianMean(0.0)], [MonteCarloMean()], budgets=[10])
    with pytest.raises(ValueError, match="n_jobs"):
        _study().run(n_jobs=0)


def test_unknown_target_is_an_error_naming_the_run():
    bad = FunctionEstimator("typo", lambda problem, budget, seed: {"meen": 0.0})
    message = r"estimator 'typo' on problem 'gauss-0'.*unknown target 'meen'"
    with pytest.raises(ValueError, match=message):
        Study([GaussianMean(0.0)], [bad], budgets=[10], replicates=1).run(progress=False, fail_fast=True)
    with pytest.warns(RunFailedWarning, match="1 of 1 runs failed"):
        res = Study([GaussianMean(0.0)], [bad], budgets=[10], replicates=1).run(progress=False)
    assert len(res) == 0 and re.search(message, res.failures[0]["error"])


def test_wrong_shape_is_an_error():
    bad = FunctionEstimator("short", lambda problem, budget, seed: {"moments": np.zeros(2)})
    with pytest.raises(ValueError, match=r"shape \(2,\).*expected shape \(3,\)"):
        Study([GaussianMean(0.0)], [bad], budgets=[10], replicates=1).run(progress=False, fail_fast=True)


def test_nan_estimate_warns_naming_the_run_and_the_summary_cell():
    nan_sometimes = FunctionEstimator("flaky", lambda problem, budget, seed: {"mean": float("nan") if seed % 2 == 0
                                                                              else 0.0})
    study = Study([GaussianMean(0.0)], [nan_sometimes], budgets=[10], replicates=8, seed=3)
    assert any(s.seed % 2 == 0 for s in study.runs())
    with pytest.warns(RuntimeWarning, match=r"estimator 'flaky' on problem 'gauss-0'.*non-finite"):
        res = study.run(progress=False)
    with pytest.warns(RuntimeWarning, match=r"summary of estimator 'flaky'.*replicates \["):
        summary = res.summary()
    assert math.isnan(summary[0]["mse"])


def test_estimator_exception_names_the_run():
    def boom(problem, budget, seed):
        raise ArithmeticError("diverged")

    with pytest.raises(RuntimeError, match=r"estimator 'boom' failed on problem 'gauss-0' \(budget=10, seed=\d+\)"):
        Study([GaussianMean(0.0)], [FunctionEstimator("boom", boom)], budgets=[10], replicates=1).run(
            progress=False, fail_fast=True)


def test_problem_with_non_finite_exact_value_is_rejected():
    bad = FunctionProblem("broken", lambda: {"mean": float("inf")})
    with pytest.raises(ValueError, match="broken.*non-finite exact"):
        Study([bad], [MonteCarloMean()], budgets=[10], replicates=1).run(progress=False, fail_fast=True)


def test_unknown_suite_lists_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown suite 'nope'; known suites: .*mrf-quick"):
        load_suite("nope")
    assert mcsa_main(["bench", "run", "--suite", "nope", "--out", "unused"]) == 2


# -- registry and CLI -------------------------------------------------------------------------------

def _toy_suite() -> Suite:
    return Suite(problems=[GaussianMean(0.0)], estimators=[MonteCarloMean(), ShiftedMean()],
                 budgets={"mc": [20, 80], "shifted": [20]}, replicates=3, description="toy")


def test_registered_callable_suite_runs_from_the_cli(tmp_path, capsys):
    register_suite("toy-test", _toy_suite, "a toy suite for tests")
    assert list_suites()["toy-test"] == "a toy suite for tests"
    assert mcsa_main(["bench", "run", "--suite", "toy-test", "--out", str(tmp_path), "--replicates", "2",
                      "--seed", "5", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "| gauss-0 | mean | mc | 20 | budget | 2 |" in out
    assert (tmp_path / "results.csv").exists() and list(tmp_path.glob("*.png"))
    res = run_suite("toy-test", replicates=2, seed=5, progress=False)
    assert len(res) == 2 * 2 * 2 + 1 * 2 * 1  # mc: budgets x replicates x (mean, moments); shifted: mean only


def test_bench_list_imports_no_suite_module(capsys):
    import sys

    before = set(sys.modules)
    assert mcsa_main(["bench", "list"]) == 0
    names = capsys.readouterr().out.split()
    assert {"quick", "mrf-quick", "rdp-quick", "doeblin-quick", "pruning-quick", "trf-quick"} <= set(names)
    assert not {"rdp.suites", "doeblin.suites", "trf.suites", "torch"} & (set(sys.modules) - before)


def test_cli_rejects_non_positive_replicates_and_budgets(capsys):
    for argv in (["--replicates", "0"], ["--budgets", "10", "-3"]):
        with pytest.raises(SystemExit):
            mcsa_main(["bench", "run", "--suite", "quick", "--out", "unused", *argv])
        assert "expected an integer >= 1" in capsys.readouterr().err


def test_register_suite_rejects_bad_factories():
    with pytest.raises(ValueError, match="module:function"):
        register_suite("bad", "no_colon_here")
    with pytest.raises(TypeError, match="factory"):
        register_suite("bad", 42)


def test_budgets_of_different_units_get_their_own_plot_panels(tmp_path, monkeypatch):
    """Issue 29: the PCFG demo plot put threshold levels and mask counts on one axis."""
    from matplotlib.figure import Figure

    from samplers.harness.writers import plot_error_vs_cost

    labels: list[list[str]] = []
    colours: list[dict[str, set]] = []

    def capture(fig, *args, **kwargs):
        labels.append([ax.get_xlabel() for ax in fig.axes])
        seen: dict[str, set] = {}
        for ax in fig.axes:
            for bars in ax.containers:  # one ErrorbarContainer per estimator and panel
                seen.setdefault(bars.get_label(), set()).add(bars.lines[0].get_color())
        colours.append(seen)

    monkeypatch.setattr(Figure, "savefig", capture)

    def cell(estimator, unit, budget, mse):
        return {"problem": "p", "target": "t", "estimator": estimator, "budget": budget, "budget_label": unit,
                "mse": mse, "mse_lo": mse / 2, "mse_hi": mse * 2, "mean_seconds": 0.01 * budget,
                "mean_evaluations": 10.0 * budget, "exact": 1.0, "bias": 0.0}

    summary = [cell("randomized", "masks", b, 1 / b) for b in (4, 16, 64)]
    summary += [cell("fixed", "threshold level", b, 0.1) for b in (1, 2, 3)]
    plot_error_vs_cost(summary, tmp_path)
    assert labels == [["mean warm wall seconds per run", "budget (masks)", "budget (threshold level)",
                       "evaluations per run (machine-independent cost)"]]
    # each estimator keeps one colour across the panels, and the two differ
    assert colours[0].keys() == {"randomized", "fixed"} and all(len(c) == 1 for c in colours[0].values())
    assert colours[0]["randomized"] != colours[0]["fixed"]
    labels.clear()
    plot_error_vs_cost(summary[:3], tmp_path)                     # one unit: one budget panel
    assert labels == [["mean warm wall seconds per run", "budget (masks)",
                       "evaluations per run (machine-independent cost)"]]
