"""n-gram baselines: exact normalisation, agreement with a dictionary-based reference, persistence."""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict

import numpy as np
import pytest

from trf.ngram import DiscountFallbackWarning, KneserNey, NGramModel, WittenBell, perplexity

V = 6
# With V = 6 every word follows five or more distinct words in these corpora, so KN's order-1 continuation
# counts-of-counts n1..n4 are (nearly) empty and order 1 always takes the stated fallback discounts.
SMALL_VOCABULARY = "ignore:KneserNey order:trf.ngram.DiscountFallbackWarning"


def _corpus(seed: int, n: int = 60):
    rng = np.random.default_rng(seed)
    # a skewed unigram law so counts-of-counts 1..4 are all populated
    probs = np.array([0.4, 0.25, 0.15, 0.1, 0.06, 0.04])
    return [rng.choice(V, size=rng.integers(0, 7), p=probs) for _ in range(n)]


def _reference(sentences, vocab_size, order, kind):
    """Textbook interpolated modified KN / WB over tuples (Chen & Goodman 1999), no arrays."""
    eos, bos = vocab_size, vocab_size + 1
    raw = [Counter() for _ in range(order + 1)]
    for s in sentences:
        seq = [bos, *map(int, s), eos]
        for i in range(1, len(seq)):
            for k in range(1, order + 1):
                if i - k + 1 >= 0:
                    raw[k][tuple(seq[i - k + 1:i + 1])] += 1
    weight = [None] + [Counter(raw[k]) for k in range(1, order + 1)]
    if kind == "kn":
        for k in range(1, order):
            left = Counter(g[1:] for g in raw[k + 1])
            weight[k] = Counter({g: (c if g[0] == bos else left[g]) for g, c in raw[k].items()})
    discounts = {}
    for k in range(1, order + 1):
        n = Counter(min(c, 5) for g, c in weight[k].items() if g != (bos,))
        discounts[k] = [0.5, 1.0, 1.5]  # the documented fallback for degenerate counts-of-counts
        if n[1] and n[2]:
            y = n[1] / (n[1] + 2 * n[2])
            est = [r - (r + 1) * y * n[r + 1] / n[r] if n[r] else 0.5 * r for r in (1, 2, 3)]
            # an estimate outside (0, r] falls back to r / 2 (no context may lose all back-off mass)
            discounts[k] = [d if 0 < d <= r else 0.5 * r for d, r in zip(est, (1, 2, 3))]
    by_ctx = [defaultdict(dict) for _ in range(order + 1)]
    for k in range(1, order + 1):
        for g, c in weight[k].items():
            by_ctx[k][g[:-1]][g[-1]] = c

    def prob(history, w):
        p = 1.0 / (vocab_size + 1)
        hist = [bos, *history][-(order - 1):]
        for k in range(1, order + 1):
            if k - 1 > len(hist):
                break
            ctx = tuple(hist[len(hist) - (k - 1):]) if k > 1 else ()
            succ = by_ctx[k].get(ctx)
            if not succ:
                continue
            total = sum(succ.values())
            c = succ.get(w, 0)
            if kind == "kn":
                d = discounts[k]
                disc = lambda x, d=d: d[min(x, 3) - 1]
                gamma = sum(disc(x) for x in succ.values())
                p = (max(c - disc(c), 0) if c else 0) / total + gamma / total * p
            else:
                t = len(succ)
                p = (c + t * p) / (total + t)
        return p

    return prob


@pytest.mark.filterwarnings(SMALL_VOCABULARY)  # normalisation must hold with estimated and fallback discounts alike
@pytest.mark.parametrize("cls", [KneserNey, WittenBell])
@pytest.mark.parametrize("order", [2, 3, 4, 5])
def test_ngram_sums_to_one_over_vocabulary_plus_eos(cls, order, rng):
    model = cls(order).fit(_corpus(1), V)
    for _ in range(25):  # random histories, seen and unseen, short and long
        history = rng.integers(0, V, size=rng.integers(0, 8))
        total = np.exp(model.next_log_probs(history)).sum()
        assert abs(total - 1.0) < 1e-12, (history, total)


@pytest.mark.parametrize("cls,kind", [(KneserNey, "kn"), (WittenBell, "wb")])
@pytest.mark.parametrize("order", [2, 3, 5])
def test_ngram_matches_dictionary_reference(cls, kind, order):
    """Token by token against the textbook reference, fallback discounts included: KN's order 1 takes the stated
    fallback here (V = 6), and the reference implements that fallback independently."""
    train, test = _corpus(2), _corpus(3, n=15)
    if cls is KneserNey:
        with pytest.warns(DiscountFallbackWarning, match=r"KneserNey order \d: .* using the stated fallback") as caught:
            model = cls(order).fit(train, V)
        assert any(str(w.message).startswith("KneserNey order 1: ") for w in caught)
    else:
        model = cls(order).fit(train, V)
    ref = _reference(train, V, order, kind)
    token_lp, _ = model.token_log_probs(test)
    expected = [np.log(ref(list(s[:i]), int(t))) for s in test for i, t in enumerate([*s, V])]
    np.testing.assert_allclose(token_lp, expected, rtol=0, atol=1e-12)


