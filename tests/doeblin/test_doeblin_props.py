"""Props. 3.1, 3.2, 3.4, 3.5 and Cor. 3.7 on many random chains; TV bound; Fig. 1 limits."""

import numpy as np
import pytest

from doeblin import StagedDoeblinChain, StrongDoeblinChain, cyclic_stage_chain, cyclic_stage_gap_bound
from doeblin.examples import random_chain, random_reversible_chain, three_state_chain
from doeblin.markov import chi_distance, kl_divergence, second_eigenvalue_reversible, stationary_gth

SEEDS = range(25)


def _random_doeblin(seed, n=6):
    rng = np.random.default_rng(seed)
    A = random_chain(n, concentration=0.3, seed=rng)
    u = rng.dirichlet(np.ones(n))
    eps = float(rng.uniform(0.01, 1.0))
    return StrongDoeblinChain(A, u, eps)


@pytest.mark.parametrize("seed", SEEDS)
def test_prop31_gap_and_tv_bound(seed):
    chain = _random_doeblin(seed)
    # Prop. 3.1: spectral gap >= eps (tiny slack for eigenvalue round-off)
    assert chain.spectral_gap() >= chain.eps - 1e-10
    # coupling at the first restart: worst-case TV after t steps <= (1 - eps)^t
    tv = chain.tv_to_stationarity(30)
    assert np.all(tv <= (1 - chain.eps) ** np.arange(31) + 1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_prop32_closed_form_is_stationary(seed):
    chain = _random_doeblin(seed)
    pi = chain.stationary()
    np.testing.assert_allclose(pi @ chain.transition_matrix(), pi, atol=1e-12)
    np.testing.assert_allclose(pi, chain.stationary(method="gth"), atol=1e-10)
    # truncated series eps * sum_j (1 - eps)^j u A^j (Eq. 6)
    term, series = chain.u.copy(), np.zeros_like(pi)
    for j in range(3000):
        series += chain.eps * (1 - chain.eps) ** j * term
        term = term @ chain.A
    np.testing.assert_allclose(series, pi, atol=1e-8)


@pytest.mark.parametrize("seed", SEEDS)
def test_prop34_kl_monotone_in_eps(seed):
    rng = np.random.default_rng(seed)
    A = random_chain(5, seed=rng)
    u = rng.dirichlet(np.ones(5))
    pi = stationary_gth(A)
    eps_grid = np.linspace(0.02, 1.0, 15)
    fwd = [kl_divergence(StrongDoeblinChain(A, u, e).stationary(), pi) for e in eps_grid]
    rev = [kl_divergence(pi, StrongDoeblinChain(A, u, e).stationary()) for e in eps_grid]
    assert np.all(np.diff(fwd) >= -1e-12) and np.all(np.diff(rev) >= -1e-12)
    assert fwd[-1] == pytest.approx(kl_divergence(u, pi))   # eps = 1 gives pi~ = u


@pytest.mark.parametrize("seed", SEEDS)
def test_prop35_reversible_bound(seed):
    rng = np.random.default_rng(seed)
    P, pi = random_reversible_chain(6, seed=rng)
    u = rng.dirichlet(np.ones(6))
    lam2 = second_eigenvalue_reversible(P, pi)
    for eps in (1e-3, 1e-2, 0.1, 0.5):
        lhs = chi_distance(pi, StrongDoeblinChain(P, u, eps).stationary())
        assert lhs <= eps / (1 - lam2) * chi_distance(pi, u) + 1e-12


def test_prop35_bound_fails_for_wrong_target():
    """Negative control: measured against a distribution that is not A's stationary law, the
    bound is violated for small eps (so the test above can fail)."""
    P, pi = random_reversible_chain(6, seed=0)
    wrong = np.roll(pi, 1)
    u = np.full(6, 1 / 6)
    eps = 1e-3
    lhs = chi_distance(wrong, StrongDoeblinChain(P, u, eps).stationary())
    assert lhs > eps / (1 - second_eigenvalue_reversible(P, pi)) * chi_distance(wrong, u)


@pytest.mark.parametrize("seed", range(10))
def test_cor37_gap_bound_on_cyclic_staged_chains(seed):
    rng = np.random.default_rng(seed)
    k, n = int(rng.integers(2, 5)), 4
    head = rng.uniform(0.2, 1.0, size=k - 1)
    last = float(head.min() / max(2, k - 1) * rng.uniform(0.1, 1.0))
    deltas = np.append(head, last)
    bound = cyclic_stage_gap_bound(deltas)
    assert bound == pytest.approx(last / 78)
    kernels = [rng.dirichlet(np.ones(n))] + [random_chain(n, concentration=0.2, seed=rng) for _ in range(k - 1)]
    chain = StagedDoeblinChain(cyclic_stage_chain(deltas), kernels, 0)
    assert chain.spectral_gap() >= bound
    joint = chain.stationary(joint=True)
    np.testing.assert_allclose(joint.ravel() @ chain.transition_matrix(), joint.ravel(), atol=1e-12)


def test_cor37_condition_checked():
    assert cyclic_stage_gap_bound([0.5, 0.5]) is None


def test_two_stage_chain_is_strong_doeblin():
    """Fig. 2(a): stages {0 = restart, 1 = A} with C = [[eps, 1-eps], [eps, 1-eps]] give pi~."""
    rng = np.random.default_rng(3)
    A, u, eps = random_chain(5, seed=rng), rng.dirichlet(np.ones(5)), 0.2
    C = np.array([[eps, 1 - eps], [eps, 1 - eps]])
    staged = StagedDoeblinChain(C, [u, A], restart_stage=0)
    np.testing.assert_allclose(staged.stationary(), StrongDoeblinChain(A, u, eps).stationary(), atol=1e-12)


@pytest.mark.parametrize("eps, expected", [(3e-2, 4 / 9), (1e-2, 4 / 9), (1e-6, 1 / 2), (1e-8, 1 / 2)])
def test_fig1_limits(eps, expected):
    """Fig. 1 (delta = 1e-4, u uniform): pi~(state 1) -> 4/9 for eps >> delta, -> 1/2 for eps << delta."""
    chain = StrongDoeblinChain(three_state_chain(1e-4), np.full(3, 1 / 3), eps)
    pi = chain.stationary(method="gth")
    assert pi[0] == pytest.approx(expected, abs=0.005)
    np.testing.assert_allclose(pi, chain.stationary(), atol=1e-6)


@pytest.mark.parametrize("seed", range(5))
def test_doeblin_coefficient_and_reversibility_helpers(seed):
    from doeblin.markov import doeblin_coefficient, is_reversible
    chain = _random_doeblin(seed)
    # A~ = (1 - eps) A + eps 1 u has Doeblin coefficient sum_y min_y' A~(y | y') >= eps
    assert doeblin_coefficient(chain.transition_matrix()) >= chain.eps - 1e-12
    P, pi = random_reversible_chain(5, seed=seed)
    assert is_reversible(P, pi)
    assert not is_reversible(chain.A, chain.base_stationary())   # a random dense chain is not
