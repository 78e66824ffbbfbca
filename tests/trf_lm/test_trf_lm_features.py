"""Sentence feature templates (Table 2) against a plain-Python oracle; hash table; bad input."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from trf.lm import _feature_kernels as fk
from trf.lm import features as features_module
from trf.lm.corpus import EncodedCorpus
from trf.lm.features import FEATURE_TYPES, SentenceFeatures, parse_feature_spec

V = 6
WORD_CLASS = np.array([0, 0, 1, 1, 2, 2])
ALL = "w+c+ws+cs+wsh+csh+cpw+tied"


def _oracle(sentence, types, n_words=V, word_class=WORD_CLASS):
    """Multiset of (group, symbols) firing in one sentence, straight from FEATURE_TYPES."""
    n_classes = int(word_class.max()) + 1
    w = [n_words + 1, *sentence, n_words]
    c = [n_classes + 1, *(int(word_class[t]) for t in sentence), n_classes]
    j = len(sentence)
    out = Counter()
    group = 0
    for t in types:
        for rows in FEATURE_TYPES[t]:
            for row in rows:
                for p in range(1, j + 2):
                    if p + row[0][0] < 0 or (len(row) == 1 and p == j + 1):
                        continue
                    out[(group, tuple(w[p + o] if k == 0 else c[p + o] for o, k in row))] += 1
            group += 1
    return out


def _decode(features):
    hi, lo = features.key_hi, features.key_lo
    symbols = np.stack([(hi >> 24) & fk.EMPTY, hi & fk.EMPTY, lo >> 24, lo & fk.EMPTY], axis=1)
    return [(int(g), tuple(int(s) for s in row if s != fk.EMPTY)) for g, row in zip(hi >> 48, symbols)]


@pytest.fixture(scope="module")
def corpus():
    rng = np.random.default_rng(5)
    return EncodedCorpus.from_sentences([rng.integers(0, V, size=rng.integers(1, 13)) for _ in range(40)])


@pytest.mark.parametrize("spec", [ALL, "w", "c+tied", "cpw+wsh"])
def test_features_match_python_oracle(corpus, spec):
    types = parse_feature_spec(spec)
    feats = SentenceFeatures.build(corpus, V, spec, word_class=WORD_CLASS)
    keys = _decode(feats)
    total = Counter()
    for s in corpus:
        total.update(_oracle(s.tolist(), types))
    assert dict(zip(keys, feats.counts)) == dict(total)
    index = {k: i for i, k in enumerate(keys)}
    unseen = [0, 5, 5, 5, 4, 3, 1, 1, 2, 0, 5]
    dense = feats.feature_vector(unseen)
    expected = np.zeros(feats.n_features)
    for key, n in _oracle(unseen, types).items():
        if key in index:  # only observed n-grams are features
            expected[index[key]] += n
    np.testing.assert_array_equal(dense, expected)
    lam = np.random.default_rng(0).normal(size=feats.n_features)
    vectors = np.stack([feats.feature_vector(s) for s in corpus])
    np.testing.assert_allclose(feats.scores(corpus, lam), vectors @ lam, atol=1e-12)


def test_tied_features_share_one_weight_across_distances():
    sentence = [0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 0]  # word 0 at positions 1, 7, 11: distances 6 and 10
    feats = SentenceFeatures.build(EncodedCorpus.from_sentences([sentence]), V, "tied", word_class=WORD_CLASS)
    assert set(feats.describe()) == {0, 1}  # two weights: class pairs and word pairs
    keys = _decode(feats)
    vec = feats.feature_vector(sentence)
    assert vec[keys.index((1, (0, 0)))] == 1  # distance 6 counts, distance 10 does not
    assert vec[keys.index((1, (1, 1)))] == 1  # word 1 at positions 2 and 8
    # class 0 = words {0, 1}: pairs at distance 6..9 among positions {1, 2, 7, 8, 11}
    assert vec[keys.index((0, (0, 0)))] == 4  # pairs (1,7) (2,8) (1,8) (2,11): d = 6, 6, 7, 9


def test_feature_table_roundtrip_memory_and_bad_input(corpus):
    feats = SentenceFeatures.build(corpus, V, ALL, word_class=WORD_CLASS)
    arrays, meta = feats.to_arrays()
    again = SentenceFeatures.from_arrays(arrays, meta)
    np.testing.assert_array_equal(again.feature_vector([1, 2, 3]), feats.feature_vector([1, 2, 3]))
    assert 24e6 <= feats.bytes_per_million() <= 64e6
    plan = feats.score_plan()  # the scorer's own tables are counted apart
    assert feats.scoring_nbytes() == sum(a.nbytes for a in plan if isinstance(a, np.ndarray)) > plan.bits.nbytes
    assert feats.max_context == 9
    with pytest.raises(ValueError, match="unknown template"):
        parse_feature_spec("w+trigger")
    with pytest.raises(ValueError, match="twice"):
        parse_feature_spec("w+w")
    with pytest.raises(ValueError, match="word_class"):
        SentenceFeatures.build(corpus, V, "c", word_class=[0, 1])
    with pytest.raises(ValueError, match="lam"):
        feats.scores(corpus, np.zeros(3))
    lam = np.zeros(feats.n_features)  # a non-finite weight that a sentence reads, or weights whose sum overflows
    lam[7] = np.nan
    with pytest.raises(ValueError, match="lam must be finite; found non-finite value at index 7"):
        feats.scores(corpus, lam)
    with pytest.raises(ValueError, match="overflow"):
        feats.scores(corpus, np.full(feats.n_features, 1e308))


@pytest.mark.parametrize("spec", [ALL, "w+c+ws+cs+cpw", "w+c"])
def test_pruned_scoring_equals_the_full_look_up(corpus, spec):
    """Scoring skips rows whose parent n-gram is unseen (issue 17, faster scoring) and reads the small rows from
    dense tables: on sentences full of
    unseen n-grams the scores equal f(x) . lambda from the oracle-checked feature vectors and the
    unpruned kernel; negative control: a plan whose parents are not sub-patterns gives different scores."""
    feats = SentenceFeatures.build(corpus, V, spec, word_class=WORD_CLASS)
    rng = np.random.default_rng(11)
    fresh = EncodedCorpus.from_sentences([rng.integers(0, V, size=rng.integers(1, 16)) for _ in range(60)])
    lam = rng.normal(size=feats.n_features)
    pruned = feats.scores(fresh, lam)
    full = np.empty(len(fresh))
    flat = fk.FlatCorpus(fresh.tokens, fresh.offsets)
    fk.corpus_scores(flat, feats.symbols(), lam, feats.hashed(), full)
    np.testing.assert_allclose(pruned, full, atol=1e-12)
    np.testing.assert_allclose(pruned, np.stack([feats.feature_vector(s) for s in fresh]) @ lam, atol=1e-12)
    plan = feats.score_plan()
    order, visit, parents = plan.order, plan.visit, plan.parents
    assert sorted(order.tolist()) == sorted(visit.tolist()) == list(range(order.size))
    position = {int(r): k for k, r in enumerate(visit)}
    assert all(position[int(q)] < position[r] for r in range(parents.shape[0]) for q in parents[r] if q >= 0)
    # the word and class unigrams and the class (skip-)bigrams read dense tables, the class (skip-)trigrams rank
    # bitmaps (issue 27: faster scoring)
    assert int((plan.dense_base >= 0).sum()) == {ALL: 11, "w+c+ws+cs+cpw": 5, "w+c": 3}[spec]
    assert int((plan.bit_base >= 0).sum()) == {ALL: 12, "w+c+ws+cs+cpw": 6, "w+c": 2}[spec]
    if spec == ALL:
        hashed, symbols = feats.hashed(), feats.symbols()
        out = np.empty(len(fresh))  # parents shifted by one row: no longer sub-patterns
        fk.corpus_scores_pruned(flat, symbols, lam, hashed, plan._replace(parents=np.roll(parents, 1, axis=0)), out)
        assert not np.allclose(out, full)
        out = np.empty(len(fresh))  # dense tables shifted by one entry: other features
        fk.corpus_scores_pruned(flat, symbols, lam, hashed, plan._replace(dense=np.roll(plan.dense, 1)), out)
        assert not np.allclose(out, full)
        out = np.empty(len(fresh))  # the bitmaps' features shifted by one: other features
        shifted = np.append(np.roll(plan.bit_feature[:-1], 1), -1)
        fk.corpus_scores_pruned(flat, symbols, lam, hashed, plan._replace(bit_feature=shifted), out)
        assert not np.allclose(out, full)


@pytest.mark.parametrize("spec", [ALL, "w+c"])
def test_feature_hits_by_the_scorers_look_ups_are_the_plain_ones(corpus, spec):
    """Session 54: ``feature_hits`` finds a corpus's firings with the scorer's pruned, batched look-ups (dense
    tables, rank bitmaps, the hash table) instead of one hashed look-up per row and position: on sentences full of
    unseen n-grams, of length 1, longer than a look-up block and with words never seen in training, the (sentence,
    feature) pairs are those of the plain kernel, in its order, and they add up to each sentence's feature vector.
    Negative control: a plan whose dense tables are shifted by one entry finds other features."""
    n_words = V + 3
    word_class = np.append(WORD_CLASS, [0, 1, 2])
    feats = SentenceFeatures.build(corpus, n_words, spec, word_class=word_class)
    rng = np.random.default_rng(12)
    sentences = ([rng.integers(0, n_words, size=rng.integers(1, 16)) for _ in range(200)] + [np.array([V + 1])]
                 + [rng.integers(0, V, size=fk.SCORE_BLOCK + 30)] + [rng.integers(0, n_words, size=1)])
    fresh = EncodedCorpus.from_sentences(sentences)
    plain = fk.corpus_feature_hits(feats._flat(fresh), feats.symbols(), feats.hashed())
    sent, feat = feats.feature_hits(fresh)
    np.testing.assert_array_equal(sent, plain[0])
    np.testing.assert_array_equal(feat, plain[1])
    assert sent.size > 10 * len(fresh) and np.unique(sent).size == len(fresh)
    vectors = np.zeros((len(fresh), feats.n_features))
    np.add.at(vectors, (sent, feat), 1.0)
    np.testing.assert_array_equal(vectors, np.stack([feats.feature_vector(s) for s in fresh]))
    # in the scorer's order, the firings' weights summed sentence by sentence are its scores bit for bit (in the
    # rows' order they are not: the sums round differently)
    lam = rng.normal(size=feats.n_features) * 1e3 + 0.1
    by_sum, feat_by_sum = feats.feature_hits(fresh, sum_order=True)
    np.testing.assert_array_equal(by_sum, sent)
    assert sorted(zip(by_sum.tolist(), feat_by_sum.tolist())) == sorted(zip(sent.tolist(), feat.tolist()))
    np.testing.assert_array_equal(feats.hit_scores((by_sum, feat_by_sum), lam, len(fresh)), feats.scores(fresh, lam))
    if spec == ALL:
        assert not np.array_equal(feats.hit_scores((sent, feat), lam, len(fresh)), feats.scores(fresh, lam))
    with pytest.raises(ValueError, match="hits must name sentences"):
        feats.hit_scores((by_sum, feat_by_sum), lam, len(fresh) - 1)
    with pytest.raises(ValueError, match="lam must have shape"):
        feats.hit_scores((by_sum, feat_by_sum), lam[:-1], len(fresh))
    plan = feats.score_plan()
    shifted = fk.corpus_hits_pruned(feats._flat(fresh), feats.symbols(), np.zeros(feats.n_features), feats.hashed(),
                                    plan._replace(dense=np.roll(plan.dense, 1)), np.arange(plan.order.size))
    assert shifted[1].size != feat.size or not np.array_equal(shifted[1], feat)


@pytest.mark.parametrize("n_frequent", [4, 100])
def test_bitmap_tables_find_every_key_they_hold(corpus, monkeypatch, n_frequent):
    """The rank bitmaps (issue 27: faster scoring) of the class (skip-)trigram rows and of the word pair rows over
    the frequent words give, for every key they hold, the hash table's answer: the feature index or -1 (bit and rank
    recomputed here in plain Python).  With 4 of the 9 word symbols frequent, the other words' pairs are left out."""
    monkeypatch.setattr(features_module, "FREQUENT_WORDS", n_frequent)
    feats = SentenceFeatures.build(corpus, V, ALL, word_class=WORD_CLASS)
    bit_base, bits, bit_feature, frequent, n_frequent = feats.bitmap_tables()
    assert n_frequent == min(n_frequent, V + 2) and sorted(frequent[frequent < n_frequent]) == list(range(n_frequent))
    width = feats.n_classes + 2
    words, ranks = bits[0::2].view(np.uint64), bits[1::2]
    group, row_len, _, row_type = feats.rows
    rows = np.flatnonzero(bit_base >= 0)
    assert rows.tolist() == [r for r in range(row_len.size) if row_len[r] == 3 and all(row_type[r, :3] == 1)
                             or row_len[r] == 2 and all(row_type[r, :2] == 0)]
    answers = []
    for r in rows:
        n = 3 if row_type[r, 0] == 1 else 2
        symbols = [a.ravel() for a in np.meshgrid(*[np.arange(width if n == 3 else V + 2)] * n, indexing="ij")]
        if n == 3:
            s0, s1, s2 = symbols
            index = (s0 * width + s1) * width + s2
        else:
            s0, s1 = symbols
            s2 = np.full(s0.size, fk.EMPTY)
            held = (frequent[s0] < n_frequent) & (frequent[s1] < n_frequent)
            assert held.sum() == n_frequent ** 2
            s0, s1, s2 = s0[held], s1[held], s2[held]
            index = frequent[s0] * n_frequent + frequent[s1]
        hi = np.int64(group[r]) << 48 | s0 << 24 | s1
        lo = s2 << 24 | np.int64(fk.EMPTY)
        expected = fk.table_lookup_many(hi, lo, feats.key_hi, feats.key_lo, feats.slots)
        got = []
        for k in (bit_base[r] + index).tolist():
            word = int(words[k >> 6])
            below = bin(word & ((1 << (k & 63)) - 1)).count("1")
            got.append(int(bit_feature[ranks[k >> 6] + below]) if word >> (k & 63) & 1 else -1)
        np.testing.assert_array_equal(got, expected)
        answers.append(expected)
    answers = np.concatenate(answers)
    assert (answers >= 0).any() and (answers < 0).any()


