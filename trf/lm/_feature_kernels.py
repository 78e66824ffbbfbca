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

from typing import Any, NamedTuple

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from samplers._jit import jit

EMPTY = (1 << 24) - 1
MAX_SYMBOL = EMPTY - 1
SCORE_BLOCK = 1024  # positions whose hash look-ups of one row are issued together (corpus_scores_pruned)


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
    """How :func:`corpus_scores_pruned` visits the rows.

    ``order``: the rows in the order a sentence's weights are added (shorter patterns first); ``visit``: the order
    the rows are looked up in, in levels ``visit[level_end[v]:level_end[v + 1]]`` whose rows have their parents
    ``parents[r, a]`` (-1 pads; up to three columns are read) in earlier levels.
    Rows with small key spaces do not read the hash table: row ``r`` with ``dense_base[r] >= 0`` reads
    ``dense[dense_base[r] + s0]`` (one symbol) or ``dense[dense_base[r] + s0 * width + s1]`` (two class symbols), the
    feature index or -1.  Row ``r`` with ``bit_base[r] >= 0`` reads a rank bitmap at key ``k``: three class symbols,
    ``k = bit_base[r] + (s0 * width + s1) * width + s2``; two words, both among the ``n_frequent`` words that
    ``frequent`` numbers (``frequent[w] = n_frequent`` for the others, which read the hash table), ``k = bit_base[r] +
    frequent[w0'] * n_frequent + frequent[w1']``.  ``bits[2 * i]`` holds keys ``64 i .. 64 i + 63`` (bit set: an
    observed n-gram) and ``bits[2 * i + 1]`` the number of set bits before them, so a set bit's rank is that count
    plus the set bits below it in its word, and its feature is ``bit_feature[rank]``."""

    order: np.ndarray
    visit: np.ndarray
    level_end: np.ndarray
    parents: np.ndarray
    dense_base: np.ndarray
    dense: np.ndarray
    width: int
    bit_base: np.ndarray
    bits: np.ndarray
    bit_feature: np.ndarray
    frequent: np.ndarray
    n_frequent: int


@jit(inline="always")
def row_key(r, p, w, c, rows):
    """Key of row ``r`` at position ``p``."""
    return pattern_key(r, p, w, c, rows, rows.row_len[r])


@jit(inline="always")
def pattern_key(r, p, w, c, rows, hole):
    """Key of row ``r`` at position ``p`` with element ``hole`` left ``EMPTY`` (``hole = row_len[r]``: the whole key;
    ``row_len[r] - 1``: its context, the key of its successor list; any other element: the key of a TransMS hole
    table's group)."""
    row_off, row_type = rows.row_off, rows.row_type
    s0 = EMPTY
    s1 = EMPTY
    s2 = EMPTY
    s3 = EMPTY
    for e in range(rows.row_len[r]):
        if e == hole:
            continue
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
    """``out[i]``: the score of sentence ``i`` (:func:`corpus_scores`), by :func:`_pruned_pass`."""
    no = np.zeros(0, dtype=np.int64)
    _pruned_pass(corpus, symbols, lam, fa, plan, out, (no, no, no))


@jit
def corpus_hits_pruned(corpus, symbols, lam, fa, plan, rows):
    """``(sentence index, feature index)`` of every firing of an observed feature, sentences, their positions, then
    the rows in the order ``rows`` (``arange``: :func:`corpus_feature_hits`'s pairs in its order; ``plan.order``: the
    order in which :func:`corpus_scores_pruned` adds their weights), by :func:`_pruned_pass`'s look-ups; ``lam`` (any
    array of ``n_features`` weights) is read but not used."""
    total, _ = corpus_sizes(corpus.offsets, fa.row_len.size)
    sent_out = np.empty(total, dtype=np.int64)
    feat_out = np.empty(total, dtype=np.int64)
    n = _pruned_pass(corpus, symbols, lam, fa, plan, np.zeros(0), (rows, sent_out, feat_out))
    return sent_out[:n], feat_out[:n]


