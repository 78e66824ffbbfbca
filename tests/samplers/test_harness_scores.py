"""The 0-100 score on the log scale between the baseline's error and the reference's precision, and runs'
``diagnostics`` (loopy BP's convergence) recorded in rows and marked in summaries and leaderboards."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest

from samplers.estimators import TrivialEstimator
from samplers.factor_graph_estimators import LoopyBPEstimator
from samplers.harness import (
    DIAGNOSTICS,
    Exact,
    FunctionEstimator,
    FunctionProblem,
    Study,
    Suite,
    read_results,
    run_suite,
)
from samplers.harness.summary import NO_BETTER, SCORE_FLOOR, leaderboard, score
from samplers.models import FactorGraph
from samplers.problems import FactorGraphProblem
from samplers.uai_scores import competition_table


def test_score_endpoints_midpoint_and_monotone():
    """Baseline -> 0, within the reference's precision -> 100, the geometric midpoint -> 50, monotone."""
    base, tol = 300.0, 1e-6
    assert score(base, base, tol) == 0.0 and score(10 * base, base, tol) == 0.0
    assert score(tol, base, tol) == 100.0 and score(0.0, base, tol) == 100.0
    assert score(math.sqrt(base * tol), base, tol) == pytest.approx(50.0)
    assert score(base * (tol / base) ** 0.25, base, tol) == pytest.approx(25.0)
    errors = np.geomspace(1e-8, 1e4, 200)
    values = [score(e, base, tol) for e in errors]
    assert all(a >= b for a, b in zip(values, values[1:])) and values[0] == 100.0 and values[-1] == 0.0
    # the case that motivated the log scale: loopy BP 17.6 nats off against a 307-nat baseline
    assert score(17.6, 307.0, 1e-6) == pytest.approx(100 * math.log(307 / 17.6) / math.log(307 / 1e-6))
    assert score(17.6, 307.0, 1e-6) < 20 and 100 * (1 - 17.6 / 307) > 94  # the linear score flattered it
    assert score(1.0, 1e-7, 1e-6) is None  # the baseline is already within the reference's precision


def _constant(name, error):
    return FunctionEstimator(name, lambda prob, n, s: {"log_partition": prob.payload + error}, warmup=False)


def test_summary_scores_of_hand_made_errors():
    """Known errors give known scores; ``score_tol`` is the reference's standard error, or the floor."""
    published = FunctionProblem("published", lambda: {"log_partition": Exact(2.0, 0.01, "a .PR file")}, payload=2.0)
    exact = FunctionProblem("exact", lambda: {"log_partition": 5.0}, payload=5.0)
    estimators = [_constant("trivial", 100.0), _constant("mid", 1.0), _constant("good", 1e-3),
                  _constant("perfect", 0.0), _constant("worse", 200.0)]
    res = Study([published, exact], estimators, budgets=[1], replicates=2, baseline="trivial").run(progress=False)
    cells = {(c["problem"], c["estimator"]): c for c in res.summary()}
    assert cells[("published", "trivial")]["score_tol"] == 0.01
    assert cells[("exact", "trivial")]["score_tol"] == SCORE_FLOOR
    expected = {("published", "mid"): 50.0,  # 1 = sqrt(100 * 0.01): half the orders of magnitude
                ("published", "good"): 100.0,  # 1e-3 is within the reference's 0.01
                ("exact", "mid"): 25.0,  # ln(100) / ln(1e8)
                ("exact", "good"): 62.5}  # ln(1e5) / ln(1e8)
    for key, value in expected.items():
        assert cells[key]["score"] == pytest.approx(value), key
    for prob in ("published", "exact"):
        assert cells[(prob, "trivial")]["score"] == 0.0 and cells[(prob, "worse")]["score"] == 0.0
        assert cells[(prob, "perfect")]["score"] == 100.0
        assert cells[(prob, "mid")]["unconverged"] is None  # it reports no convergence
    ranking = {r["estimator"]: r for r in res.scores()}
    assert ranking["mid"]["score"] == pytest.approx(37.5) and ranking["mid"]["max_rmse"] == pytest.approx(1.0)
    text = res.report_markdown()
    assert "| mid | 37.5 | 1 | 2 |  |" in text and f"| worse | 0.0{NO_BETTER} | 200 | 2 |" in text


def test_array_target_tolerance_is_the_norm_of_the_standard_errors():
    truth = np.array([0.25, 0.75])
    prob = FunctionProblem("m", lambda: {"marginals": Exact(truth, np.array([3e-3, 4e-3]), "file")})
    trivial = FunctionEstimator("trivial", lambda p, n, s: {"marginals": np.array([0.75, 0.25])}, warmup=False)
    near = FunctionEstimator("near", lambda p, n, s: {"marginals": truth + [0.0, 5e-2]}, warmup=False)
    cells = {c["estimator"]: c for c in Study([prob], [trivial, near], [1], replicates=2,
                                                baseline="trivial").run(progress=False).summary()}
    tol, base = 5e-3, math.sqrt(0.5)
    assert cells["near"]["score_tol"] == pytest.approx(tol)
    assert cells["near"]["score"] == pytest.approx(100 * math.log(base / 5e-2) / math.log(base / tol))


