"""ARPA n-gram files (trf.arpa): exact export of KN / WB, normalisation on every context, an independent scorer
and KenLM as peers, SRILM/KenLM-convention files round-trip, gzip, malformed files, the SRILM ppl lines, the
Kneser-Ney discount fallback, and the ``mcsa ngram export | eval`` commands."""

from __future__ import annotations

import gzip
import itertools
import math
import re
import warnings

import numpy as np
import pytest

from samplers.cli import main
from trf.arpa import ArpaFormatError, ArpaModel, read_arpa, write_arpa
from trf.lm.corpus import Vocabulary
from trf.lm.ngram_cli import evaluate_ngram
from trf.ngram import DiscountFallbackWarning, KneserNey, WittenBell, ppl_report

V = 6
WORDS = ["<unk>", "the", "cat", "sat", "on", "mat"]


def _corpus(seed: int, n: int = 80):
    rng = np.random.default_rng(seed)
    probs = np.array([0.4, 0.25, 0.15, 0.1, 0.06, 0.04])  # skewed: counts-of-counts 1..4 populated, no fallback
    return [rng.choice(V, size=rng.integers(0, 7), p=probs) for _ in range(n)]


def _fit(cls, order, seed=0):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DiscountFallbackWarning)
        return cls(order).fit(_corpus(seed), V)


def _test_sentences(seed: int = 1, n: int = 60):
    rng = np.random.default_rng(seed)       # uniform words: many n-grams unseen in training
    return [rng.integers(0, V, size=rng.integers(0, 9)) for _ in range(n)]


def _minimal_scorer(text: str):
    """An independent ARPA reader in plain Python: the listed n-gram, else bow(history) + the shorter history."""
    prob, bow, section = {}, {}, 0
    for line in text.splitlines():
        line = line.strip()
        header = re.fullmatch(r"\\(\d+)-grams:", line)
        if header:
            section = int(header.group(1))
        elif line and not line.startswith("\\") and section:
            fields = line.split()
            prob[tuple(fields[1:section + 1])] = float(fields[0])
            if len(fields) == section + 2:
                bow[tuple(fields[1:section + 1])] = float(fields[-1])
    order = max(map(len, prob))

    def log10p(history, word):
        history = history[len(history) - min(len(history), order - 1):]
        if history + (word,) in prob:
            return prob[history + (word,)]
        return bow.get(history, 0.0) + log10p(history[1:], word)

    def sentence(words):
        seq = ["<s>"] + [w if (w,) in prob else "<unk>" for w in words] + ["</s>"]
        return sum(log10p(tuple(seq[:i]), seq[i]) for i in range(1, len(seq)))

    return sentence


def _read_text(path) -> str:
    return gzip.open(path, "rt").read() if str(path).endswith(".gz") else open(path).read()


@pytest.mark.parametrize("cls", [KneserNey, WittenBell])
@pytest.mark.parametrize("order", [2, 3, 5])
def test_arpa_reproduces_the_interpolated_model_exactly(cls, order, tmp_path):
    model = _fit(cls, order)
    test = _test_sentences()
    expected = model.log_prob(test)
    in_memory = ArpaModel.from_ngram(model, WORDS)
    np.testing.assert_allclose(in_memory.log_prob(test), expected, rtol=0, atol=1e-12)
    for name in ("lm.arpa", "lm.arpa.gz"):
        write_arpa(tmp_path / name, model, WORDS)
        back = read_arpa(tmp_path / name)
        assert back.words == WORDS and back.order == order and back.has_unk
        assert back.n_ngrams() == {1: V + 2, **{k: n for k, n in model.n_ngrams().items() if k > 1}}
        # shortest round-trip floats: the file is the model to float64 accuracy
        np.testing.assert_allclose(back.log_prob(test), expected, rtol=0, atol=1e-12)
        rng = np.random.default_rng(2)
        for history in [[], *(rng.integers(0, V, size=rng.integers(1, order + 2)) for _ in range(30))]:
            np.testing.assert_allclose(back.next_log_probs(history), model.next_log_probs(history), atol=1e-12)
    with gzip.open(tmp_path / "lm.arpa.gz", "rb") as fh:   # really gzip
        assert fh.read(6) == b"\\data\\"