@jit
def hit_sums(sentence, feature, lam, out):
    """``out[i]``: the sum of ``lam`` over the firings ``(sentence[h], feature[h])`` of sentence ``i``, added in their
    order from 0 (:func:`corpus_hits_pruned` in the scorer's order gives its scores bit for bit, at about a third of
    its time on the fortunes full-set model)."""
    out[:] = 0.0
    for h in range(np.uint64(sentence.size)):
        out[np.uint64(sentence[h])] += lam[np.uint64(feature[h])]


@jit
def _pruned_pass(corpus, symbols, lam, fa, plan, out, hit_arrays):
    """:func:`corpus_scores` that reads the small rows from dense tables and rank bitmaps, skips the look-up of a row
    whose parent row fired with an unseen n-gram (:class:`ScorePlan`), and issues the look-ups of many positions
    together.

    ``plan.visit`` lists the rows with every row after its parents; ``plan.parents[r]`` (-1 pads) are rows whose
    pattern is a proper sub-pattern of row ``r``'s or the class projection of one: wherever ``r`` fires they fire
    on a function of the same symbols, so an unseen parent n-gram means an unseen n-gram of ``r``.

    The sentences are taken in blocks of about ``SCORE_BLOCK`` positions (or one longer sentence) and the rows in
    ``plan.visit``, level by level (``plan.level_end``: the rows of a level have their parents in earlier levels).
    For the rows of one level, every position of the block whose parents are seen is queued first (a dense row: the
    table's index; a bitmap row: the bit's index; else the key and its hash); then the dense entries and weights are
    read in branch-free passes, the bitmaps' words and ranks, features and weights likewise; the hashed look-ups'
    first slots are read in one branch-free pass, the probes are resolved on the lines just read, and the
    candidates' keys and weights are read in a second branch-free pass and compared.  The loads of a pass do
    not depend on each other, so their cache misses overlap instead of following one another (one look-up at a
    time, a look-up's misses -- slot, ``key_hi``, ``key_lo``, ``lam`` -- and the branch on each stall the next:
    3.1-3.4x the time, experiments/trf_lm/methods.md).  Queuing a look-up prefetches the first line it reads, and each pass
    prefetches the lines of the next one: a load that misses holds up the instructions behind it, a prefetch does
    not (about half the time of the full set, docs/trf-lm.md).  A sentence's score adds the same ``lam`` in the same
    order (positions, then ``plan.order``) as one look-up at a time would, so the result does not depend on the
    blocks, the levels or the tables a row is read from.

    With ``hit_arrays = (rows, sent_out, feat_out)``'s ``sent_out`` empty each sentence's score goes to ``out``; else
    every firing's sentence and feature go to ``sent_out`` and ``feat_out``, a position's rows in the order ``rows``
    (:func:`_block_hits`), and the number of firings is returned.
    """
    order, row_len = plan.order, fa.row_len
    rows, sent_out, feat_out = hit_arrays
    hits = sent_out.size > 0
    n_hits = 0
    offsets = corpus.offsets
    _, longest = corpus_sizes(offsets, 0)
    cap = SCORE_BLOCK + longest + 1  # positions of a block
    n_rows = row_len.size
    src = np.full((n_rows, 4), 2, dtype=np.int64)
    off = np.zeros((n_rows, 4), dtype=np.int64)
    pair_group = np.ones(n_rows, dtype=np.bool_)  # every row of r's group has at most two elements
    for r in range(n_rows):
        for e in range(row_len[r]):
            src[r, e] = fa.row_type[r, e]
            off[r, e] = fa.row_off[r, e]
        for q in range(n_rows):
            if fa.row_group[q] == fa.row_group[r] and row_len[q] > 2:
                pair_group[r] = False
    block = _ScoreBlock(np.full((4, 2 * cap + 2), EMPTY, dtype=np.int64), src, off, np.empty(cap, dtype=np.int64),
                        np.empty(cap, dtype=np.int64), np.empty(cap, dtype=np.int64),
                        np.full((n_rows, cap), -2, dtype=np.int64), np.zeros((n_rows, cap)))
    size = n_rows * cap  # every row of a level at every position of a block
    look = _LookUps(np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64),
                    np.empty(size, dtype=np.int64), np.empty(size, dtype=np.bool_), np.empty(size, dtype=np.int64),
                    np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64), np.empty(size),
                    np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64),
                    np.empty(size, dtype=np.int64))
    found, val = block.found.reshape(size), block.val.reshape(size)
    first = 0
    while first < offsets.size - 1:
        last, n_pos = _load_block(corpus, symbols, plan, first, block)
        for v in range(plan.level_end.size - 1):
            counts = (np.int64(0), np.int64(0), np.int64(0))
            for k in range(plan.level_end[v], plan.level_end[v + 1]):
                counts = _row_look_ups(plan.visit[k], n_pos, fa, plan, block, look, counts, pair_group)
            n, n_bits, n_dense = counts
            _resolve_dense(n_dense, lam, plan, found, val, look)
            _resolve_bits(n_bits, lam, plan, found, val, look)
            _resolve_look_ups(n, lam, fa, found, val, look)
        if hits:
            n_hits = _block_hits(first, last, offsets, block.found, rows, n_hits, sent_out, feat_out)
        else:
            _block_sums(first, last, offsets, order, block.val, out)
        first = last
    return n_hits


