"""Sentence feature templates of TRF language models (Table 2 of Wang, Ou & Tan 2017).

Types (offsets relative to the current word ``w_0``; ``c`` are word classes):

======  ================================================================
w       (w-3 w-2 w-1 w0) (w-2 w-1 w0) (w-1 w0) (w0)
c       the same over classes
ws      (w-3 w0) (w-3 w-2 w0) (w-3 w-1 w0) (w-2 w0)
cs      the same over classes
wsh     (w-4 w0) (w-5 w0)
csh     (c-4 c0) (c-5 c0)
cpw     (c-3 c-2 c-1 w0) (c-2 c-1 w0) (c-1 w0)
tied    (c-d c0) and (w-d w0) for d = 6..9, each sharing one weight over d
======  ================================================================

Features are position- and length-independent counts (Sec. 3): ``f_i(x)`` is the number of
positions where n-gram ``i`` occurs, with ``<s>`` before and ``</s>`` after the sentence as context
(``</s>`` is a predicted position too, so ``(w-1 </s>)`` is a feature; the unigram of ``</s>`` is
constant and left out).  Only n-grams observed in the training corpus become features.

Storage: per feature two int64 key words and one float64 count, plus an int64 open-addressing
table (index and a hash fingerprint per slot) at load factor <= 0.5 (see
:mod:`trf.lm._feature_kernels`), i.e. about 40-56 bytes per feature
(:meth:`SentenceFeatures.bytes_per_million`).  The same
table is read from Numba by the samplers and scorers.  The scorer adds its own tables on first use (dense tables
and rank bitmaps of the rows with small key spaces, :meth:`SentenceFeatures.score_plan`): about 7 bytes per
feature of the full set (:meth:`SentenceFeatures.scoring_nbytes`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from samplers._blocks import block_edges, run_blocks
from samplers.validation import as_float_array, as_int_array, check_int
from trf.lm import _feature_kernels as fk
from trf.lm.corpus import EncodedCorpus

__all__ = ["FEATURE_TYPES", "parse_feature_spec", "SentenceFeatures"]

_W, _C = 0, 1
BITMAP_KEYS = 1 << 25  # largest key space of a class row read from a rank bitmap (SentenceFeatures.bitmap_tables)
FREQUENT_WORDS = 2048  # words whose pairs the word pair rows read from rank bitmaps (SentenceFeatures.bitmap_tables)
SCORE_MIN_BLOCK = 4096  # words below which scoring stays on one thread: 0.4-1.5 ms of work, against about 70 us to
#                         hand two blocks to the kept threads (SentenceFeatures.scores)


def _ngram(offsets, kind):
    return [(o, _W if k == "w" else _C) for o, k in zip(offsets, kind)]


FEATURE_TYPES: dict[str, list[list[list[tuple[int, int]]]]] = {
    # type -> groups -> rows (a group of several rows shares one weight: "tied")
    "w": [[_ngram(o, "w" * len(o))] for o in ((-3, -2, -1, 0), (-2, -1, 0), (-1, 0), (0,))],
    "c": [[_ngram(o, "c" * len(o))] for o in ((-3, -2, -1, 0), (-2, -1, 0), (-1, 0), (0,))],
    "ws": [[_ngram(o, "w" * len(o))] for o in ((-3, 0), (-3, -2, 0), (-3, -1, 0), (-2, 0))],
    "cs": [[_ngram(o, "c" * len(o))] for o in ((-3, 0), (-3, -2, 0), (-3, -1, 0), (-2, 0))],
    "wsh": [[_ngram(o, "ww")] for o in ((-4, 0), (-5, 0))],
    "csh": [[_ngram(o, "cc")] for o in ((-4, 0), (-5, 0))],
    "cpw": [[_ngram(o, k)] for o, k in (((-3, -2, -1, 0), "cccw"), ((-2, -1, 0), "ccw"), ((-1, 0), "cw"))],
    "tied": [[_ngram((-d, 0), "cc") for d in range(6, 10)], [_ngram((-d, 0), "ww") for d in range(6, 10)]],
}


def hash_table(key_hi: np.ndarray, key_lo: np.ndarray) -> np.ndarray:
    """Open-addressing table of the keys at load factor <= 0.5 (see :mod:`trf.lm._feature_kernels`)."""
    slots = np.full(1 << max(4, int(np.ceil(np.log2(2 * max(key_hi.size, 1))))), -1, dtype=np.int64)
    fk.table_insert_all(key_hi, key_lo, slots)
    return slots


def blank_slot(key_hi: np.ndarray, key_lo: np.ndarray, slot) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Feature keys with the symbol in ``slot`` (0-3, a number or one per key) replaced by ``EMPTY``, and that
    symbol: ``(hi, lo, symbol)``.  Slots 0 and 1 sit in ``key_hi`` (bits 24-47 and 0-23, above the template group),
    2 and 3 in ``key_lo``; a feature of ``L`` elements fills slots ``0..L-1`` (:mod:`trf.lm._feature_kernels`)."""
    slot = np.asarray(slot)
    in_hi = slot < 2
    shift = np.where(slot % 2 == 0, 24, 0).astype(np.int64)
    word = np.where(in_hi, key_hi, key_lo)
    mask = np.int64(fk.EMPTY) << shift  # EMPTY is the all-ones symbol
    symbol = (word >> shift) & np.int64(fk.EMPTY)
    blanked = word | mask
    return np.where(in_hi, blanked, key_hi), np.where(in_hi, key_lo, blanked), symbol