def _key(feats, r, w, c, p):
    """The key ``(group, symbols)`` of row ``r`` at position ``p`` of the symbol lists ``w`` and ``c``."""
    group, row_len, row_off, row_type = feats.rows
    return int(group[r]), tuple((w if row_type[r, e] == 0 else c)[p + row_off[r, e]] for e in range(row_len[r]))


def _scores_one_at_a_time(feats, corpus, lam):
    """Plain-Python scores summed in the scorer's order (positions, then ``score_plan().order``), each n-gram found
    in a dict of the decoded keys: no hash table, no pruning, no dense tables."""
    index = {k: i for i, k in enumerate(_decode(feats))}
    group, row_len, row_off, row_type = feats.rows
    order = feats.score_plan().order
    out = []
    for s in corpus:
        w = [feats.n_words + 1, *s.tolist(), feats.n_words]
        c = [feats.n_classes + 1, *(int(feats.word_class[t]) for t in s), feats.n_classes]
        j, total = len(s), 0.0
        for p in range(1, j + 2):
            for r in order:
                if p + row_off[r, 0] < 0 or (row_len[r] == 1 and p == j + 1):
                    continue
                if (key := _key(feats, r, w, c, p)) in index:
                    total += lam[index[key]]
        out.append(total)
    return np.array(out)