@jit(inline="always")
def _block_hits(first, last, offsets, found, rows, n, sent_out, feat_out):
    """Append the firings of the block's sentences ``first..last - 1`` (``found[r, t] >= 0``) to ``sent_out`` and
    ``feat_out`` from entry ``n`` on, sentence by sentence, position by position, rows in the order ``rows``; return
    the new count."""
    t = 0
    for i in range(first, last):
        for _ in range(offsets[i + 1] - offsets[i] + 1):
            for q in range(rows.size):
                f = found[rows[q], t]
                if f >= 0:
                    sent_out[n] = i
                    feat_out[n] = f
                    n += 1
            t += 1
    return n


@jit(inline="always")
def _block_sums(first, last, offsets, order, val, out):
    """``out[i]`` for the block's sentences ``first..last - 1``: the weights ``val[r, t]`` of each sentence's positions
    ``t``, then rows ``order``, added in that order -- the order of one look-up at a time, so the sums are the same
    bit for bit.  Four sentences are summed side by side: their chains of additions do not wait for each other."""
    t = 0
    i = first
    while i < last:
        n0 = offsets[i + 1] - offsets[i] + 1
        n1 = offsets[i + 2] - offsets[i + 1] + 1 if i + 1 < last else 0
        n2 = offsets[i + 3] - offsets[i + 2] + 1 if i + 2 < last else 0
        n3 = offsets[i + 4] - offsets[i + 3] + 1 if i + 3 < last else 0
        t0, t1, t2, t3 = t, t + n0, t + n0 + n1, t + n0 + n1 + n2
        total0 = total1 = total2 = total3 = 0.0
        for step in range(max(max(n0, n1), max(n2, n3))):
            a0, a1, a2, a3 = step < n0, step < n1, step < n2, step < n3
            for k in range(order.size):
                row = val[order[k]]
                if a0:
                    total0 += row[t0 + step]
                if a1:
                    total1 += row[t1 + step]
                if a2:
                    total2 += row[t2 + step]
                if a3:
                    total3 += row[t3 + step]
        out[i] = total0
        if i + 1 < last:
            out[i + 1] = total1
        if i + 2 < last:
            out[i + 2] = total2
        if i + 3 < last:
            out[i + 3] = total3
        t = t3 + n3
        i += 4


