"""Exact draws (chi-square against the closed form), simulation, implicit vs finite chains, bounded cost."""

import numpy as np
import pytest

from doeblin import StagedDoeblinChain, StrongDoeblinChain, cyclic_stage_chain
from doeblin.examples import random_chain
from doeblin.implicit import SequenceDoeblinChain, SequenceModel
from samplers.testing import assert_frequencies_match, chi_square_gof

N_DRAWS = 20000


@pytest.fixture(scope="module")
def chain():
    rng = np.random.default_rng(11)
    return StrongDoeblinChain(random_chain(6, concentration=0.3, seed=rng), rng.dirichlet(np.ones(6)), 0.15)


def test_exact_draws_match_closed_form(chain):
    draws, steps = chain.sample_stationary(N_DRAWS, seed=1, return_steps=True)
    # independent draws: chi-square with false-alarm rate 1e-3
    assert_frequencies_match(np.bincount(draws, minlength=6), chain.stationary(), what="exact Doeblin draws")
    # T ~ Geometric(eps) on {0, 1, ...}: mean (1 - eps) / eps, sd sqrt(1 - eps) / eps
    se = np.sqrt(1 - chain.eps) / chain.eps / np.sqrt(N_DRAWS)
    assert abs(steps.mean() - (1 - chain.eps) / chain.eps) < 4 * se


def test_exact_draws_detect_wrong_target(chain):
    """Negative control: the same draws are rejected against A's own stationary law."""
    draws = chain.sample_stationary(N_DRAWS, seed=1)
    _, _, p = chi_square_gof(np.bincount(draws, minlength=6), chain.base_stationary())
    assert p < 1e-3


def test_same_seed_same_draws(chain):
    np.testing.assert_array_equal(chain.sample_stationary(50, seed=7), chain.sample_stationary(50, seed=7))


def test_simulate_thinned_matches_stationary(chain):
    path, restarts = chain.simulate(200000, seed=2)
    # restart frequency ~ eps (binomial se)
    se = np.sqrt(chain.eps * (1 - chain.eps) / 200000)
    assert abs(restarts[1:].mean() - chain.eps) < 4 * se
    # thin by 100 steps: TV to stationarity <= 0.85^100 ~ 1e-7, so thinned states are ~independent
    assert_frequencies_match(np.bincount(path[::100], minlength=6), chain.stationary(), what="thinned chain")


def test_staged_exact_draws_match_joint_law():
    rng = np.random.default_rng(5)
    kernels = [rng.dirichlet(np.ones(4)), random_chain(4, seed=rng), random_chain(4, concentration=0.3, seed=rng)]
    staged = StagedDoeblinChain(cyclic_stage_chain([1.0, 0.4, 0.1]), kernels, 0)
    y, z = staged.sample_stationary(N_DRAWS, seed=3, return_stages=True)
    counts = np.zeros((3, 4))
    np.add.at(counts, (z, y), 1)
    assert_frequencies_match(counts.ravel(), staged.stationary(joint=True).ravel(), what="staged exact draws")


@pytest.fixture(scope="module")
def seq_chain():
    rng = np.random.default_rng(0)
    D, K, L = 2, 2, 3
    model = SequenceModel(rng.normal(size=(D, K)), rng.normal(size=(D, K)), rng.normal(size=(K, K)))
    return SequenceDoeblinChain(model, rng.normal(size=(L, D)), 0.3)


def test_sequence_chain_kernel_is_stochastic(seq_chain):
    finite = seq_chain.as_finite()        # validates row sums of the enumerated Gibbs kernel
    np.testing.assert_allclose(finite.A.sum(axis=1), 1.0, atol=1e-12)
    # Assumption 4.3: with W_A = W_u and P = 0 the Gibbs kernel leaves u invariant
    inv = SequenceDoeblinChain(seq_chain.model.invariant_init(), seq_chain.x, 0.3).as_finite()
    np.testing.assert_allclose(inv.u @ inv.A, inv.u, atol=1e-12)


def test_implicit_sequence_draws_match_finite(seq_chain):
    draws = seq_chain.sample_stationary(N_DRAWS, seed=4)
    counts = np.bincount(seq_chain.state_index(draws), minlength=8)
    assert_frequencies_match(counts, seq_chain.as_finite().stationary(), what="Numba sequence Doeblin draws")


def test_a_tiny_restart_probability_is_refused_up_front_not_left_to_hang(chain):
    """Issue 29: eps = 1e-12 made sample_stationary run for hours with no message; the expected cost
    (size (1 - eps) / eps kernel steps, Prop. 3.2) is now checked against max_steps before any work."""
    tiny = StrongDoeblinChain(chain.A, chain.u, 1e-12)
    with pytest.raises(ValueError, match=r"eps = 1e-12 makes 10 exact draws cost about 1e\+13 .*max_steps"):
        tiny.sample_stationary(10, seed=0)
    # a bound the caller raises is honoured, and a cheap call is untouched
    assert StrongDoeblinChain(chain.A, chain.u, 1e-3).sample_stationary(5, seed=0, max_steps=10**4).shape == (5,)
    with pytest.raises(ValueError, match="max_steps = 100"):
        StrongDoeblinChain(chain.A, chain.u, 1e-3).sample_stationary(5, seed=0, max_steps=100)
    with pytest.raises(ValueError, match="max_steps"):
        chain.sample_stationary(5, max_steps=0)
    x = np.zeros((3, 2))
    model = SequenceModel(np.zeros((2, 2)), np.zeros((2, 2)), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="eps = 1e-12"):
        SequenceDoeblinChain(model, x, 1e-12).sample_stationary(3)


def test_staged_draw_cost_is_the_mean_walk_back_and_is_bounded():
    rng = np.random.default_rng(6)
    A1, A2 = random_chain(4, seed=rng), random_chain(4, seed=rng)
    u = rng.dirichlet(np.ones(4))
    staged = StagedDoeblinChain(cyclic_stage_chain([1.0, 0.5, 0.2]), [u, A1, A2], 0)
    _, steps = staged.sample_stationary(20000, seed=3, return_steps=True)
    se = steps.std() / np.sqrt(steps.size)
    assert abs(steps.mean() - staged.expected_draw_cost()) < 4 * se   # the exact mean (linear solve) vs draws
    rare = StagedDoeblinChain(cyclic_stage_chain([1.0, 1e-9, 0.5]), [u, A1, A2], 0)  # stage 1 holds ~1e9 steps
    with pytest.raises(ValueError, match="stage chain C .*max_steps"):
        rare.sample_stationary(10)


def test_staged_simulation_matches_joint_law():
    rng = np.random.default_rng(8)
    kernels = [rng.dirichlet(np.ones(3)), random_chain(3, seed=rng), random_chain(3, seed=rng)]
    staged = StagedDoeblinChain(cyclic_stage_chain([1.0, 0.5, 0.25]), kernels, 0)
    zs, ys = staged.simulate(300000, seed=9)
    # thin by 150 steps: the worst-case TV after 150 steps is below 1e-6 here, so draws are ~independent
    assert staged.tv_to_stationarity(150)[-1] < 1e-6
    counts = np.zeros((3, 3))
    np.add.at(counts, (zs[::150], ys[::150]), 1)
    assert_frequencies_match(counts.ravel(), staged.stationary(joint=True).ravel(), what="staged simulation")