@pytest.mark.parametrize("min_block, threads", [(1 << 16, 1), (1, 3), (1, 7)])
def test_scoring_on_threads_is_the_one_thread_scoring_bit_for_bit(monkeypatch, min_block, threads):
    """``scores(..., threads=None)`` splits the sentences into blocks of about equal words, one per thread (what the
    stop rule's train-dev gaps use): one block or several, the scores are the one-thread ones to the bit."""
    import samplers._blocks as blocks

    rng = np.random.default_rng(8)
    sentences = [rng.integers(0, V, size=rng.integers(1, 25)) for _ in range(200)]
    corpus = EncodedCorpus.from_sentences(sentences)
    feats = SentenceFeatures.build(corpus, V, ALL, word_class=WORD_CLASS)
    lam = rng.normal(size=feats.n_features)
    one = feats.scores(corpus, lam)
    monkeypatch.setattr(features_module, "SCORE_MIN_BLOCK", min_block)
    monkeypatch.setattr(blocks.numba, "get_num_threads", lambda: threads)
    assert blocks.block_edges(len(corpus), starts=corpus.offsets, min_block=min_block).size - 1 == threads
    np.testing.assert_array_equal(feats.scores(corpus, lam, threads=None), one)
    np.testing.assert_array_equal(feats.scores(corpus, lam, threads=None), _scores_one_at_a_time(feats, corpus, lam))


