"""Staged Doeblin chains over sequences (Numba) against the equivalent finite StagedDoeblinChain."""

import numpy as np
import pytest

from doeblin import SequenceStagedDoeblinChain, StagedDoeblinChain, cyclic_stage_chain, cyclic_stage_gap_bound
from doeblin._seq_kernels import seq_staged_draws
from doeblin.implicit import SequenceDoeblinChain, SequenceModel
from samplers.testing import assert_frequencies_match, chi_square_gof

K, L, D = 3, 3, 2          # 27 sequences, so the finite chain is cheap to build
N_DRAWS = 20000
KINDS = ["restart", "gibbs", "sweep", "identity"]


@pytest.fixture(scope="module")
def model_x():
    rng = np.random.default_rng(5)
    model = SequenceModel(rng.normal(size=(D, K)), rng.normal(size=(D, K)), 2.0 * rng.normal(size=(K, K)))
    return model, rng.normal(size=(L, D))


@pytest.fixture(scope="module")
def chain(model_x):
    # Cor. 3.7's cyclic stage chain: restart -> gibbs -> sweep -> identity -> restart
    return SequenceStagedDoeblinChain(*model_x, cyclic_stage_chain([0.9, 0.3, 0.2, 0.1]), KINDS, 0)


@pytest.fixture(scope="module")
def finite(chain):
    return chain.as_finite()


def test_as_finite_kernels(chain, model_x):
    base = SequenceDoeblinChain(*model_x, 1.0).as_finite()
    np.testing.assert_allclose(chain.stage_matrix("gibbs"), base.A, atol=1e-12)
    np.testing.assert_allclose(chain.stage_matrix("restart"), np.repeat(base.u[None], K ** L, 0), atol=1e-12)
    sweep = chain.stage_matrix("sweep")
    np.testing.assert_allclose(sweep.sum(axis=1), 1.0, atol=1e-12)
    # a sweep resamples every site, so it leaves the Gibbs model's law p ∝ exp(s(y)) invariant, like A
    p_A = base.base_stationary()
    np.testing.assert_allclose(p_A @ sweep, p_A, atol=1e-10)
    np.testing.assert_allclose(p_A @ base.A, p_A, atol=1e-10)


def test_exact_draws_match_finite_joint_and_y_marginal(chain, finite):
    y, z, steps = chain.sample_stationary(N_DRAWS, seed=1, return_stages=True, return_steps=True)
    assert y.shape == (N_DRAWS, L) and y.dtype == np.int64 and steps.min() >= 1
    joint = finite.stationary(joint=True)            # (stages, sequences), GTH on the joint kernel
    idx = chain.state_index(y)
    # independent draws: chi-square with false-alarm rate 1e-3 for the joint law and the y-marginal
    assert_frequencies_match(np.bincount(z * K ** L + idx, minlength=joint.size), joint.ravel(),
                             what="exact staged draws (z, y)")
    assert_frequencies_match(np.bincount(idx, minlength=K ** L), finite.stationary(),
                             what="exact staged draws, y-marginal")


def test_strong_chain_is_a_staged_chain(model_x):
    """C with identical rows (eps, 1 - eps) over (restart, gibbs) is the strong Doeblin chain: the
    y-marginal is Prop. 3.2's closed form eps u (I - (1 - eps) A)^{-1}."""
    eps = 0.3
    staged = SequenceStagedDoeblinChain(*model_x, [[eps, 1 - eps], [eps, 1 - eps]], ["restart", "gibbs"], 0)
    strong = SequenceDoeblinChain(*model_x, eps).as_finite()
    closed = strong.stationary()
    np.testing.assert_allclose(staged.as_finite().stationary(), closed, atol=1e-10)
    y = staged.sample_stationary(N_DRAWS, seed=4)
    assert_frequencies_match(np.bincount(staged.state_index(y), minlength=K ** L), closed,
                             what="staged draws vs strong Doeblin closed form")


RANDOM_INSTANCE_KINDS = [["restart", "sweep", "gibbs", "identity"], ["restart", "identity", "sweep", "gibbs"],
                         ["restart", "gibbs", "restart", "sweep"]]


