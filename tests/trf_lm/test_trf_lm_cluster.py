"""Exchange clustering: monotone objective, NumPy oracle, local optimality, determinism, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from trf.lm.cluster import class_bigram_log_likelihood, exchange_clustering
from trf.lm.corpus import EncodedCorpus

V, K = 12, 3


@pytest.fixture(scope="module")
def planted_corpus():
    """Words 4c..4c+3 form class c; classes follow a cyclic Markov chain."""
    rng = np.random.default_rng(0)
    transition = np.array([[0.1, 0.8, 0.1], [0.1, 0.1, 0.8], [0.8, 0.1, 0.1]])
    sentences = []
    for _ in range(300):
        c, s = rng.integers(K), []
        for _ in range(rng.integers(1, 10)):
            s.append(4 * c + rng.integers(4))
            c = rng.choice(K, p=transition[c])
        sentences.append(s)
    return EncodedCorpus.from_sentences(sentences)


def test_exchange_log_likelihood_never_decreases_and_matches_oracle(planted_corpus):
    for seed in range(4):
        result = exchange_clustering(planted_corpus, V, K, seed=seed)
        assert np.all(np.diff(result.log_likelihood) >= -1e-9)
        assert result.log_likelihood[-1] > result.log_likelihood[0]
        oracle = class_bigram_log_likelihood(planted_corpus, V, result.classes)
        assert result.log_likelihood[-1] == pytest.approx(oracle, rel=1e-12)
        assert sorted(set(result.classes.tolist())) == list(range(K))  # no class emptied


def test_exchange_result_is_a_local_optimum(planted_corpus):
    """No single-word move (out of a class with >1 member) raises the oracle objective."""
    result = exchange_clustering(planted_corpus, V, K, seed=3, max_passes=50)
    best = class_bigram_log_likelihood(planted_corpus, V, result.classes)
    sizes = np.bincount(result.classes, minlength=K)
    for w in range(V):
        if sizes[result.classes[w]] == 1:
            continue
        for k in range(K):
            moved = result.classes.copy()
            moved[w] = k
            assert class_bigram_log_likelihood(planted_corpus, V, moved) <= best + 1e-8


def test_exchange_is_deterministic_and_beats_a_random_map(planted_corpus):
    a = exchange_clustering(planted_corpus, V, K, seed=7)
    b = exchange_clustering(planted_corpus, V, K, seed=7)
    np.testing.assert_array_equal(a.classes, b.classes)
    random_map = np.random.default_rng(1).integers(0, K, size=V)
    assert a.log_likelihood[-1] > class_bigram_log_likelihood(planted_corpus, V, random_map)
    # the planted partition {0-3}, {4-7}, {8-11} is recovered up to relabelling
    assert {tuple(m) for m in a.members()} == {(0, 1, 2, 3), (4, 5, 6, 7), (8, 9, 10, 11)}
    members = a.members()
    assert sum(m.size for m in members) == V and all(np.all(a.classes[m] == c) for c, m in enumerate(members))


def test_exchange_bad_input(planted_corpus):
    with pytest.raises(ValueError, match="n_classes must be <= vocab_size"):
        exchange_clustering(planted_corpus, V, V + 1)
    with pytest.raises(ValueError, match="corpus.tokens"):
        exchange_clustering(planted_corpus, 5, 2)
    with pytest.raises(TypeError, match="EncodedCorpus"):
        exchange_clustering([[0, 1]], V, 2)