class _ScoreBlock(NamedTuple):
    """Work arrays of :func:`corpus_scores_pruned` for a block of positions ``t``: ``sym`` (4, buffer) holds the
    block's sentences as ``<s> words </s>`` (line 0), their classes (line 1), ``EMPTY`` (line 2) and the words'
    numbers among the frequent words (line 3, ``ScorePlan.frequent``); element ``e`` of row ``r`` at buffer index
    ``q`` is ``sym[src[r, e], q + off[r, e]]`` (missing elements read line 2); ``at[t]`` is the buffer index of
    position ``t``, ``local[t]`` its position in its sentence, ``last_p[t]`` that sentence's ``</s>`` position;
    ``found[r, t]`` is -2 (row does not fire), -1 (unseen) or the feature index, ``val[r, t]`` its weight (0 unless
    found)."""

    sym: np.ndarray
    src: np.ndarray
    off: np.ndarray
    at: np.ndarray
    local: np.ndarray
    last_p: np.ndarray
    found: np.ndarray
    val: np.ndarray


class _LookUps(NamedTuple):
    """The pending look-ups of one level's rows in a block, each at ``r * cap + t`` (row ``r``, position ``t``): the
    hashed ones (where, key, hash, whether the key's group has only pairs, then the candidate feature -- -1: none --
    and its key and weight), the bitmap reads (where, bit index) and the dense reads (where, table index)."""

    pos: np.ndarray
    hi: np.ndarray
    lo: np.ndarray
    hash: np.ndarray
    pair: np.ndarray
    cand: np.ndarray
    cand_hi: np.ndarray
    cand_lo: np.ndarray
    cand_lam: np.ndarray
    bit_pos: np.ndarray
    bit_index: np.ndarray
    dense_pos: np.ndarray
    dense_index: np.ndarray


@jit(inline="always")
def _load_block(corpus, symbols, plan, first, block):
    """Load sentences ``first, first + 1, ...`` into ``block`` until it holds ``SCORE_BLOCK`` positions (at least
    one sentence); return ``(last, n_pos)``: sentences ``first..last - 1``, ``n_pos`` positions."""
    offsets, tokens, sym, frequent = corpus.offsets, corpus.tokens, block.sym, plan.frequent
    n_pos = 0
    b = 0
    last = first
    while last < offsets.size - 1 and (last == first or n_pos < SCORE_BLOCK):
        j = load_sentence(tokens[offsets[last]:offsets[last + 1]], symbols, sym[0, b:], sym[1, b:])
        for p in range(j + 2):
            sym[3, b + p] = frequent[sym[0, b + p]]
        for p in range(1, j + 2):
            block.at[n_pos] = b + p
            block.local[n_pos] = p
            block.last_p[n_pos] = j + 1
            n_pos += 1
        b += j + 2
        last += 1
    return last, n_pos


