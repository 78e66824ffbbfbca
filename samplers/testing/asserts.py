"""Assertion helpers scaled by Monte Carlo error (see :mod:`samplers.testing`)."""

from __future__ import annotations

from typing import Sequence

import numpy as np
from scipy import stats


def _finite(x, name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=float)
    if not np.all(np.isfinite(arr)):
        raise AssertionError(f"{name} is not finite: {arr}")
    return arr


def assert_close_in_se(estimate, exact, se, k: float = 3.0, *, what: str = "estimate") -> float:
    """Assert ``|estimate - exact| <= k * se`` (elementwise for arrays); return the largest z-score.

    With a correct, unbiased estimator whose error is approximately normal with standard error
    ``se``, a scalar check fails with probability about ``2 * (1 - Phi(k))`` (0.27% at k = 3,
    6e-5 at k = 4).

    Raises
    ------
    ValueError
        If ``se`` is not positive and finite or ``k`` is not positive.
    AssertionError
        If the estimate is off by more than ``k`` standard errors (message gives the z-score).
    """
    se_arr = np.asarray(se, dtype=float)
    if not np.all(np.isfinite(se_arr)) or np.any(se_arr <= 0):
        raise ValueError(f"se must be positive and finite, got {se}")
    if not k > 0:
        raise ValueError(f"k must be positive, got {k}")
    est = _finite(estimate, what)
    z = np.abs(est - np.asarray(exact, dtype=float)) / se_arr
    zmax = float(np.max(z))
    if zmax > k:
        where = "" if z.ndim == 0 else f" at index {tuple(int(i) for i in np.unravel_index(np.argmax(z), z.shape))}"
        raise AssertionError(f"{what} {np.round(est, 6).tolist()} differs from exact {np.round(exact, 6).tolist()} "
                             f"by {zmax:.2f} standard errors{where} (allowed {k}; se={np.round(se_arr, 6).tolist()})")
    return zmax


def assert_mean_matches(samples, exact: float, k: float = 3.0, *, ess: float | None = None,
                        what: str = "sample mean") -> float:
    """Assert the mean of ``samples`` is within ``k`` standard errors of ``exact``.

    The standard error is ``sd / sqrt(ess)`` with ``ess`` the effective sample size (default: the
    number of samples, i.e. independent draws; pass ``samplers.diagnostics.ess`` for a chain).
    """
    x = _finite(samples, "samples").ravel()
    if x.size < 2:
        raise ValueError("samples must hold at least 2 values")
    n_eff = float(x.size if ess is None else ess)
    if not n_eff > 0:
        raise ValueError(f"ess must be positive, got {ess}")
    se = x.std(ddof=1) / np.sqrt(n_eff)
    if se == 0:
        if x.mean() != exact:
            raise AssertionError(f"{what}: constant samples {x[0]} differ from exact {exact}")
        return 0.0
    return assert_close_in_se(x.mean(), exact, se, k, what=what)


def loglog_slope(budgets: Sequence[float], errors: Sequence[float]) -> float:
    """Least-squares slope of log(error) against log(budget)."""
    b = _finite(budgets, "budgets")
    e = _finite(errors, "errors")
    if b.shape != e.shape or b.ndim != 1 or b.size < 2:
        raise ValueError("budgets and errors must be 1-D of equal length >= 2")
    if np.any(b <= 0) or np.any(e <= 0):
        raise ValueError("budgets and errors must be positive for a log-log fit")
    return float(np.polyfit(np.log(b), np.log(e), 1)[0])


def assert_error_decreases(budgets: Sequence[float], errors: Sequence[float], *, max_slope: float = -0.25) -> float:
    """Assert the error falls with the budget: log-log slope at most ``max_slope`` (< 0). Returns it."""
    slope = loglog_slope(budgets, errors)
    if slope > max_slope:
        raise AssertionError(f"error does not fall fast enough with budget: log-log slope {slope:.3f} > {max_slope} "
                             f"(budgets {list(budgets)}, errors {np.round(errors, 6).tolist()})")
    return slope


