"""Corpus streaming, vocabulary and the ``mcsa ngram`` command."""

from __future__ import annotations

import json

import numpy as np
import pytest

from samplers.cli import main
from trf.lm.corpus import UNK, EncodedCorpus, ReadStats, Vocabulary, encode_file, iter_sentences


@pytest.fixture
def corpus_file(tmp_path):
    path = tmp_path / "train.txt"
    path.write_text("the cat sat\n\n  \nthe dog sat down\na cat ran\nthe end\n", encoding="utf-8")
    return path


def test_streaming_reader_counts_and_skips_empty_lines(corpus_file):
    stats = ReadStats()
    sentences = list(iter_sentences(corpus_file, stats=stats))
    assert sentences[1] == ["the", "dog", "sat", "down"]
    assert (stats.sentences, stats.tokens, stats.empty_lines) == (4, 12, 2)
    assert "2 empty lines skipped" in stats.summary()


def test_vocabulary_size_limit_count_cutoff_and_encoding(corpus_file):
    vocab = Vocabulary.build(corpus_file)
    assert vocab.words[:4] == [UNK, "the", "cat", "sat"]  # by count, ties alphabetical
    assert vocab.counts.sum() == 12
    small = Vocabulary.build(corpus_file, max_size=3)
    assert small.words == [UNK, "the", "cat"] and small.counts[0] == 12 - 3 - 2
    frequent = Vocabulary.build(corpus_file, min_count=2)
    assert frequent.words == [UNK, "the", "cat", "sat"]
    np.testing.assert_array_equal(frequent.encode(["the", "bird", "sat"]), [1, 0, 3])
    again = Vocabulary.from_arrays(frequent.to_arrays())
    assert again.words == frequent.words
    corpus = encode_file(corpus_file, frequent)
    assert len(corpus) == 4 and corpus.n_predicted == 12 + 4
    np.testing.assert_array_equal(corpus[2], [0, 2, 0])
    np.testing.assert_array_equal(EncodedCorpus.from_sentences(list(corpus)).tokens, corpus.tokens)


def test_corpus_bad_input(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n   \n")
    with pytest.raises(ValueError, match="holds no sentence"):
        Vocabulary.build(empty)
    latin = tmp_path / "latin1.txt"
    latin.write_bytes("ok line\ncaf\xe9 au lait\n".encode("latin-1"))
    with pytest.raises(ValueError, match="line 2 is not valid utf-8"):
        Vocabulary.build(latin)
    assert Vocabulary.build(latin, encoding="latin-1").index["café"] > 0
    with pytest.raises(FileNotFoundError, match="does not exist"):
        list(iter_sentences(tmp_path / "missing.txt"))
    with pytest.raises(ValueError, match="max_size"):
        Vocabulary.build(latin, encoding="latin-1", max_size=1)
    with pytest.raises(ValueError, match="words must start"):
        Vocabulary(["a", UNK])


def test_ngram_cli_train_and_eval(corpus_file, tmp_path, capsys):
    model = tmp_path / "kn.npz"
    assert main(["ngram", "train", "--train", str(corpus_file), "--out", str(model), "--order", "3"]) == 0
    out = tmp_path / "eval.json"
    assert main(["ngram", "eval", "--model", str(model), "--test", str(corpus_file), "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["predicted_tokens"] == 16 and "one end-of-sentence per sentence" in result["convention"]
    assert 1.0 < result["perplexity"] < 10.0
    assert "perplexity" in capsys.readouterr().out
    truncated = tmp_path / "cut.npz"
    truncated.write_bytes(model.read_bytes()[:100])
    assert main(["ngram", "eval", "--model", str(truncated), "--test", str(corpus_file)]) == 2
    assert "truncated" in capsys.readouterr().err
