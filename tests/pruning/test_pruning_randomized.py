"""Randomized pruning (Algorithm 1) converges to the exact expectations where fixed masks stay biased."""

import numpy as np
import pytest

from samplers.models import Grammar, expected_counts
from samplers.pruning import randomized_pruning, threshold_mask
from samplers.pruning.masks import coarse_span_posteriors, default_coarse, kept_fraction, viterbi_backbone
from samplers.pruning.randomized import PCFGPruningModel, run_auxvar_chain, selection_init, selection_step
from samplers.testing import assert_error_decreases

GRAMMAR = Grammar.random(6, 8, seed=7, concentration=0.1)
WORDS = [f"w{i}" for i in np.random.default_rng(0).integers(0, 8, 9)]
BUDGETS = [10, 40, 160, 640]
SEEDS = range(4)


@pytest.fixture(scope="module")
def exact():
    return expected_counts(GRAMMAR, WORDS).vector()


def test_selection_chain_never_repeats_and_keeps_two_thirds(rng):
    candidates = np.arange(12)
    s = selection_init(rng, candidates)
    assert len(s) == 8
    for _ in range(50):
        new = selection_step(rng, s, candidates)
        assert len(new) == 8 and len(np.intersect1d(new, s)) == 4  # |s & s'| = |s| / 2: no self-transition
        s = new


@pytest.mark.slow
def test_randomized_pruning_converges_where_fixed_masks_are_biased(exact):
    errors = [np.mean([np.linalg.norm(randomized_pruning(GRAMMAR, WORDS, n, seed=s).expectations.vector() - exact)
                       for s in SEEDS]) for n in BUDGETS]
    # MCMC averages: L2 error ~ N^{-1/2}; require at least N^{-1/4} over the grid (fixed seeds)
    assert_error_decreases(BUDGETS, errors, max_slope=-0.25)
    assert errors[-1] < 0.2
    # the per-mask pruning is aggressive, yet every fixed coarse-to-fine mask keeping at most as much is
    # far more biased than the randomized average
    run = randomized_pruning(GRAMMAR, WORDS, 50, seed=0)
    frac = run.trace["kept_fraction"].mean()
    scores = coarse_span_posteriors(GRAMMAR, WORDS)
    backbone = viterbi_backbone(default_coarse(GRAMMAR), WORDS)
    fixed = []
    for t in [0.5, 0.3, 0.2, 0.1, 0.07]:
        mask = threshold_mask(scores, t, backbone)
        if kept_fraction(mask) <= frac + 0.2:
            fixed.append(np.linalg.norm(expected_counts(GRAMMAR, WORDS, mask).vector() - exact))
    assert fixed and min(fixed) > 3 * errors[-1]


class _FrozenAssignments(PCFGPruningModel):
    """Negative control: never resample the assignments (drop the block Gibbs step k_s)."""

    def resample(self, ins, seed):
        return self._frozen

    def initial_assignment(self, rng):
        self._frozen = super().initial_assignment(rng)
        return self._frozen


@pytest.mark.slow
def test_negative_control_without_assignment_chain_stays_biased(exact):
    ids = GRAMMAR.encode(WORDS)
    scores = coarse_span_posteriors(GRAMMAR, ids)
    model = _FrozenAssignments(GRAMMAR, ids, init_scores=scores)
    good = PCFGPruningModel(GRAMMAR, ids, init_scores=scores)
    cand = np.argsort(-scores[model.spans[:, 0], model.spans[:, 1]])[: len(ids) - 2]

    def err(m, seed):
        post, counts, _ = run_auxvar_chain(m, cand, 300, seed=seed).averages
        iu = np.triu_indices(len(ids) + 1, k=2)
        return np.linalg.norm(np.concatenate([post[iu], counts]) - exact)

    frozen = np.mean([err(model, s) for s in SEEDS])
    correct = np.mean([err(good, s) for s in SEEDS])
    assert frozen > 2 * correct


def test_trace_and_reproducibility():
    a = randomized_pruning(GRAMMAR, WORDS, 5, seed=3, burn_in=2, record=True)
    b = randomized_pruning(GRAMMAR, WORDS, 5, seed=3, burn_in=2)
    np.testing.assert_array_equal(a.expectations.binary_counts, b.expectations.binary_counts)
    assert a.trace["kept_fraction"].shape == (7,) and len(a.trace["soft_counts"]) == 5
    np.testing.assert_allclose(np.mean([s[1] for s in a.trace["soft_counts"]], axis=0), a.expectations.binary_counts)
    assert np.all(a.trace["kept_fraction"] <= 1.0)
