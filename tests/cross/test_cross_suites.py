"""The cross suites build, hand every problem to several families, run through the harness, and
the leaderboard reads the harness summary."""

from __future__ import annotations

import numpy as np
import pytest

from samplers.cli import main as mcsa_main
from samplers.harness import Study, list_suites, load_suite
from samplers.harness.summary import NO_BETTER, leaderboard


def test_cross_suites_are_registered_and_build():
    names = list_suites()
    assert "cross-quick" in names and "cross" in names
    suite = load_suite("cross-quick")
    assert suite.baseline == "trivial"
    kinds = {p.kind for p in suite.problems}
    assert kinds == {"chain-crf", "pairwise-mrf", "pcfg", "trf"}
    families = {}
    for p in suite.problems:
        families[p.kind] = {e.family for e in suite.estimators if e.supports(p)}
        assert set(suite.budgets) >= {e.name for e in suite.estimators}
    assert families["chain-crf"] >= {"samplers", "rdp", "doeblin"}
    assert families["pcfg"] >= {"rdp", "pruning"}
    assert families["trf"] >= {"trf"}


def test_quick_study_runs_and_leaderboard_scores():
    suite = load_suite("cross-quick")
    problems = [p for p in suite.problems if p.kind in ("pcfg", "pairwise-mrf")]
    keep = {"trivial", "exact-inside", "pruning-fixed", "exact-junction-tree", "gibbs"}
    estimators = [e for e in suite.estimators if e.name in keep]
    study = Study(problems, estimators, {e.name: suite.budgets[e.name] for e in estimators}, replicates=2,
                  baseline="trivial")
    summary = study.run(progress=False).summary(n_boot=200)
    exact_rows = [r for r in summary if r["estimator"] in ("exact-inside", "exact-junction-tree")]
    assert exact_rows and all(r["rmse"] < 1e-9 and r["score"] == pytest.approx(100.0) for r in exact_rows)
    assert all(r["score"] == 0.0 for r in summary if r["estimator"] == "trivial")
    table = leaderboard(summary, {p.name: p.kind for p in problems}, caps=(1e-9, 1e3))
    assert "### pcfg: log_probability" in table and "### pairwise-mrf: marginals" in table
    line = [ln for ln in table.splitlines() if ln.startswith("| exact-inside |")][0]
    assert line.split("|")[2].strip() == "-" and line.split("|")[3].strip().startswith("100 (")


def test_leaderboard_pools_scores_over_problems():
    rows = [{"problem": p, "estimator": "a", "budget": b, "target": "t", "mean_seconds": s, "rmse": r,
             "rmse_lo": r / 2, "rmse_hi": 2 * r, "score": sc}
            for p, b, s, r, sc in [("p1", 1, 0.01, 1.0, 50.0), ("p1", 2, 1.0, 0.1, 95.0),
                                   ("p2", 1, 0.01, 2.0, 30.0), ("p2", 2, 1.0, 0.2, 85.0)]]
    table = leaderboard(rows, {"p1": "k", "p2": "k"}, caps=(0.1, 10.0))
    line = [ln for ln in table.splitlines() if ln.startswith("| a |")][0]
    assert [c.strip() for c in line.split("|")[2:4]] == [f"{np.mean([50, 30]):.0f} (max 2)",
                                                        f"{np.mean([95, 85]):.0f} (max 0.2)"]


def test_leaderboard_marks_estimators_no_better_than_the_baseline():
    """Score 0 on every problem (RMSE at or above the baseline's) is marked, beside the absolute error."""
    rows = [{"problem": p, "estimator": e, "budget": 1, "target": "t", "mean_seconds": 0.01, "rmse": r,
             "rmse_lo": r, "rmse_hi": r, "score": sc}
            for p, e, r, sc in [("p1", "bad", 30.0, 0.0), ("p2", "bad", 12.0, 0.0), ("p1", "ok", 1.0, 97.0),
                                ("p2", "ok", 20.0, 0.0)]]
    table = leaderboard(rows, {"p1": "k", "p2": "k"}, caps=(1.0,))
    bad = [ln for ln in table.splitlines() if ln.startswith("| bad |")]
    ok = [ln for ln in table.splitlines() if ln.startswith("| ok |")]
    assert bad[0].split("|")[2].strip() == f"0{NO_BETTER} (max 30)"
    assert NO_BETTER not in ok[0] and NO_BETTER in ok[1].split("|")[3]  # per problem: p2 only


def test_leaderboard_cli_errors(tmp_path, capsys):
    assert mcsa_main(["bench", "leaderboard", str(tmp_path)]) == 2
    assert "no finished study" in capsys.readouterr().err
    assert mcsa_main(["bench", "leaderboard", str(tmp_path / "none")]) == 2
    assert f"{tmp_path / 'none'} does not exist" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        mcsa_main(["bench", "leaderboard"])
    assert exc.value.code == 2


def test_leaderboard_from_a_study_folder(tmp_path, capsys):
    """`mcsa bench leaderboard DIR` reads the kinds from the study's own metadata (results.json)."""
    from samplers.harness import Suite, register_suite

    full = load_suite("cross-quick")
    problems = [p for p in full.problems if p.kind == "pairwise-mrf"]
    estimators = [e for e in full.estimators if e.name in ("trivial", "gibbs")]
    register_suite("cross-tiny-test", lambda: Suite(problems, estimators, {"trivial": [1], "gibbs": [50]},
                                                     replicates=2, baseline="trivial"), "test only", replace=True)
    out = tmp_path / "out"
    assert mcsa_main(["bench", "run", "--suite", "cross-tiny-test", "--out", str(out), "--no-plots"]) == 0
    capsys.readouterr()
    assert mcsa_main(["bench", "leaderboard", str(out)]) == 0
    table = capsys.readouterr().out
    assert "### pairwise-mrf: marginals" in table and "| gibbs |" in table


def test_cross_modules_do_not_import_torch():
    """samplers, doeblin and trf stay torch-free: only the rdp factory imports torch, when loaded."""
    import subprocess
    import sys

    code = ("import sys\n"
            "import samplers.problems, samplers.estimators, samplers.suites, rdp, rdp._register\n"
            "import samplers.pruning.estimators, doeblin.estimators, trf.estimators, samplers.models.uai\n"
            "from samplers.harness import load_estimators, load_problems\n"
            "load_estimators(families=('samplers', 'doeblin', 'pruning', 'trf'))\n"
            "load_problems('cross-quick')\n"
            "assert 'torch' not in sys.modules, 'torch imported'\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
