"""Word cycles of a text and their loops (trf.lm.cycles): found by brute force, known to the sampler and the floor."""

from __future__ import annotations

import numpy as np
import pytest

from trf.lm.corpus import EncodedCorpus
from trf.lm.cycles import cycle_loops, loops_of, text_cycles
from trf.lm.features import SentenceFeatures
from trf.lm.known import DistinctSentences, KnownSentences


def brute_cycles(sentences, max_period, min_repeat):
    """Every x[i:i+p] with x[t] = x[t+p] for t = i..i+min_repeat-1, no <unk>, in its shortest period, by rotation."""
    found = set()
    for x in sentences:
        for p in range(1, max_period + 1):
            for i in range(len(x) - p - min_repeat + 1):
                if all(x[t] == x[t + p] for t in range(i, i + min_repeat)) and 0 not in x[i:i + p]:
                    c = tuple(x[i:i + p])
                    if not any(p % q == 0 and c == c[q:] + c[:q] for q in range(1, p)):
                        found.add(min(c[k:] + c[:k] for k in range(p)))
    return found


def test_text_cycles_are_the_repeating_stretches_once_up_to_rotation():
    """Against brute force on random texts over 3 words (many repeats); each cycle once, as its least rotation;
    a stretch repeating fewer than min_repeat words, a cycle through <unk>, and one across two sentences are not
    cycles."""
    rng = np.random.default_rng(0)
    sentences = [list(rng.integers(0, 4, size=rng.integers(1, 12))) for _ in range(40)]
    corpus = EncodedCorpus.from_sentences(sentences)
    for max_period, min_repeat in ((1, 1), (3, 2), (5, 3), (8, 1)):
        got = text_cycles([corpus], max_period, min_repeat)
        keys = [tuple(int(t) for t in c) for c in got]
        assert len(keys) == len(set(keys))
        assert set(keys) == brute_cycles(sentences, max_period, min_repeat)
        assert all(k == min(k[i:] + k[:i] for i in range(len(k))) for k in keys)
    small = EncodedCorpus.from_sentences([[5, 6, 5], [6, 5, 7], [1, 0, 1, 0, 1], [2, 3, 2, 3, 2]])
    assert [c.tolist() for c in text_cycles([small], 8, 2)] == [[2, 3]]
    assert [c.tolist() for c in text_cycles([small], 8, 1)] == [[5, 6], [2, 3]]
    assert text_cycles([small], 0) == []
    with pytest.raises(ValueError, match="min_repeat"):
        text_cycles([small], 8, 0)


def test_loops_repeat_the_cycle_to_each_length_of_at_least_its_period():
    loops = cycle_loops([np.array([1, 2, 3], dtype=np.int32), np.array([4], dtype=np.int32)], [1, 2, 3, 7])
    assert [list(s) for s in loops] == [[1, 2, 3], [1, 2, 3, 1, 2, 3, 1], [4], [4, 4], [4, 4, 4], [4] * 7]
    corpus = EncodedCorpus.from_sentences([[9, 8, 9, 8, 9, 1]])
    assert [list(s) for s in loops_of([corpus], 4)] == [[8, 9], [8, 9, 8], [8, 9, 8, 9]]


def test_the_known_sentences_and_the_floor_hold_the_loops_of_the_training_cycles():
    """KnownSentences(cycles=P) adds the loops of the training text's cycles of at most P words at every length up
    to m as candidates (cycles=0: the training sentences only); a checkpoint made with one setting refuses the
    other, and one from before the setting resumes as cycles=0; the loops' exact weight lifts the floor."""
    corpus = EncodedCorpus.from_sentences([[1, 2, 1, 2, 1], [3, 3, 3], [1, 3]])
    feats = SentenceFeatures.build(corpus, 4, "w+c", word_class=np.array([0, 0, 1, 1]))
    plain = KnownSentences(corpus, feats, 6, threshold=0.01)
    looped = KnownSentences(corpus, feats, 6, threshold=0.01, cycles=8)
    rows = {tuple(r[:j]) for r, j in zip(looped.tokens, looped.lengths)}
    expected = {(1, 2, 1, 2, 1), (3, 3, 3), (1, 3)} | {(3,) * j for j in range(1, 7)} | {
        tuple(np.resize([1, 2], j)) for j in range(2, 7)}
    assert rows == expected and len(looped) == len(expected) and len(plain) == 3
    with pytest.raises(ValueError, match="--smc-cycles 0"):
        looped.set_state(plain.get_state())
    old = {k: v for k, v in plain.get_state().items() if k != "known_cycles"}
    with pytest.raises(ValueError, match="--smc-cycles 0"):
        looped.set_state(old)
    plain.set_state(old)
    lam = np.zeros(feats.n_features)
    lam[feats.feature_vector([3, 3]) > 0] = 2.0  # every 3 3 bigram (and unigram 3) weighs: 3 3 3 3 3 3 heaviest
    floors = [DistinctSentences(texts, np.arange(1, 7)).floor(feats, lam).log_z
              for texts in ([corpus], [corpus, loops_of([corpus], 6)])]
    assert np.isneginf(floors[0][5]) and floors[1][5] == pytest.approx(feats.feature_vector([3] * 6) @ lam)
    assert np.all(floors[1] >= floors[0])


def test_a_check_bounds_log_z_by_the_loops_of_its_texts_cycles():
    """checked_perplexity's exact lower bound holds the loops of the test and known texts' cycles: on a model that
    gives the bigram "w4 w4" 6 nats, the loop "w4 w4 w4 w4" -- in neither text, whose "w4 w4 w4" is a cycle -- is
    in the floor at length 4 (the texts' own sentences alone give less), and the bound is below the exact log Z_4."""
    from trf.lm.check import checked_perplexity
    from trf.lm.check.estimates import exact_log_z, known_floor
    from trf.lm.corpus import Vocabulary
    from trf.lm.model import SentenceTRF, smoothed_length_law

    V, M = 12, 4
    rng = np.random.default_rng(3)
    text = [rng.integers(1, V, size=rng.integers(1, M + 1)) for _ in range(60)]
    text = [s for s in text if not (len(s) > 1 and np.all(s == 4))] + [np.array([4, 4, 4])]
    corpus = EncodedCorpus.from_sentences(text)
    feats = SentenceFeatures.build(corpus, V, "w+c", word_class=np.arange(V) % 3)
    lam = rng.normal(scale=0.3, size=feats.n_features)
    lam[(feats.feature_vector([4, 4]) > 0) & (feats.feature_vector([4]) == 0)] += 6.0
    vocab = Vocabulary(["<unk>"] + [f"w{i}" for i in range(1, V)])
    trf = SentenceTRF(vocab, feats, smoothed_length_law(corpus.lengths, M), lam, np.zeros(M))
    log_z = np.array([exact_log_z(trf, j) for j in range(1, M + 1)])
    trf.zeta = log_z - log_z[0]
    test = EncodedCorpus.from_sentences([s for s in text[:20] if len(s) == M] + [np.array([1, 2, 3, 5])])
    loop = feats.scores(EncodedCorpus.from_sentences([[4, 4, 4, 4]]), lam)[0]
    plain = known_floor(trf, [test, corpus], np.arange(1, M + 1)).log_z[M - 1]
    result = checked_perplexity(trf, test, known=[corpus], n_temperatures=20, n_chains=4, seed=0, exact_limit=0,
                                parallel=False, smc_particles=0)
    bound = result.check.floor.log_z[result.check.lengths == M][0]  # the check bounds the test lengths only
    assert plain < loop <= bound <= log_z[M - 1] + 1e-9