def row_parents(rows: fk.Templates, n_parents: int = 2, projections: bool = False) -> np.ndarray:
    """For each template row, up to ``n_parents`` other rows whose (offset, type) pattern is a proper
    subset of its own (largest first; -1 pads), among rows of at least two elements.

    Wherever a row fires, such a parent fires too with a sub-pattern of the same symbols, so an n-gram
    of the row can only be an observed feature if the parent's n-gram is (unigram rows are excluded:
    they do not fire at ``</s>``).  The scorers and samplers skip the look-up of a row whose parent is unseen.

    With ``projections``, a parent may also read the class of a word the row reads (``(c-2 c-1 c0)`` for
    ``(w-2 w-1 w0)``, ``(c-1 c0)`` for ``(w-1 w0)``): its n-gram is a function of the row's, so the same
    argument holds.  Such a parent can be as long as the row, so the rows must then be visited in levels
    (:func:`visit_levels`).  Parents are ranked by length, then by their number of word elements (the more
    specific first).
    """
    _, row_len, row_off, row_type = rows
    pattern = [frozenset((int(row_off[r, e]), int(row_type[r, e])) for e in range(row_len[r]))
               for r in range(row_len.size)]
    parents = np.full((row_len.size, n_parents), -1, dtype=np.int64)
    for r, pat in enumerate(pattern):
        reach = pat | {(o, _C) for o, _ in pat} if projections else pat
        subs = sorted((q for q, sub in enumerate(pattern)
                       if q != r and len(sub) >= 2 and sub <= reach and len(sub) <= len(pat) and sub != pat),
                      key=lambda q: (-len(pattern[q]), -sum(k == _W for _, k in pattern[q]), q))
        parents[r, :len(subs[:n_parents])] = subs[:n_parents]
    return parents