@pytest.mark.parametrize("cls", [KneserNey, WittenBell])
@pytest.mark.parametrize("order", [2, 3, 4, 5])
def test_back_off_weights_normalise_every_context(cls, order, tmp_path):
    """sum_w p(w|h) = 1 over words + </s> for every context the file lists (and the unlisted ones back off
    to a listed one, so they inherit it); float64 sums of <= 8 terms: |error| < 1e-12."""
    write_arpa(tmp_path / "lm.arpa", _fit(cls, order), WORDS)
    arpa = read_arpa(tmp_path / "lm.arpa")
    contexts = arpa.contexts()
    assert len(contexts) >= V + 1 and {len(c) for c in contexts} == set(range(1, order))
    for context in contexts + [(), ("cat", "cat", "cat", "cat")]:
        total = sum(10 ** arpa.log10_prob(w, context) for w in WORDS + ["</s>"])
        assert abs(total - 1) < 1e-12, context


def test_a_wrong_back_off_weight_is_caught(tmp_path):
    """Negative control: one bow off by 0.01 in log10 (2.3%) breaks normalisation at that context only."""
    write_arpa(tmp_path / "lm.arpa", _fit(KneserNey, 3), WORDS)
    lines = (tmp_path / "lm.arpa").read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(tuple("-0123456789")) and
              len(line.split("\t")) == 3 and len(line.split("\t")[1].split()) == 2)
    p, gram, b = lines[at].split("\t")
    lines[at] = f"{p}\t{gram}\t{float(b) + 0.01!r}"
    (tmp_path / "bad.arpa").write_text("\n".join(lines) + "\n")
    arpa = read_arpa(tmp_path / "bad.arpa")
    bad = [c for c in arpa.contexts()
           if abs(sum(10 ** arpa.log10_prob(w, c) for w in WORDS + ["</s>"]) - 1) > 1e-6]
    assert bad == [tuple(gram.split())]


@pytest.mark.parametrize("cls", [KneserNey, WittenBell])
def test_an_independent_arpa_scorer_agrees_with_mcsa(cls, tmp_path):
    """Acceptance: sentence log10 probabilities (1e-4 asked; float64 throughout, so 1e-9) and perplexity."""
    model = _fit(cls, 4)
    path = tmp_path / "lm.arpa.gz"
    write_arpa(path, model, WORDS)
    score = _minimal_scorer(_read_text(path))
    test = _test_sentences()
    ours = model.log_prob(test) / math.log(10)
    theirs = np.array([score([WORDS[i] for i in s]) for s in test])
    np.testing.assert_allclose(theirs, ours, rtol=0, atol=1e-9)
    n_tokens = sum(len(s) + 1 for s in test)
    assert 10 ** (-theirs.sum() / n_tokens) == pytest.approx(np.exp(-model.log_prob(test).sum() / n_tokens),
                                                            rel=1e-9)


def test_kenlm_reads_mcsa_arpa_files_and_agrees(tmp_path):
    kenlm = pytest.importorskip("kenlm", reason="the kenlm Python module (pip install kenlm) is the external peer")
    test = _test_sentences()
    for cls, order in ((KneserNey, 5), (WittenBell, 3)):
        model = _fit(cls, order)
        path = tmp_path / f"{cls.__name__}.arpa.gz"
        write_arpa(path, model, WORDS)
        peer = kenlm.Model(str(path))
        assert peer.order == order
        ours = model.log_prob(test) / math.log(10)
        theirs = np.array([peer.score(" ".join(WORDS[i] for i in s), bos=True, eos=True) for s in test])
        # KenLM stores float32: |error| ~ 1e-7 per token, far inside the 1e-4 of the acceptance
        np.testing.assert_allclose(theirs, ours, rtol=0, atol=1e-4)
        n_tokens = sum(len(s) + 1 for s in test)
        assert 10 ** (-theirs.sum() / n_tokens) == pytest.approx(10 ** (-ours.sum() / n_tokens), rel=1e-4)


# A trigram model in SRILM / KenLM conventions, written by hand: <s> with -99, <unk>, </s>, bows on contexts only.
SRILM_STYLE = """This preamble is ignored, as SRILM does (KenLM refuses it; it gets the file without it).

\\data\\
ngram 1=6
ngram 2=5
ngram 3=2

\\1-grams:
-1.0\t<unk>
-99\t<s>\t-0.30103
-0.69897\t</s>
-0.5228787\ta\t-0.2
-0.69897\tb\t-0.1
-1.0\tc

\\2-grams:
-0.3\t<s> a\t-0.05
-0.4\ta b\t-0.15
-0.2\tb </s>
-0.6\ta c
-0.1\tb c

\\3-grams:
-0.1\t<s> a b
-0.25\ta b c

\\end\\
"""


