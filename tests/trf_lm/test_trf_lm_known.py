"""Known sentences: the heavy training sentences chosen by their share of Z_j, distinct, re-chosen on schedule."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

from trf.lm.corpus import EncodedCorpus
from trf.lm.features import SentenceFeatures
from trf.lm.known import KnownSentences

V, M = 3, 3


@pytest.fixture(scope="module")
def setup():
    rng = np.random.default_rng(4)
    sentences = [list(rng.integers(0, V, size=rng.integers(1, M + 1))) for _ in range(60)] + [[0, 1, 2, 0]]
    corpus = EncodedCorpus.from_sentences(sentences)
    feats = SentenceFeatures.build(corpus, V, "w+c", word_class=np.array([0, 0, 1]))
    lam = rng.normal(scale=1.0, size=feats.n_features)
    log_z = np.array([logsumexp([feats.feature_vector(list(s)) @ lam for s in itertools.product(range(V), repeat=j)])
                      for j in range(1, M + 1)])
    return sentences, corpus, feats, lam, log_z


def test_the_heavy_distinct_training_sentences_are_chosen_every_refresh_draws(setup):
    """The set holds each distinct training sentence of length <= m once (the 4-word one is too long), is empty
    until a draw's log Z_j is known, then holds exactly the sentences whose share exp(lambda . f) / Z_j is at least
    the threshold (against brute force), with their exact scores, and is re-chosen only every `refresh` draws."""
    sentences, corpus, feats, lam, log_z = setup
    distinct = {tuple(s) for s in sentences if len(s) <= M}
    known = KnownSentences(corpus, feats, M, threshold=0.05, refresh=2)
    assert len(known) == len(distinct) and {tuple(r[:j]) for r, j in zip(known.tokens, known.lengths)} == distinct
    assert known.before_draw(lam) is None  # no Z-hat_j yet
    known.after_draw(log_z)
    assert known.before_draw(lam) is None  # draw 2 of the first period: not re-chosen
    known.after_draw(log_z)
    tokens, lengths, scores = known.before_draw(lam)
    share = {s: np.exp(feats.feature_vector(list(s)) @ lam - log_z[len(s) - 1]) for s in distinct}
    expected = {s for s, p in share.items() if p >= 0.05}
    assert 0 < len(expected) < len(distinct)
    got = [tuple(r[:j]) for r, j in zip(tokens, lengths)]
    assert set(got) == expected and len(got) == len(expected)
    np.testing.assert_allclose(scores, [feats.feature_vector(list(s)) @ lam for s in got])
    known.after_draw(log_z + 10.0)  # every share now far below the threshold, but not re-chosen until draw 5
    assert known.before_draw(lam)[1].size == len(expected)
    known.after_draw(log_z + 10.0)
    assert known.before_draw(lam) is None
    state = known.get_state()
    again = KnownSentences(corpus, feats, M, threshold=0.05, refresh=2)
    again.set_state(state)
    assert again.age == known.age and np.array_equal(again.log_z, known.log_z)
    with pytest.raises(ValueError, match="log_z must have 3 entries"):
        known.after_draw(log_z[:2])
    with pytest.raises(ValueError, match="threshold"):
        KnownSentences(corpus, feats, M, threshold=0.0)