@pytest.mark.parametrize("n_frequent", [4, 2048])
def test_batched_scoring_is_bit_identical_to_one_look_up_at_a_time(corpus, monkeypatch, n_frequent):
    """Issue 27 (scoring speed): the scorer issues the look-ups of a block of ``fk.SCORE_BLOCK`` positions together,
    level by level, through dense tables, rank bitmaps (the word pairs of the ``n_frequent`` most frequent words: 4
    of the 11 word symbols, so that pairs of the others go to the hash table, or all of them) and the hash table.
    On sentences of length 1, longer than a block, and with words never seen in training (ids V..V+2: unseen
    unigrams and n-grams), its scores equal -- bit for bit -- a plain-Python sum in the same order over a dict of
    the features, and do not depend on which sentences share a block.  A fingerprint collision (a slot whose
    fingerprint matches an unseen key but whose key differs) scores nothing; negative control: the collided
    feature's weight, had the key not been compared."""
    monkeypatch.setattr(features_module, "FREQUENT_WORDS", n_frequent)
    n_words = V + 3
    word_class = np.append(WORD_CLASS, [0, 1, 2])
    feats = SentenceFeatures.build(corpus, n_words, ALL, word_class=word_class)
    plan = feats.score_plan()
    assert plan.n_frequent == min(n_frequent, n_words + 2)
    rng = np.random.default_rng(12)
    sentences = [[7], [2], rng.integers(0, n_words, size=fk.SCORE_BLOCK + 44)]
    sentences += [rng.integers(0, n_words, size=rng.integers(1, 30)) for _ in range(40)]
    fresh = EncodedCorpus.from_sentences(sentences)
    lam = rng.normal(size=feats.n_features)
    batched = feats.scores(fresh, lam)
    np.testing.assert_array_equal(batched, _scores_one_at_a_time(feats, fresh, lam))
    alone = np.concatenate([feats.scores(EncodedCorpus.from_sentences([s]), lam) for s in sentences])
    np.testing.assert_array_equal(batched, alone)
    if n_frequent == 2048:  # every word pair is in a bitmap: no hash look-up to collide
        return
    # a collision: a word pair (w-d w0) = (a, b), d = 6..9 (the tied rows), that is unseen, not in a bitmap (a word
    # not frequent) and looked up in the hash table (its parents are seen) in the sentence a 0 ... 0 b
    keys = set(_decode(feats))

    def hashed_and_unseen(r, a, b):
        d = -int(feats.rows.row_off[r, 0])
        sentence = [a] + [0] * (d - 1) + [b]
        w = [n_words + 1, *sentence, n_words]
        c = [feats.n_classes + 1, *(int(word_class[t]) for t in sentence), feats.n_classes]
        return (_key(feats, r, w, c, d + 1) not in keys and n_frequent in (plan.frequent[a], plan.frequent[b])
                and all(_key(feats, q, w, c, d + 1) in keys for q in plan.parents[r] if q >= 0)), sentence

    tied = [r for r in range(24, 28)]
    assert all(feats.rows.row_len[r] == 2 and feats.rows.row_off[r, 0] <= -6 for r in tied)
    r, a, b = next((r, a, b) for r in tied for a in range(V) for b in range(V) if hashed_and_unseen(r, a, b)[0])
    sentence = hashed_and_unseen(r, a, b)[1]
    bigram_group = int(feats.rows.row_group[r])
    hi = np.int64(bigram_group) << 48 | np.int64(a) << 24 | np.int64(b)
    lo = np.int64(fk.EMPTY) << 24 | np.int64(fk.EMPTY)
    assert fk.table_lookup_many(np.array([hi]), np.array([lo]), feats.key_hi, feats.key_lo, feats.slots)[0] == -1
    h = fk.key_hash(hi, lo)
    slots = feats.slots.copy()
    s = h & (slots.size - 1)
    while slots[s] >= 0:
        s = (s + 1) & (slots.size - 1)
    other = 3  # any feature: the collided slot points at it under the unseen key's fingerprint
    slots[s] = fk.fingerprint(h) << 32 | other
    pair = EncodedCorpus.from_sentences([sentence])
    out = np.empty(1)
    hashed = feats.hashed()._replace(slots=slots)
    fk.corpus_scores_pruned(fk.FlatCorpus(pair.tokens, pair.offsets), feats.symbols(), lam, hashed,
                            feats.score_plan(), out)
    expected = _scores_one_at_a_time(feats, pair, lam)[0]
    assert out[0] == expected
    s = h & (slots.size - 1)  # negative control: by fingerprint alone the unseen bigram is found, as feature `other`
    while slots[s] >> 32 != fk.fingerprint(h):
        s = (s + 1) & (slots.size - 1)
    assert slots[s] & 0xFFFFFFFF == other and lam[other] != 0.0


