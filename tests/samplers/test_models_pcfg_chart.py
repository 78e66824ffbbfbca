"""Chart DPs against brute-force enumeration of all trees (exact and masked), tree sampling by chi-square."""

import numpy as np
import pytest

from samplers.models import Grammar, expected_counts, sample_trees, viterbi
from samplers.models.pcfg_enumeration import enumerate_trees, enumerated_expectations
from samplers.pruning.masks import ambiguous_spans, create_mask
from samplers.testing import assert_frequencies_match, chi_square_gof


def _sentence(rng, grammar, n):
    return [grammar.terminals[i] for i in rng.integers(0, len(grammar.terminals), n)]


def _assert_same(found, oracle):
    assert found.log_z == pytest.approx(oracle.log_z, abs=1e-9)
    np.testing.assert_allclose(found.span_posteriors, oracle.span_posteriors, atol=1e-9)
    np.testing.assert_allclose(found.binary_counts, oracle.binary_counts, atol=1e-9)
    np.testing.assert_allclose(found.lexical_counts, oracle.lexical_counts, atol=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_inside_outside_matches_enumeration(seed):
    rng = np.random.default_rng(seed)
    g = Grammar.random(3, 3, rule_density=0.7, seed=seed)
    words = _sentence(rng, g, 5)
    _assert_same(expected_counts(g, words), enumerated_expectations(g, words))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_masked_inside_outside_matches_restricted_enumeration(seed):
    rng = np.random.default_rng(100 + seed)
    g = Grammar.random(3, 3, seed=seed)
    words = _sentence(rng, g, 5)
    spans = ambiguous_spans(5)
    pick = rng.choice(len(spans), size=3, replace=False)
    tree = enumerate_trees(g, words)[0][0]  # a real tree, so its spans give a satisfiable mask
    in_tree = {(i, k) for i, k, _, _ in tree}
    positive = np.array([tuple(spans[p]) in in_tree for p in pick])
    mask = create_mask(5, spans[pick], positive)
    found = expected_counts(g, words, mask)
    oracle = enumerated_expectations(g, words, mask)
    _assert_same(found, oracle)
    # the mask really restricts: fewer trees than without it (otherwise the test proves little)
    assert len(enumerate_trees(g, words, mask)) < len(enumerate_trees(g, words))


def test_create_mask_algorithm2():
    # positive (1, 3) prunes spans crossing it; negative (2, 4) prunes only itself
    keep = create_mask(4, [(1, 3), (2, 4)], [True, False])
    pruned = {(i, k) for i in range(5) for k in range(i + 1, 5) if not keep[i, k]}
    assert pruned == {(0, 2), (2, 4)}
    keep = create_mask(5, [(1, 3)], [True])
    pruned = {(i, k) for i in range(6) for k in range(i + 1, 6) if not keep[i, k]}
    assert pruned == {(0, 2), (2, 4), (2, 5)}


def test_sampled_trees_match_exact_posterior():
    g = Grammar.random(2, 3, seed=5)
    words = ["w0", "w1", "w2", "w1"]
    trees = enumerate_trees(g, words)
    logw = np.array([w for _, w in trees])
    probs = np.exp(logw - np.logaddexp.reduce(logw))
    index = {t: i for i, (t, _) in enumerate(trees)}
    draws = sample_trees(g, words, 4000, seed=11)
    counts = np.bincount([index[tuple(map(tuple, d))] for d in draws], minlength=len(trees))
    # exact sampler, independent draws: chi-square with false-alarm rate 1e-3
    assert_frequencies_match(counts, probs, alpha=1e-3, what="tree sampler")
    # negative control: the same draws fail against a wrong (uniform) tree law
    _, _, p_wrong = chi_square_gof(counts, np.full(len(trees), 1 / len(trees)))
    assert p_wrong < 1e-6


def test_masked_sampling_respects_mask():
    g = Grammar.random(3, 3, seed=2)
    words = ["w0", "w1", "w2", "w0", "w1"]
    mask = create_mask(5, [(1, 4)], [True])
    draws = sample_trees(g, words, 200, mask=mask, seed=3)
    assert all(mask[r[0], r[1]] for d in draws for r in d)
    assert all(any((r[0], r[1]) == (1, 4) for r in d) for d in draws)


def test_viterbi_is_the_best_enumerated_tree():
    g = Grammar.random(3, 3, seed=4)
    words = ["w2", "w1", "w0", "w1"]
    trees = enumerate_trees(g, words)
    best_tree, best_w = max(trees, key=lambda tw: tw[1])
    score, nodes = viterbi(g, words)
    assert score == pytest.approx(best_w)
    assert tuple(map(tuple, nodes)) == best_tree
