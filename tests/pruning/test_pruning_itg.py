"""ITG bitext chart against brute-force enumeration, masked and unmasked; sampler; randomized pruning."""

import numpy as np
import pytest

from samplers.pruning.itg import (
    ITG,
    alignment_mask,
    enumerate_itg,
    enumerated_alignment_posteriors,
    itg_expectations,
    itg_inside,
    itg_randomized_pruning,
    itg_sample_alignment,
    tic_tac_toe_mask,
)
from samplers.testing import assert_close_in_se, assert_error_decreases


@pytest.mark.parametrize("n_nt, seed, e, f", [(1, 0, [0, 1, 2], [1, 3]), (2, 1, [2, 2], [0, 3]), (2, 2, [3, 0], [1, 2])])
def test_itg_inside_outside_matches_enumeration(n_nt, seed, e, f):
    itg = ITG.random(n_nt, 4, 4, seed=seed)
    ex = itg_expectations(itg, e, f)
    log_z, post = enumerated_alignment_posteriors(itg, e, f)
    assert ex.log_z == pytest.approx(log_z, abs=1e-9)
    np.testing.assert_allclose(ex.alignment, post, atol=1e-9)
    # every word is aligned to one f word or null: posteriors of each e word sum to one
    np.testing.assert_allclose(ex.alignment.sum(axis=1) + ex.null_e, 1.0, atol=1e-9)


def test_itg_masked_matches_restricted_enumeration():
    itg = ITG.random(1, 4, 4, seed=3)
    e, f = [0, 1, 2], [1, 3]
    keep, pair_keep = alignment_mask(3, 2, [(0, 1), (2, 0)], [True, False])
    ex = itg_expectations(itg, e, f, keep, pair_keep)
    log_z, post = enumerated_alignment_posteriors(itg, e, f, keep, pair_keep)
    assert ex.log_z == pytest.approx(log_z, abs=1e-9)
    np.testing.assert_allclose(ex.alignment, post, atol=1e-9)
    assert all((0, 1) in links and (2, 0) not in links for links, _ in enumerate_itg(itg, e, f, keep, pair_keep))
    assert len(enumerate_itg(itg, e, f, keep, pair_keep)) < len(enumerate_itg(itg, e, f))


def test_itg_sampled_alignments_match_posteriors():
    itg = ITG.random(2, 4, 4, seed=4)
    e, f = [0, 1, 2], [1, 3, 0]
    ins = itg_inside(itg, e, f)
    exact = itg_expectations(itg, e, f).alignment
    draws = np.array([itg_sample_alignment(itg, ins, seed=s) for s in range(2000)], dtype=float)
    # exact independent draws: each link frequency within 4 binomial standard errors
    se = np.sqrt(np.maximum(exact * (1 - exact), 1e-4) / len(draws))
    assert_close_in_se(draws.mean(axis=0), exact, se, k=4.0, what="alignment frequency")


@pytest.mark.slow
def test_itg_randomized_pruning_converges():
    itg = ITG.random(2, 12, 12, seed=5, concentration=0.05)
    e = np.array([3, 7, 1, 9, 4, 0])
    f = np.exp(itg.pair).sum(axis=0)[e].argmax(axis=1)[[1, 0, 2, 3, 5, 4]]
    exact = itg_expectations(itg, e, f).vector()
    budgets = [4, 16, 64]
    errors = [np.mean([np.linalg.norm(itg_randomized_pruning(itg, e, f, n, seed=s, confidence=0.02).expectations.vector()
                                      - exact) for s in range(3)]) for n in budgets]
    assert_error_decreases(budgets, errors, max_slope=-0.25)
    # a fixed aggressive tic-tac-toe mask stays biased
    keep = tic_tac_toe_mask(itg, e, f, 0.5)
    fixed = np.linalg.norm(itg_expectations(itg, e, f, keep).vector() - exact)
    assert fixed > errors[-1]


def test_itg_bad_input():
    itg = ITG.random(1, 3, 3, seed=0)
    with pytest.raises(ValueError, match="vocabulary"):
        itg_expectations(itg, [0, 5], [1])
    with pytest.raises(ValueError, match="non-empty"):
        itg_expectations(itg, [], [1])
    with pytest.raises(ValueError, match="straight"):
        ITG(np.zeros((2, 2, 2)), np.zeros((2, 2, 1)), np.zeros((2, 3, 3)), np.zeros((2, 3)), np.zeros((2, 3)))
    with pytest.raises(ValueError, match="finite"):
        ITG(np.full((1, 1, 1), np.nan), np.zeros((1, 1, 1)), np.zeros((1, 3, 3)), np.zeros((1, 3)), np.zeros((1, 3)))
