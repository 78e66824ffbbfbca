"""Numba kernels of the sentence feature templates and their open-addressing hash table.  Private.

Layout shared by every kernel
-----------------------------
A sentence of length ``j`` lives in buffers ``w`` and ``c`` of size >= ``j + 2``: ``w[0]`` is
``<s>``, ``w[1..j]`` the words, ``w[j+1]`` is ``</s>`` (``c`` holds the classes; word symbols
``<s>``/``</s>`` are ``V+1``/``V`` and class symbols ``C+1``/``C``).  A template row ``r`` has
``row_len[r]`` elements with offsets ``row_off[r, e] <= 0`` (the last one is 0) and types
``row_type[r, e]`` (0: word, 1: class); at a position ``p`` in ``1..j+1`` it fires when
``p + row_off[r, 0] >= 0``, with key ``(row_group[r], symbols...)``.  Unigram rows do not fire at
``</s>`` (that feature would be constant).  Keys pack into two int64: ``hi = group << 48 | s0 << 24
| s1``, ``lo = s2 << 24 | s3`` (missing symbols are ``EMPTY``); the open-addressing table holds
``fingerprint << 32 | feature index`` per slot.

Kernels take bundles (NamedTuples): :class:`Templates` (the rows), :class:`HashedFeatures` (the rows and the
table), :class:`Symbols` (the class map and the sizes that place ``<s>``/``</s>``) and :class:`FlatCorpus`.
Any bundle with the same field names serves (the samplers' model bundles carry ``word_class``, ``n_words``
and ``n_classes`` themselves).  The helpers called per row and position are inlined (``inline="always"``): a
bundle handed to a function that is not inlined costs a reference-count update per array per call, which made
scoring 2.6-3x slower.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from samplers._jit import jit

EMPTY = (1 << 24) - 1
MAX_SYMBOL = EMPTY - 1


class Templates(NamedTuple):
    """The template rows: ``row_group`` (n_rows,), ``row_len`` (n_rows,), ``row_off`` and ``row_type`` (n_rows, 4)."""

    row_group: np.ndarray
    row_len: np.ndarray
    row_off: np.ndarray
    row_type: np.ndarray


class HashedFeatures(NamedTuple):
    """The open-addressing feature table (``key_hi``, ``key_lo``, ``slots``) and the template rows."""

    key_hi: np.ndarray
    key_lo: np.ndarray
    slots: np.ndarray
    row_group: np.ndarray
    row_len: np.ndarray
    row_off: np.ndarray
    row_type: np.ndarray


class Symbols(NamedTuple):
    """The class of each word and the sizes: word ``<s>``/``</s>`` are ``n_words + 1``/``n_words``, class ones
    ``n_classes + 1``/``n_classes``."""

    word_class: np.ndarray
    n_words: int
    n_classes: int


class FlatCorpus(NamedTuple):
    """Sentences as one token array: sentence ``i`` is ``tokens[offsets[i]:offsets[i + 1]]``."""

    tokens: np.ndarray
    offsets: np.ndarray


class ScorePlan(NamedTuple):
    """How :func:`corpus_scores_pruned` visits the rows: ``order`` (every row after its parents), ``parents[r, a]``
    (-1 pads), and dense feature-index tables for the rows with small key spaces: row ``r`` with
    ``dense_base[r] >= 0`` reads ``dense[dense_base[r] + s0]`` (one symbol) or ``dense[dense_base[r] + s0 * width +
    s1]`` (two class symbols) instead of the hash table (-1: unseen)."""

    order: np.ndarray
    parents: np.ndarray
    dense_base: np.ndarray
    dense: np.ndarray
    width: int


@jit(inline="always")
def row_key(r, p, w, c, rows):
    """Key of row ``r`` at position ``p``."""
    return pattern_key(r, p, w, c, rows, rows.row_len[r])


@jit(inline="always")
def pattern_key(r, p, w, c, rows, n_elements):
    """Key of the first ``n_elements`` elements of row ``r`` at position ``p`` (the rest ``EMPTY``)."""
    row_off, row_type = rows.row_off, rows.row_type
    s0 = EMPTY
    s1 = EMPTY
    s2 = EMPTY
    s3 = EMPTY
    for e in range(n_elements):
        q = p + row_off[r, e]
        s = w[q] if row_type[r, e] == 0 else c[q]
        if e == 0:
            s0 = s
        elif e == 1:
            s1 = s
        elif e == 2:
            s2 = s
        else:
            s3 = s
    hi = (np.int64(rows.row_group[r]) << 48) | (np.int64(s0) << 24) | np.int64(s1)
    lo = (np.int64(s2) << 24) | np.int64(s3)
    return hi, lo


@jit(inline="always")
def row_fires(r, p, j, rows):
    return p + rows.row_off[r, 0] >= 0 and not (rows.row_len[r] == 1 and p == j + 1)


@jit(inline="always")
def key_hash(hi, lo):
    h = hi * np.int64(-7046029254386353131) + lo
    h = h * np.int64(-4417276706812531889)
    return h ^ (h >> 31)


@jit(inline="always")
def fingerprint(h):
    return (h >> 32) & np.int64(0x7FFFFFFF)


@jit
def table_insert_all(key_hi, key_lo, slots):
    """Fill ``slots`` (all -1, power-of-two size) with ``fingerprint << 32 | index`` of the distinct keys.

    The 31-bit fingerprint (other hash bits than the slot's) lets a probe reject a different key
    without reading the key arrays, so a look-up of an unseen n-gram costs about one cache miss.
    """
    mask = slots.size - 1
    for f in range(key_hi.size):
        h = key_hash(key_hi[f], key_lo[f])
        s = h & mask
        while slots[s] >= 0:
            s = (s + 1) & mask
        slots[s] = (fingerprint(h) << 32) | f


@jit(inline="always")
def table_find(hi, lo, key_hi, key_lo, slots):
    """Index of key ``(hi, lo)`` or -1 (linear probing)."""
    mask = slots.size - 1
    h = key_hash(hi, lo)
    fp = fingerprint(h)
    s = h & mask
    while True:
        v = slots[s]
        if v < 0:
            return -1
        if (v >> 32) == fp:
            f = v & np.int64(0xFFFFFFFF)
            if key_hi[f] == hi and key_lo[f] == lo:
                return f
        s = (s + 1) & mask


@jit
def table_lookup_many(hi, lo, key_hi, key_lo, slots):
    """:func:`table_find` of many keys."""
    out = np.empty(hi.size, dtype=np.int64)
    for k in range(hi.size):
        out[k] = table_find(hi[k], lo[k], key_hi, key_lo, slots)
    return out


@jit
def corpus_keys(corpus, symbols, rows):
    """Keys of every firing (position, row) of a corpus, for building the feature set."""
    offsets = corpus.offsets
    n_sent = offsets.size - 1
    n_rows = rows.row_len.size
    total, longest = corpus_sizes(offsets, n_rows)
    hi_out = np.empty(total, dtype=np.int64)
    lo_out = np.empty(total, dtype=np.int64)
    n = 0
    w = np.empty(longest + 2, dtype=np.int64)
    c = np.empty(longest + 2, dtype=np.int64)
    for i in range(n_sent):
        j = load_sentence(corpus.tokens[offsets[i]:offsets[i + 1]], symbols, w, c)
        for p in range(1, j + 2):
            for r in range(n_rows):
                if row_fires(r, p, j, rows):
                    hi, lo = row_key(r, p, w, c, rows)
                    hi_out[n] = hi
                    lo_out[n] = lo
                    n += 1
    return hi_out[:n], lo_out[:n]


@jit
def load_sentence(sentence, symbols, w, c):
    """Fill ``w``/``c`` with ``<s> sentence </s>`` (``symbols``: any bundle with ``word_class``, ``n_words``,
    ``n_classes``); return the length."""
    word_class = symbols.word_class
    j = sentence.size
    w[0] = symbols.n_words + 1
    c[0] = symbols.n_classes + 1
    for k in range(j):
        w[k + 1] = sentence[k]
        c[k + 1] = word_class[sentence[k]]
    w[j + 1] = symbols.n_words
    c[j + 1] = symbols.n_classes
    return j


@jit(inline="always")
def row_feature(r, p, j, w, c, fa):
    """Index of the feature that row ``r`` fires at position ``p`` (-1 if it does not fire or is unseen)."""
    if not row_fires(r, p, j, fa):
        return -1
    hi, lo = row_key(r, p, w, c, fa)
    return table_find(hi, lo, fa.key_hi, fa.key_lo, fa.slots)


@jit(inline="always")
def row_weight(r, p, j, w, c, lam, fa):
    """``lam`` of the feature that row ``r`` fires at position ``p`` (0 if it does not fire or is unseen)."""
    f = row_feature(r, p, j, w, c, fa)
    return lam[f] if f >= 0 else 0.0


@jit
def corpus_sizes(offsets, n_rows):
    """``(upper bound on firings = sum (L + 1) * n_rows, longest sentence)`` of a flat corpus."""
    total = 0
    longest = 0
    for i in range(offsets.size - 1):
        total += (offsets[i + 1] - offsets[i] + 1) * n_rows
        longest = max(longest, offsets[i + 1] - offsets[i])
    return total, longest


@jit
def positions_score(w, c, j, p_from, p_to, lam, fa):
    """Sum of ``lam`` over the features firing at positions ``p_from..p_to`` (clipped to ``1..j+1``)."""
    total = 0.0
    for p in range(max(p_from, 1), min(p_to, j + 1) + 1):
        for r in range(fa.row_len.size):
            total += row_weight(r, p, j, w, c, lam, fa)
    return total


@jit
def corpus_scores(corpus, symbols, lam, fa, out):
    """``out[i] = lambda . f(sentence i)`` for every sentence of a flat corpus (every row looked up)."""
    offsets = corpus.offsets
    _, longest = corpus_sizes(offsets, 0)
    w = np.empty(longest + 2, dtype=np.int64)
    c = np.empty(longest + 2, dtype=np.int64)
    for i in range(offsets.size - 1):
        j = load_sentence(corpus.tokens[offsets[i]:offsets[i + 1]], symbols, w, c)
        out[i] = positions_score(w, c, j, 1, j + 1, lam, fa)


@jit
def accumulate_features(w, c, j, weight, acc, fa):
    """``acc[f] += weight * f(x)`` for the features of one sentence."""
    for p in range(1, j + 2):
        for r in range(fa.row_len.size):
            f = row_feature(r, p, j, w, c, fa)
            if f >= 0:
                acc[f] += weight


@jit
def corpus_feature_hits(corpus, symbols, fa):
    """``(sentence index, feature index)`` of every firing of an observed feature in a flat corpus."""
    offsets = corpus.offsets
    n_sent = offsets.size - 1
    total, longest = corpus_sizes(offsets, fa.row_len.size)
    sent_out = np.empty(total, dtype=np.int64)
    feat_out = np.empty(total, dtype=np.int64)
    w = np.empty(longest + 2, dtype=np.int64)
    c = np.empty(longest + 2, dtype=np.int64)
    n = 0
    for i in range(n_sent):
        j = load_sentence(corpus.tokens[offsets[i]:offsets[i + 1]], symbols, w, c)
        for p in range(1, j + 2):
            for r in range(fa.row_len.size):
                f = row_feature(r, p, j, w, c, fa)
                if f >= 0:
                    sent_out[n] = i
                    feat_out[n] = f
                    n += 1
    return sent_out[:n], feat_out[:n]


@jit
def corpus_scores_pruned(corpus, symbols, lam, fa, plan, out):
    """:func:`corpus_scores` that reads the small rows from dense tables and skips the look-up of a row whose
    parent row fired with an unseen n-gram (:class:`ScorePlan`).

    ``plan.order`` lists the rows with every row after its parents (shorter patterns first); ``plan.parents[r, a]``
    (-1 pads) are rows whose pattern is a proper sub-pattern of row ``r``'s: wherever ``r`` fires they
    fire on a subset of the same symbols, so an unseen parent n-gram means an unseen n-gram of ``r``.
    """
    order, parents, dense_base, dense, width = plan.order, plan.parents, plan.dense_base, plan.dense, plan.width
    key_hi, key_lo, slots, _, row_len, row_off, row_type = fa
    offsets, tokens = corpus.offsets, corpus.tokens
    _, longest = corpus_sizes(offsets, 0)
    w = np.empty(longest + 2, dtype=np.int64)
    c = np.empty(longest + 2, dtype=np.int64)
    found = np.empty(row_len.size, dtype=np.int64)  # -2: does not fire, -1: unseen, else feature index
    for i in range(offsets.size - 1):
        j = load_sentence(tokens[offsets[i]:offsets[i + 1]], symbols, w, c)
        total = 0.0
        for p in range(1, j + 2):
            for k in range(order.size):
                r = order[k]
                if p + row_off[r, 0] < 0 or (row_len[r] == 1 and p == j + 1):
                    found[r] = -2
                    continue
                skip = False
                for a in range(parents.shape[1]):
                    q = parents[r, a]
                    if q >= 0 and found[q] == -1:
                        skip = True
                        break
                if skip:
                    found[r] = -1
                    continue
                base = dense_base[r]
                if base >= 0:
                    if row_len[r] == 1:
                        f = dense[base + (w[p] if row_type[r, 0] == 0 else c[p])]
                    else:
                        f = dense[base + c[p + row_off[r, 0]] * width + c[p]]
                else:
                    hi, lo = row_key(r, p, w, c, fa)
                    f = table_find(hi, lo, key_hi, key_lo, slots)
                found[r] = f
                if f >= 0:
                    total += lam[f]
        out[i] = total