@jit(inline="always")
def _row_look_ups(r, n_pos, fa, plan, block, look, counts, pair_group):
    """Row ``r`` at every position of the block: not firing (-2) and pruned by an unseen parent (-1) are resolved at
    once; the others are queued after the ``counts = (hashed, bitmap, dense)`` already queued: the dense table's
    index for a dense row; the bit's index for a bitmap row whose key is in its bitmap; else the key and its hash.
    Return the new counts."""
    n, n_bits, n_dense = counts
    sym, found, val, parents = block.sym, block.found, block.val, plan.parents
    bits, slots, dense = plan.bits, fa.slots, plan.dense
    mask = slots.size - 1
    first_off, unigram, base, bit_base = fa.row_off[r, 0], fa.row_len[r] == 1, plan.dense_base[r], plan.bit_base[r]
    group, width, n_frequent, pair = np.int64(fa.row_group[r]) << 48, plan.width, plan.n_frequent, pair_group[r]
    word_bits = bit_base >= 0 and fa.row_type[r, 0] == 0  # a word pair's bitmap, else three classes'
    n_par = parents.shape[1]
    q0, q1, q2 = parents[r, 0], parents[r, 1] if n_par > 1 else -1, parents[r, 2] if n_par > 2 else -1
    f0, f1, f2 = found[max(q0, 0)], found[max(q1, 0)], found[max(q2, 0)]
    sym0, sym1, sym2, sym3 = (sym[block.src[r, 0]], sym[block.src[r, 1]], sym[block.src[r, 2]],
                              sym[block.src[r, 3]])
    fq = sym[3]
    o0, o1, o2, o3 = block.off[r, 0], block.off[r, 1], block.off[r, 2], block.off[r, 3]
    found_r, val_r = found[r], val[r]
    at = r * found.shape[1]  # where row r's entries start in the flat block arrays
    for t in range(n_pos):
        p = block.local[t]
        found_r[t] = -1
        val_r[t] = 0.0
        if p + first_off < 0 or (unigram and p == block.last_p[t]):
            found_r[t] = -2
            continue
        if ((q0 >= 0) & (f0[t] == -1)) | ((q1 >= 0) & (f1[t] == -1)) | ((q2 >= 0) & (f2[t] == -1)):
            continue
        q = block.at[t]
        if base >= 0:  # queue the dense table's index
            k = base + sym0[q] if unigram else base + sym0[q + o0] * width + sym1[q]
            _prefetch(dense, k)
            look.dense_pos[n_dense] = at + t
            look.dense_index[n_dense] = k
            n_dense += 1
            continue
        if bit_base >= 0:
            if word_bits:
                a, b = fq[q + o0], fq[q]
                if (a < n_frequent) & (b < n_frequent):  # both words frequent: queue the bit's index
                    k = bit_base + a * n_frequent + b
                    _prefetch(bits, 2 * (k >> 6))
                    look.bit_pos[n_bits] = at + t
                    look.bit_index[n_bits] = k
                    n_bits += 1
                    continue
            else:
                k = bit_base + (sym0[q + o0] * width + sym1[q + o1]) * width + sym2[q]
                _prefetch(bits, 2 * (k >> 6))
                look.bit_pos[n_bits] = at + t
                look.bit_index[n_bits] = k
                n_bits += 1
                continue
        hi = group | (sym0[q + o0] << 24) | sym1[q + o1]
        lo = (sym2[q + o2] << 24) | sym3[q + o3]
        h = key_hash(hi, lo)
        _prefetch(slots, h & mask)
        look.pos[n] = at + t
        look.hi[n] = hi
        look.lo[n] = lo
        look.hash[n] = h
        look.pair[n] = pair
        n += 1
    return n, n_bits, n_dense


@jit(inline="always")
def _resolve_look_ups(n, lam, fa, found, val, look):
    """The ``n`` queued hash look-ups (:func:`table_find` of each, in passes whose loads overlap); ``found`` and
    ``val`` are the block's, flat.

    A key whose group has only pairs (``look.pair``: every row of the group has at most two elements, so every key
    of the group has the same ``lo``) is the candidate when their ``key_hi`` match: ``key_lo`` is not read."""
    key_hi, key_lo, slots = fa.key_hi, fa.key_lo, fa.slots
    mask = slots.size - 1
    for e in range(n):  # first probes, branch-free: the misses overlap
        look.cand[e] = slots[look.hash[e] & mask]
    for e in range(n):  # probe on along the lines just read: the first slot with the key's fingerprint, or -1
        h = look.hash[e]
        fp = fingerprint(h)
        v = look.cand[e]
        if (v >= 0) & ((v >> 32) != fp):  # the first slot holds another key (rarer than a hit or an empty slot)
            s = h & mask
            while (v >= 0) & ((v >> 32) != fp):
                s = (s + 1) & mask
                v = slots[s]
        f = (v & np.int64(0xFFFFFFFF)) | (v >> 63)  # the feature, or -1 (v < 0: an empty slot)
        _prefetch(key_hi, max(f, 0))
        _prefetch(lam, max(f, 0))
        look.cand[e] = f
    for e in range(n):  # the candidates' keys and weights, branch-free
        f = max(look.cand[e], 0)
        look.cand_hi[e] = key_hi[f]
        look.cand_lo[e] = look.lo[e] if look.pair[e] else key_lo[f]
        look.cand_lam[e] = lam[f]
    for e in range(n):
        f = look.cand[e]
        if (f >= 0) & ((look.cand_hi[e] != look.hi[e]) | (look.cand_lo[e] != look.lo[e])):  # fingerprint collision
            f = table_find(look.hi[e], look.lo[e], key_hi, key_lo, slots)
            look.cand_lam[e] = lam[max(f, 0)]
        t = look.pos[e]
        found[t] = f
        val[t] = look.cand_lam[e] if f >= 0 else 0.0


