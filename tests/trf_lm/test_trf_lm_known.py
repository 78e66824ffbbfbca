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


def test_distinct_sentences_count_each_sentence_once_across_corpora_and_floor_each_length(setup):
    """DistinctSentences keeps each sentence of a wanted length once over several corpora, in the order of first
    occurrence; its floor at each wanted length is the log-sum-exp of their scores (brute force), at most the exact
    log Z_j, with the heaviest one's index, and -inf / -1 / 0 at a wanted length no sentence has."""
    from trf.lm.known import DistinctSentences

    sentences, corpus, feats, lam, log_z = setup
    extra = EncodedCorpus.from_sentences([[2, 2], sentences[0], [1, 1, 1, 1, 1]])
    distinct = DistinctSentences([corpus, extra], [2, 3, 5, 6])
    order = list(dict.fromkeys(tuple(int(t) for t in s) for s in [*sentences, [2, 2], [1, 1, 1, 1, 1]]
                               if len(s) in (2, 3, 5, 6)))
    assert [tuple(r[:j]) for r, j in zip(distinct.tokens, distinct.lengths)] == order
    floor = distinct.floor(feats, lam)
    for k, j in enumerate([2, 3]):
        scores = {s: feats.feature_vector(list(s)) @ lam for s in order if len(s) == j}
        assert floor.log_z[k] == pytest.approx(logsumexp(list(scores.values())))
        assert floor.log_z[k] <= log_z[j - 1] + 1e-12 and floor.sentences[k] == len(scores)
        assert order[floor.heaviest[k]] == max(scores, key=scores.get)
    assert floor.sentences[2] == 1 and floor.heaviest[2] == order.index((1, 1, 1, 1, 1))
    assert floor.log_z[3] == -np.inf and floor.heaviest[3] == -1 and floor.sentences[3] == 0
    assert distinct.text(int(floor.heaviest[2]), ["a", "b", "c"]) == "b b b b b"


def test_remembered_sentences_join_the_set_when_drawn_heavy_and_leave_when_light(setup):
    """``remember=True``: a drawn sentence outside the training text holding at least ``threshold`` of the draw's
    Z-hat_j joins the known set at once (each once; with its exact score next draw), a light one or a training
    sentence does not; at the next re-choice a found sentence whose share fell below the threshold is forgotten;
    the state round-trips; without ``remember`` nothing is found."""
    sentences, corpus, feats, lam, log_z = setup
    training = {tuple(s) for s in sentences}
    outside = sorted(({s for j in (2, 3) for s in itertools.product(range(V), repeat=j)} - training),
                     key=lambda s: -(feats.feature_vector(list(s)) @ lam))
    assert len(outside) >= 2
    heavy, light = outside[0], outside[-1]
    score = {s: feats.feature_vector(list(s)) @ lam for s in (heavy, light)}
    # log Z-hat_j planted so that `heavy` holds 1/2 of its length's and `light` far less than 1e-3 of its
    planted = log_z.copy()
    planted[len(heavy) - 1] = score[heavy] + np.log(2.0)
    assert score[light] - planted[len(light) - 1] < np.log(1e-3)
    train_sentence = next(s for s in sentences if len(s) == 2)
    tokens = np.zeros((4, M), dtype=np.int64)
    for r, s in enumerate([heavy, light, heavy, tuple(train_sentence)]):
        tokens[r, :len(s)] = s
    draws = (tokens, np.array([len(heavy), len(light), len(heavy), len(train_sentence)]))

    plain = KnownSentences(corpus, feats, M, threshold=1e-3, refresh=2)
    plain.after_draw(planted, lam, draws)
    assert plain.found_lengths.size == 0

    known = KnownSentences(corpus, feats, M, threshold=1e-3, refresh=2, remember=True)
    known.after_draw(planted, lam, draws)
    assert [tuple(r[:j]) for r, j in zip(known.found_tokens, known.found_lengths)] == [heavy]
    got_tokens, got_lengths, got_scores = known.before_draw(lam)  # draw 1: the re-choice, the found one kept
    got = [tuple(r[:j]) for r, j in zip(got_tokens, got_lengths)]
    assert heavy in got and light not in got and len(set(got)) == len(got)
    assert got_scores[got.index(heavy)] == pytest.approx(score[heavy])
    state = known.get_state()
    again = KnownSentences(corpus, feats, M, threshold=1e-3, refresh=2, remember=True)
    again.set_state(state)
    np.testing.assert_array_equal(again.before_draw(lam)[0], known.before_draw(lam)[0])
    known.after_draw(planted + 20.0)  # every share now far below the threshold: forgotten at the re-choice (draw 3)
    again.after_draw(planted + 20.0)
    assert known.before_draw(lam) is None and known.found_lengths.size == 0
    with pytest.raises(ValueError, match="known_found_tokens"):
        again.set_state({**state, "known_found_lengths": np.zeros(3, dtype=np.int64)})


