"""The built-in suites: mrf-quick (problems own enumeration answers, AIS/Gibbs estimators) and the
composite quick suite (parts loaded lazily, missing packages skipped with a warning)."""

from __future__ import annotations

import numpy as np
import pytest

from samplers.estimators import AISEstimator
from samplers.estimators import GibbsEstimator as GibbsMarginalsEstimator
from samplers.harness import FunctionProblem, Suite, load_suite, registry, run_suite
from samplers.models import ising_grid
from samplers.problems import PairwiseMRFProblem as MRFProblem
from samplers.suites import mrf_quick_suite, quick_suite


def test_mrf_quick_suite_contents():
    suite = load_suite("mrf-quick")
    assert isinstance(suite, Suite) and suite.replicates == 5
    assert [p.name for p in suite.problems] == ["ising-3x3", "ising-4x4", "potts-3x3-q3"]
    assert set(suite.budgets) == {e.name for e in suite.estimators} == {"ais-linear", "ais-sigmoid", "gibbs"}
    ising4 = suite.problems[1]
    exact = ising4.exact()
    assert exact["log_partition"] == pytest.approx(ising_grid(4, 4, coupling=0.4, field=0.1).log_partition_exact())
    assert exact["marginals"].shape == (16, 2) and ising4.size()["n_configurations"] == 2**16
    # the provenance names the exact method actually used: elimination for 2^16 states, enumeration for 2^9
    assert ising4.mrf.exact_method() == "elimination" and "variable elimination" in ising4.provenance
    assert "enumeration of all 512 joint states" in suite.problems[0].provenance


def test_mrf_quick_suite_runs_and_estimates_are_accurate():
    """Two replicates of the whole suite; at the largest budgets AIS log Z is within 0.15 of exact
    (its SE is ~0.03 there) and Gibbs marginals within L2 distance 0.2 (SE ~0.03 per entry)."""
    res = run_suite(mrf_quick_suite(), replicates=2, seed=3, progress=False)
    rows = res.rows
    assert {r["target"] for r in rows} == {"log_partition", "marginals"}
    assert len(rows) == 3 * 3 * 3 * 2
    assert all(np.isfinite(r["error"]) for r in rows)
    for r in rows:
        if r["estimator"].startswith("ais") and r["budget"] == 80:
            assert abs(r["error"]) < 0.15, r
        if r["estimator"] == "gibbs" and r["budget"] == 1600:
            assert r["error"] < 0.2, r


def test_estimators_skip_problems_without_a_model_and_validate():
    other = FunctionProblem("coin", lambda: {"mean": 0.5})
    assert not AISEstimator().supports(other) and not GibbsMarginalsEstimator().supports(other)
    assert AISEstimator().supports(MRFProblem("x", ising_grid(2, 2)))
    with pytest.raises(ValueError, match="schedule must be one of"):
        AISEstimator(schedule="cosine")
    with pytest.raises(ValueError, match="burn_in_fraction must lie in"):
        GibbsMarginalsEstimator(burn_in_fraction=1.0)
    with pytest.raises(TypeError, match="mrf must be a PairwiseMRF"):
        MRFProblem("bad", np.zeros((2, 2)))


def test_quick_suite_skips_missing_parts_with_a_warning(monkeypatch):
    monkeypatch.setitem(registry._SUITES, "missing-quick", ("samplers.no_such_family.bench:suite", "test only"))
    with pytest.warns(UserWarning, match="skipping part 'missing-quick'.*no_such_family"):
        suite = quick_suite(names=["mrf-quick", "missing-quick"])
    assert suite.problems == [] and suite.estimators == []
    assert len(suite.parts) == 1 and suite.parts[0].replicates == 5
    assert [p.name for p in suite.parts[0].problems][0] == "ising-3x3"


def test_quick_suite_with_no_importable_part_is_an_error(monkeypatch):
    monkeypatch.setitem(registry._SUITES, "missing-quick", ("samplers.no_such_family.bench:suite", "test only"))
    with pytest.warns(UserWarning), pytest.raises(ImportError, match="none of its parts"):
        quick_suite(names=["missing-quick"])


def test_mrf_quick_suite_same_estimates_for_any_n_jobs():
    """Numba kernels are seeded per run, so worker processes reproduce the serial estimates exactly."""
    serial = run_suite(mrf_quick_suite(), replicates=1, seed=5, n_jobs=1, progress=False)
    parallel = run_suite(mrf_quick_suite(), replicates=1, seed=5, n_jobs=2, progress=False)
    assert [r["error"] for r in serial.rows] == [r["error"] for r in parallel.rows]


def test_ais_ising_suite_reports_stderr_beside_the_error():
    from samplers.harness import Study
    from samplers.suites import ais_ising_suite

    suite = ais_ising_suite(n_chains=50, temperatures=(20,), replicates=8)
    assert [p.name for p in suite.problems] == ["ising-4x4", "ising-4x5"]
    assert {e.name for e in suite.estimators} == {"ais-linear", "ais-geometric", "ais-sigmoid"}
    linear = [e for e in suite.estimators if e.name == "ais-linear"]
    cells = Study(suite.problems[:1], linear, budgets=[20], replicates=8, seed=0).run().summary()
    by_target = {c["target"]: c for c in cells}
    assert set(by_target) == {"log_partition", "log_partition_stderr", "ess"}
    assert by_target["log_partition_stderr"]["bias"] is None           # measured, no reference
    # AIS's own stderr (mean over replicates) and the replicate RMSE agree within a factor of 2.5 at
    # 8 replicates (the RMSE's relative sd is about 1/sqrt(2 * 8) = 0.25, so this fails only if the
    # reported stderr is badly off)
    ratio = by_target["log_partition_stderr"]["mean_estimate"] / by_target["log_partition"]["rmse"]
    assert 0.4 < ratio < 2.5
    assert 0 < by_target["ess"]["mean_estimate"] <= 50
