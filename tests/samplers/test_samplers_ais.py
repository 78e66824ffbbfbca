"""AIS log Z against exact enumeration: within Monte Carlo standard errors, RMSE falling with the
number of temperatures, and a wrong-model negative control."""

from __future__ import annotations

import numpy as np
import pytest

from samplers.ais import AISResult, ais_log_partition, annealing_schedule, run_ais, summarize_log_weights
from samplers.models import PairwiseMRF, ising_grid, potts_grid, random_mrf
from samplers.testing import assert_close_in_se, assert_error_decreases


@pytest.fixture(scope="module")
def ising4():
    """The acceptance model: 4x4 Ising, coupling 0.4, field 0.1; exact log Z by enumerating 2^16 states."""
    mrf = ising_grid(4, 4, coupling=0.4, field=0.1)
    return mrf, mrf.log_partition_exact()


def test_ais_4x4_ising_within_three_stderr(ising4):
    """One run with 2000 chains: |estimate - exact| <= 3 * AISResult.stderr (delta-method SE of log mean w;
    the Jensen bias stderr^2 / 2 is ~1e-4 here, far below the SE)."""
    mrf, exact = ising4
    res = ais_log_partition(mrf, n_temperatures=50, n_chains=2000, seed=1)
    assert isinstance(res, AISResult) and res.log_weights.shape == (2000,) and res.n_chains == 2000
    assert 0 < res.stderr < 0.02
    assert_close_in_se(res.log_partition, exact, res.stderr, k=3.0, what="AIS log Z (4x4 Ising)")


def test_ais_replicate_spread_and_stderr_agree(ising4):
    """20 independent runs: their mean is within 3 SE (replicate spread) of the exact log Z, and the
    per-run stderr matches the replicate standard deviation within a factor 1.6."""
    mrf, exact = ising4
    runs = [ais_log_partition(mrf, n_temperatures=30, n_chains=200, seed=100 + r) for r in range(20)]
    est = np.array([r.log_partition for r in runs])
    assert_close_in_se(est.mean(), exact, est.std(ddof=1) / np.sqrt(est.size), k=3.0, what="mean AIS log Z")
    ratio = np.mean([r.stderr for r in runs]) / est.std(ddof=1)
    assert 1 / 1.6 < ratio < 1.6


def test_ais_rmse_falls_with_temperatures(ising4):
    """RMSE over 24 replicates (100 chains) at T = 3, 10, 30, 100: variance ~ 1/T for large T, so the
    log-log slope is near -1/2; we assert it is below -0.25."""
    mrf, exact = ising4
    temps = [3, 10, 30, 100]
    rmse = []
    for t in temps:
        err = [ais_log_partition(mrf, n_temperatures=t, n_chains=100, seed=1000 * t + r).log_partition - exact
               for r in range(24)]
        rmse.append(float(np.sqrt(np.mean(np.square(err)))))
    assert_error_decreases(temps, rmse, max_slope=-0.25)


def test_ais_detects_a_wrong_model(ising4):
    """Negative control: AIS on coupling 0.45 compared with the exact log Z at coupling 0.4 fails."""
    _, exact = ising4
    res = ais_log_partition(ising_grid(4, 4, coupling=0.45, field=0.1), n_temperatures=50, n_chains=2000, seed=1)
    with pytest.raises(AssertionError, match="standard errors"):
        assert_close_in_se(res.log_partition, exact, res.stderr, k=3.0)


@pytest.mark.parametrize("schedule", ["geometric", "sigmoid", "array"])
def test_ais_on_potts_and_ragged_models(schedule):
    """Other schedules and models (Potts, a random MRF with ragged state counts) within 3.5 SE."""
    sched = np.array([0.0, 0.1, 0.3, 0.6, 1.0]) ** 1.5 if schedule == "array" else schedule
    base = random_mrf(6, 3, density=0.6, scale=0.7, seed=9)
    ragged = PairwiseMRF(base.unary, base.edges, base.pairwise, n_states=[3, 1, 2, 3, 2, 3])
    for mrf in (potts_grid(3, 3, n_states=3, coupling=0.5, field=0.2), ragged):
        res = ais_log_partition(mrf, n_temperatures=40, n_chains=1000, seed=3, schedule=sched)
        assert_close_in_se(res.log_partition, mrf.log_partition_exact(), res.stderr, k=3.5, what=f"AIS {schedule}")


