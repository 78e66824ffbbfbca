"""Exact forward pass vs brute-force enumeration; exact expectations vs finite differences."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trf import exact
from trf.data import Alphabet, encode_words
from trf.features import FeatureSet

from .conftest import full_features


@settings(max_examples=15, deadline=None)
@given(V=st.integers(1, 3), m=st.integers(1, 4), seed=st.integers(0, 2**31 - 1), sparse=st.booleans())
def test_forward_log_z_equals_enumeration(V, m, seed, sparse):
    rng = np.random.default_rng(seed)
    features = full_features("abc"[:V])
    if sparse:  # only some n-grams are features: the rest weigh 0
        keep = np.flatnonzero(rng.random(features.d) < 0.5)
        if keep.size == 0:
            keep = np.array([0])
        features = FeatureSet(features.alphabet, features.position[keep])
    lam = rng.normal(scale=1.5, size=features.d)
    np.testing.assert_allclose(exact.log_partition(features, lam, m), exact.brute_force_log_z(features, lam, m),
                               rtol=1e-10, atol=1e-10)


def test_log_z_at_zero_is_j_log_v():
    features = full_features("abcd")
    np.testing.assert_allclose(exact.log_partition(features, np.zeros(features.d), 6), np.arange(1, 7) * np.log(4))


def test_expectations_are_the_gradient_of_log_z(tiny_model):
    features, lam, m = tiny_model
    weights = np.array([0.1, 0.2, 0.3, 0.4])
    log_z, expect = exact.log_partition_and_expectations(features, lam, weights)
    rng = np.random.default_rng(3)
    for k in rng.choice(features.d, size=25, replace=False):
        step = np.zeros(features.d)
        step[k] = 1e-5
        fd = (weights @ exact.log_partition(features, lam + step, m)
              - weights @ exact.log_partition(features, lam - step, m)) / 2e-5
        assert expect[k] == pytest.approx(fd, abs=1e-7)


def test_expectations_match_enumeration():
    features = full_features("ab")
    lam = np.random.default_rng(5).normal(size=features.d)
    m = 4
    words = [w for j in range(1, m + 1) for w in __import__("itertools").product("ab", repeat=j)]
    data = encode_words(["".join(w) for w in words], features.alphabet, m)
    scores = features.scores(lam, data)
    log_z = exact.log_partition(features, lam, m)
    weights = np.array([0.4, 0.3, 0.2, 0.1])
    lengths = data.lengths
    prob = weights[lengths - 1] * np.exp(scores - log_z[lengths - 1])
    np.testing.assert_allclose(exact.log_partition_and_expectations(features, lam, weights)[1],
                               features.counts(data, prob), rtol=1e-9, atol=1e-12)


def test_bad_lambda_is_rejected(tiny_model):
    features, _, m = tiny_model
    with pytest.raises(ValueError, match="lam"):
        exact.log_partition(features, np.zeros(3), m)
    with pytest.raises(ValueError, match="m"):
        exact.log_partition(features, np.zeros(features.d), 0)
    with pytest.raises(ValueError, match="lam"):
        exact.log_partition(features, np.full(features.d, np.nan), m)


def test_feature_templates_on_the_paper_example():
    alphabet = Alphabet("abcdefghijklmnopqrstuvwxyz")
    data = encode_words(["word", "a"], alphabet, 5)
    fs = FeatureSet.from_words(data)
    # word: 4 uni + 3 bi + 2 tri + begin/end uni + begin/end bi ; a: uni 'a' + begin/end 'a'
    assert fs.template_sizes() == {"uni": 5, "bi": 3, "tri": 2, "begin_uni": 2, "end_uni": 2,
                                   "begin_bi": 1, "end_bi": 1}
    counts = fs.counts(data)
    assert counts.sum() == 4 + 3 + 2 + 4 + 3