def test_a_srilm_convention_file_round_trips(tmp_path):
    kenlm_model = None
    for gz in (False, True):
        path = _write(tmp_path, SRILM_STYLE, gz)
        name = path.name
        arpa = read_arpa(path)
        assert arpa.words == ["<unk>", "a", "b", "c"] and arpa.has_unk and arpa.order == 3
        # listed n-grams, and back-off by hand: p(c | <s> a) is not listed -> bow(<s> a) + p(c | a)
        assert arpa.log10_prob("b", ["<s>", "a"]) == -0.1
        assert arpa.log10_prob("c", ["<s>", "a"]) == pytest.approx(-0.05 - 0.6)
        # p(</s> | a b): no (a b </s>) -> bow(a b) + p(</s> | b) listed
        assert arpa.log10_prob("</s>", ["a", "b"]) == pytest.approx(-0.15 - 0.2)
        # p(a | c b): (c b) not listed (bow 0) -> p(a | b) not listed -> bow(b) + p(a)
        assert arpa.log10_prob("a", ["c", "b"]) == pytest.approx(-0.1 - 0.5228787)
        # an unknown word is <unk>; <s> before the sentence
        assert arpa.score("a zebra") == pytest.approx(-0.3 + (-0.05 - 0.2 - 1.0) - 0.69897)
        assert arpa.score("a b") == pytest.approx(-0.3 - 0.1 - 0.15 - 0.2)
        assert arpa.score("a b") == pytest.approx(_minimal_scorer(SRILM_STYLE)(["a", "b"]))
        write_arpa(tmp_path / f"again-{name}", arpa)
        again = read_arpa(tmp_path / f"again-{name}")
        assert again.words == arpa.words
        for (g1, p1, b1), (g2, p2, b2) in zip(arpa.tables(), again.tables()):
            np.testing.assert_array_equal(g1, g2)
            np.testing.assert_array_equal(p1, p2)
            np.testing.assert_array_equal(b1, b2)
    try:
        import kenlm
        (tmp_path / "kenlm.arpa").write_text(SRILM_STYLE.split("\n", 2)[2])
        kenlm_model = kenlm.Model(str(tmp_path / "kenlm.arpa"))
    except ImportError:
        pass
    if kenlm_model is not None:
        for sentence in ("a b", "a zebra", "b c a", "c"):
            assert kenlm_model.score(sentence, bos=True, eos=True) == pytest.approx(arpa.score(sentence), abs=1e-5)


def test_an_n_gram_whose_prefix_is_not_listed_is_scored(tmp_path):
    """The format allows a listed trigram "c a b" without the bigram "c a" (it gets an unlisted placeholder)."""
    arpa = read_arpa(_write(tmp_path, SRILM_STYLE.replace("-0.25\ta b c", "-0.25\tc a b")))
    assert arpa.n_ngrams() == {1: 6, 2: 5, 3: 2} and ("c", "a") not in arpa.contexts()
    assert arpa.log10_prob("b", ["c", "a"]) == -0.25
    assert arpa.log10_prob("c", ["c", "a"]) == pytest.approx(-0.6)        # no bow for (c a): p(c | a)
    assert arpa.log10_prob("a", ["c"]) == pytest.approx(-0.5228787)       # (c a) is no listed bigram
    score = _minimal_scorer(SRILM_STYLE.replace("-0.25\ta b c", "-0.25\tc a b"))
    for sentence in ("c a b", "c a c", "b c a b", "a"):
        assert arpa.score(sentence) == pytest.approx(score(sentence.split()), abs=1e-12)
    write_arpa(tmp_path / "again.arpa", arpa)
    assert [t[0].tolist() for t in read_arpa(tmp_path / "again.arpa").tables()] == [t[0].tolist() for t in arpa.tables()]