def test_two_temperatures_is_importance_sampling_from_unary_only():
    """With T = 2 the log weights are the pairwise log potentials of exact unary-only draws:
    mean(exp(log w)) * Z_0 is unbiased for Z, so log Z lies within 3 SE."""
    mrf = ising_grid(2, 2, coupling=0.3, field=0.2)
    res = ais_log_partition(mrf, n_temperatures=2, n_chains=4000, seed=5)
    attainable = np.unique(np.round(mrf.pairwise_log_potential(mrf._configurations(0, 16)), 12))
    assert set(np.round(res.log_weights, 12)) <= set(attainable)
    assert res.log_partition_start == pytest.approx(mrf.log_partition_unary_only())
    assert_close_in_se(res.log_partition, mrf.log_partition_exact(), res.stderr, k=3.0)


def test_ais_reproducible_and_summaries():
    mrf = ising_grid(3, 3, coupling=0.4, field=0.1)
    a = ais_log_partition(mrf, 20, 50, seed=7)
    b = ais_log_partition(mrf, 20, 50, seed=7)
    np.testing.assert_array_equal(a.log_weights, b.log_weights)
    assert 1.0 <= a.ess <= 50.0
    log_mean, ess, se = summarize_log_weights(np.log([1.0, 1.0, 1.0, 1.0]))
    assert log_mean == pytest.approx(0.0) and ess == pytest.approx(4.0) and se == 0.0
    log_mean, ess, _ = summarize_log_weights(np.array([0.0, -1000.0]))
    assert log_mean == pytest.approx(-np.log(2)) and ess == pytest.approx(1.0)


def test_schedules():
    for name in ("linear", "geometric", "sigmoid"):
        betas = annealing_schedule(12, name)
        assert betas[0] == 0.0 and betas[-1] == pytest.approx(1.0) and betas.size == 12
        assert np.all(np.diff(betas) > 0)
    assert annealing_schedule(6, "geometric")[1] == pytest.approx(0.01)


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(n_temperatures=1), ValueError, "n_temperatures must be >= 2"),
    (dict(n_chains=0), ValueError, "n_chains must be >= 1"),
    (dict(n_gibbs_per_temp=0), ValueError, "n_gibbs_per_temp must be >= 1"),
    (dict(schedule="cosine"), ValueError, "schedule must be one of"),
    (dict(schedule=[0.0, 0.7, 0.5, 1.0]), ValueError, "schedule must be an increasing array"),
    (dict(schedule=[0.1, 1.0]), ValueError, "schedule must be an increasing array"),
])
def test_bad_ais_arguments(kwargs, exc, match):
    args = dict(n_temperatures=10, n_chains=10, seed=0) | kwargs
    with pytest.raises(exc, match=match):
        ais_log_partition(ising_grid(2, 2), **args)


def test_ais_rejects_non_mrf():
    with pytest.raises(TypeError, match="mrf must be a PairwiseMRF"):
        ais_log_partition(np.zeros((2, 2)), 10, 10)


def test_generic_run_ais_matches_exact_and_the_numba_path():
    """run_ais with the MRF's own pieces as callbacks: within 3 SE of exact log Z (3x3 Ising)."""
    mrf = ising_grid(3, 3, coupling=0.4, field=0.1)
    res = run_ais(lambda n, g: mrf.sample_independent(n, g), mrf.pairwise_log_potential,
                  lambda x, beta, g: mrf.gibbs_sample(1, x.shape[0], g, init=x, beta=beta)[:, 0],
                  n_temperatures=30, n_chains=1000, seed=2, log_partition_start=mrf.log_partition_unary_only())
    assert res.log_weights.shape == (1000,) and res.betas.size == 30
    assert_close_in_se(res.log_partition, mrf.log_partition_exact(), res.stderr, k=3.0, what="run_ais log Z")
    with pytest.raises(ValueError, match="log_ratio must return 5 finite values"):
        run_ais(lambda n, g: np.zeros(n), lambda x: np.full(x.size, np.nan), lambda x, b, g: x, 3, 5)


def _discrete_target(k: int = 40, spread: float = 3.0, seed: int = 5):
    """One variable with ``k`` states: f_0 uniform (log Z_0 = log k), log f_1 - log f_0 = energy;
    transitions are Metropolis moves with a uniform proposal (invariant for every f_beta)."""
    energy = np.random.default_rng(seed).normal(0.0, spread, size=k)

    def initial(n, rng):
        return rng.integers(0, k, size=n)

    def log_ratio(x):
        return energy[x]

    def transition(x, beta, rng):
        prop = rng.integers(0, k, size=x.size)
        accept = np.log(rng.random(x.size)) < beta * (energy[prop] - energy[x])
        return np.where(accept, prop, x)

    exact = float(np.log(np.exp(energy).sum()))
    return energy, initial, log_ratio, transition, exact