@jit(inline="always")
def _resolve_dense(n, lam, plan, found, val, look):
    """The ``n`` queued dense-table reads and their weights, in branch-free passes."""
    dense = plan.dense
    for e in range(n):
        f = dense[look.dense_index[e]]
        _prefetch(lam, max(f, 0))
        look.cand[e] = f
    _store_weights(n, lam, look.dense_pos, found, val, look)


@jit(inline="always")
def _store_weights(n, lam, where, found, val, look):
    """``found[where[e]]`` = the ``n`` queued reads' features ``look.cand[e]`` (-1: unseen) and ``val[where[e]]``
    their weights (0 when unseen)."""
    for e in range(n):
        f = look.cand[e]
        x = lam[max(f, 0)]
        t = where[e]
        found[t] = f
        val[t] = x if f >= 0 else 0.0


def _prefetch_typing(typingctx, array, index):
    """Ask for the cache line of ``array[index]`` (LLVM's ``prefetch``: no wait, no fault): a look-up queued now
    finds its line in cache when its pass reads it."""
    def codegen(context, builder, signature, args):
        item = cgutils.get_item_pointer(context, builder, signature.args[0],
                                        context.make_array(signature.args[0])(context, builder, args[0]), [args[1]],
                                        wraparound=False)
        byte_pointer = ir.IntType(8).as_pointer()
        int32 = ir.IntType(32)
        function = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [byte_pointer, int32, int32, int32]), "llvm.prefetch.p0i8")
        builder.call(function, [builder.bitcast(item, byte_pointer), ir.Constant(int32, 0), ir.Constant(int32, 3),
                                ir.Constant(int32, 1)])
        return context.get_dummy_value()
    return types.void(array, index), codegen


_prefetch: Any = intrinsic(_prefetch_typing)  # Any: called from jitted code as _prefetch(array, index)


def _set_bits_typing(typingctx, x):
    """Number of set bits of the int64 ``x`` (LLVM's ``ctpop``: one instruction where the CPU has one)."""
    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])
    return types.int64(types.int64), codegen


_set_bits: Any = intrinsic(_set_bits_typing)  # Any: called from jitted code as _set_bits(x)


@jit(inline="always")
def _resolve_bits(n, lam, plan, found, val, look):
    """The ``n`` queued bitmap reads (:class:`ScorePlan`) and their weights, in branch-free passes."""
    bits, bit_feature = plan.bits, plan.bit_feature
    for e in range(n):
        k = look.bit_index[e]
        word = bits[2 * (k >> 6)]
        b = k & 63
        rank = bits[2 * (k >> 6) + 1] + _set_bits(word & ((np.int64(1) << b) - 1))
        rank = rank if (word >> b) & 1 else bit_feature.size - 1  # bit_feature ends with a -1
        _prefetch(bit_feature, rank)
        look.cand[e] = rank
    for e in range(n):  # the features, then their weights: the loads of each pass overlap
        f = bit_feature[look.cand[e]]
        _prefetch(lam, max(f, 0))
        look.cand[e] = f
    _store_weights(n, lam, look.bit_pos, found, val, look)