@pytest.mark.parametrize("instance", range(3))
def test_random_instances_agree_with_finite(instance):
    """Random models, dense non-reversible stage chains and several kernel orders (incl. a transient
    stage with no stationary mass): exact draws vs the finite chain's y-marginal, alpha = 1e-3 each."""
    rng = np.random.default_rng(100 + instance)
    k = 3
    model = SequenceModel(rng.normal(size=(D, 2)), rng.normal(size=(D, 2)), 1.5 * rng.normal(size=(2, 2)))
    x = rng.normal(size=(4, D))                       # K = 2, L = 4: 16 sequences
    C = np.zeros((k + 1, k + 1))
    C[:k, :k] = rng.dirichlet(np.full(k, 0.7), size=k)
    C[k, 1] = 1.0                                     # stage k is transient: rho[k] = 0
    kinds = RANDOM_INSTANCE_KINDS[instance]
    chain = SequenceStagedDoeblinChain(model, x, C, kinds, 0)
    y = chain.sample_stationary(N_DRAWS // 2, seed=instance)
    assert_frequencies_match(np.bincount(chain.state_index(y), minlength=16), chain.as_finite().stationary(),
                             what=f"random instance {instance} ({kinds})")


def test_cyclic_stage_gap_bound_cor_37(model_x):
    deltas = [0.9, 0.4, 0.05]                         # delta_2 <= min(0.9, 0.4) / 2: Cor. 3.7 applies
    chain = SequenceStagedDoeblinChain(*model_x, cyclic_stage_chain(deltas), ["restart", "sweep", "gibbs"], 0)
    bound = cyclic_stage_gap_bound(deltas)
    assert bound is not None and chain.as_finite().spectral_gap() >= bound


def test_thinned_path_matches_stationary(chain, finite):
    # thin so that the worst-case joint TV to stationarity after `thin` steps is below 1e-3:
    # thinned states are then nearly independent and the chi-square test applies
    tv = finite.tv_to_stationarity(200)
    thin = int(np.argmax(tv < 1e-3))
    assert thin > 0
    zs, ys = chain.simulate(4000 * thin, seed=2)
    assert zs[0] == chain.restart_stage and ys.shape == (4000 * thin + 1, L)
    idx = chain.state_index(ys[thin::thin])
    assert_frequencies_match(np.bincount(idx, minlength=K ** L), finite.stationary(), what="thinned path")
    joint = finite.stationary(joint=True)
    assert_frequencies_match(np.bincount(zs[thin::thin] * K ** L + idx, minlength=joint.size), joint.ravel(),
                             what="thinned path (z, y)")


def test_stage_never_moves_y_in_identity_stage(chain):
    zs, ys = chain.simulate(2000, seed=3, z0=3, y0=[0, 1, 2])
    stay = zs[1:] == 3
    assert stay.any()
    np.testing.assert_array_equal(ys[1:][stay], ys[:-1][stay])


def test_forward_stage_walk_is_detected(chain, finite):
    """Negative control: walking the stage chain *forward* (C instead of its time reversal) to the
    restart gives a biased sampler on this non-reversible cyclic C, and the chi-square test rejects it."""
    st = chain._stages
    _, y, _ = seq_staged_draws(chain._params(), st._cdf_rho, st._cdf_C, 0, N_DRAWS, 1)
    _, _, p = chi_square_gof(np.bincount(chain.state_index(y), minlength=K ** L), finite.stationary())
    assert p < 1e-3


def test_wrong_stage_kernel_is_detected(chain, model_x):
    """Negative control: draws of the chain are rejected against a chain whose sweep stage is Gibbs."""
    other = SequenceStagedDoeblinChain(*model_x, chain.C, ["restart", "gibbs", "gibbs", "identity"], 0)
    y = chain.sample_stationary(N_DRAWS, seed=1)
    _, _, p = chi_square_gof(np.bincount(chain.state_index(y), minlength=K ** L), other.as_finite().stationary())
    assert p < 1e-3


def test_same_seed_same_output(chain):
    np.testing.assert_array_equal(chain.sample_stationary(30, seed=7), chain.sample_stationary(30, seed=7))
    a, b = chain.simulate(50, seed=8), chain.simulate(50, seed=8)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


@pytest.mark.parametrize("C, kinds, restart, match", [
    ([[0.5, 0.6], [0.5, 0.5]], ["restart", "gibbs"], 0, "C must be row-stochastic"),
    ([[0.5, 0.5, 0.0]], ["restart", "gibbs"], 0, "C must be a non-empty square"),
    ([[0.5, 0.5], [0.5, 0.5]], ["restart", "gibbs"], 2, "restart_stage"),
    ([[0.5, 0.5], [0.5, 0.5]], ["restart", "gibbs"], -1, "restart_stage"),
    ([[0.5, 0.5], [0.0, 1.0]], ["restart", "gibbs"], 0, "C must reach the restart stage"),
    ([[0.5, 0.5], [0.5, 0.5]], ["restart"], 0, "stage_kernels must name one kernel per stage"),
    ([[0.5, 0.5], [0.5, 0.5]], ["restart", "metropolis"], 0, "stage_kernels must use the names"),
    ([[0.5, 0.5], [0.5, 0.5]], ["gibbs", "restart"], 0, r"stage_kernels\[0\] \(the restart stage\)"),
])
def test_bad_input(model_x, C, kinds, restart, match):
    with pytest.raises(ValueError, match=match):
        SequenceStagedDoeblinChain(*model_x, C, kinds, restart)


def test_bad_types_and_starts(model_x, chain):
    with pytest.raises(TypeError, match="stage_kernels"):
        SequenceStagedDoeblinChain(*model_x, np.eye(1), "restart", 0)
    with pytest.raises(TypeError, match="model"):
        SequenceStagedDoeblinChain(None, model_x[1], np.eye(1), ["restart"], 0)
    with pytest.raises(ValueError, match="z0"):
        chain.simulate(5, z0=4)
    with pytest.raises(ValueError, match="y"):
        chain.simulate(5, y0=[0, 3, 0])
    with pytest.raises(ValueError, match="kind"):
        chain.stage_matrix("metropolis")


def test_finite_chain_type(finite):
    assert isinstance(finite, StagedDoeblinChain) and finite.n_states == K ** L and finite.n_stages == 4
