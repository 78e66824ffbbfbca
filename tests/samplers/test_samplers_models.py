"""PairwiseMRF (validation, enumeration vs brute force, Numba Gibbs) and the generic moves in
samplers.mcmc, checked against exact distributions by chi-square with negative controls."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

from samplers import mcmc
from samplers.diagnostics import mcse
from samplers.models import PairwiseMRF, grid_edges, ising_grid, potts_grid, random_mrf
from samplers.testing import assert_close_in_se, assert_frequencies_match, chi_square_gof

ALPHA = 1e-3  # declared false-alarm rate of every chi-square check below


def brute_force(mrf: PairwiseMRF) -> tuple[float, np.ndarray]:
    """log Z and marginals by a plain loop over itertools.product (independent of the vectorised code)."""
    logs, configs = [], []
    for x in itertools.product(*[range(k) for k in mrf.n_states]):
        x = np.array(x)
        lp = sum(mrf.unary[i, x[i]] for i in range(mrf.n_vars))
        lp += sum(mrf.pairwise[e, x[u], x[v]] for e, (u, v) in enumerate(mrf.edges))
        logs.append(lp)
        configs.append(x)
    logs, configs = np.array(logs), np.array(configs)
    log_z = logsumexp(logs)
    p = np.exp(logs - log_z)
    marg = np.zeros((mrf.n_vars, mrf.max_states))
    for i in range(mrf.n_vars):
        np.add.at(marg[i], configs[:, i], p)
    return float(log_z), marg


# -- validation -----------------------------------------------------------------------------------
E1 = [[0, 1]]
P1 = np.zeros((1, 2, 2))


@pytest.mark.parametrize("kwargs, match", [
    (dict(unary=np.zeros((2, 0)), edges=np.zeros((0, 2), int), pairwise=np.zeros((0, 0, 0))), "unary.*states"),
    (dict(unary=np.zeros((0, 2)), edges=np.zeros((0, 2), int), pairwise=np.zeros((0, 2, 2))), "unary.*variable"),
    (dict(unary=np.zeros(2), edges=E1, pairwise=P1), "unary must be 2-dimensional"),
    (dict(unary=[[0.0, np.nan], [0, 0]], edges=E1, pairwise=P1), "unary must be finite"),
    (dict(unary=[[0.0, np.inf], [0, 0]], edges=E1, pairwise=P1), "unary must be finite"),
    (dict(unary=np.zeros((2, 2)), edges=E1, pairwise=[[[0.0, -np.inf], [0, 0]]]), "pairwise must be finite"),
    (dict(unary=np.zeros((2, 2)), edges=[[0, 2]], pairwise=P1), "edges must be < 2"),
    (dict(unary=np.zeros((2, 2)), edges=[[-1, 1]], pairwise=P1), "edges must be >= 0"),
    (dict(unary=np.zeros((2, 2)), edges=[[1, 1]], pairwise=P1), "self loops"),
    (dict(unary=np.zeros((2, 2)), edges=[[0, 1, 1]], pairwise=P1), r"edges must have shape \(E, 2\)"),
    (dict(unary=np.zeros((2, 2)), edges=E1, pairwise=np.zeros((1, 3, 3))), "pairwise must have shape"),
    (dict(unary=np.zeros((2, 2)), edges=E1, pairwise=np.zeros((2, 2, 2))), "pairwise must have shape"),
    (dict(unary=np.zeros((2, 2)), edges=E1, pairwise=P1, n_states=-1), "n_states must be >= 1"),
    (dict(unary=np.zeros((2, 2)), edges=E1, pairwise=P1, n_states=0), "n_states must be >= 1"),
    (dict(unary=np.zeros((2, 2)), edges=E1, pairwise=P1, n_states=[2, -3]), "n_states must be >= 1"),
    (dict(unary=np.zeros((2, 2)), edges=E1, pairwise=P1, n_states=[2, 3]), "n_states must be < 3"),
    (dict(unary=np.zeros((2, 2)), edges=E1, pairwise=P1, n_states=[2, 2, 2]), r"n_states must have shape"),
])
def test_bad_mrf_input_names_the_argument(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PairwiseMRF(**kwargs)


@pytest.mark.parametrize("call, match", [
    (lambda: potts_grid(2, 2, n_states=-1), "n_states must be >= 2"),
    (lambda: random_mrf(3, n_states=0), "n_states must be >= 1"),
    (lambda: random_mrf(-2), "n_vars must be >= 1"),
    (lambda: ising_grid(0, 3), "rows must be >= 1"),
    (lambda: ising_grid(2, 2, coupling=np.nan), "coupling must be finite"),
    (lambda: random_mrf(3, density=1.5), "density must lie in"),
    (lambda: potts_grid(2, 2, n_states=3, field=[1.0, 2.0]), "field must be"),
])
def test_bad_constructor_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_bad_configurations_and_sampler_arguments():
    mrf = ising_grid(2, 2)
    with pytest.raises(ValueError, match="x must have shape"):
        mrf.log_unnormalized([0, 1, 0])
    with pytest.raises(ValueError, match="not a state of variable 2"):
        mrf.log_unnormalized([0, 1, 2, 0])
    with pytest.raises(ValueError, match="n_sweeps must be >= 1"):
        mrf.gibbs_sample(0)
    with pytest.raises(ValueError, match="burn_in must be <= 9"):
        mrf.gibbs_sample(10, burn_in=10)
    with pytest.raises(ValueError, match="init must have shape"):
        mrf.gibbs_sample(10, n_chains=3, init=np.zeros((2, 4), int))
    with pytest.raises(ValueError, match="exact enumeration refused.*1048576 joint states"):
        ising_grid(4, 5).log_partition_exact(method="enumeration", max_states=2**16)


# -- exact answers --------------------------------------------------------------------------------
def test_ising_pair_closed_form():
    """Two spins: Z = sum_{s1,s2} exp(h (s1 + s2) + J s1 s2) = e^{2h+J} + e^{-2h+J} + 2 e^{-J}."""
    h, j = 0.1, 0.4
    mrf = ising_grid(1, 2, coupling=j, field=h)
    z = np.exp(2 * h + j) + np.exp(-2 * h + j) + 2 * np.exp(-j)
    assert mrf.log_partition_exact() == pytest.approx(np.log(z), rel=1e-12)
    assert mrf.log_unnormalized([1, 1]) == pytest.approx(2 * h + j)
    assert mrf.log_unnormalized([0, 1]) == pytest.approx(-j)


@settings(max_examples=25, deadline=None)
@given(n_vars=st.integers(1, 5), k=st.integers(1, 3), density=st.floats(0.0, 1.0), seed=st.integers(0, 2**31 - 1))
def test_enumeration_matches_brute_force(n_vars, k, density, seed):
    """Property test (torch-struct style oracle): any small random MRF, with and without ragged state counts."""
    rng = np.random.default_rng(seed)
    base = random_mrf(n_vars, k, density=density, scale=1.0, seed=rng)
    ragged = PairwiseMRF(base.unary, base.edges, base.pairwise, n_states=rng.integers(1, k + 1, size=n_vars))
    for mrf in (base, ragged):
        log_z, marg = brute_force(mrf)
        assert mrf.log_partition_exact() == pytest.approx(log_z, rel=1e-12, abs=1e-12)
        np.testing.assert_allclose(mrf.marginals_exact(), marg, atol=1e-12)
        np.testing.assert_allclose(mrf.probabilities_exact().sum(), 1.0)


def test_chunked_enumeration_matches_brute_force_on_more_than_one_chunk():
    mrf = random_mrf(17, 2, edges=grid_edges(1, 17), scale=0.5, seed=3)  # 2^17 states = two chunks
    x = mrf._configurations(0, mrf.n_configurations)
    lp = mrf.log_unnormalized(x)
    assert mrf.log_partition_exact() == pytest.approx(logsumexp(lp), rel=1e-12)
    p = np.exp(lp - logsumexp(lp))
    np.testing.assert_allclose(mrf.marginals_exact()[:, 1], p @ x, atol=1e-12)


def test_batched_log_unnormalized_and_index_roundtrip():
    mrf = random_mrf(4, 3, density=1.0, seed=5)
    x = mrf._configurations(0, mrf.n_configurations)
    batch = mrf.log_unnormalized(x.reshape(9, 9, 4))
    assert batch.shape == (9, 9)
    np.testing.assert_allclose(batch.ravel(), [mrf.log_unnormalized(xi) for xi in x])
    np.testing.assert_array_equal(mrf.configuration_index(x), np.arange(81))
    np.testing.assert_allclose(mrf.pairwise_log_potential(x) + mrf.unary[np.arange(4), x].sum(-1), batch.ravel())


def test_unary_only_and_tempered_path():
    mrf = random_mrf(5, 3, density=0.6, seed=2)
    assert mrf.unary_only().log_partition_exact() == pytest.approx(mrf.log_partition_unary_only(), rel=1e-12)
    assert mrf.tempered(0.0).log_partition_exact() == pytest.approx(mrf.log_partition_unary_only(), rel=1e-12)
    assert mrf.tempered(1.0).log_partition_exact() == pytest.approx(mrf.log_partition_exact(), rel=1e-12)
    # d log Z_beta / d beta = E_beta[pairwise(x)] (a check that tempered() scales the right part)
    eps = 1e-5
    half = mrf.tempered(0.5)
    deriv = (mrf.tempered(0.5 + eps).log_partition_exact() - mrf.tempered(0.5 - eps).log_partition_exact()) / (2 * eps)
    x = half._configurations(0, half.n_configurations)
    assert deriv == pytest.approx(half.probabilities_exact() @ mrf.pairwise_log_potential(x), rel=1e-6)


def test_potts_and_ising_conventions():
    potts = potts_grid(2, 2, n_states=3, coupling=0.7, field=0.0)
    assert potts.log_unnormalized([2, 2, 2, 2]) == pytest.approx(4 * 0.7)
    assert potts.log_unnormalized([0, 1, 2, 0]) == pytest.approx(0.0)
    ising = ising_grid(2, 2, coupling=0.4, field=0.1)
    assert ising.log_unnormalized([1, 1, 1, 1]) == pytest.approx(4 * 0.1 + 4 * 0.4)
    assert ising.log_unnormalized([0, 0, 0, 0]) == pytest.approx(-4 * 0.1 + 4 * 0.4)


def test_sample_exact_oracle_frequencies():
    mrf = random_mrf(3, 3, density=1.0, seed=7)
    draws = mrf.sample_exact(6000, seed=11)
    counts = np.bincount(mrf.configuration_index(draws), minlength=mrf.n_configurations)
    assert_frequencies_match(counts, mrf.probabilities_exact(), alpha=ALPHA, what="sample_exact")


# -- Numba Gibbs ----------------------------------------------------------------------------------
def _one_sweep_counts(mrf: PairwiseMRF, n: int, seed: int, beta: float = 1.0) -> np.ndarray:
    """Start n independent chains at exact draws, do one sweep: invariance means the output ~ p."""
    init = mrf.sample_exact(n, seed=seed)
    out = mrf.gibbs_sample(1, n_chains=n, seed=seed + 1, init=init, beta=beta)[:, 0]
    return np.bincount(mrf.configuration_index(out), minlength=mrf.n_configurations)


def test_gibbs_sweep_leaves_the_model_invariant():
    base = random_mrf(3, 3, density=1.0, scale=1.0, seed=13)
    for mrf in (base, PairwiseMRF(base.unary, base.edges, base.pairwise, n_states=[3, 2, 3])):
        counts = _one_sweep_counts(mrf, 6000, seed=17)
        assert_frequencies_match(counts, mrf.probabilities_exact(), alpha=ALPHA, what="Numba Gibbs sweep")


def test_gibbs_invariance_check_detects_a_wrong_kernel():
    """Negative control: a sweep of the tempered model (beta = 0.3) does not leave p invariant."""
    mrf = random_mrf(3, 3, density=1.0, scale=1.0, seed=13)
    counts = _one_sweep_counts(mrf, 6000, seed=17, beta=0.3)
    with pytest.raises(AssertionError, match="do not match"):
        assert_frequencies_match(counts, mrf.probabilities_exact(), alpha=ALPHA)


def test_gibbs_marginals_match_exact_within_mcse():
    """Long chains on Ising 3x3: each marginal within 4 MCSE (ESS-based; 9 sites, false alarm < 1e-3)."""
    mrf = ising_grid(3, 3, coupling=0.4, field=0.1)
    samples = mrf.gibbs_sample(4000, n_chains=4, seed=21, burn_in=100)
    exact = mrf.marginals_exact()[:, 1]
    for i in range(mrf.n_vars):
        chains = (samples[:, :, i] == 1).astype(float)
        assert_close_in_se(chains.mean(), exact[i], mcse(chains), k=4.0, what=f"P(x_{i} = +1)")
    np.testing.assert_allclose(mrf.marginals_from_samples(samples)[:, 1], samples.mean(axis=(0, 1)))


def test_gibbs_reproducible_and_shapes():
    mrf = ising_grid(2, 3)
    a = mrf.gibbs_sample(50, n_chains=3, seed=4, burn_in=10, thin=4)
    b = mrf.gibbs_sample(50, n_chains=3, seed=4, burn_in=10, thin=4)
    assert a.shape == (3, 10, 6) and a.dtype == np.int64
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, mrf.gibbs_sample(50, n_chains=3, seed=5, burn_in=10, thin=4))


# -- generic Python moves (samplers.mcmc) --------------------------------------------------------
def _generic_counts(mrf: PairwiseMRF, move, n: int, seed: int, log_density=None) -> np.ndarray:
    log_density = log_density or mrf.log_unnormalized
    gen = np.random.default_rng(seed)
    out = np.array([move(x, log_density, mrf.n_states, gen) for x in mrf.sample_exact(n, seed=seed)])
    return np.bincount(mrf.configuration_index(out), minlength=mrf.n_configurations)


@pytest.mark.parametrize("move", [mcmc.gibbs_sweep, mcmc.metropolis_step])
def test_generic_moves_leave_the_model_invariant(move):
    mrf = PairwiseMRF(random_mrf(3, 3, density=1.0, seed=29).unary, [[0, 1], [1, 2]],
                      random_mrf(3, 3, density=1.0, seed=29).pairwise[:2], n_states=[3, 2, 3])
    counts = _generic_counts(mrf, move, 3000, seed=31)
    assert_frequencies_match(counts, mrf.probabilities_exact(), alpha=ALPHA, what=move.__name__)


def test_generic_metropolis_check_detects_a_wrong_target():
    """Negative control: Metropolis on 2 * log p (it targets p^2) fails the invariance check for p."""
    mrf = random_mrf(3, 2, density=1.0, scale=1.0, seed=37)
    counts = _generic_counts(mrf, mcmc.metropolis_step, 3000, seed=41, log_density=lambda x: 2 * mrf.log_unnormalized(x))
    _, _, pval = chi_square_gof(counts, mrf.probabilities_exact())
    assert pval < ALPHA


def test_sample_chain_runs_and_validates():
    mrf = ising_grid(1, 3, coupling=0.3)
    chain = mcmc.sample_chain(mrf.log_unnormalized, 2, [0, 0, 0], 30, seed=1, move="metropolis", burn_in=10, thin=5)
    assert chain.shape == (4, 3)
    with pytest.raises(ValueError, match="move must be one of"):
        mcmc.sample_chain(mrf.log_unnormalized, 2, [0, 0, 0], 5, move="hmc")
    with pytest.raises(ValueError, match="x must have shape"):
        mcmc.gibbs_sweep([0, 2, 0], mrf.log_unnormalized, 2)
    with pytest.raises(ValueError, match="n_states must be"):
        mcmc.gibbs_sweep([0, 0, 0], mrf.log_unnormalized, [2, 2])
