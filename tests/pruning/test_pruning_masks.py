"""Fixed masks: threshold and figure-of-merit masks keep the always-kept spans and a parse."""

import numpy as np
import pytest

from samplers.models import Grammar, expected_counts
from samplers.pruning import figure_of_merit_mask, threshold_mask
from samplers.pruning.masks import (
    coarse_span_posteriors,
    create_mask,
    default_coarse,
    figure_of_merit_scores,
    kept_fraction,
    viterbi_backbone,
)

GRAMMAR = Grammar.random_split(3, 2, 8, seed=2)
WORDS = [f"w{i}" for i in np.random.default_rng(1).integers(0, 8, 9)]


def test_threshold_masks_nest_and_keep_a_parse():
    scores = coarse_span_posteriors(GRAMMAR, WORDS)
    backbone = viterbi_backbone(default_coarse(GRAMMAR), WORDS)
    fractions = []
    for t in [0.9, 0.3, 0.05, 0.0]:
        mask = threshold_mask(scores, t, backbone)
        assert all(mask[i, i + 1] for i in range(len(WORDS))) and mask[0, len(WORDS)]
        assert np.all(mask[backbone])
        assert np.isfinite(expected_counts(GRAMMAR, WORDS, mask).log_z)
        fractions.append(kept_fraction(mask))
    assert fractions == sorted(fractions) and fractions[-1] == 1.0 and fractions[0] < 0.6


def test_figure_of_merit_is_informative():
    fom = figure_of_merit_scores(GRAMMAR, WORDS)
    iu = np.triu_indices(len(WORDS) + 1, k=2)
    assert np.all((fom[iu] > 0) & (fom[iu] <= 1)) and np.ptp(fom[iu]) > 0.5
    backbone = viterbi_backbone(default_coarse(GRAMMAR), WORDS)
    exact = expected_counts(GRAMMAR, WORDS).vector()
    loose = figure_of_merit_mask(GRAMMAR, WORDS, 1e-6, backbone=backbone)
    tight = figure_of_merit_mask(GRAMMAR, WORDS, 0.5, backbone=backbone)
    err = [np.linalg.norm(expected_counts(GRAMMAR, WORDS, m).vector() - exact) for m in (loose, tight)]
    assert kept_fraction(tight) < kept_fraction(loose) and err[0] < err[1]


def test_mask_bad_input():
    with pytest.raises(ValueError, match="spans"):
        create_mask(4, [(2, 2)], [True])
    with pytest.raises(ValueError, match="positive"):
        create_mask(4, [(1, 3)], [True, False])
    with pytest.raises(ValueError, match="threshold"):
        threshold_mask(np.zeros((4, 4)), -1.0)
    with pytest.raises(ValueError, match="span_scores"):
        threshold_mask(np.zeros((4, 3)), 0.5)
