"""ESS, split R-hat and MCSE: AR(1) closed forms, negative controls, degenerate cases, bad input,
and agreement with arviz_stats (used as an oracle when installed)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.signal import lfilter

from samplers.diagnostics import autocovariance, ess, mcse, rank_normalize, rhat, split_chains


def ar1(rho: float, n: int, n_chains: int = 1, seed: int = 0) -> np.ndarray:
    """Stationary AR(1) chains x_t = rho x_{t-1} + e_t, e_t ~ N(0, 1), shape (n_chains, n)."""
    e = np.random.default_rng(seed).standard_normal((n_chains, n))
    e[:, 0] /= np.sqrt(1 - rho**2)  # start in the stationary law
    return lfilter([1.0], [1.0, -rho], e, axis=1)


@pytest.mark.parametrize("method", ["mean", "bulk"])
def test_ess_of_ar1_matches_closed_form(method):
    """AR(1), rho = 0.9, n = 100000: ESS = n (1 - rho) / (1 + rho) = 5263; within 10% (the estimator's
    sampling sd at this n is about 4%, measured over 40 seeds)."""
    rho, n = 0.9, 100_000
    target = n * (1 - rho) / (1 + rho)
    value = ess(ar1(rho, n, seed=2026), method=method)
    assert isinstance(value, float)
    assert abs(value / target - 1) < 0.10, (value, target)


def test_ess_of_independent_draws_is_about_n():
    value = ess(np.random.default_rng(3).standard_normal((4, 2500)))
    assert abs(value / 10_000 - 1) < 0.1


def test_ess_detects_autocorrelation():
    """Negative control: a strongly correlated chain (rho = 0.99) is not mistaken for i.i.d. draws."""
    assert ess(ar1(0.99, 20_000, seed=4)) < 0.05 * 20_000


def test_mcse_of_ar1_matches_closed_form():
    """MCSE of the mean of AR(1): sd / sqrt(ESS) with sd^2 = 1 / (1 - rho^2); within 10%."""
    rho, n = 0.8, 50_000
    truth = np.sqrt(1 / (1 - rho**2)) / np.sqrt(n * (1 - rho) / (1 + rho))
    assert abs(mcse(ar1(rho, n, seed=5)) / truth - 1) < 0.10


def test_rhat_near_one_for_mixed_chains():
    assert rhat(ar1(0.5, 2000, n_chains=4, seed=6)) < 1.01
    assert rhat(ar1(0.5, 2000, n_chains=1, seed=6)) < 1.01  # one chain: split into halves


def test_rhat_flags_shifted_chains():
    """Negative control: chains whose means differ by 1 (a sd) give R-hat well above 1.1."""
    chains = ar1(0.5, 2000, n_chains=4, seed=7) + np.arange(4)[:, None]
    assert rhat(chains) > 1.1


def test_rhat_flags_chains_with_different_scales():
    """The folded R-hat catches chains with equal means but different spreads (Vehtari et al. Sec. 4.2)."""
    chains = ar1(0.0, 2000, n_chains=4, seed=8) * np.array([1.0, 1.0, 1.0, 4.0])[:, None]
    assert rhat(chains) > 1.05


def test_degenerate_and_nan_input():
    const = np.full((3, 50), 2.5)
    assert ess(const) == 0.0 and mcse(const) == 0.0 and np.isnan(rhat(const))
    bad = ar1(0.5, 100, n_chains=2, seed=9)
    bad[1, 7] = np.nan
    assert np.isnan(ess(bad)) and np.isnan(rhat(bad)) and np.isnan(mcse(bad))


@pytest.mark.parametrize("call, exc, match", [
    (lambda: ess(np.zeros((2, 3, 4))), ValueError, "chains must have shape"),
    (lambda: ess(np.zeros((2, 3))), ValueError, "at least 4 draws"),
    (lambda: rhat([[0.0, 1.0, np.inf, 2.0, 3.0]]), ValueError, "infinite"),
    (lambda: ess(np.zeros((2, 10)), method="tail"), ValueError, "method must be one of"),
    (lambda: mcse("abc"), TypeError, "chains must be array-like"),
])
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_building_blocks():
    x = np.arange(10.0).reshape(2, 5)
    np.testing.assert_array_equal(split_chains(x), [[0, 1], [5, 6], [3, 4], [8, 9]])
    z = rank_normalize(x)
    assert np.all(np.diff(z.ravel()) > 0) and z.mean() == pytest.approx(0.0, abs=1e-12)
    y = np.random.default_rng(1).standard_normal((2, 64))
    direct = np.array([[np.dot(c[: 64 - k] - c.mean(), c[k:] - c.mean()) / 64 for k in range(64)] for c in y])
    np.testing.assert_allclose(autocovariance(y), direct, atol=1e-12)


@pytest.mark.parametrize("rho, shape", [(0.0, (4, 500)), (0.7, (3, 1000)), (0.95, (2, 3000)), (-0.3, (4, 301))])
def test_agrees_with_arviz_stats(rho, shape):
    """Oracle: arviz_stats (same definitions, Vehtari et al. 2021) within 1% when it is installed."""
    az = pytest.importorskip("arviz_stats.base").array_stats
    x = ar1(rho, shape[1], n_chains=shape[0], seed=10) + 0.1 * np.random.default_rng(11).standard_t(3, size=shape)
    assert ess(x) == pytest.approx(az.ess(x), rel=0.01)
    assert ess(x, "mean") == pytest.approx(az.ess(x, method="mean"), rel=0.01)
    assert rhat(x) == pytest.approx(az.rhat(x), rel=1e-3)
    assert mcse(x) == pytest.approx(az.mcse(x), rel=0.01)
