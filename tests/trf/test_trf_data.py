"""The offline English word lists of the word-morphology benchmark."""

from __future__ import annotations

import pytest

from trf.data import WORD_LISTS, wordfreq_split


def test_wordfreq_split_takes_the_most_frequent_words():
    wordfreq = pytest.importorskip("wordfreq")      # optional extra `mcsa[data]`
    train, test = wordfreq_split(n_train=50, n_test=10, m=6, seed=1)
    assert len(train) == 50 and len(test) == 10 and not set(train) & set(test)
    expected = [w for w in wordfreq.top_n_list("en", 500, wordlist="large")
                if len(w) <= 6 and w.isascii() and w.isalpha() and w.islower()][:60]
    assert set(train) | set(test) == set(expected)
    assert "the" in expected and all(len(w) <= 6 and w.isalpha() for w in train + test)
    assert wordfreq_split(n_train=50, n_test=10, m=6, seed=1) == (train, test)      # seeded
    assert wordfreq_split(n_train=50, n_test=10, m=6, seed=2) != (train, test)
    with pytest.raises(ValueError, match="n_train"):
        wordfreq_split(n_train=0, n_test=10)
    with pytest.raises(ValueError, match="exceeds"):
        wordfreq_split(n_train=10**7, n_test=10)
    assert set(WORD_LISTS) == {"wordfreq", "web2"}