def test_reverse_and_forward_ais_sandwich_the_exact_log_z():
    """BDMC on a 40-state target with exact target draws (by enumeration) and few temperatures (T = 4,
    10 chains, so both estimates are visibly biased): over 100 replicates the mean forward estimate lies below
    the exact log Z and the mean reverse estimate above it (each by more than 3 replicate SEs), as Jensen's
    inequality says; at most 2 of the 100 replicates' intervals at ``z = 3`` miss the exact value (nominal miss rate
    <= 0.27% per replicate; each end lies at the t quantile of the 10 chains, 4.09 standard errors, since the
    delta-method SE of 10 heavy-tailed weights is itself noisy: over 1000 replicates 0 missed, against 7 with 3
    standard errors; fixed seeds)."""
    from samplers.ais import run_bidirectional_ais, run_reverse_ais

    energy, initial, log_ratio, transition, exact = _discrete_target()
    p = np.exp(energy - energy.max())
    p /= p.sum()
    fwd, rev, misses = [], [], 0
    for r in range(100):
        rng = np.random.default_rng(900 + r)
        draws = rng.choice(energy.size, size=10, p=p)
        res = run_bidirectional_ais(initial, log_ratio, transition, n_temperatures=4, n_chains=10, seed=rng,
                                    log_partition_start=np.log(energy.size), target_states=draws)
        lo, hi = res.interval(3.0)
        misses += not (lo <= exact <= hi)
        fwd.append(res.forward.log_partition)
        rev.append(res.reverse.log_partition)
    fwd, rev = np.array(fwd), np.array(rev)
    assert misses <= 2
    assert fwd.mean() + 3 * fwd.std(ddof=1) / np.sqrt(fwd.size) < exact
    assert rev.mean() - 3 * rev.std(ddof=1) / np.sqrt(rev.size) > exact
    # converged: many temperatures close the gap to within a few SE of the exact value
    res = run_bidirectional_ais(initial, log_ratio, transition, n_temperatures=200, n_chains=200, seed=3,
                                log_partition_start=np.log(energy.size), burn_in=20)
    assert_close_in_se(res.forward.log_partition, exact, res.forward.stderr, k=4.0, what="forward")
    assert_close_in_se(res.reverse.log_partition, exact, res.reverse.stderr, k=4.0, what="reverse")
    assert abs(res.gap) < 0.2 and res.interval()[0] <= exact <= res.interval()[1]
    # negative control: reverse chains started from the base law (not the target) do not bound from above
    rng = np.random.default_rng(11)
    wrong = [run_reverse_ais(rng.integers(0, energy.size, size=30), log_ratio, transition, n_temperatures=4,
                             seed=rng, log_partition_start=np.log(energy.size)).log_partition for _ in range(40)]
    assert np.mean(wrong) < exact - 1.0


def test_reverse_ais_bad_input():
    from samplers.ais import run_bidirectional_ais, run_reverse_ais

    _, initial, log_ratio, transition, _ = _discrete_target()
    with pytest.raises(ValueError, match="finite"):
        run_reverse_ais(np.zeros(3, dtype=int), lambda x: np.full(x.size, np.nan), transition, n_temperatures=3)
    with pytest.raises(ValueError, match="burn_in"):
        run_bidirectional_ais(initial, log_ratio, transition, burn_in=-1)


def test_the_bidirectional_interval_reads_z_as_the_t_quantile_of_its_chains():
    """``t_multiplier(z, runs)``: Student's t quantile with ``runs - 1`` degrees of freedom at the normal tail of
    ``z`` (9.22 for 4 runs at ``z = 3``, 4.53 for 8, 4.09 for 10; ``z`` itself below 2 runs, and towards ``z`` as
    the runs grow); ``BidirectionalResult.interval`` puts each end that many of its standard errors out."""
    from samplers.ais import BidirectionalResult, t_multiplier

    assert [round(t_multiplier(3.0, n), 2) for n in (4, 8, 10)] == [9.22, 4.53, 4.09]
    assert t_multiplier(3.0, 1) == 3.0 and t_multiplier(2.0, 0) == 2.0
    assert 3.0 < t_multiplier(3.0, 10_000) < 3.01 and t_multiplier(3.0, 100) > t_multiplier(3.0, 1000)

    def result(log_z, n_chains, stderr):
        log_w = np.zeros(n_chains)
        return AISResult(log_partition=log_z, log_weights=log_w, log_partition_start=0.0, betas=np.array([0.0, 1.0]),
                         ess=float(n_chains), stderr=stderr)

    res = BidirectionalResult(result(1.0, 10, 0.1), result(1.5, 4, 0.2))
    lo, hi = res.interval(3.0)
    assert lo == pytest.approx(1.0 - 4.0942553 * 0.1) and hi == pytest.approx(1.5 + 9.2189405 * 0.2)
