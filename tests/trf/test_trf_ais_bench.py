"""TRF AIS per length, the harness suites and the morph CLI on a tiny word list."""

from __future__ import annotations

import json

import numpy as np
import pytest

from samplers.testing import assert_close_in_se
from trf import exact
from trf.ais import ais_log_partition


def test_ais_is_unbiased_for_z_in_linear_space(tiny_model):
    """Mean of Z_j estimates over 40 independent AIS runs equals the exact Z_j within 4 standard errors."""
    features, lam, m = tiny_model
    log_z = exact.log_partition(features, lam, m)
    runs = np.array([ais_log_partition(features, lam, m, 5, n_particles=5, seed=s)[0] for s in range(40)])
    ratio = np.exp(runs - log_z)                              # unbiased for 1
    assert_close_in_se(ratio.mean(axis=0), np.ones(m), ratio.std(axis=0, ddof=1) / np.sqrt(len(runs)), k=4,
                       what="AIS Z_j / Z_j*")


def test_ais_converges_with_temperatures(tiny_model):
    features, lam, m = tiny_model
    log_z = exact.log_partition(features, lam, m)
    est, se = ais_log_partition(features, lam, m, 200, n_particles=20, seed=1)
    assert np.abs(est - log_z).max() < 0.05
    assert np.all(se < 0.1)
    with pytest.raises(ValueError, match="n_temperatures"):
        ais_log_partition(features, lam, m, 0)


@pytest.mark.slow
def test_quick_suite_estimates_improve_with_budget():
    from samplers.harness import Study
    from trf.suites import trf_quick_suite

    suite = trf_quick_suite()
    problem = suite.problems[0]
    truth = problem.exact()["zeta"]
    errs = {}
    for est in suite.estimators:
        lo, hi = suite.budgets[est.name]
        errs[est.name] = [np.abs(est.estimate(problem, b, seed=3)["zeta"] - truth).mean() for b in (lo, hi)]
    assert errs["AugSA-zeta"][1] < 0.25 and errs["AIS"][1] < 0.5
    assert errs["AugSA-zeta"][1] < errs["AugSA-zeta"][0]
    assert Study is not None


@pytest.mark.slow
def test_morph_cli_on_tiny_lists(tmp_path, capsys):
    from samplers.cli import main

    rng = np.random.default_rng(0)
    words = ["".join(rng.choice(list("abcde"), size=rng.integers(1, 6))) for _ in range(400)]
    (tmp_path / "train.txt").write_text("\n".join(words[:300] + ["Bad", "x-y"]))
    (tmp_path / "test.txt").write_text("\n".join(w for w in words[300:] if len(w) > 0))
    code = main(["trf", "morph", "--train", str(tmp_path / "train.txt"), "--test", str(tmp_path / "test.txt"),
                 "--out", str(tmp_path / "out"), "--iters", "120", "--samples", "20", "--m", "5",
                 "--eval-every", "20", "--qn-iters", "50", "--replicates", "2", "--no-progress"])
    assert code == 0
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    for key in ("augsa_empirical_pi0", "augsa_eq26_pi0", "iis", "quasi_newton", "wb3"):
        assert np.isfinite(metrics[key]["test_nll_exact"])
    assert metrics["quasi_newton"]["train_nll_exact"] <= metrics["augsa_eq26_pi0"]["train_nll_exact"] + 1e-9
    assert len(list((tmp_path / "out").glob("fig3*.png"))) == 4

    reps = metrics["augsa_empirical_pi0"]["replicates"]
    assert len(reps) == 2 and reps[0]["test_nll_exact"] != reps[1]["test_nll_exact"]   # two seeds
    assert reps[0]["test_nll_exact"] == metrics["augsa_empirical_pi0"]["test_nll_exact"]
    assert 0 <= reps[0]["pi_abs_zeta_error_end"] <= max(  # a pi-weighted mean is at most the largest error
        abs(a - b) for a, b in zip(*metrics["augsa_empirical_pi0"]["zeta_snapshots"]["120"]))
    captured = capsys.readouterr()
    assert "skipped 2 words" in captured.err and "Quasi-Newton" in captured.out and " ± " in captured.out


def test_morph_length_warnings_and_refusal_to_rank():
    from trf.morph import length_warnings, metrics_table, rankable

    assert length_warnings(np.array([0, 50, 40, 30])) == []
    warned = length_warnings(np.array([3, 50, 0, 30, 0, 2]))
    assert any("no training words of length 3, 5" in w for w in warned)
    assert any("fewer than 10 training words at length 1, 6" in w for w in warned)
    good = {"train_nll_exact": 5.0, "test_nll_exact": 5.2, "test_nll_estimated_zeta": 5.3, "wall_seconds": 1.0}
    assert rankable(good) is None
    assert "not finite and positive" in rankable({**good, "test_nll_exact": -0.6})
    assert "not finite and positive" in rankable({**good, "train_nll_exact": float("nan")})
    assert rankable({**good, "guard_message": "training stopped: x"}) == "training stopped: x"
    metrics = {"quasi_newton": dict(good), "iis": dict(good), "wb3": dict(good), "warnings": ["gappy"],
               "augsa_empirical_pi0": {**good, "test_nll_estimated_zeta": -30.2},
               "augsa_eq26_pi0": {**good, "test_nll_exact": 3.3e10 * float("inf")}}
    table = metrics_table(metrics)
    assert "| AugSA (pi0 Eq. 26) | not ranked |" in table and "warning: gappy" in table
    assert "AugSA (pi0 = n_j/n): NLL with AugSA's estimated zeta is not finite and positive" in table
    bad_qn = {**metrics, "quasi_newton": {**good, "test_nll_exact": -1.0}}
    assert metrics_table(bad_qn).count("| not ranked | not ranked |") == 5  # no reference: no ranking at all


def test_morph_cli_refuses_out_of_range_numbers_by_flag(tmp_path, capsys):
    from samplers.cli import main

    for flag, value in (("--iters", "0"), ("--m", "-2"), ("--seed", "-1"), ("--samples", "x")):
        with pytest.raises(SystemExit):
            main(["trf", "morph", "--out", str(tmp_path / "bad"), flag, value])
        assert f"argument {flag}: expected an integer >= " in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()
