"""The convergence helpers of samplers.testing: they pass on correct input and catch wrong input."""

from __future__ import annotations

import re

import numpy as np
import pytest

pytest_plugins = ["pytester"]

from samplers.testing import (
    assert_close_in_se,
    assert_error_decreases,
    assert_frequencies_match,
    assert_mc_rate,
    assert_mean_matches,
    chi_square_gof,
    loglog_slope,
)


def test_close_in_se_passes_and_fails_with_the_z_score():
    assert assert_close_in_se(1.02, 1.0, se=0.01, k=3) == pytest.approx(2.0)
    with pytest.raises(AssertionError, match=r"by 5.00 standard errors"):
        assert_close_in_se(1.05, 1.0, se=0.01, k=3)
    with pytest.raises(AssertionError, match=r"at index \(1,\)"):
        assert_close_in_se(np.array([1.0, 2.0]), np.array([1.0, 1.0]), se=np.array([0.1, 0.1]))
    with pytest.raises(ValueError, match="se must be positive"):
        assert_close_in_se(1.0, 1.0, se=0.0)
    with pytest.raises(AssertionError, match="not finite"):
        assert_close_in_se(float("nan"), 1.0, se=1.0)


def test_mean_matches_false_alarm_rate_is_near_nominal():
    # 400 honest experiments at k = 2 (two-sided 4.55% false alarms): the count is Binomial(400, 0.0455)
    rng = np.random.default_rng(7)
    failures = 0
    for _ in range(400):
        try:
            assert_mean_matches(rng.normal(3.0, 2.0, size=200), 3.0, k=2.0)
        except AssertionError:
            failures += 1
    mean, sd = 400 * 0.0455, np.sqrt(400 * 0.0455 * 0.9545)
    assert abs(failures - mean) < 4 * sd, failures


def test_mean_matches_detects_a_small_bias(rng):
    x = rng.normal(0.1, 1.0, size=20_000)   # bias of 0.1 = 14 standard errors
    with pytest.raises(AssertionError, match="sample mean"):
        assert_mean_matches(x, 0.0, k=4)


def test_mean_matches_uses_the_effective_sample_size(rng):
    # AR(1) with rho = 0.9: with the naive n the SE is ~4.4x too small
    n, rho = 50_000, 0.9
    eps = rng.normal(size=n)
    x = np.empty(n)
    x[0] = eps[0] / np.sqrt(1 - rho ** 2)
    for t in range(1, n):
        x[t] = rho * x[t - 1] + eps[t]
    ess = n * (1 - rho) / (1 + rho)
    z_naive = abs(x.mean()) / (x.std(ddof=1) / np.sqrt(n))
    z = assert_mean_matches(x, 0.0, k=4, ess=ess)
    assert z == pytest.approx(z_naive * np.sqrt(ess / n), rel=1e-6)


def test_loglog_slope_and_rates():
    b = np.array([10, 100, 1000, 10000])
    assert loglog_slope(b, 3.0 * b ** -0.5) == pytest.approx(-0.5)
    assert assert_mc_rate(b, 3.0 * b ** -0.5 * np.array([1.1, 0.9, 1.05, 0.95])) == pytest.approx(-0.5, abs=0.05)
    with pytest.raises(AssertionError, match="slope"):
        assert_mc_rate(b, b ** -1.0)          # too fast for a Monte Carlo rate
    with pytest.raises(AssertionError, match="does not fall"):
        assert_error_decreases(b, 0.1 + 0 * b)  # a biased estimator's error plateaus
    with pytest.raises(ValueError, match="positive"):
        loglog_slope([1, 2], [0.0, 1.0])


def test_mc_rate_of_a_real_estimator(rng):
    budgets = [100, 400, 1600, 6400]
    rmse = [np.sqrt(np.mean((rng.exponential(size=(200, n)).mean(axis=1) - 1.0) ** 2)) for n in budgets]
    assert_mc_rate(budgets, rmse, expected_slope=-0.5, tolerance=0.15)


def test_chi_square_pooling_and_exact_statistic():
    counts = np.array([18, 22, 60])
    stat, dof, p = chi_square_gof(counts, [0.2, 0.2, 0.6])
    assert stat == pytest.approx((18 - 20) ** 2 / 20 + (22 - 20) ** 2 / 20 + 0)
    assert dof == 2 and 0.5 < p < 1
    # tiny cells are pooled until each expects >= 5
    probs = np.array([0.001, 0.002, 0.297, 0.7])
    _, dof, _ = chi_square_gof(np.array([0, 1, 30, 69]), probs)
    assert dof == 1
    # a visit to a zero-probability cell is an immediate failure
    assert chi_square_gof([1, 9], [0.0, 1.0])[2] == 0.0
    with pytest.raises(ValueError, match="sum to 1"):
        chi_square_gof([1, 1], [0.5, 0.6])


def test_frequencies_match_accepts_exact_sampler_and_rejects_wrong_one(rng):
    p = np.array([0.1, 0.2, 0.3, 0.4])
    good = np.bincount(rng.choice(4, size=5000, p=p), minlength=4)
    assert assert_frequencies_match(good, p, alpha=1e-3) > 1e-3
    # noncentrality n * sum((q - p)^2 / p) = 20000 * 0.005 = 100: power > 0.9999 at alpha = 1e-3 on 3 dof
    wrong = np.bincount(rng.choice(4, size=20_000, p=[0.12, 0.2, 0.3, 0.38]), minlength=4)
    with pytest.raises(AssertionError, match="do not match"):
        assert_frequencies_match(wrong, p, alpha=1e-3)
    with pytest.raises(ValueError, match="alpha"):
        assert_frequencies_match(good, p, alpha=0.0)


def test_plugin_fixtures_are_seeded_per_test(mcsa_seed, rng):
    assert isinstance(mcsa_seed, int) and 0 <= mcsa_seed < 2 ** 31
    a = rng.random()
    assert a == np.random.default_rng(mcsa_seed).random()


def test_plugin_option_changes_the_seed(pytester):
    pytester.makepyfile("""
        def test_show(mcsa_seed):
            print("SEED", mcsa_seed)
    """)
    seeds = []
    for base in ("1", "2", "1"):
        out = pytester.runpytest_subprocess("-s", "--mcsa-seed", base)
        out.assert_outcomes(passed=1)
        seeds.append(re.search(r"SEED (\d+)", "\n".join(out.outlines)).group(1))
    assert seeds[0] == seeds[2] != seeds[1]