def test_a_model_without_unk_skips_oovs_as_srilm_does(tmp_path):
    text = SRILM_STYLE.replace("ngram 1=6", "ngram 1=5").replace("-1.0\t<unk>\n", "")
    (tmp_path / "closed.arpa").write_text(text)
    arpa = read_arpa(tmp_path / "closed.arpa")
    assert not arpa.has_unk and arpa.words == ["<unk>", "a", "b", "c"]
    assert arpa.log10_prob("zebra", ["a"]) == -math.inf
    test = tmp_path / "test.txt"
    test.write_text("a zebra b\na b\n")
    result = evaluate_ngram(arpa, arpa.vocab, test)
    # a zebra b: p(a|<s>) + [zebra skipped] + p(b | a zebra): (a <unk>) unknown context -> p(b|<unk>) -> p(b)
    # ... + p(</s> | zebra b) -> p(</s> | b) = -0.2.   a b: -0.3 -0.1 -0.15 -0.2
    first = -0.3 + (0.0 - 0.69897) + (-0.2)
    second = -0.3 - 0.1 - 0.15 - 0.2
    assert result["oovs_skipped"] == 1 and result["zeroprobs"] == 0 and result["words"] == 5
    assert result["log10_prob"] == pytest.approx(first + second)
    assert result["perplexity"] == pytest.approx(10 ** (-(first + second) / (5 - 1 + 2)))
    assert result["ppl1"] == pytest.approx(10 ** (-(first + second) / (5 - 1)))
    assert "file " in result["report"] and "2 sentences, 5 words, 1 OOVs" in result["report"]


def _write(tmp_path, text, gz=False):
    path = tmp_path / ("m.arpa.gz" if gz else "m.arpa")
    if gz:
        with gzip.open(path, "wt") as fh:
            fh.write(text)
    else:
        path.write_text(text)
    return path


@pytest.mark.parametrize("mutate, line, message", [
    (lambda t: t.replace("ngram 2=5", "ngram 2=6"), 23, r"\\2-grams: holds 5 entries but \\data\\ says ngram 2=6"),
    (lambda t: t.replace("ngram 2=5", "ngram 2 5"), 5, "expected 'ngram N=count'"),
    (lambda t: t.replace("ngram 2=5\n", ""), 5, "ngram 3= out of order"),
    (lambda t: t.replace("ngram 3=2\n", ""), 16, r"\\2-grams: needs 3 fields .*got 4"),
    (lambda t: t.replace("ngram 3=2\n", "").replace("\t-0.05", "").replace("\t-0.15", ""), 22,
     r"section \\3-grams: is not declared"),
    (lambda t: t.replace("\\data\\", "\\dada\\"), 27, r"no \\data\\ line"),
    (lambda t: t.replace("\\end\\\n", ""), 26, r"missing \\end\\"),
    (lambda t: t.replace("\\3-grams:", "\\4-grams:"), 23, r"\\4-grams: out of order"),
    (lambda t: t.replace("\\3-grams:\n-0.1\t<s> a b\n-0.25\ta b c\n\n", ""), 23, r"\\end\\ before \\3-grams:"),
    (lambda t: t.replace("-0.4\ta b", "0.4\ta b"), 18, "positive log10 probability 0.4"),
    (lambda t: t.replace("-0.1\t<s> a b", "-0.1\t<s> a b\t-0.2"), 24, "needs 4 fields"),
    (lambda t: t.replace("-0.4\ta b\t-0.15", "-0.4\ta"), 18, "needs 3 or 4 fields.*got 2"),
    (lambda t: t.replace("-0.6\ta c", "-0.6\ta x"), 20, "word 'x' is not in"),
    (lambda t: t.replace("-0.6\ta c", "-0.6\ta b"), 20, "duplicate 2-gram 'a b'"),
    (lambda t: t.replace("-1.0\tc", "-1.0\tb"), 14, "duplicate 1-gram 'b'"),
    (lambda t: t.replace("-0.1\tb c", "minus\tb c"), 21, "log10 probability 'minus' is not a number"),
    (lambda t: t.replace("-0.05", "nan"), 17, "back-off weight is NaN"),
    (lambda t: t.replace("-99\t<s>\t-0.30103\n", "").replace("ngram 1=6", "ngram 1=5"), 15, "has no '<s>'"),
    (lambda t: t.replace("\\2-grams:", "\\2-grams"), 16, "unknown section header"),
    (lambda t: t.replace("ngram 1=6\nngram 2=5\nngram 3=2\n", ""), 5, r"\\data\\ has no 'ngram N=count' lines"),
    (lambda t: t.split("\n\\1-grams:")[0], 6, r"no \\1-grams: section"),
    (lambda t: t.replace("-0.05", "inf"), 17, "back-off weight inf is not finite"),
    (lambda t: t.replace("\t-0.15", "\tx"), 18, "log10 back-off weight 'x' is not a number"),
    (lambda t: t.replace("-0.69897\t</s>\n", "").replace("ngram 1=6", "ngram 1=5"), 15, "has no '</s>'"),
])
def test_malformed_arpa_gets_an_error_naming_the_file_and_line(tmp_path, mutate, line, message):
    text = mutate(SRILM_STYLE)
    assert text != SRILM_STYLE
    for gz in (False, True):
        path = _write(tmp_path, text, gz)
        with pytest.raises(ArpaFormatError, match=rf"{re.escape(str(path))}: line {line}: .*{message}"):
            read_arpa(path)


