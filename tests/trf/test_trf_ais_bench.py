"""TRF AIS per length and the harness suites."""

from __future__ import annotations

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
