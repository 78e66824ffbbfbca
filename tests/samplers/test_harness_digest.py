"""``mcsa bench run --brief`` (what ``make demo`` prints): one line per estimator, the tables in the files."""

from __future__ import annotations

import numpy as np

from samplers.cli import main
from samplers.harness import FunctionEstimator, FunctionProblem, Study, Suite, register_suite
from samplers.harness.digest import digest

COIN = FunctionProblem("coin", lambda: {"mean": 0.5})
MC = FunctionEstimator("mc", lambda p, n, s: {"mean": np.random.default_rng(s).random(n).mean()})
STUCK = FunctionEstimator("stuck", lambda p, n, s: {"mean": 0.4})  # a biased estimator: its error does not fall


def test_digest_gives_each_estimators_budget_range_and_error_trend():
    res = Study([COIN], [MC, STUCK], budgets=[100, 10_000], replicates=8, seed=0).run(progress=False)
    lines = digest(res.summary(), "out").splitlines()
    assert len(lines) == 4  # header, two estimators, where the tables are
    mc = next(line for line in lines if line.startswith("mc "))
    stuck = next(line for line in lines if line.startswith("stuck "))
    # Monte Carlo: RMSE ~ n^-1/2, so 100x the draws gives about 0.1x the error (8 replicates: well below 0.3)
    ratio = float(mc.split()[4])
    assert ratio < 0.3 and "(1 of 1)" in mc and "budget 100..10000" in mc
    assert " 1 (0 of 1)" in stuck
    assert lines[-1].startswith("full table with 95% intervals: out/summary.md")


def test_bench_run_brief_prints_the_digest_not_the_table(tmp_path, capsys):
    register_suite("coin-digest", lambda: Suite(problems=[COIN], estimators=[MC], budgets=[10, 1000], replicates=4),
                   "a coin (digest test)", replace=True)
    assert main(["bench", "run", "--suite", "coin-digest", "-o", str(tmp_path / "brief"), "--no-plots", "--brief"]) == 0
    captured = capsys.readouterr()
    assert "RMSE last/first" in captured.out and "|" not in captured.out
    assert f"{tmp_path / 'brief'}/summary.md" in captured.out
    assert captured.err.strip().endswith(f"wrote 4 files to {tmp_path / 'brief'}")
    assert "| problem |" in (tmp_path / "brief" / "summary.md").read_text()