def _frustrated_triangle() -> FactorGraph:
    """Three binary variables on a cycle with strong anti-ferromagnetic couplings (no state satisfies all)."""
    anti = np.array([[-2.0, 2.0], [2.0, -2.0]])
    return FactorGraph([2, 2, 2], [(0, 1), (1, 2), (0, 2), (0,)], [anti, anti, anti, np.array([0.3, -0.3])])


def _chain() -> FactorGraph:
    pair = np.array([[1.0, -0.5], [0.2, 0.7]])
    return FactorGraph([2, 2, 2], [(0, 1), (1, 2), (1,)], [pair, pair, np.array([0.4, -0.1])])


def test_loopy_bp_reports_its_convergence_in_each_row(tmp_path):
    """Undamped BP on a frustrated loop has not converged at 3 or 20 iterations; on a tree it has (after 3,
    and is exact); the rows, the store, results.csv, the summary, the leaderboard and the UAI table say so."""
    problems = [FactorGraphProblem("loop", _frustrated_triangle()), FactorGraphProblem("tree", _chain())]
    suite = Suite(problems, [TrivialEstimator(), LoopyBPEstimator(damping=0.0)],
                  {"trivial": [1], "loopy-bp": [3, 20]}, replicates=2, baseline="trivial")
    res = run_suite(suite, progress=False, out=tmp_path / "out", plots=False)
    bp = {(r["problem"], r["budget"]): r["diagnostics"] for r in res.rows if r["estimator"] == "loopy-bp"}
    for budget in (3, 20):
        assert bp[("loop", budget)]["converged"] is False and bp[("loop", budget)]["iterations"] == budget
        assert bp[("loop", budget)]["max_change"] > 1e-8  # the tolerance
        assert bp[("tree", budget)]["converged"] is True and bp[("tree", budget)]["iterations"] == 3
    assert all(r["diagnostics"] is None for r in res.rows if r["estimator"] == "trivial")
    cells = {(c["problem"], c["budget"], c["target"]): c for c in res.summary() if c["estimator"] == "loopy-bp"}
    assert cells[("loop", 3, "log_partition")]["unconverged"] == 2
    assert cells[("tree", 3, "marginals")]["unconverged"] == 0
    assert cells[("tree", 3, "log_partition")]["rmse"] < 1e-8  # BP is exact on a tree
    again = read_results(tmp_path / "out").rows
    assert again[0].keys() == res.rows[0].keys() and [r["diagnostics"] for r in again] == [
        r["diagnostics"] for r in res.rows]
    with open(tmp_path / "out" / "results.csv", newline="") as fh:
        stored = [row["diagnostics"] for row in csv.DictReader(fh) if row["estimator"] == "loopy-bp"]
    assert json.loads(stored[0]) == bp[("loop", 3)]
    with open(tmp_path / "out" / "summary.csv", newline="") as fh:
        summary_csv = list(csv.DictReader(fh))

    def bp_cells(board: str) -> list[list[str]]:
        return [[c.strip() for c in ln.split("|")[2:-1]] for ln in board.splitlines() if ln.startswith("| loopy-bp |")]

    board = leaderboard(summary_csv, {"loop": "factor-graph", "tree": "factor-graph"}, caps=(1e3,))
    pooled, per_problem = bp_cells(board)[:2]  # log_partition (the marginals' lines follow)
    assert "(not converged in 2/4 runs)" in pooled[0]
    assert "(not converged in 2/2 runs)" in per_problem[0] and "not converged" not in per_problem[1]
    loop, tree = bp_cells(competition_table(tmp_path / "out"))[0]  # PR, at the largest budget (20)
    assert loop.endswith("(not converged in 2/2 runs) (20)") and "not converged" not in tree
    assert "(<= baseline)" not in pooled[0] and "largest RMSE" in (tmp_path / "out" / "summary.md").read_text()


def test_invalid_diagnostics_fail_the_run_naming_them():
    prob = FunctionProblem("p", lambda: {"x": 1.0})
    bad = FunctionEstimator("bad", lambda p, n, s: {"x": 1.0, DIAGNOSTICS: {"converged": [True]}}, warmup=False)
    ok = FunctionEstimator("ok", lambda p, n, s: {"x": 1.0, DIAGNOSTICS: {"converged": np.bool_(True), "it": np.int64(4)}},
                           warmup=False)
    with pytest.warns(UserWarning, match="runs failed"):
        res = Study([prob], [bad, ok], [1], replicates=1).run(progress=False)
    assert "diagnostic 'converged'" in res.failures[0]["error"]
    assert res.rows[0]["diagnostics"] == {"converged": True, "it": 4}
    assert type(res.rows[0]["diagnostics"]["converged"]) is bool