def visit_levels(parents: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows in levels: level 0 holds the rows without parents, level ``v`` the rows whose parents are all in
    earlier levels.  Returns ``(visit, level_end)``: the rows by level (then by index), and the end of each level in
    ``visit`` (``level_end[0] = 0``)."""
    level = np.full(parents.shape[0], -1, dtype=np.int64)
    for _ in range(parents.shape[0]):
        for r in range(parents.shape[0]):
            below = [level[q] for q in parents[r] if q >= 0]
            if level[r] < 0 and all(v >= 0 for v in below):
                level[r] = 1 + max(below, default=-1)
    if np.any(level < 0):
        raise ValueError("row parents form a cycle")
    visit = np.lexsort((np.arange(level.size), level)).astype(np.int64)
    return visit, np.concatenate(([0], np.cumsum(np.bincount(level)))).astype(np.int64)


def parse_feature_spec(spec: str) -> tuple[str, ...]:
    """Split ``"w+c+ws+cs+wsh+csh+tied"`` into known feature types (unknown ones raise ValueError)."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"features must be a non-empty string like 'w+c+ws', got {spec!r}")
    types = tuple(t.strip() for t in spec.split("+"))
    unknown = [t for t in types if t not in FEATURE_TYPES]
    if unknown:
        raise ValueError(f"features has unknown template type(s) {unknown}; known: {'+'.join(FEATURE_TYPES)}")
    if len(set(types)) != len(types):
        raise ValueError(f"features lists a template type twice: {spec!r}")
    return types


def template_rows(types: tuple[str, ...]) -> fk.Templates:
    """Flatten feature types into the kernels' row arrays ``(row_group, row_len, row_off, row_type)``."""
    groups, lens, offs, kinds = [], [], [], []
    group = 0
    for t in types:
        for rows in FEATURE_TYPES[t]:
            for row in rows:
                groups.append(group)
                lens.append(len(row))
                offs.append([o for o, _ in row] + [0] * (4 - len(row)))
                kinds.append([k for _, k in row] + [0] * (4 - len(row)))
            group += 1
    return fk.Templates(np.array(groups, dtype=np.int64), np.array(lens, dtype=np.int64),
                        np.array(offs, dtype=np.int64), np.array(kinds, dtype=np.int64))


@dataclass
class SentenceFeatures:
    """The observed features of a training corpus and the hash table that finds them.

    Build with :meth:`build`.  ``counts[f]`` is the training-corpus total of feature ``f``
    (divide by the number of sentences for the empirical mean ``p~[f]`` of Eq. 6).
    """

    types: tuple[str, ...]
    n_words: int
    n_classes: int
    word_class: np.ndarray   # int64 (n_words,)
    key_hi: np.ndarray       # int64 (n_features,)
    key_lo: np.ndarray       # int64 (n_features,)
    counts: np.ndarray       # float64 (n_features,)
    slots: np.ndarray        # int64 (power of two,): fingerprint << 32 | feature index, -1 = empty

    def __post_init__(self) -> None:
        self.rows = template_rows(self.types)

    def class_members(self) -> tuple[np.ndarray, np.ndarray]:
        """``(class_words, class_start)``: the words of class ``k`` are ``class_words[class_start[k]:class_start[k+1]]``
        (int64, stable order)."""
        order = np.argsort(self.word_class, kind="stable")
        start = np.searchsorted(self.word_class[order], np.arange(self.n_classes + 1))
        return order.astype(np.int64), start.astype(np.int64)

    @property
    def n_features(self) -> int:
        """Number of features ``d`` (distinct template n-grams collected)."""
        return int(self.key_hi.size)

    @property
    def max_context(self) -> int:
        """Largest distance back that any template looks (9 with ``tied``)."""
        return int(-self.rows[2].min())

    @classmethod
    def build(cls, corpus: EncodedCorpus, vocab_size: int, features: str, word_class=None) -> "SentenceFeatures":
        """Collect every template n-gram observed in ``corpus``.

        Parameters
        ----------
        corpus : EncodedCorpus
            Training sentences, ids in ``[0, vocab_size)``.
        vocab_size : int
            Number of word ids ``V``.
        features : str
            Feature types joined by ``+`` (see :data:`FEATURE_TYPES`).
        word_class : int array (vocab_size,), optional
            Class of each word; required by class templates.  ``None`` means one class per word.
        """
        types = parse_feature_spec(features)
        vocab_size = check_int(vocab_size, "vocab_size", low=1, high=fk.MAX_SYMBOL - 2)
        if not isinstance(corpus, EncodedCorpus):
            raise TypeError(f"corpus must be an EncodedCorpus, got {type(corpus).__name__}")
        if len(corpus) == 0:
            raise ValueError("corpus must hold at least one sentence")
        tokens = as_int_array(corpus.tokens, "corpus.tokens", ndim=1, low=0, high=vocab_size)
        if word_class is None:
            word_class = np.arange(vocab_size)
        word_class = as_int_array(word_class, "word_class", ndim=1, low=0)
        if word_class.size != vocab_size:
            raise ValueError(f"word_class must have vocab_size={vocab_size} entries, got {word_class.size}")
        n_classes = int(word_class.max()) + 1
        rows = template_rows(types)
        hi, lo = fk.corpus_keys(fk.FlatCorpus(tokens, corpus.offsets), fk.Symbols(word_class, vocab_size, n_classes),
                                rows)
        order = np.lexsort((lo, hi))
        hi, lo = hi[order], lo[order]
        new = np.ones(hi.size, dtype=bool)
        new[1:] = (hi[1:] != hi[:-1]) | (lo[1:] != lo[:-1])
        starts = np.flatnonzero(new)
        counts = np.diff(np.append(starts, hi.size)).astype(np.float64)
        key_hi, key_lo = hi[starts].copy(), lo[starts].copy()
        slots = hash_table(key_hi, key_lo)
        return cls(types, vocab_size, n_classes, word_class, key_hi, key_lo, counts, slots)

    # ----------------------------------------------------------------- queries
    def hashed(self) -> fk.HashedFeatures:
        """The table and the template rows as the Numba kernels' bundle."""
        return fk.HashedFeatures(self.key_hi, self.key_lo, self.slots, *self.rows)

    def symbols(self) -> fk.Symbols:
        """The class map and the sizes as the Numba kernels' bundle."""
        return fk.Symbols(self.word_class, int(self.n_words), int(self.n_classes))

    def _flat(self, corpus: EncodedCorpus) -> fk.FlatCorpus:
        """``corpus`` as the kernels' bundle, its word ids checked against the vocabulary."""
        tokens = as_int_array(corpus.tokens, "corpus.tokens", ndim=1, low=0, high=self.n_words)
        return fk.FlatCorpus(tokens, corpus.offsets)

    def scores(self, corpus: EncodedCorpus, lam, threads: int | None = 1) -> np.ndarray:
        """``lambda . f(x)`` for every sentence of ``corpus`` (unseen n-grams contribute nothing).

        A non-finite weight is refused (ValueError naming ``lam``) when a sentence reads it: the finiteness check
        runs on the scores, since reading all of a 3M-feature ``lam`` costs as much as scoring 2,000 positions.

        ``threads``: score blocks of sentences on up to this many threads (None: Numba's thread count; blocks of at
        least :data:`SCORE_MIN_BLOCK` words).  A sentence's score does not depend on its block, so the
        result is the one-thread one to the bit.  Default 1, the rate the scoring benchmarks quote."""
        lam = as_float_array(lam, "lam", ndim=1, finite=False)  # checked through the scores: 24 MB not read twice
        if lam.size != self.n_features:
            raise ValueError(f"lam must have n_features={self.n_features} entries, got {lam.size}")
        out = np.empty(len(corpus))
        flat, symbols, hashed, plan = self._flat(corpus), self.symbols(), self.hashed(), self.score_plan()

        def block(lo: int, hi: int) -> None:  # sentences lo..hi - 1 (one block: the calling thread, no pool)
            first = flat.offsets[lo]
            part = fk.FlatCorpus(flat.tokens[first:flat.offsets[hi]], flat.offsets[lo:hi + 1] - first)
            fk.corpus_scores_pruned(part, symbols, lam, hashed, plan, out[lo:hi])

        run_blocks(block, block_edges(len(corpus), threads, starts=flat.offsets, min_block=SCORE_MIN_BLOCK))
        if not np.all(np.isfinite(out)):
            bad = np.flatnonzero(~np.isfinite(lam))
            if bad.size:
                raise ValueError(f"lam must be finite; found non-finite value at index {bad[0]}")
            raise ValueError("lam's weights overflow float64 in a sentence score (|lambda . f(x)| > 1.8e308)")
        return out

    def score_plan(self) -> fk.ScorePlan:
        """How :meth:`scores` visits the rows (cached): the weights are added shorter patterns first; the rows are
        looked up level by level (:func:`visit_levels`), skipping a row where one of its up to three parents (:func:`row_parents`
        with ``projections``) is unseen; the dense tables of :meth:`dense_tables` and the bitmaps of
        :meth:`bitmap_tables` replace the hash table for the rows with small key spaces."""
        if getattr(self, "_score_plan", None) is None:
            row_len = self.rows.row_len
            order = np.array(sorted(range(row_len.size), key=lambda r: (int(row_len[r]), r)), dtype=np.int64)
            base, dense = self._score_dense()
            parents = row_parents(self.rows, 3, projections=True)
            visit, level_end = visit_levels(parents)
            bit_base, bits, bit_feature, frequent, n_frequent = self.bitmap_tables()
            self._score_plan = fk.ScorePlan(order, visit, level_end, parents, base, dense, int(self.n_classes) + 2,
                                            bit_base, bits, bit_feature, frequent, n_frequent)
        return self._score_plan

    def _score_dense(self) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`dense_tables` for the scorer: one table per group (the tied rows of a group read the same one) and
        int32 entries (feature indices), so the tables take less cache."""
        base, dense = self.dense_tables()
        group, row_len, _, row_type = self.rows
        first: dict[tuple, int] = {}
        blocks, start, own = [], 0, np.full(base.size, -1, dtype=np.int64)
        for r in np.flatnonzero(base >= 0):
            shape = (int(group[r]), int(row_len[r]), tuple(row_type[r, :row_len[r]].tolist()))
            if shape not in first:
                size = self.n_words + 2 if row_len[r] == 1 and row_type[r, 0] == _W else (
                    self.n_classes + 2) ** int(row_len[r])
                blocks.append(dense[base[r]:base[r] + size])
                first[shape], start = start, start + size
            own[r] = first[shape]
        table = np.concatenate(blocks).astype(np.int32) if blocks else np.zeros(0, dtype=np.int32)
        return own, table

    def bitmap_tables(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
        """Rank bitmaps of the class rows of three symbols (class trigrams and skip-trigrams; when their key space
        ``(n_classes + 2) ** 3`` is at most ``BITMAP_KEYS``) and of the word rows of two symbols over the
        ``FREQUENT_WORDS`` words most frequent in those rows' features (with ``<s>`` and ``</s>``; the pairs of
        other words stay on the hash table), cached: ``(bit_base, bits, bit_feature, frequent, n_frequent)`` as
        :class:`trf.lm._feature_kernels.ScorePlan` reads them (``bit_base[r] = -1``: no bitmap).

        A look-up is one bit and, if it is set, a count of the set bits before it in its 64-bit word, held beside
        the word: no probe and no key comparison, and the bitmaps are small enough to stay in cache (Issue 27: at 200
        classes, 2 MB per class trigram group and 1 MB per word pair group).  Each row of a group reads the group's
        bitmap, found from the features' keys; it costs ``2 * keys / 8`` bytes plus 8 bytes per feature in it."""
        if getattr(self, "_bitmap_tables", None) is None:
            self._bitmap_tables = self._build_bitmaps()
        return self._bitmap_tables

    def _build_bitmaps(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
        group, row_len, _, row_type = self.rows
        width = self.n_classes + 2
        feature_group = self.key_hi >> 48
        s0, s1, s2 = (self.key_hi >> 24) & fk.EMPTY, self.key_hi & fk.EMPTY, (self.key_lo >> 24) & fk.EMPTY
        triple = (row_len == 3) & np.all(row_type[:, :3] == _C, axis=1)
        pair = (row_len == 2) & np.all(row_type[:, :2] == _W, axis=1)
        triples = [g for g in np.unique(group) if np.all(triple[group == g])] if width ** 3 <= BITMAP_KEYS else []
        pairs = [g for g in np.unique(group) if np.all(pair[group == g])]
        # the frequent words: by their count in the features of the word pair rows (s0 and s1 are words there)
        in_pairs = np.isin(feature_group, pairs)
        n_symbols = self.n_words + 2
        popular = (np.bincount(s0[in_pairs], weights=self.counts[in_pairs], minlength=n_symbols)
                   + np.bincount(s1[in_pairs], weights=self.counts[in_pairs], minlength=n_symbols))
        n_frequent = min(FREQUENT_WORDS, n_symbols)
        frequent = np.full(n_symbols, n_frequent, dtype=np.int64)
        frequent[np.argsort(-popular, kind="stable")[:n_frequent]] = np.arange(n_frequent)
        starts, indices, features, start = {}, [], [], 0
        for g, keys in [(g, width ** 3) for g in triples] + [(g, n_frequent ** 2) for g in pairs]:
            f = np.flatnonzero(feature_group == g)
            if g in pairs:
                a, b = frequent[s0[f]], frequent[s1[f]]
                keep = (a < n_frequent) & (b < n_frequent)
                f, index = f[keep], a[keep] * n_frequent + b[keep]
            else:
                index = (s0[f] * width + s1[f]) * width + s2[f]
            starts[g] = start
            indices.append(start + index)
            features.append(f)
            start += -(-keys // 64) * 64
        bit_base = np.array([starts.get(g, -1) for g in group], dtype=np.int64)
        index = np.concatenate(indices) if indices else np.zeros(0, dtype=np.int64)
        feature = np.concatenate(features) if features else np.zeros(0, dtype=np.int64)
        by_index = np.argsort(index, kind="stable")
        index, feature = index[by_index], feature[by_index]
        n_words = max(start // 64, 1)
        words = np.zeros(n_words, dtype=np.uint64)
        np.bitwise_or.at(words, index >> 6, np.left_shift(np.uint64(1), (index & 63).astype(np.uint64)))
        per_word = np.bincount(index >> 6, minlength=n_words)
        bits = np.empty(2 * n_words, dtype=np.int64)
        bits[0::2] = words.view(np.int64)
        bits[1::2] = np.concatenate(([0], np.cumsum(per_word)[:-1]))
        return bit_base, bits, np.append(feature, -1).astype(np.int64), frequent, int(n_frequent)

    def dense_tables(self) -> tuple[np.ndarray, np.ndarray]:
        """Dense feature-index tables of the rows with small key spaces (cached): the word unigram over the
        ``n_words + 2`` word symbols, and each class row of one or two symbols over the ``n_classes + 2`` class
        symbols (``(s0, s1)`` at ``s0 * (n_classes + 2) + s1``).  ``base[r]`` is row ``r``'s start in ``dense``
        (-1: hashed); entries are feature indices, -1 for unseen n-grams."""
        if getattr(self, "_dense_tables", None) is None:
            group, row_len, _, row_type = self.rows
            n_class_sym = self.n_classes + 2
            empty = np.int64(fk.EMPTY)
            base = np.full(row_len.size, -1, dtype=np.int64)
            blocks, start = [], 0
            for r in range(row_len.size):
                types = row_type[r, :row_len[r]]
                if row_len[r] == 1:
                    s0, s1 = np.arange(self.n_words + 2 if types[0] == 0 else n_class_sym, dtype=np.int64), empty
                elif row_len[r] == 2 and np.all(types == 1):
                    s0, s1 = (a.ravel().astype(np.int64) for a in np.meshgrid(np.arange(n_class_sym),
                                                                               np.arange(n_class_sym), indexing="ij"))
                else:
                    continue
                hi = (np.int64(group[r]) << 48) | (s0 << 24) | s1
                lo = np.full(hi.size, (empty << 24) | empty)
                blocks.append(fk.table_lookup_many(hi, lo, self.key_hi, self.key_lo, self.slots))
                base[r], start = start, start + hi.size
            dense = np.concatenate(blocks) if blocks else np.zeros(0, dtype=np.int64)
            self._dense_tables = (base, dense)
        return self._dense_tables

    def feature_vector(self, sentence) -> np.ndarray:
        """Dense ``f(x)`` of one sentence (for tests and small models)."""
        sentence = as_int_array(sentence, "sentence", ndim=1, low=0, high=self.n_words)
        w = np.empty(sentence.size + 2, dtype=np.int64)
        c = np.empty(sentence.size + 2, dtype=np.int64)
        j = fk.load_sentence(sentence, self.symbols(), w, c)
        acc = np.zeros(self.n_features)
        fk.accumulate_features(w, c, j, 1.0, acc, self.hashed())
        return acc

    def feature_hits(self, corpus: EncodedCorpus, *, sum_order: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """``(sentence, feature)`` of every firing of a feature in ``corpus``, in sentence order (a feature that
        fires twice in a sentence appears twice): found by the scorer's look-ups (:meth:`score_plan`), the pairs of
        one look-up at a time in its order (:func:`trf.lm._feature_kernels.corpus_feature_hits`) at 15-20x its speed
        on the fortunes full-set model.

        ``sum_order``: a position's firings in the order in which :meth:`scores` adds their weights instead, so that
        ``np.bincount(sentence, weights=lam[feature], minlength=len(corpus))`` is :meth:`scores` bit for bit (a
        sentence's sum adds the same weights in the same order, from 0)."""
        if getattr(self, "_no_weights", None) is None:  # what the look-ups read beside a feature; never written
            self._no_weights = np.zeros(self.n_features)
        plan = self.score_plan()
        rows = plan.order if sum_order else np.arange(plan.order.size, dtype=np.int64)
        return fk.corpus_hits_pruned(self._flat(corpus), self.symbols(), self._no_weights, self.hashed(), plan, rows)

    def hit_scores(self, hits: tuple[np.ndarray, np.ndarray], lam, n: int) -> np.ndarray:
        """The scores ``lambda . f(x)`` of ``n`` sentences from their firings ``hits = (sentence, feature)``
        (:meth:`feature_hits`; with its ``sum_order`` the same bits as :meth:`scores`): no look-up, a gather of
        ``lam`` per firing."""
        sentence, feature = hits
        out = np.empty(check_int(n, "n", low=0))
        lam = np.asarray(lam, dtype=np.float64)
        if lam.shape != (self.n_features,):
            raise ValueError(f"lam must have shape ({self.n_features},), got {lam.shape}")
        if sentence.size and (sentence.min() < 0 or sentence.max() >= n or feature.min() < 0
                              or feature.max() >= self.n_features):
            raise ValueError(f"hits must name sentences 0..{n - 1} and features 0..{self.n_features - 1}")
        fk.hit_sums(sentence, feature, lam, out)
        return out

    def _sentence_counts(self, corpus: EncodedCorpus) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every (sentence, feature) pair that fires in ``corpus``, sorted by sentence then feature, and its count."""
        sent, feat = self.feature_hits(corpus)
        d = np.int64(self.n_features)
        pair, per_sentence = np.unique(sent * d + feat, return_counts=True)
        return pair // d, pair % d, per_sentence

    def stratified_variance(self, corpus: EncodedCorpus) -> np.ndarray:
        """Stratified empirical variances ``sigma_i = sum_j (n_j/n) Var_j[f_i]`` (Sec. 5.2), sparse.

        Uses ``sum_j (n_j/n) Var_j[f] = E[f^2] - sum_j S_j^2 / (n n_j)`` with ``S_j`` the total of
        ``f`` over sentences of length ``j``; only (length, feature) pairs that occur are touched.
        """
        sentence, feature, per_sentence = self._sentence_counts(corpus)
        n = len(corpus)
        d = np.int64(self.n_features)
        second_moment = np.bincount(feature, weights=per_sentence.astype(np.float64) ** 2, minlength=d) / n
        lengths = corpus.lengths
        n_j = np.bincount(lengths)
        keys = lengths[sentence] * d + feature
        by_length, inverse = np.unique(keys, return_inverse=True)
        totals = np.bincount(inverse, weights=per_sentence.astype(np.float64))
        j = by_length // d
        between = np.bincount(by_length % d, weights=totals ** 2 / (n * n_j[j]), minlength=d)
        return np.maximum(second_moment - between, 0.0)

    def positions_of(self, other: "SentenceFeatures") -> np.ndarray:
        """Where each of ``other``'s features sits in this set: ``out[i]`` is the index here of ``other``'s feature
        ``i`` (an int64 array of ``other.n_features``), so ``lam[out] = other_lam`` gives this set the weights of
        ``other`` (and its distribution, when every other weight is 0).

        A feature's key holds its template group's index, so the same n-gram has the same key in both sets only
        when ``other``'s feature types open this set's list (``"w+c"`` in ``"w+c+ws+..."``), both built on the same
        corpus with the same classes; anything else is a ValueError."""
        if self.types[:len(other.types)] != other.types or self.n_words != other.n_words or not np.array_equal(
                self.word_class, other.word_class):
            raise ValueError(f"the features {'+'.join(other.types)} are not the first types of "
                             f"{'+'.join(self.types)} over the same vocabulary and classes")
        out = fk.table_lookup_many(other.key_hi, other.key_lo, self.key_hi, self.key_lo, self.slots)
        if (out < 0).any():
            raise ValueError(f"{int((out < 0).sum())} of the {other.n_features} features of {'+'.join(other.types)} "
                             f"are not in {'+'.join(self.types)}: they were built on other sentences")
        return out

    def support_groups(self, corpus: EncodedCorpus) -> np.ndarray:
        """Size of each feature's *support group*: the features that fire in exactly the same sentences of
        ``corpus`` with the same counts (int64, shape ``(n_features,)``; 1 for a feature no other one shadows).

        The n-grams unique to one training sentence (or to a sentence repeated verbatim) form such a group; with
        the full feature set most features belong to one (fortunes: median size 108).  In the data they are
        perfectly correlated, which the diagonal preconditioner of Sec. 5.2 cannot see (``trf.lm.train``,
        ``step_rule="groups"``).  Identical supports are found by two random hashes of the sentence ids, summed
        in sentence order (equal supports give bit-equal sums; a collision of different ones has probability
        about ``d^2 2^-104``).
        """
        sentence, feature, per_sentence = self._sentence_counts(corpus)
        d = self.n_features
        codes = np.random.default_rng(0x5EED).random((2, len(corpus)))
        sums = np.stack([np.bincount(feature, weights=code[sentence] * per_sentence, minlength=d) for code in codes],
                        axis=1)
        _, group, size = np.unique(sums, axis=0, return_inverse=True, return_counts=True)
        return size[group.ravel()].astype(np.int64)

    def nbytes(self) -> int:
        """Bytes held by the feature set (keys, counts, hash table; the weights add 8 per feature)."""
        return int(self.key_hi.nbytes + self.key_lo.nbytes + self.counts.nbytes + self.slots.nbytes)

    def scoring_nbytes(self) -> int:
        """Bytes of the tables that :meth:`scores` adds (built on first use and kept): the dense tables, the rank
        bitmaps with their features, the frequent words' numbers and the plan's small arrays."""
        return int(sum(np.asarray(a).nbytes for a in self.score_plan() if isinstance(a, np.ndarray)))

    def bytes_per_million(self, with_weights: bool = True) -> float:
        """Memory per million features, including one float64 weight each when ``with_weights``."""
        total = self.nbytes() + (8 * self.n_features if with_weights else 0)
        return total / max(self.n_features, 1) * 1e6

    def feature_text(self, index: int, words=None) -> str:
        """Feature ``index`` as text: its template (type and offsets; a tied group names its first row), its symbols
        (``words[id]`` when given, else ``w<id>``; classes ``c<id>``; ``<s>``, ``</s>``) and its training count,
        e.g. ``"ws (-2, 0): 'of' _ 'the', 3 training occurrences"``."""
        index = check_int(index, "index", low=0, high=self.n_features - 1)
        hi, lo = int(self.key_hi[index]), int(self.key_lo[index])
        group = hi >> 48
        symbols = [(hi >> 24) & fk.EMPTY, hi & fk.EMPTY, (lo >> 24) & fk.EMPTY, lo & fk.EMPTY]
        kind, rows = [(t, g) for t in self.types for g in FEATURE_TYPES[t]][group]
        row = rows[0]
        shown = []
        for (_, element), symbol in zip(row, symbols):
            size, prefix = (self.n_classes, "c") if element == _C else (self.n_words, "w")
            if symbol >= size:
                shown.append("</s>" if symbol == size else "<s>")
            else:
                shown.append(repr(words[symbol]) if words is not None and element == _W else f"{prefix}{symbol}")
        offsets = tuple(o for o, _ in row)
        text = shown[0]
        for before, after, name in zip(offsets, offsets[1:], shown[1:]):
            text += " _" * (after - before - 1) + " " + name
        tied = f" and {len(rows) - 1} more distances, one weight" if len(rows) > 1 else ""
        count = int(self.counts[index])
        return f"{kind} {offsets}{tied}: {text}, {count} training occurrence{'s' if count != 1 else ''}"

    def type_ranges(self) -> dict[str, tuple[int, int]]:
        """``{type: (lo, hi)}``: the features of each type of :attr:`types` are ``lo <= i < hi`` (the features are
        sorted by template group, and a type's groups are consecutive); a type with no feature is left out."""
        groups = self.key_hi >> 48
        out, first = {}, 0
        for t in self.types:
            last = first + len(FEATURE_TYPES[t])
            lo, hi = (int(x) for x in np.searchsorted(groups, [first, last]))
            if hi > lo:
                out[t] = (lo, hi)
            first = last
        return out

    def describe(self) -> dict[int, int]:
        """Number of features per template group."""
        groups = self.key_hi >> 48
        return {int(g): int(n) for g, n in zip(*np.unique(groups, return_counts=True))}

    # ------------------------------------------------------------- persistence
    def to_arrays(self, prefix: str = "feat_") -> tuple[dict[str, np.ndarray], dict]:
        """The feature set as arrays and JSON-able metadata, for an ``.npz`` model file.

        Parameters
        ----------
        prefix : str
            Prefix of the array names (several objects share one file).

        Returns
        -------
        arrays : dict of str -> ndarray
            ``word_class``, ``key_hi``, ``key_lo`` (int64) and ``counts``, with ``prefix``.
        meta : dict
            ``types``, ``n_words`` and ``n_classes``.
        """
        arrays = {prefix + "word_class": self.word_class, prefix + "key_hi": self.key_hi,
                  prefix + "key_lo": self.key_lo, prefix + "counts": self.counts}
        return arrays, {"types": list(self.types), "n_words": self.n_words, "n_classes": self.n_classes}

    @classmethod
    def from_arrays(cls, arrays: dict, meta: dict, prefix: str = "feat_") -> "SentenceFeatures":
        """Rebuild the feature set that :meth:`to_arrays` wrote (the hash table is recomputed).

        Parameters
        ----------
        arrays : dict of str -> ndarray
            The arrays of :meth:`to_arrays`.
        meta : dict
            Its metadata.
        prefix : str
            Prefix of the array names.
        """
        key_hi = np.asarray(arrays[prefix + "key_hi"], dtype=np.int64)
        key_lo = np.asarray(arrays[prefix + "key_lo"], dtype=np.int64)
        slots = hash_table(key_hi, key_lo)
        return cls(tuple(meta["types"]), int(meta["n_words"]), int(meta["n_classes"]),
                   np.asarray(arrays[prefix + "word_class"], dtype=np.int64), key_hi, key_lo,
                   np.asarray(arrays[prefix + "counts"], dtype=np.float64), slots)
