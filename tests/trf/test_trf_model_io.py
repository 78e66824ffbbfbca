"""Data reading, the TRF model, atomic files and bad input."""

from __future__ import annotations

import numpy as np
import pytest

import trf
from trf.data import Alphabet, encode_words, read_word_list
from trf.io import atomic_write_npz, read_npz
from trf.model import TRF
from trf.transms import WordBackend

ABC = Alphabet("abc")


def test_log_prob_with_exact_and_estimated_normalisers(sampled_corpus):
    data, _ = sampled_corpus
    model = TRF.from_data(data)
    model.lam = np.random.default_rng(1).normal(scale=0.3, size=model.features.d)
    model.zeta = model.exact_log_z() - model.log_z1()
    np.testing.assert_allclose(model.log_prob(data), model.log_prob(data, model.exact_log_z()))
    # probabilities over all words of length <= m sum to one
    from .conftest import all_words
    words = encode_words(["".join("abc"[c] for c in w) for w in all_words(3, data.m)], ABC, data.m)
    assert np.exp(model.log_prob(words)).sum() == pytest.approx(1.0, abs=1e-12)


def test_save_load_roundtrip_and_dispatch(sampled_corpus, tmp_path):
    data, _ = sampled_corpus
    model = TRF.from_data(data)
    model.lam[:] = np.linspace(-1, 1, model.features.d)
    path = model.save(tmp_path / "m.npz")
    for loaded in (TRF.load(path), trf.load(path)):
        np.testing.assert_array_equal(loaded.lam, model.lam)
        np.testing.assert_array_equal(loaded.zeta, model.zeta)
        assert loaded.alphabet == model.alphabet and loaded.m == model.m
    assert not list(tmp_path.glob("*.tmp"))


def test_bad_model_files(sampled_corpus, tmp_path):
    data, _ = sampled_corpus
    model = TRF.from_data(data)
    path = model.save(tmp_path / "m.npz")
    raw = path.read_bytes()
    (tmp_path / "trunc.npz").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ValueError, match="truncated"):
        TRF.load(tmp_path / "trunc.npz")
    np.savez(tmp_path / "foreign.npz", a=np.zeros(3))
    with pytest.raises(ValueError, match="not an mcsa model file"):
        TRF.load(tmp_path / "foreign.npz")
    (tmp_path / "text.npz").write_text("hello")
    with pytest.raises(ValueError, match="truncated or not"):
        trf.load(tmp_path / "text.npz")
    atomic_write_npz(tmp_path / "other.npz", {"x": np.zeros(2)}, {}, kind="ngram")
    with pytest.raises(ValueError, match="kind 'ngram'"):
        TRF.load(tmp_path / "other.npz")
    with pytest.raises(ValueError, match="does not know"):
        trf.load(tmp_path / "other.npz")
    arrays, meta = read_npz(path, "trf-word")
    arrays["lam"][0] = np.nan
    atomic_write_npz(tmp_path / "nan.npz", arrays, {"alphabet": meta["alphabet"], "m": meta["m"]}, kind="trf-word")
    with pytest.raises(ValueError, match="finite"):
        TRF.load(tmp_path / "nan.npz")
    with pytest.raises(FileNotFoundError):
        TRF.load(tmp_path / "missing.npz")


def test_word_list_errors(tmp_path):
    (tmp_path / "empty.txt").write_text("\n  \n")
    with pytest.raises(ValueError, match="empty"):
        read_word_list(tmp_path / "empty.txt", ABC, 4)
    with pytest.raises(ValueError, match=r"outside the alphabet"):
        encode_words(["abd"], ABC, 4)
    data = encode_words(["abd", "ab"], ABC, 4, on_unknown="skip")
    assert len(data) == 1 and data.skipped == ["abd"]
    assert encode_words(["ABC"], ABC, 4, on_unknown="lower").word(0) == "abc"
    with pytest.raises(ValueError, match="m = 2"):
        encode_words(["abc"], ABC, 2)
    assert len(encode_words(["abc", "a"], ABC, 2, too_long="skip")) == 1
    with pytest.raises(ValueError, match="m must be >= 1"):
        encode_words(["a"], ABC, 0)
    with pytest.raises(ValueError, match="distinct"):
        Alphabet("aa")
    with pytest.raises(FileNotFoundError):
        read_word_list(tmp_path / "nope.txt", ABC, 3)


def test_backend_statistics(sampled_corpus):
    data, _ = sampled_corpus
    backend = WordBackend(data, n_chains=3)
    n_j = data.length_counts()
    np.testing.assert_allclose(backend.pi, n_j / n_j.sum())
    # stratified variance by direct per-word computation for one feature
    k = 5
    per_word = np.array([backend.features.counts(data.subset(np.array([i])))[k] for i in range(200)])
    sub = data.subset(np.arange(200))
    var = sum((sub.lengths == j).mean() * per_word[sub.lengths == j].var() for j in range(1, 5) if np.any(sub.lengths == j))
    assert WordBackend(sub, features=backend.features, n_chains=3).feature_variance[k] == pytest.approx(var)
    np.testing.assert_allclose(backend.initial_zeta(), np.arange(4) * np.log(3))


def test_import_trf_does_not_import_torch():
    import subprocess
    import sys

    code = "import sys, trf, trf.augsa, trf.transms, trf.exact; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_docs_example_runs():
    """The python example of docs/trf.md runs as written."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "trf.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, "docs/trf.md", "exec"), {"__name__": "__main__"})