def test_unreadable_and_empty_files(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        read_arpa(tmp_path / "none.arpa")
    (tmp_path / "empty.arpa").write_text("")
    with pytest.raises(ArpaFormatError, match="empty"):
        read_arpa(tmp_path / "empty.arpa")
    (tmp_path / "bad.arpa.gz").write_bytes(b"\x1f\x8b\x08\x00garbage")
    with pytest.raises(ArpaFormatError, match="bad.arpa.gz: line 1: cannot read"):
        read_arpa(tmp_path / "bad.arpa.gz")
    (tmp_path / "latin.arpa").write_bytes(SRILM_STYLE.encode().replace(b"a b c", b"a b \xe9"))
    with pytest.raises(ArpaFormatError, match="cannot read"):
        read_arpa(tmp_path / "latin.arpa")


def test_bad_arguments_are_clear_errors(tmp_path):
    model = _fit(KneserNey, 2)
    with pytest.raises(ValueError, match="words is required"):
        write_arpa(tmp_path / "x.arpa", model)
    with pytest.raises(ValueError, match="6 words"):
        write_arpa(tmp_path / "x.arpa", model, WORDS[:3])
    with pytest.raises(ValueError, match="must not contain"):
        write_arpa(tmp_path / "x.arpa", model, WORDS[:5] + ["</s>"])
    with pytest.raises(TypeError, match="ArpaModel or a fitted NGramModel"):
        write_arpa(tmp_path / "x.arpa", "model")
    with pytest.raises(ValueError, match="not fitted"):
        write_arpa(tmp_path / "x.arpa", KneserNey(3), WORDS)
    arpa = ArpaModel.from_ngram(model, WORDS)
    with pytest.raises(ValueError, match="never predicted"):
        arpa.log10_prob("<s>", [])
    with pytest.raises(ValueError, match="only as its first"):
        arpa.log10_prob("cat", ["the", "<s>"])
    with pytest.raises(TypeError, match="str words"):
        arpa.log10_prob(3, [])
    with pytest.raises(ValueError, match="history"):
        arpa.next_log_probs([V])
    assert not list(tmp_path.iterdir())      # nothing half-written


def test_ppl_report_follows_srilm():
    text, numbers = ppl_report("t.txt", sentences=2, words=7, oovs=1, zeroprobs=1, log10_prob=-6.0, unk_words=3)
    assert text.splitlines()[:2] == ["file t.txt: 2 sentences, 7 words, 1 OOVs",
                                     "1 zeroprobs, logprob= -6 ppl= 7.19686 ppl1= 15.8489"]
    assert "ppl counts one </s> per sentence" in text and "3 words outside the vocabulary scored as <unk>" in text
    assert numbers["ppl"] == pytest.approx(10 ** (6 / 7)) and numbers["ppl1"] == pytest.approx(10 ** 1.2)
    _, empty = ppl_report("e", sentences=1, words=0, oovs=0, zeroprobs=0, log10_prob=-1.0)
    assert empty["ppl1"] is None
    with pytest.raises(ValueError, match="no scored token"):
        ppl_report("z", sentences=0, words=1, oovs=1, zeroprobs=0, log10_prob=0.0)


def test_kneser_ney_on_a_tiny_corpus_falls_back_to_stated_discounts_with_a_warning(tmp_path):
    """KenLM raises BadDiscountException here (n2 = 0 at every order); mcsa warns, names the order and the
    discounts, and every probability stays positive and normalised, in the model and in its ARPA file."""
    tiny = [[1, 2, 3], [4, 5]]
    with pytest.warns(DiscountFallbackWarning) as caught:
        model = KneserNey(3).fit(tiny, V)
    messages = [str(w.message) for w in caught]
    assert any(re.search(r"KneserNey order 3: counts-of-counts n1..n4 = \[\d+, 0, 0, 0\].*D1=0\.5", m)
               for m in messages), messages
    assert {int(re.search(r"order (\d)", m).group(1)) for m in messages} <= {1, 2, 3}
    for d in model.discounts.values():
        assert all(0 < x <= r for x, r in zip(d, (1, 2, 3)))
    for history in itertools.product(range(V), repeat=2):
        p = np.exp(model.next_log_probs(list(history)))
        assert np.all(p > 0) and abs(p.sum() - 1) < 1e-12
    write_arpa(tmp_path / "tiny.arpa", model, WORDS)
    arpa = read_arpa(tmp_path / "tiny.arpa")
    for context in arpa.contexts():
        assert abs(sum(10 ** arpa.log10_prob(w, context) for w in WORDS + ["</s>"]) - 1) < 1e-12
    # a text-like corpus (Zipf over 500 words: rare words give counts 1, 2) estimates its discounts silently
    rng = np.random.default_rng(0)
    zipf = 1 / np.arange(1, 501)
    text = [rng.choice(500, size=rng.integers(1, 10), p=zipf / zipf.sum()) for _ in range(2000)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", DiscountFallbackWarning)
        for order in (2, 3, 5):
            KneserNey(order).fit(text, 500)


# ---------------------------------------------------------------------- the CLI
TRAIN = "\n".join(["the cat sat", "the dog sat", "a cat ran", "the cat ran home", "a dog sat down", "the end"] * 4)


def test_cli_export_and_eval_of_the_arpa_file_print_the_same_ppl_lines(tmp_path, capsys):
    train, test = tmp_path / "train.txt", tmp_path / "test.txt"
    train.write_text(TRAIN + "\n")
    test.write_text("the cat sat down\na bird sat\nthe dog ran home\n")
    npz, arpa = tmp_path / "kn.npz", tmp_path / "kn.arpa.gz"
    assert main(["ngram", "train", "--train", str(train), "--out", str(npz), "--order", "3"]) == 0
    err = capsys.readouterr().err    # 6 distinct sentences: too few n-grams seen 1-4 times at order 3
    assert "mcsa ngram train: warning: KneserNey order 3: counts-of-counts n1..n4 = [0, 0, 0, 17]" in err
    assert "Traceback" not in err and "model.fit" not in err
    assert main(["ngram", "export", "--model", str(npz), "--arpa", str(arpa)]) == 0
    assert f"-> {arpa} (ARPA" in capsys.readouterr().out
    printed = {}
    for name, path in (("npz", npz), ("arpa", arpa)):
        assert main(["ngram", "eval", "--model", str(path), "--test", str(test), "--json",
                     str(tmp_path / f"{name}.json")]) == 0
        printed[name] = capsys.readouterr().out
    assert printed["npz"] == printed["arpa"]
    lines = printed["arpa"].splitlines()
    assert lines[0] == f"file {test}: 3 sentences, 11 words, 0 OOVs"
    assert re.fullmatch(r"0 zeroprobs, logprob= -[\d.]+ ppl= [\d.]+ ppl1= [\d.]+", lines[1])
    assert "1 words outside the vocabulary scored as <unk>" in lines[2]
    # the printed logprob is the independent scorer's sum
    score = _minimal_scorer(_read_text(arpa))
    total = sum(score(s.split()) for s in test.read_text().splitlines())
    assert float(lines[1].split("logprob= ")[1].split()[0]) == pytest.approx(total, abs=1e-4)
    ppl = float(lines[1].split("ppl= ")[1].split()[0])
    assert ppl == pytest.approx(10 ** (-total / (11 + 3)), rel=1e-5)
    # export of an ARPA file is an ARPA round trip
    assert main(["ngram", "export", "--model", str(arpa), "--arpa", str(tmp_path / "again.arpa")]) == 0
    assert read_arpa(tmp_path / "again.arpa").tables()[2][1].tolist() == read_arpa(arpa).tables()[2][1].tolist()


def test_cli_errors_name_the_file_line_and_flag(tmp_path, capsys):
    bad = _write(tmp_path, SRILM_STYLE.replace("-0.4\ta b", "0.4\ta b"))
    test = tmp_path / "test.txt"
    test.write_text("a b\n")
    assert main(["ngram", "eval", "--model", str(bad), "--test", str(test)]) == 2
    err = capsys.readouterr().err
    assert f"mcsa: error: --model: {bad}: line 18: positive log10 probability" in err and "Traceback" not in err
    assert main(["ngram", "export", "--model", str(bad), "--arpa", str(tmp_path)]) == 2
    assert "--arpa" in capsys.readouterr().err


def test_vocabulary_of_an_arpa_model_encodes_text(tmp_path):
    arpa = read_arpa(_write(tmp_path, SRILM_STYLE))
    assert isinstance(arpa.vocab, Vocabulary) and arpa.vocab.encode(["a", "zebra", "c"]).tolist() == [1, 0, 3]