def test_class_neighbours_replace_one_word_within_its_class_and_join_the_floor_of_the_heavy_ones(setup):
    """class_neighbours gives, for each sentence and position, the sentence with that word replaced by each word of
    its class (brute force); with_neighbours adds the neighbours of exactly the sentences holding at least `share`
    of their length's floor, so its floor is the brute-force log-sum-exp over that union, at least the plain floor
    and at most the exact log Z_j."""
    from trf.lm.known import DistinctSentences, class_neighbours

    sentences, corpus, feats, lam, log_z = setup
    cls = feats.word_class
    tokens = np.array([[0, 2, 0], [1, 0, 0]])
    got = class_neighbours(tokens, np.array([3, 1]), feats)
    rows = [tuple(r[:j]) for r, j in zip(*got)]
    expected = []
    for s in ([0, 2, 0], [1]):
        for p in range(len(s)):
            expected += [tuple(s[:p] + [w] + s[p + 1:]) for w in range(V) if cls[w] == cls[s[p]]]
    assert sorted(rows) == sorted(expected) and got[0].shape[1] == 3
    few = EncodedCorpus.from_sentences([[0, 1], [2, 2, 1], [1, 1, 1], [2]])
    plain = DistinctSentences([few], np.arange(1, M + 1))
    three = np.array([feats.feature_vector(s) @ lam for s in ([2, 2, 1], [1, 1, 1])])
    shares = np.exp(three - logsumexp(three))
    low, between = shares.min() / 2, float(np.sqrt(shares.min() * shares.max()))  # both pass; only one passes
    for share in (low, between):
        wider = plain.with_neighbours(feats, lam, share)
        floor, base = wider.floor(feats, lam), plain.floor(feats, lam)
        score = {tuple(r[:j]): feats.feature_vector(list(r[:j])) @ lam for r, j in zip(plain.tokens, plain.lengths)}
        union = set(score)
        for s, v in score.items():
            if v - base.log_z[len(s) - 1] >= np.log(share):
                union |= {tuple(s[:p]) + (w,) + tuple(s[p + 1:]) for p in range(len(s)) for w in range(V)
                          if cls[w] == cls[s[p]]}
        for j in range(1, M + 1):
            mine = [feats.feature_vector(list(s)) @ lam for s in union if len(s) == j]
            assert floor.log_z[j - 1] == pytest.approx(logsumexp(mine)) and floor.sentences[j - 1] == len(mine)
        assert np.all(floor.log_z >= base.log_z - 1e-12) and np.all(floor.log_z <= log_z + 1e-12)
        assert len(wider) == len(union)
    # between their shares, one of the two 3-word sentences is left out, and its neighbours with it
    assert len(plain.with_neighbours(feats, lam, between)) < len(plain.with_neighbours(feats, lam, low))


def test_with_neighbours_takes_the_heaviest_sentences_first_within_the_row_limit(setup):
    """Under a row limit, with_neighbours adds the neighbours of the heaviest heavy sentences (by share of their
    length's floor) while their rows, counted by brute force (one per position and word of its class), fit: a limit
    of exactly the k heaviest's rows takes k, one row less takes k - 1; the floor never falls below the plain one nor
    rises above the unlimited one, and `neighbours` says how many were taken of how many."""
    from trf.lm.known import DistinctSentences

    sentences, corpus, feats, lam, log_z = setup
    cls = feats.word_class
    few = EncodedCorpus.from_sentences([[0, 1], [2, 2, 1], [1, 1, 1], [2], [0, 2, 2]])
    plain = DistinctSentences([few], np.arange(1, M + 1))
    base = plain.floor(feats, lam)
    score = [feats.feature_vector(list(r[:j])) @ lam for r, j in zip(plain.tokens, plain.lengths)]
    order = np.argsort([-(s - base.log_z[j - 1]) for s, j in zip(score, plain.lengths)], kind="stable")
    rows = [sum(int((cls == cls[w]).sum()) for w in plain.tokens[i, :plain.lengths[i]]) for i in order]
    full = plain.with_neighbours(feats, lam, 1e-12)
    assert full.neighbours == (5, 5, sum(rows), 500_000) and not full.neighbours.cut
    top = full.floor(feats, lam)
    for k in range(1, 6):
        limit = int(np.sum(rows[:k]))
        for got, taken in ((plain.with_neighbours(feats, lam, 1e-12, limit), k),
                           (plain.with_neighbours(feats, lam, 1e-12, limit - 1), k - 1)):
            assert got.neighbours.taken == taken and got.neighbours.cut == (taken < 5)
            union = {tuple(r[:j]) for r, j in zip(plain.tokens, plain.lengths)}
            for i in order[:taken]:
                s = tuple(plain.tokens[i, :plain.lengths[i]])
                union |= {s[:p] + (w,) + s[p + 1:] for p in range(len(s)) for w in range(V) if cls[w] == cls[s[p]]}
            assert {tuple(r[:j]) for r, j in zip(got.tokens, got.lengths)} == union
            floor = got.floor(feats, lam)
            assert np.all(floor.log_z >= base.log_z - 1e-12) and np.all(floor.log_z <= top.log_z + 1e-12)
    assert plain.with_neighbours(feats, lam, 1e-12, 0).neighbours.taken == 0
    with pytest.raises(ValueError, match="limit"):
        plain.with_neighbours(feats, lam, 1e-12, -1)