@pytest.mark.filterwarnings(SMALL_VOCABULARY)  # the negative control fits the same small-vocabulary corpus
def test_kneser_ney_without_continuation_counts_is_detected():
    """Negative control: KN with raw lower-order counts differs from the reference."""

    class RawCountKN(KneserNey):
        def _level_weights(self, k, raw, continuation, starts_bos):
            return raw

    train, test = _corpus(2), _corpus(3, n=15)
    ref = _reference(train, V, 3, "kn")
    expected = [np.log(ref(list(s[:i]), int(t))) for s in test for i, t in enumerate([*s, V])]
    token_lp, _ = RawCountKN(3).fit(train, V).token_log_probs(test)
    assert np.max(np.abs(token_lp - expected)) > 1e-3


@pytest.mark.filterwarnings(SMALL_VOCABULARY)  # three sentences over two words: no discount can be estimated
def test_sentence_probabilities_and_tail_mass_sum_to_one_and_perplexity_convention():
    """sum_{L<=8} P(s) + P(length > 8) = 1 exactly, P(length > 8) from the length-9 prefixes."""
    model = KneserNey(3).fit([[0, 1], [1, 0, 1], [0]], 2)
    short = [list(s) for L in range(9) for s in itertools.product((0, 1), repeat=L)]
    prefixes = [list(s) for s in itertools.product((0, 1), repeat=9)]
    token_lp, index = model.token_log_probs(prefixes)
    not_eos = np.ones(token_lp.size, dtype=bool)
    not_eos[np.cumsum(np.bincount(index)) - 1] = False
    tail = np.exp(np.bincount(index[not_eos], weights=token_lp[not_eos])).sum()
    total = np.exp(model.log_prob(short)).sum() + tail
    assert abs(total - 1.0) < 1e-12
    lp = model.log_prob([[0, 1], [1]])
    assert perplexity(lp, n_tokens=2 + 1 + 2) == pytest.approx(np.exp(-lp.sum() / 5))


@pytest.mark.filterwarnings(SMALL_VOCABULARY)  # a deterministic pattern has no n-gram seen 1-4 times
def test_more_context_helps_on_a_deterministic_pattern():
    train = [[0, 1, 2, 3, 4, 5] * 3 for _ in range(20)]
    ppl = {}
    for order in (2, 5):
        model = KneserNey(order).fit(train, V)
        lp = model.log_prob(train[:3])
        ppl[order] = perplexity(lp, 3 * 19)
    assert ppl[5] <= ppl[2] < 1.5


@pytest.mark.filterwarnings(SMALL_VOCABULARY)  # the round trip keeps whichever discounts were used
def test_ngram_save_load_roundtrip_and_bad_files(tmp_path):
    train = _corpus(4)
    for cls in (KneserNey, WittenBell):
        model = cls(4).fit(train, V)
        path = tmp_path / f"{cls.__name__}.npz"
        model.save(path)
        again = NGramModel.load(path)
        assert type(again) is cls
        np.testing.assert_array_equal(again.log_prob(train[:10]), model.log_prob(train[:10]))
    data = path.read_bytes()
    (tmp_path / "cut.npz").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="truncated"):
        NGramModel.load(tmp_path / "cut.npz")
    np.savez(tmp_path / "foreign.npz", x=np.zeros(3))
    with pytest.raises(ValueError, match="not an mcsa model"):
        NGramModel.load(tmp_path / "foreign.npz")
    with pytest.raises(FileNotFoundError):
        NGramModel.load(tmp_path / "missing.npz")


def test_ngram_bad_input():
    with pytest.raises(ValueError, match="order"):
        KneserNey(6)
    with pytest.raises(ValueError, match="order"):
        WittenBell(1)
    with pytest.raises(ValueError, match="empty corpus"):
        KneserNey(3).fit([], V)
    with pytest.raises(ValueError, match=r"sentences\[1\]"):
        KneserNey(3).fit([[0, 1], [0, V]], V)
    with pytest.raises(ValueError, match="not fitted"):
        KneserNey(3).log_prob([[0]])
    model = WittenBell(3).fit([[0, 1]], 2)
    with pytest.raises(ValueError, match="history"):
        model.next_log_probs([5])


def test_kn_gives_every_word_positive_probability_on_a_tiny_corpus():
    """Regression: on a tiny corpus modified-KN discount estimates can fall to <= 0; clipped to 0 they left
    contexts no back-off mass and unseen words probability 0 (an infinite perplexity; with the old clip this
    corpus gave 105 zero probabilities over the histories below)."""
    rng = np.random.default_rng(0)
    words = []
    for _ in range(300):                       # a first-order chain over 10 ids; ids >= 7 merged into id 7
        w = [int(rng.integers(0, 2))]
        for _ in range(int(rng.integers(1, 6))):
            w.append((w[-1] + int(rng.choice([1, 2, 3], p=[0.6, 0.3, 0.1]))) % 10)
        words.append([min(x, 7) for x in w])
    for order in (3, 4, 5):
        # the degenerate estimates are what this test is about: each falls back to r / 2, said by a warning
        with pytest.warns(DiscountFallbackWarning, match=r"give no valid discount estimate") as caught:
            lm = KneserNey(order).fit(words, vocab_size=8)
        assert caught and all("using the stated fallback" in str(w.message) for w in caught)
        assert all(0 < d <= r for disc in lm.discounts.values() for d, r in zip(disc, (1, 2, 3)))
        for a, b in itertools.product(range(8), range(8)):
            p = np.exp(lm.next_log_probs([a, b]))
            assert np.all(p > 0) and abs(p.sum() - 1) < 1e-9