def assert_mc_rate(budgets: Sequence[float], rmse: Sequence[float], *, expected_slope: float = -0.5,
                   tolerance: float = 0.2) -> float:
    """Assert RMSE falls at the stated Monte Carlo rate: ``|slope - expected_slope| <= tolerance``.

    For an unbiased estimator with variance proportional to 1/budget the slope of log RMSE against
    log budget is -1/2; ``tolerance`` absorbs the noise of RMSEs estimated from few replicates
    (with R replicates per budget, each log RMSE has sd about 1/sqrt(2R)).
    """
    slope = loglog_slope(budgets, rmse)
    if abs(slope - expected_slope) > tolerance:
        raise AssertionError(f"log RMSE vs log budget slope {slope:.3f} is not within {tolerance} of "
                             f"{expected_slope} (budgets {list(budgets)}, rmse {np.round(rmse, 6).tolist()})")
    return slope


def chi_square_gof(counts, probs, *, min_expected: float = 5.0) -> tuple[float, int, float]:
    """Pearson chi-square goodness of fit, pooling cells with expected count < ``min_expected``.

    Returns ``(statistic, degrees_of_freedom, p_value)``.  Cells with zero probability must have
    zero counts (otherwise the p-value is 0).
    """
    c = np.asarray(counts, dtype=float).ravel()
    p = np.asarray(probs, dtype=float).ravel()
    if c.shape != p.shape:
        raise ValueError(f"counts and probs must have the same number of cells, got {c.size} and {p.size}")
    if np.any(c < 0) or np.any(p < 0):
        raise ValueError("counts and probs must be non-negative")
    if not np.isclose(p.sum(), 1.0, atol=1e-6):
        raise ValueError(f"probs must sum to 1, got {p.sum()}")
    n = c.sum()
    if n <= 0:
        raise ValueError("counts must not all be zero")
    if np.any((p == 0) & (c > 0)):
        return float("inf"), 0, 0.0
    keep = p > 0
    c, p = c[keep], p[keep]
    expected = n * p
    order = np.argsort(expected)
    # pool the smallest cells until every pooled cell expects at least min_expected
    pooled_c, pooled_e = [], []
    acc_c = acc_e = 0.0
    for i in order:
        acc_c += c[i]
        acc_e += expected[i]
        if acc_e >= min_expected:
            pooled_c.append(acc_c)
            pooled_e.append(acc_e)
            acc_c = acc_e = 0.0
    if acc_e > 0:
        if pooled_e:
            pooled_c[-1] += acc_c
            pooled_e[-1] += acc_e
        else:
            pooled_c.append(acc_c)
            pooled_e.append(acc_e)
    pc, pe = np.array(pooled_c), np.array(pooled_e)
    dof = pc.size - 1
    if dof < 1:
        raise ValueError(f"too few counts ({n:.0f}) for a chi-square test with min_expected={min_expected}")
    stat = float(np.sum((pc - pe) ** 2 / pe))
    return stat, dof, float(stats.chi2.sf(stat, dof))


def assert_frequencies_match(counts, probs, *, alpha: float = 1e-3, min_expected: float = 5.0,
                             what: str = "sampler") -> float:
    """Assert visit counts are consistent with ``probs`` (chi-square; false-alarm rate ``alpha``).

    ``counts`` are counts of *independent* draws per cell; for a Markov chain, thin it to roughly
    independent draws first (or test exact samplers), otherwise the test's false-alarm rate is
    larger than ``alpha``.  Returns the p-value.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    stat, dof, pval = chi_square_gof(counts, probs, min_expected=min_expected)
    if pval < alpha:
        raise AssertionError(f"{what} frequencies do not match the target: chi2={stat:.2f} on {dof} dof, "
                             f"p={pval:.3g} < alpha={alpha}")
    return pval