def test_feature_text_names_the_template_symbols_and_count():
    """``feature_text`` decodes a feature's key: the type and offsets of its template (a tied group names its first
    distance), a word by its text (``w<id>`` without words), a class as ``c<id>``, ``<s>`` and ``</s>``, skipped
    positions as ``_``, and the training count (the plain-Python oracle's)."""
    words = ["u0", "u1", "u2", "u3", "u4", "u5"]
    sentences = [[0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 0], [2, 3]]
    types = parse_feature_spec(ALL)
    feats = SentenceFeatures.build(EncodedCorpus.from_sentences(sentences), V, ALL, word_class=WORD_CLASS)
    keys = _decode(feats)
    oracle = sum((_oracle(sentence, types) for sentence in sentences), Counter())
    first = {name: sum(len(FEATURE_TYPES[t]) for t in types[:k]) for k, name in enumerate(types)}

    def check(group, symbols, body, with_words=True):
        n = oracle[(group, symbols)]
        assert n > 0
        expected = f"{body}, {n} training occurrence{'s' if n != 1 else ''}"
        assert feats.feature_text(keys.index((group, symbols)), words if with_words else None) == expected

    check(first["w"] + 2, (2, 3), "w (-1, 0): 'u2' 'u3'")
    check(first["w"] + 2, (2, 3), "w (-1, 0): w2 w3", with_words=False)
    check(first["w"] + 2, (V + 1, 2), "w (-1, 0): <s> 'u2'")
    check(first["w"] + 2, (0, V), "w (-1, 0): 'u0' </s>")
    check(first["c"] + 2, (0, 1), "c (-1, 0): c0 c1")
    check(first["c"] + 1, (int(WORD_CLASS.max()) + 2, 0, 0), "c (-2, -1, 0): <s> c0 c0")
    check(first["ws"], (0, 3), "ws (-3, 0): 'u0' _ _ 'u3'")
    check(first["cs"] + 2, (0, 1, 1), "cs (-3, -1, 0): c0 _ c1 c1")
    check(first["wsh"] + 1, (0, 5), "wsh (-5, 0): 'u0' _ _ _ _ 'u5'")
    check(first["cpw"] + 2, (0, 2), "cpw (-1, 0): c0 'u2'")
    check(first["tied"] + 1, (0, 0), "tied (-6, 0) and 3 more distances, one weight: 'u0' _ _ _ _ _ 'u0'")
    with pytest.raises(ValueError, match="index"):
        feats.feature_text(feats.n_features)
