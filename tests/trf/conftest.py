"""Tiny word TRFs shared by the trf tests (small alphabets so enumeration is exact)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from trf.data import Alphabet, encode_words
from trf.features import FeatureSet, n_dense


def all_words(V: int, m: int) -> list[tuple[int, ...]]:
    """Every word over ``range(V)`` of length 1..m, ordered by length then lexicographically."""
    return [w for j in range(1, m + 1) for w in itertools.product(range(V), repeat=j)]


def full_features(symbols: str) -> FeatureSet:
    """Features for every possible n-gram of the seven templates."""
    alphabet = Alphabet(symbols)
    return FeatureSet(alphabet, np.arange(n_dense(alphabet.size)))


@pytest.fixture(scope="session")
def tiny_model():
    """(features, lam, m): alphabet 'abc', every n-gram a feature, m = 4, lambda ~ N(0, 0.6^2)."""
    features = full_features("abc")
    lam = np.random.default_rng(20170101).normal(scale=0.6, size=features.d)
    return features, lam, 4


@pytest.fixture(scope="session")
def sampled_corpus(tiny_model):
    """3000 words drawn exactly from the tiny model with length law pi (for training tests)."""
    from trf import exact

    features, lam, m = tiny_model
    words = all_words(features.V, m)
    scores = features.scores(lam, encode_words(["".join("abc"[c] for c in w) for w in words], features.alphabet, m))
    log_z = exact.log_partition(features, lam, m)
    pi = np.array([0.1, 0.2, 0.3, 0.4])
    lengths = np.array([len(w) for w in words])
    logp = np.log(pi[lengths - 1]) + scores - log_z[lengths - 1]
    rng = np.random.default_rng(7)
    idx = rng.choice(len(words), size=3000, p=np.exp(logp) / np.exp(logp).sum())
    text = ["".join("abc"[c] for c in words[i]) for i in idx]
    return encode_words(text, features.alphabet, m), pi
