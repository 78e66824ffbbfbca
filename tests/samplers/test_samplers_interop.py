"""mcsa's draws as ArviZ data: ArviZ's ESS and R-hat of Gibbs draws agree with mcsa's own diagnostics
(same definitions, Vehtari et al. 2021); Doeblin and AIS draws convert; bad input is refused."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from samplers.diagnostics import ess, rhat
from samplers.interop import ais_to_arviz, to_arviz
from samplers.models import ising_grid


def test_arviz_ess_and_rhat_of_gibbs_draws_agree_with_mcsa():
    az = pytest.importorskip("arviz")
    mrf = ising_grid(3, 3, coupling=0.5, field=0.1)
    draws = mrf.gibbs_sample(800, 4, seed=3, burn_in=100)  # (chains, draws, n_vars)
    idata = to_arviz(draws, name="x")
    assert idata.posterior["x"].shape == draws.shape
    az_ess = az.ess(idata, method="bulk")["x"].values
    az_rhat = az.rhat(idata)["x"].values
    for i in range(mrf.n_vars):
        chains = draws[:, :, i].astype(float)
        assert az_ess[i] == pytest.approx(ess(chains, method="bulk"), rel=0.01), i
        assert az_rhat[i] == pytest.approx(rhat(chains), rel=0.01), i
    # negative control: stuck chains (each chain constant at a different value) get a large R-hat from both
    stuck = np.repeat(np.arange(4.0)[:, None], 200, axis=1) + np.random.default_rng(0).normal(0, 1e-3, (4, 200))
    assert az.rhat(to_arviz(stuck))["x"].values > 2 and rhat(stuck) > 2


def test_doeblin_and_ais_draws_convert():
    pytest.importorskip("arviz")
    from doeblin.estimators import doeblin_gibbs_draws
    from samplers.ais import ais_log_partition

    mrf = ising_grid(2, 2, coupling=0.3)
    draws, _ = doeblin_gibbs_draws(mrf, 300, 0.2, seed=1)
    idata = to_arviz(draws[None], name="y")
    assert idata.posterior["y"].shape == (1, 300, 4)
    res = ais_log_partition(mrf, n_temperatures=10, n_chains=50, seed=2)
    weights = ais_to_arviz(res)
    np.testing.assert_allclose(weights.sample_stats["log_weight"].values[0], res.log_weights)
    assert weights.posterior["weight"].values.sum() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="one row per AIS chain"):
        ais_to_arviz(res, np.zeros((3, 4)))
    with pytest.raises(ValueError, match="shaped"):
        to_arviz(np.zeros(5))
    with pytest.raises(ValueError, match="log_weights must have shape"):
        to_arviz(np.zeros((2, 5)), log_weights=np.zeros(5))


def test_without_arviz_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "arviz", None)
    with pytest.raises(ImportError, match=r"mcsa\[arviz\]"):
        to_arviz(np.zeros((2, 5)))
