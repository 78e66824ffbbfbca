"""A small random sentence TRF saved to disk, shared by the trf_lm experiment tests."""

from __future__ import annotations

import numpy as np
import pytest

from trf.lm.corpus import EncodedCorpus, Vocabulary
from trf.lm.features import SentenceFeatures
from trf.lm.model import SentenceTRF, smoothed_length_law


@pytest.fixture
def random_lm(tmp_path):
    """``make(features)``: a TRF on 6 words and lengths 1-4 with random weights and zero zeta, built on 60 random
    sentences (seed 4) and saved as ``tmp_path / "m.npz"``; returns ``(model, path)``."""

    def make(features: str) -> tuple[SentenceTRF, object]:
        rng = np.random.default_rng(4)
        V, M = 6, 4
        corpus = EncodedCorpus.from_sentences([rng.integers(0, V, size=rng.integers(1, M + 1)) for _ in range(60)])
        feats = SentenceFeatures.build(corpus, V, features, word_class=np.arange(V) % 2)
        vocab = Vocabulary(["<unk>"] + [f"w{i}" for i in range(1, V)])
        model = SentenceTRF(vocab, feats, smoothed_length_law(corpus.lengths, M), rng.normal(size=feats.n_features),
                            np.zeros(M))
        path = tmp_path / "m.npz"
        model.save(path)
        return model, path

    return make
