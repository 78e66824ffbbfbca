"""Exact draws (chi-square against the closed form), simulation, implicit vs finite chains."""

import numpy as np
import pytest

from doeblin import StagedDoeblinChain, StrongDoeblinChain, cyclic_stage_chain
from doeblin.examples import random_chain
from doeblin.implicit import SequenceDoeblinChain, SequenceModel, implicit_doeblin_draws, implicit_staged_draws
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


def test_generic_implicit_draws_match_finite(chain):
    """Python-callable implicit chains (restart sampler + kernel step) agree with the matrix form."""
    draws, _ = implicit_doeblin_draws(lambda g: int(g.choice(6, p=chain.u)),
                                      lambda y, g: int(g.choice(6, p=chain.A[y])), chain.eps, 4000, seed=5)
    assert_frequencies_match(np.bincount(draws, minlength=6), chain.stationary(), what="implicit draws")
    rng = np.random.default_rng(6)
    A1, A2 = random_chain(4, seed=rng), random_chain(4, seed=rng)
    u = rng.dirichlet(np.ones(4))
    C = cyclic_stage_chain([1.0, 0.5, 0.2])
    staged = StagedDoeblinChain(C, [u, A1, A2], 0)
    steps = [None, lambda y, g: int(g.choice(4, p=A1[y])), lambda y, g: int(g.choice(4, p=A2[y]))]
    ys, zs = implicit_staged_draws(C, 0, lambda g: int(g.choice(4, p=u)), steps, 4000, seed=7)
    counts = np.zeros((3, 4))
    np.add.at(counts, (zs, np.array(ys)), 1)
    assert_frequencies_match(counts.ravel(), staged.stationary(joint=True).ravel(), what="implicit staged")


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
