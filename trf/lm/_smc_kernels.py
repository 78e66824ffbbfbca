"""Numba kernels of the sequential Monte Carlo estimate of ``log Z_j`` (see :mod:`trf.lm.smc`).  Private.

The proposal at position ``p`` is the model's own local law ``q(w | history) ∝ exp(s_p(history, w))`` where
``s_p`` sums the weights of the features that fire at ``p`` (all of them end at ``p``).  It is computed without
visiting the whole vocabulary:

* the unigram part ``u[w]`` (word and class unigrams) is fixed, so ``U[k] = sum_{w in k} exp(u[w])`` is
  precomputed per class ``k``;
* every other feature ends either in a class symbol (``dc[k]``, a function of the candidate's class) or in a
  word symbol (``dw[w]``, sparse): its row's *context* (the symbols before the last one) is looked up in a
  table of contexts, which lists the observed final symbols and their feature indices (``SuccessorTables``);

so ``sum_w exp(s_p) = sum_k exp(dc[k]) (U[k] + sum_{touched w in k} exp(u[w]) (exp(dw[w]) - 1))`` costs
``O(n_classes + touched words)``, and a draw picks a class, then a word within it.  The word part is kept as the
factor ``exp(dw[w])``, a product of the successors' ``exp(lambda)`` (precomputed per bundle, as is ``exp(u)``),
and so is the class part ``exp(dc[k])``, so that neither the class masses nor the draws evaluate an exponential per
touched word or per class (the class part falls back to summed weights where the product leaves the float range).

Words are indexed by their *position* in the class order (``class_words``: the words of class ``k`` are the
positions ``class_start[k]:class_start[k + 1]``) everywhere a local law is held: the factors, the touched list and the
word-final successors of :class:`SuccessorTables` (sorted by position within each context).  Two things follow.
A history whose word-final successor lists are long (a trained full feature set: about 9,000 successors and
5,500 touched words per position on fortunes, most of them from the single-word contexts of the skip and tied
rows) takes the *dense* path: the factors are multiplied without tracking which words they touch, and each class's
mass is summed over its own contiguous positions, instead of the touched-word corrections.  And a child's draw needs
only its ancestor's class masses and context indices: the factors of the drawn class are the products over the
ancestor's word-final contexts of their successors inside that class's positions, found by binary search
(:func:`draw_kept_word`), so nothing of size ``V`` is kept between the weighting and the draws.

Layout of sentences as in :mod:`trf.lm._feature_kernels` (``w[0]`` is ``<s>``, ``</s>`` at ``j + 1``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import types
from numba.typed import Dict

from samplers._jit import jit
from samplers._kernels import logsumexp_1d
from trf.lm._feature_kernels import (
    HashedFeatures,
    _prefetch,
    fingerprint,
    key_hash,
    pattern_key,
    row_fires,
    row_key,
    row_weight,
    table_find,
)


class SuccessorTables(NamedTuple):
    """Contexts of the non-unigram features and their final symbols.

    Context ``k`` (key ``ctx_hi[k], ctx_lo[k]``: the feature key with its last symbol ``EMPTY``, found through
    ``ctx_slots``) has the final symbols ``succ_symbol[ctx_start[k]:ctx_start[k + 1]]``, in increasing order, with
    feature indices ``succ_feature[...]`` (the features ending in ``</s>`` are apart: :attr:`SMCModel.ctx_end_lam`).
    A class-final row's symbols are classes; a word-final row's are word positions in the class order
    (:class:`SMCModel` ``word_position``)."""

    ctx_hi: np.ndarray
    ctx_lo: np.ndarray
    ctx_slots: np.ndarray
    ctx_start: np.ndarray
    succ_symbol: np.ndarray
    succ_feature: np.ndarray


class SMCModel(NamedTuple):
    """Everything the SMC kernels read.  ``dense_from``: a history whose word-final successor lists hold more entries
    than this takes the dense path of :func:`local_tables` (0: always; the same law either way).  ``class_rows``: the
    successor lists of the class-final rows whose context is one class (``c-1 c0``, the class skips and the tied class
    rows: nearly every class follows each class) as dense rows of factors (:func:`class_factor_rows`), multiplied
    into the class factors whole instead of scattered entry by entry (the same products).  ``ctx_table``: the context of
    a row with one symbol before its last, found by that symbol instead of by hash (:func:`find_contexts`)."""

    n_words: int
    n_classes: int
    word_class: np.ndarray   # (V,)
    class_start: np.ndarray  # (C + 1,): words of class k are class_words[class_start[k]:class_start[k+1]]
    class_words: np.ndarray  # (V,) the word at each position of the class order
    word_position: np.ndarray  # (V,) each word's position: the inverse of class_words
    position_class: np.ndarray  # (V,) the class of each position (non-decreasing)
    u: np.ndarray            # (V,) unigram log-weights by word, shifted so that max(u) = 0
    exp_u: np.ndarray        # (V,) exp(u) by position
    class_mass: np.ndarray   # (C,) sum of exp(u) over each class
    lam: np.ndarray
    features: HashedFeatures
    succ: SuccessorTables
    succ_lam: np.ndarray     # lam[succ.succ_feature]: the successors' weights in successor order (read in sequence)
    succ_exp: np.ndarray     # exp(succ_lam)
    ctx_end_lam: np.ndarray  # (contexts,) lambda of each context followed by </s> (0: unseen)
    draw_row: np.ndarray     # (rows,) bool: the rows whose successors the proposal's local law visits (all: exact)
    rest_rows: np.ndarray    # rows weighed at the drawn word (empty: the exact, fully adapted proposal)
    rest_below: float        # a rest row's weight enters when its |lambda| is below this (inf: partial; trimmed: the
                             # threshold below which the word-final successor lists lost their entries)
    dense_from: int
    class_row_base: np.ndarray  # (rows,) a class-final row whose context is one class: its first row in class_rows
    class_rows: np.ndarray   # (n, C) at base + that class, its context's successors' exp(lambda) by class, 1 elsewhere
    ctx_table_base: np.ndarray  # (rows,) where a row whose context is one symbol has its table in ctx_table (-1: none)
    ctx_table: np.ndarray    # that symbol's context index, at the base plus the symbol (-1: unseen)


class KnownSet(NamedTuple):
    """Sentences to leave out of a run's ``log_rest`` (:class:`SMCOutput`), found by hash: those of length ``j`` are
    rows ``start[j]:start[j + 1]`` of ``tokens`` (zero-padded), sorted there by ``hashes`` (:func:`sentence_hash`);
    ``start`` of size below ``j + 2`` holds none of length ``j``."""

    start: np.ndarray   # int64
    hashes: np.ndarray  # int64
    tokens: np.ndarray  # int64 (n, width)


NO_KNOWN = KnownSet(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros((0, 1), dtype=np.int64))
NO_REST = np.zeros(0)


class SMCRun(NamedTuple):
    """One run's settings: particles, lengths ``1..max_length``, the kernel seed, the ``reference`` sentence
    (empty: a plain run; else conditional SMC), ``cache_bytes``, the memory that may hold the particles'
    class masses and context indices from their weighting to their children's draws (0: recompute the local tables
    for the draws) and the ``known`` sentences that :attr:`SMCOutput.log_rest` leaves out."""

    n_particles: int
    max_length: int
    seed: int
    reference: np.ndarray
    cache_bytes: int
    known: KnownSet = NO_KNOWN


class SMCOutput(NamedTuple):
    """Where a run writes: ``log_z[j - 1]``, ``ess[j - 1]``, the kept sentences ``keep[j - 1, s, :j]`` and, when
    ``log_rest`` is not empty, ``log_rest[j - 1]``: the same estimate with the end weights of the run's ``known``
    sentences set to 0, unbiased for ``Z_j`` less their weight (:func:`record_length`)."""

    log_z: np.ndarray
    ess: np.ndarray
    keep: np.ndarray
    log_rest: np.ndarray = NO_REST


class TableCache(NamedTuple):
    """What a child's draw needs of its ancestor identity's local law, kept from the weighting to the draws.

    ``mass[i]`` is identity ``i``'s class ``weight`` and ``ctx[i]`` its context index per template row (-1: none, or a
    row outside the proposal): :func:`draw_kept_word`.  ``kept[i]`` False: no room (the tables are recomputed)."""

    mass: np.ndarray   # (rows, C)
    ctx: np.ndarray    # (rows, n_template_rows)
    kept: np.ndarray   # (n_particles,) bool


class SMCWork(NamedTuple):
    """Scratch of one particle's local tables (words by position in the class order)."""

    dc: np.ndarray       # (C,) exp of the class-final feature weights (their sum where that product over- or
                         # underflows: :func:`class_weights`; read it through :func:`class_score`)
    factor: np.ndarray   # (V,) exp of the word-final feature weights (1 off the touched positions)
    mark: np.ndarray     # (V,) bool: position touched (sparse path)
    touched: np.ndarray  # (V + 1,) touched positions, first n_touched valid (one spare: written before the count)
    weight: np.ndarray   # (C,) each class's mass under the local law, relative (:func:`class_weights`)
    ctx: np.ndarray      # (n_template_rows,) the context index of each row the law reads (-1: none)
    segment: np.ndarray  # (largest class,) the factors of one class (:func:`draw_kept_word`)
    found: np.ndarray    # (n_template_rows,) the context index of every row (-1: none; :func:`find_contexts`)
    key_hi: np.ndarray   # (n_template_rows,) the rows' context keys and hashes, between the look-ups' passes
    key_lo: np.ndarray
    hashed: np.ndarray
    summed: np.ndarray   # (1,) bool: ``dc`` holds the summed weights, not their exp (:func:`shifted_class_weights`)


@jit
def successor_weights(succ_feature, lam, out_lam, out_exp, lo, hi):
    """``out_lam[s] = lam[succ_feature[s]]`` and ``out_exp[s]`` its ``exp`` for ``s`` in ``lo:hi`` (the exact
    proposal's successor weights: one pass instead of a gather and an ``exp`` over all entries; the bundle's passes
    index with unsigned integers, which need no wraparound test)."""
    for s in range(np.uint64(lo), np.uint64(hi)):
        x = lam[np.uint64(succ_feature[s])]
        out_lam[s] = x
        out_exp[s] = np.exp(x)


@jit
def gather_or_zero(index, lam, out, lo, hi):
    """``out[k] = lam[index[k]]``, or 0 where ``index[k] < 0``, for ``k`` in ``lo:hi`` (each context's ``</s>``
    weight)."""
    for k in range(np.uint64(lo), np.uint64(hi)):
        f = index[k]
        out[k] = lam[np.uint64(f)] if f >= 0 else 0.0


@jit
def count_kept(lists, lam, runs, trim, k_lo, k_hi):
    """How many successors of the contexts ``k_lo:k_hi`` the trimmed proposal keeps: every one in a run of contexts
    whose lists it keeps whole (``runs = (bounds, trims)``: contexts ``bounds[i]:bounds[i + 1]``, trimmed where
    ``trims[i]``; a class-final row's lists, or a word row's the proposal does not trim), the ones with ``|lambda| >=
    trim`` in the others."""
    ctx_start, _, succ_feature = lists
    bounds, trims = runs
    n = 0
    for i in range(trims.size):
        a, b = max(bounds[i], k_lo), min(bounds[i + 1], k_hi)
        if a >= b:
            continue
        if not trims[i]:
            n += ctx_start[b] - ctx_start[a]
            continue
        for s in range(np.uint64(ctx_start[a]), np.uint64(ctx_start[b])):
            n += abs(lam[np.uint64(succ_feature[s])]) >= trim
    return n


@jit
def keep_successors(lists, lam, runs, trim, k_lo, k_hi, n, kept):
    """The trimmed successor lists (``lists = (ctx_start, succ_symbol, succ_feature)``) of the contexts ``k_lo:k_hi``,
    written from entry ``n`` on into ``kept`` = ``(start, symbol, feature, lam, exp)``: each context's kept entries
    (:func:`count_kept`, whose ``runs`` it reads) in their order, with their weights and its ``exp``; ``start[k]`` is
    where context ``k``'s list begins.  A run of whole lists is copied at once (about 3 entries a context: a
    context at a time cost more than its entries)."""
    ctx_start, succ_symbol, succ_feature = lists
    start, symbol, feature, kept_lam, kept_exp = kept
    bounds, trims = runs
    for i in range(trims.size):
        a, b = max(bounds[i], k_lo), min(bounds[i + 1], k_hi)
        if a >= b:
            continue
        if not trims[i]:
            first, last = ctx_start[a], ctx_start[b]
            for k in range(a, b):
                start[k] = ctx_start[k] - first + n
            size = last - first
            symbol[n:n + size] = succ_symbol[first:last]
            feature[n:n + size] = succ_feature[first:last]
            successor_weights(feature[n:n + size], lam, kept_lam[n:n + size], kept_exp[n:n + size], 0, size)
            n += size
            continue
        for k in range(a, b):
            start[k] = n
            for s in range(np.uint64(ctx_start[k]), np.uint64(ctx_start[k + 1])):
                x = lam[np.uint64(succ_feature[s])]
                if abs(x) >= trim:
                    symbol[n], feature[n], kept_lam[n], kept_exp[n] = succ_symbol[s], succ_feature[s], x, np.exp(x)
                    n += 1


@jit
def class_factor_rows(contexts, ctx_start, succ_symbol, succ_exp, out):
    """``out[i]``: the successors' ``exp(lambda)`` of context ``contexts[i]`` (class-final: its symbols are classes)
    at their classes, 1 elsewhere (all of them where ``contexts[i] < 0``: an unseen context) -- the factors its list
    scatters into ``SMCWork.dc``, as one row."""
    for i in range(contexts.size):
        k = contexts[i]
        out[i, :] = 1.0
        if k < 0:
            continue
        for s in range(ctx_start[k], ctx_start[k + 1]):
            out[i, succ_symbol[s]] = succ_exp[s]


@jit
def new_work(model):
    """A cleared :class:`SMCWork` for ``model`` (factors 1, no word touched)."""
    V, C = model.n_words, model.n_classes
    largest = 1
    for k in range(C):
        largest = max(largest, model.class_start[k + 1] - model.class_start[k])
    R = model.features.row_len.size
    return SMCWork(np.zeros(C), np.ones(V), np.zeros(V, dtype=np.bool_), np.zeros(V + 1, dtype=np.int64),
                   np.zeros(C), np.full(R, -1, dtype=np.int64), np.ones(largest), np.full(R, -1, dtype=np.int64),
                   np.zeros(R, dtype=np.int64), np.zeros(R, dtype=np.int64), np.zeros(R, dtype=np.int64),
                   np.zeros(1, dtype=np.bool_))


@jit(inline="always")
def context_key(r, p, w, c, rows):
    """Key of row ``r`` at position ``p`` with its last (offset 0) symbol left ``EMPTY``."""
    return pattern_key(r, p, w, c, rows, rows.row_len[r] - 1)


@jit(inline="always")
def has_context(fa, r, p):
    """Whether row ``r`` has a context to look up at position ``p``: not a unigram row, and its first symbol inside
    the sentence."""
    return fa.row_len[r] != 1 and p + fa.row_off[r, 0] >= 0


@jit(inline="always")
def context_index(model, r, p, w, c):
    """Row ``r``'s context at position ``p`` in ``model.succ`` (-1: a unigram row, a row that does not fire at ``p``,
    or an unseen context)."""
    fa, succ = model.features, model.succ
    if not has_context(fa, r, p):
        return -1
    hi, lo = context_key(r, p, w, c, fa)
    return table_find(hi, lo, succ.ctx_hi, succ.ctx_lo, succ.ctx_slots)


@jit(inline="always")
def find_contexts(model, w, c, p, work):
    """``work.found[r]``: :func:`context_index` of every row ``r`` at position ``p``, the look-ups issued together so
    that their cache misses overlap: every row's key and hash first (prefetching its first slot), then each first slot
    (prefetching a candidate's key), then the comparisons -- a probe past the first slot, or a fingerprint that
    matched another key, takes :func:`table_find` from the start.  A row whose context is one symbol (a bigram or
    skip-bigram row) reads it from ``model.ctx_table`` at that symbol instead.  The same indices as one look-up at a
    time."""
    fa, succ = model.features, model.succ
    slots = succ.ctx_slots
    mask = slots.size - 1
    found, key_hi, key_lo, hashed = work.found, work.key_hi, work.key_lo, work.hashed
    for r in range(found.size):
        found[r] = -1
        if not has_context(fa, r, p):
            continue
        base = model.ctx_table_base[r]
        if base >= 0:
            q = p + fa.row_off[r, 0]
            found[r] = model.ctx_table[base + (w[q] if fa.row_type[r, 0] == 0 else c[q])]
            if found[r] >= 0:  # where its list starts, read next
                _prefetch(succ.ctx_start, found[r])
            continue
        hi, lo = context_key(r, p, w, c, fa)
        h = key_hash(hi, lo)
        key_hi[r], key_lo[r], hashed[r] = hi, lo, h
        _prefetch(slots, h & mask)
    for r in range(found.size):  # found[r] < -1: a candidate -2 - f; -1: absent or not looked up
        h = hashed[r]
        if not has_context(fa, r, p) or model.ctx_table_base[r] >= 0:
            continue
        v = slots[h & mask]
        if v < 0:
            continue
        if (v >> 32) == fingerprint(h):
            f = v & np.int64(0xFFFFFFFF)
            found[r] = -2 - f
            _prefetch(succ.ctx_hi, f)
            _prefetch(succ.ctx_lo, f)
        else:
            found[r] = -2 - succ.ctx_hi.size  # probe on
    for r in range(found.size):
        f = -2 - found[r]
        if f < 0:
            continue
        if f < succ.ctx_hi.size and succ.ctx_hi[f] == key_hi[r] and succ.ctx_lo[f] == key_lo[r]:
            found[r] = f
        else:
            found[r] = table_find(key_hi[r], key_lo[r], succ.ctx_hi, succ.ctx_lo, slots)
        if found[r] >= 0:  # where its list starts, read next
            _prefetch(succ.ctx_start, found[r])


@jit(inline="always")
def word_final(model, r):
    """Whether template row ``r`` ends in a word (its successors are word positions) rather than a class."""
    fa = model.features
    return fa.row_type[r, fa.row_len[r] - 1] == 0


@jit(inline="always")
def class_sum(model, factor, k, reset):
    """``sum`` of ``exp(u) factor`` over the positions of class ``k`` (contiguous), in four interleaved partial sums
    (one chain of additions would wait on each one's latency); ``reset``: the factors of the class back to 1 on the
    way (the dense path's weighing, whose factors are not drawn from)."""
    exp_u = model.exp_u
    i, stop = model.class_start[k], model.class_start[k + 1]
    a0 = a1 = a2 = a3 = 0.0
    while i + 4 <= stop:
        a0 += exp_u[i] * factor[i]
        a1 += exp_u[i + 1] * factor[i + 1]
        a2 += exp_u[i + 2] * factor[i + 2]
        a3 += exp_u[i + 3] * factor[i + 3]
        if reset:
            factor[i] = factor[i + 1] = factor[i + 2] = factor[i + 3] = 1.0
        i += 4
    while i < stop:
        a0 += exp_u[i] * factor[i]
        if reset:
            factor[i] = 1.0
        i += 1
    return (a0 + a1) + (a2 + a3)


@jit(inline="always")
def scale_class_factors(model, dc, r, k, p, c):
    """Multiply the successors' ``exp(lambda)`` of class-final row ``r``'s context ``k`` at position ``p`` into the
    class factors ``dc``: the row of ``model.class_rows`` of its context's class whole where row ``r`` has them (1
    off its successors: the same products), else its list."""
    base = model.class_row_base[r]
    if base >= 0:
        row = model.class_rows[base + c[p + model.features.row_off[r, 0]]]
        for x in range(dc.size):
            dc[x] *= row[x]
        return
    ctx_start, succ_symbol, succ_exp = model.succ.ctx_start, model.succ.succ_symbol, model.succ_exp
    for s in range(ctx_start[k], ctx_start[k + 1]):
        dc[np.uint64(succ_symbol[s])] *= succ_exp[s]


@jit
def local_tables(model, w, c, p, work, draw=True):
    """Fill ``work`` with the local law at position ``p`` given ``w[:p]``, ``c[:p]``; return ``(log Z_loc,
    n_touched, end)``: ``log sum_w exp(s_p(w))`` over the vocabulary (relative to the shift of ``model.u``), the
    number of touched positions (-1: the dense path, every factor may differ from 1; 0 on the dense path when not
    ``draw``: the factors are back to 1, only the class weights and contexts are kept) and the end score
    ``s_p(</s>)`` of the history as a sentence of length ``p - 1`` (:func:`end_score`), which reads the same
    contexts.  Only the rows of ``model.draw_row`` enter ``s_p`` (all of them but for the partial proposal,
    :func:`smc_log_z`); the end score reads every row.  ``work.ctx`` receives the context of each row that enters.

    The factors are the products of the successors' ``exp(lambda)`` in row order on either path.  Sparse path (the
    word-final lists hold at most ``model.dense_from`` entries): the touched positions are listed and each class's
    mass is ``U[k]`` plus their corrections (summed directly where they cancel).  Dense path: the factors are
    multiplied untracked and each class's mass summed over its positions.  The successor positions index the factors
    as unsigned integers (no wraparound test per entry: about a fifth of the scatter's time).  A class-final context
    of a row with rows in ``model.class_rows`` multiplies its whole row into the class factors instead of scattering
    its list.

    ``work.factor`` must be 1 and ``work.mark`` False everywhere (as :func:`clear_tables` leaves them)."""
    ctx_start, succ_symbol, succ_exp = model.succ.ctx_start, model.succ.succ_symbol, model.succ_exp
    C = model.n_classes
    dc, factor, mark, touched, ctx = work.dc, work.factor, work.mark, work.touched, work.ctx
    end = 0.0
    listed = 0
    find_contexts(model, w, c, p, work)
    for r in range(ctx.size):
        k = work.found[r]
        ctx[r] = -1
        if k < 0:
            continue
        end += model.ctx_end_lam[k]
        if model.draw_row[r]:
            ctx[r] = k
            if word_final(model, r):
                listed += ctx_start[k + 1] - ctx_start[k]
    dense = listed > model.dense_from
    for r in range(ctx.size):  # every list's first lines, ahead of the passes below
        k = ctx[r]
        if k >= 0 and (word_final(model, r) or model.class_row_base[r] < 0):
            _prefetch(succ_symbol, ctx_start[k])
            _prefetch(succ_exp, ctx_start[k])
    dc[:] = 1.0
    n_touched = 0
    for r in range(ctx.size):
        k = ctx[r]
        if k < 0:
            continue
        if not word_final(model, r):
            scale_class_factors(model, dc, r, k, p, c)
        elif dense:
            for s in range(ctx_start[k], ctx_start[k + 1]):
                factor[np.uint64(succ_symbol[s])] *= succ_exp[s]
        else:  # scale the touched positions' factors (no branch on the mark)
            for s in range(ctx_start[k], ctx_start[k + 1]):
                sym = np.uint64(succ_symbol[s])
                touched[n_touched] = sym
                n_touched += 1 - mark[sym]
                mark[sym] = True
                factor[sym] *= succ_exp[s]
    weight, class_mass, exp_u = work.weight, model.class_mass, model.exp_u
    if dense:
        for k in range(C):
            weight[k] = class_sum(model, factor, k, not draw)
        return class_weights(model, work), -1 if draw else 0, end
    # class masses: U[k] plus the corrections of the touched positions
    for k in range(C):
        weight[k] = class_mass[k]
    for t in range(n_touched):
        v = touched[t]
        weight[model.position_class[v]] += exp_u[v] * (factor[v] - 1.0)
    for k in range(C):
        if weight[k] < 1e-9 * class_mass[k]:  # heavy cancellation: sum the class directly
            weight[k] = class_sum(model, factor, k, False)
    return class_weights(model, work), n_touched, end


@jit(inline="always")
def class_weights(model, work):
    """Turn each class's mass ``work.weight[k]`` (``<= 0``: none) into its share of the local law, ``weight[k]``
    times the class factor ``work.dc[k]`` (the product of its class-final successors' ``exp(lambda)``), and return
    ``log`` of the local normaliser, ``log sum_k weight[k]`` (-inf: no class has mass); the draws read the weights
    as they are (:func:`draw_class`).  No ``exp`` per class.  Where that sum over- or underflows (class-final weights
    summing beyond about +-700, or masses as far out), the class weights are summed in logs instead:
    :func:`shifted_class_weights`."""
    dc, weight = work.dc, work.weight
    work.summed[0] = False
    total = 0.0
    for k in range(dc.size):
        if weight[k] > 0.0:
            total += weight[k] * dc[k]
    if not (1e-290 < total < np.inf):
        return shifted_class_weights(model, work)
    for k in range(dc.size):
        weight[k] = weight[k] * dc[k] if weight[k] > 0.0 else 0.0
    return np.log(total)


@jit
def shifted_class_weights(model, work):
    """:func:`class_weights` where the product of the class factors leaves the floating-point range: each class's
    share is ``weight[k] exp(dc[k] - top)``, ``dc[k]`` now the *sum* of its class-final weights (re-read from the
    contexts in ``work.ctx``) and ``top`` the largest one of a class with mass; returns ``top + log sum_k weight[k]``
    (-inf: no class has mass)."""
    ctx_start, succ_symbol, succ_lam = model.succ.ctx_start, model.succ.succ_symbol, model.succ_lam
    dc, weight, ctx = work.dc, work.weight, work.ctx
    work.summed[0] = True
    dc[:] = 0.0
    for r in range(ctx.size):
        k = ctx[r]
        if k >= 0 and not word_final(model, r):
            for s in range(ctx_start[k], ctx_start[k + 1]):
                dc[succ_symbol[s]] += succ_lam[s]
    top = -np.inf
    for k in range(dc.size):
        if weight[k] > 0.0 and dc[k] > top:
            top = dc[k]
    total = 0.0
    for k in range(dc.size):
        x = weight[k] * np.exp(dc[k] - top) if weight[k] > 0.0 else 0.0
        weight[k] = x
        total += x
    return top + np.log(total) if total > 0.0 else -np.inf


@jit(inline="always")
def class_score(work, k):
    """The class-final weight ``s`` of class ``k`` in the local law that :func:`local_tables` left in ``work`` (the
    law of a word of class ``k`` is ``exp(u + s) factor``), whichever form :func:`class_weights` kept it in."""
    return work.dc[k] if work.summed[0] else np.log(work.dc[k])


@jit
def history_end_score(model, w, c, p):
    """The end score of :func:`local_tables` alone: ``s_p(</s>)`` of ``w[:p]`` as a sentence of length ``p - 1``."""
    end = 0.0
    for r in range(model.features.row_len.size):
        k = context_index(model, r, p, w, c)
        if k >= 0:
            end += model.ctx_end_lam[k]
    return end


@jit
def clear_tables(work, n_touched):
    """Factors back to 1 and marks to False after :func:`local_tables` (``n_touched < 0``: the dense path)."""
    if n_touched < 0:
        work.factor[:] = 1.0
        return
    for t in range(n_touched):
        v = work.touched[t]
        work.factor[v] = 1.0
        work.mark[v] = False


@jit(inline="always")
def draw_class(weight):
    """A class by its weight (:func:`class_weights`)."""
    C = weight.size
    total = 0.0
    for kk in range(C):
        total += weight[kk]
    r = np.random.random() * total
    acc = 0.0
    k = C - 1
    for kk in range(C):
        acc += weight[kk]
        if r < acc:
            k = kk
            break
    while k > 0 and not weight[k] > 0.0:  # rounding at the end of the cdf (or no mass)
        k -= 1
    return k


@jit(inline="always")
def draw_in_class(model, factor, k, offset):
    """A word of class ``k`` by its weight ``exp(u) factor``, the factor of position ``i`` at ``factor[i - offset]``."""
    start, stop = model.class_start[k], model.class_start[k + 1]
    exp_u = model.exp_u
    total = 0.0
    for i in range(start, stop):
        total += exp_u[i] * factor[i - offset]
    target = np.random.random() * total
    acc = 0.0
    for i in range(start, stop):
        acc += exp_u[i] * factor[i - offset]
        if target < acc:
            return model.class_words[i]
    return model.class_words[stop - 1]


@jit
def draw_word(model, work):
    """A word from the local law in ``work``: a class, then a word in it."""
    return draw_in_class(model, work.factor, draw_class(work.weight), 0)


@jit
def draw_kept_word(model, cache, work, i):
    """A word from identity ``i``'s kept local law (:func:`keep_tables`): a class by the kept masses, then a word in
    it, whose factors are rebuilt in ``work.segment`` from the kept contexts: each word-final context's successors
    inside the class's positions (a binary search in the sorted list), multiplied in row order as
    :func:`local_tables` does, so the factors and the draw are bit for bit those of :func:`draw_word` on the
    recomputed tables."""
    k = draw_class(cache.mass[i])
    first, stop = model.class_start[k], model.class_start[k + 1]
    segment = work.segment
    segment[:stop - first] = 1.0
    ctx_start, succ_symbol, succ_exp = model.succ.ctx_start, model.succ.succ_symbol, model.succ_exp
    for r in range(cache.ctx.shape[1]):
        kk = cache.ctx[i, r]
        if kk < 0 or not word_final(model, r):
            continue
        hi = ctx_start[kk + 1]
        s = ctx_start[kk] + np.searchsorted(succ_symbol[ctx_start[kk]:hi], first)
        while s < hi and succ_symbol[s] < stop:
            segment[succ_symbol[s] - first] *= succ_exp[s]
            s += 1
    return draw_in_class(model, segment, k, first)


@jit
def end_score(model, w, c, j):
    """``s_{j+1}(w, </s>)``: the weights of the features firing at the end-of-sentence position."""
    fa = model.features
    w[j + 1] = model.n_words
    c[j + 1] = model.n_classes
    total = 0.0
    for r in range(fa.row_len.size):
        if row_fires(r, j + 1, j, fa):
            total += row_weight(r, j + 1, j, w, c, model.lam, fa)
    return total


@jit
def log_mean_exp(x):
    return logsumexp_1d(x) - np.log(x.size)


@jit
def systematic_ancestors(log_w, out):
    """Systematic resampling: ``out`` (sorted) holds ``out.size`` indices drawn in proportion to ``exp(log_w)``."""
    n = log_w.size
    n_out = out.size
    log_total = logsumexp_1d(log_w)
    u = np.random.random() / n_out
    acc = np.exp(log_w[0] - log_total)
    i = 0
    for k in range(n_out):
        target = u + k / n_out
        while acc < target and i < n - 1:
            i += 1
            acc += np.exp(log_w[i] - log_total)
        out[k] = i


@jit
def multinomial_ancestors(log_w, out, first):
    """Multinomial resampling: ``out[first:]`` (sorted) holds independent indices drawn in proportion to
    ``exp(log_w)``; ``out[:first]`` is left alone.  Sorted uniforms from normalised exponential spacings, O(n)."""
    n = log_w.size
    m = out.size - first
    if m <= 0:
        return
    log_total = logsumexp_1d(log_w)
    spacing = np.empty(m + 1)
    total = 0.0
    for k in range(m + 1):
        total += -np.log(1.0 - np.random.random())
        spacing[k] = total
    acc = np.exp(log_w[0] - log_total)
    i = 0
    for k in range(m):
        target = spacing[k] / total
        while acc < target and i < n - 1:
            i += 1
            acc += np.exp(log_w[i] - log_total)
        out[first + k] = i


@jit
def new_table_cache(run, n_classes, n_rows):
    """A :class:`TableCache` within ``run.cache_bytes`` (8 bytes per class and per template row for each identity),
    for at most ``n_particles`` identities."""
    n = run.n_particles
    rows = min(n, run.cache_bytes // (8 * (n_classes + n_rows)))
    return TableCache(np.empty((rows, n_classes)), np.empty((rows, n_rows), dtype=np.int64),
                      np.zeros(n, dtype=np.bool_))


@jit
def keep_tables(cache, work, i):
    """Keep identity ``i``'s class masses and contexts in ``cache`` if there is room."""
    if i >= cache.mass.shape[0]:
        cache.kept[i] = False
        return
    cache.mass[i, :] = work.weight
    cache.ctx[i, :] = work.ctx
    cache.kept[i] = True


class Particles(NamedTuple):
    """The particles' histories at one position: words ``w`` and classes ``c`` (``(n_particles, max_length + 2)``,
    ``w[:, 0]`` is ``<s>``) and ``ident``: particles with one identity have one history (all of them at ``p = 1``)."""

    w: np.ndarray
    c: np.ndarray
    ident: np.ndarray


class SMCScratch(NamedTuple):
    """What one run reuses at every position: one particle's local tables (``work``), the tables kept from the
    weighting to the draws (``cache``), the first particle of each identity (``first``), the incremental weights
    ``log_w``, the end-of-sentence weights ``ends``, the ancestors ``anc`` and, for a proposal that leaves rows out of
    its local law, the weight it left out at each particle's last word (``carry``: :func:`carry_rest`; 0 for the
    exact proposal)."""

    work: SMCWork
    cache: TableCache
    first: np.ndarray
    log_w: np.ndarray
    ends: np.ndarray
    anc: np.ndarray
    carry: np.ndarray
    rest_keys: tuple  # (key_hi, key_lo, hash, found), n_particles x rest rows each: :func:`rest_scores`


@jit
def new_particles(run, n_words, n_classes):
    """A :class:`Particles` of ``run.n_particles`` histories holding ``<s>``, all of one identity."""
    w = np.empty((run.n_particles, run.max_length + 2), dtype=np.int64)
    c = np.empty((run.n_particles, run.max_length + 2), dtype=np.int64)
    w[:, 0] = n_words + 1
    c[:, 0] = n_classes + 1
    return Particles(w, c, np.zeros(run.n_particles, dtype=np.int64))


@jit
def new_scratch(run, model):
    """The :class:`SMCScratch` of a run (the table cache within ``run.cache_bytes``)."""
    n = run.n_particles
    size = n * model.rest_rows.size
    keys = (np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64),
            np.empty(size, dtype=np.int64))
    return SMCScratch(new_work(model), new_table_cache(run, model.n_classes, model.features.row_len.size),
                      np.zeros(n, dtype=np.int64), np.empty(n), np.empty(n), np.empty(n, dtype=np.int64), np.zeros(n),
                      keys)


@jit
def end_weights(model, now, scratch, p, stop):
    """``scratch.ends[n]``: the end score of each particle's history ``x[:p]`` as a sentence of length ``p - 1``
    (once per identity), without its local tables (the last position); False when ``stop`` rose."""
    ends, first, ident = scratch.ends, scratch.first, now.ident
    for n in range(ends.size):
        if (n & 4095) == 4095 and stop[0] != 0:
            return False
        f = first[ident[n]]
        ends[n] = history_end_score(model, now.w[n], now.c[n], p) if f == n else ends[f]
    return True


@jit
def effective_size(log_w):
    """Effective sample size ``(sum w)^2 / sum w^2`` of the weights ``exp(log_w)``."""
    top = log_w.max()
    s1 = 0.0
    s2 = 0.0
    for n in range(log_w.size):
        e = np.exp(log_w[n] - top)
        s1 += e
        s2 += e * e
    return s1 * s1 / s2


@jit
def keep_sentences(now, ends, keep, j):
    """``keep[j - 1, s, :j]``: ``keep.shape[1]`` sentences of length ``j`` resampled systematically by their end
    weights ``exp(ends)``."""
    n_keep = keep.shape[1]
    if n_keep == 0:
        return
    picks = np.empty(n_keep, dtype=np.int64)
    systematic_ancestors(ends, picks)
    for s in range(n_keep):
        for q in range(1, j + 1):
            keep[j - 1, s, q - 1] = now.w[picks[s], q]


@jit
def sentence_hash(w, j):
    """A 64-bit hash (FNV-1a over the word ids, wrapping) of the sentence ``w[1:j + 1]``."""
    h = np.int64(-3750763034362895579)
    for q in range(1, j + 1):
        h = (h ^ w[q]) * np.int64(1099511628211)
    return h


@jit
def known_hashes(tokens, lengths):
    """:func:`sentence_hash` of each zero-padded row ``tokens[i, :lengths[i]]``."""
    out = np.empty(lengths.size, dtype=np.int64)
    row = np.zeros(tokens.shape[1] + 1, dtype=np.int64)
    for i in range(lengths.size):
        row[1:] = tokens[i]
        out[i] = sentence_hash(row, lengths[i])
    return out


@jit
def is_known(known, w, j):
    """Whether the sentence ``w[1:j + 1]`` is one of ``known``'s (:class:`KnownSet`)."""
    if j + 2 > known.start.size:
        return False
    lo, hi = known.start[j], known.start[j + 1]
    if lo == hi:
        return False
    h = sentence_hash(w, j)
    k = lo + np.searchsorted(known.hashes[lo:hi], h)
    while k < hi and known.hashes[k] == h:
        same = True
        for q in range(j):
            if known.tokens[k, q] != w[q + 1]:
                same = False
                break
        if same:
            return True
        k += 1
    return False


@jit
def unknown_ends(now, scratch, known, j):
    """``scratch.ends`` with the particles whose sentence ``x[1:j + 1]`` is in ``known`` set to -inf (a new array),
    each identity's history looked up once (``scratch.first``)."""
    ends, first = scratch.ends, scratch.first
    member = np.empty(ends.size, dtype=np.bool_)
    rest = np.empty(ends.size)
    for n in range(ends.size):
        f = first[now.ident[n]]
        member[n] = is_known(known, now.w[n], j) if f == n else member[f]
        rest[n] = -np.inf if member[n] else ends[n]
    return rest


@jit
def record_length(now, scratch, j, log_prefix, output, known):
    """End the particles at length ``j`` by their end weights ``scratch.ends``: ``output.log_z[j - 1]``
    (``log_prefix``, the log normaliser of the prefixes, plus the log mean end weight), ``output.ess[j - 1]`` and
    the kept sentences.  When ``output.log_rest`` is not empty, ``output.log_rest[j - 1]`` is the same with the end
    weights of the ``known`` sentences set to 0 -- the run's estimate for the target ``exp(lambda . f(x))`` restricted
    to the sentences outside ``known`` (its last potential times their indicator), unbiased for ``Z_j`` less their
    weight, and pinned to a reference outside them conditional SMC's upper side for that rest -- and the kept
    sentences are resampled by those weights: draws of the rest (by the full weights where the rest is empty)."""
    output.log_z[j - 1] = log_prefix + log_mean_exp(scratch.ends)
    output.ess[j - 1] = effective_size(scratch.ends)
    if output.log_rest.size == 0:
        keep_sentences(now, scratch.ends, output.keep, j)
        return
    rest = unknown_ends(now, scratch, known, j)
    log_rest = log_mean_exp(rest)
    output.log_rest[j - 1] = log_prefix + log_rest
    keep_sentences(now, rest if np.isfinite(log_rest) else scratch.ends, output.keep, j)


@jit
def weigh_particles(model, now, scratch, p, stop):
    """``scratch.log_w[n]``: each particle's local normaliser at position ``p`` (its incremental weight), and
    ``scratch.ends[n]`` its end score as a sentence of length ``p - 1``, computed once per identity, its tables kept
    in ``scratch.cache`` where there is room; False when ``stop`` rose."""
    work, cache, first, log_w, ends = scratch.work, scratch.cache, scratch.first, scratch.log_w, scratch.ends
    ident = now.ident
    for n in range(log_w.size):
        if (n & 4095) == 4095 and stop[0] != 0:
            return False
        i = ident[n]
        f = first[i]
        if f == n:
            log_w[n], n_touched, ends[n] = local_tables(model, now.w[n], now.c[n], p, work, False)
            keep_tables(cache, work, i)
            clear_tables(work, n_touched)
        else:
            log_w[n] = log_w[f]
            ends[n] = ends[f]
    return True


@jit
def resample(scratch, pinned):
    """``scratch.anc``: systematic ancestors by ``exp(scratch.log_w)``; pinned (conditional SMC), particle 0 keeps
    its own and the others are drawn multinomially."""
    if pinned:
        scratch.anc[0] = 0
        multinomial_ancestors(scratch.log_w, scratch.anc, 1)
    else:
        systematic_ancestors(scratch.log_w, scratch.anc)


@jit
def propagate(model, now, children, scratch, p, reference, stop):
    """``children``: each particle's ancestor's history (``scratch.anc``) extended by a word at ``p`` drawn from
    the ancestor's local law (kept in ``scratch.cache`` or recomputed), or the reference's word for the
    pinned particle 0 (``reference`` non-empty), and the children's identities (equal ancestor identity and word:
    one identity; ``scratch.first`` their first particles); False when ``stop`` rose."""
    work, cache, first, anc = scratch.work, scratch.cache, scratch.first, scratch.anc
    w, c, ident = now.w, now.c, now.ident
    w_new, c_new, ident_new = children.w, children.c, children.ident
    V = model.n_words
    pinned = reference.size > 0
    n_touched = 0
    tables_of = -1  # the identity whose local law ``work`` holds
    seen = Dict.empty(key_type=types.int64, value_type=types.int64)  # (identity, word) -> new identity
    for n in range(anc.size):
        if (n & 4095) == 4095 and stop[0] != 0:
            return False
        a = anc[n]
        ia = ident[a]
        for q in range(p):
            w_new[n, q] = w[a, q]
            c_new[n, q] = c[a, q]
        if pinned and n == 0:
            v = reference[p - 1]
        elif cache.kept[ia]:
            v = draw_kept_word(model, cache, work, ia)
        else:
            if ia != tables_of:
                clear_tables(work, n_touched)
                _, n_touched, _ = local_tables(model, w_new[n], c_new[n], p, work)
                tables_of = ia
            v = draw_word(model, work)
        w_new[n, p] = v
        c_new[n, p] = model.word_class[v]
        key = ia * (V + 1) + v
        k = seen.get(key, -1)
        if k < 0:
            k = len(seen)
            seen[key] = k
            first[k] = n
        ident_new[n] = k
    clear_tables(work, n_touched)
    return True


@jit
def smc_log_z(model, run, output, stop):
    """One SMC run (:class:`SMCRun`): ``output.log_z[j - 1]`` is the estimate of ``log Z_j`` for
    ``j = 1..max_length`` (relative to the shift of ``model.u``: add ``j * shift``), ``output.ess[j - 1]`` the
    effective sample size of the final ``</s>`` weights at length ``j``; ``output.keep[j - 1, s, :j]`` (``keep`` of
    shape ``(max_length, S, >= max_length)``, ``S`` may be 0) receives ``S`` sentences of length ``j`` drawn from the
    particles by their ``</s>`` weights (systematic resampling: an approximate sample of the model at length ``j``).

    Fully adapted particle filter: at each position every particle is weighted by its local normaliser
    (the incremental weight of the locally optimal proposal), the particles are resampled systematically,
    and every child draws its next word from the local law.  ``Z_j`` is estimated by the product of the mean
    incremental weights up to ``j`` times the mean ``exp(end score)`` -- unbiased for ``Z_j``.  The local tables
    that weigh a particle are the ones its children draw from: they are computed once per position for each
    distinct history (particles share one when they descend from one history and drew the same words: every
    particle at ``p = 1``, and most at a word the model is sure of), kept (within ``run.cache_bytes``) until the
    children have drawn, and recomputed only for histories that found no room -- the draws are the same either
    way, as are the end scores shared by equal histories.  One position is :func:`weigh_particles` (which also
    gives the end scores of the histories: they read the same contexts), :func:`record_length` (the sentences ending
    before it), :func:`resample` and :func:`propagate`.

    ``run.reference`` (int64 words) of length ``max_length`` makes it *conditional* SMC (Andrieu, Doucet and
    Holenstein 2010): particle 0 is pinned to the reference sentence (it keeps its own ancestor and takes the
    reference's word at every position), the other particles resample multinomially from all of them, and only
    ``log_z[max_length - 1]`` is meaningful.  When the reference is an exact draw of the model at that length,
    ``E[1 / Z-hat] = 1 / Z``, so ``log Z-hat`` errs *high* in expectation: the upper side of bidirectional Monte
    Carlo.  An empty ``reference`` gives the plain run.

    ``stop[0] != 0`` (set by another thread, e.g. on Ctrl-C) ends the run early, leaving the output incomplete.

    A bundle with ``rest_rows`` leaves those rows out of the local law (plain runs only; ``reference`` is not read):
    the *partial proposal* draws ``x_p`` from the local law ``q`` of the rows ``model.draw_row`` (the unigrams, those
    reading ``x_{p-1}`` and those ending in a class: few word successors), the *trimmed proposals* from every row's
    successor lists less their word-final entries of ``|lambda| < rest_below`` (:func:`keep_successors`).  What
    ``q`` left out at the drawn word, ``g_p``, :func:`rest_scores` (the other rows' weights; for the trimmed proposals exactly
    the weights the lists lost, at most ``rest_below`` per row), is carried to the next position
    (:func:`carry_rest`): there each particle is weighted by ``Z'(x_{<p + 1}) exp(g_p)``, ``Z'`` the normaliser of
    ``q``, and its end weight for length ``p`` is ``exp(g_p + end score)``.  The weights are known before the next
    word is drawn, so the particles are resampled first and every child draws its own word, as with the exact
    proposal; along a path the weights multiply to ``exp(lambda . f(x)) / q(x)`` times the end weight, so the product
    of the mean weights times the mean end weight is unbiased for ``Z_j`` (Del Moral 2004; an auxiliary particle
    filter whose intermediate targets are ``gamma_{p-1}(x_{<p}) Z'(x_{<p})``).  Until session 47 these proposals
    drew first and resampled by ``Z' exp(g_p)``, so a parent's children shared its drawn word: about 11% fewer
    distinct 3-word prefixes in a training batch of the fortunes full-set model than the exact proposal's
    (``experiments/trf_lm/batch_genealogy.py``; now 3-6% fewer), at about 0.75x of today's cost per run (fewer distinct
    histories to table)."""
    np.random.seed(run.seed)
    rest = model.rest_rows.size > 0
    pinned = run.reference.size > 0 and not rest
    now = new_particles(run, model.n_words, model.n_classes)
    children = new_particles(run, model.n_words, model.n_classes)
    scratch = new_scratch(run, model)
    log_prefix = 0.0
    for p in range(1, run.max_length + 2):
        if stop[0] != 0:
            return
        if p <= run.max_length:
            if not weigh_particles(model, now, scratch, p, stop):
                return
        elif not end_weights(model, now, scratch, p, stop):
            return
        if rest:  # the weight left out at each particle's last word (0 at p = 1)
            for n in range(scratch.carry.size):
                scratch.log_w[n] += scratch.carry[n]
                scratch.ends[n] += scratch.carry[n]
        if p >= 2 and (not pinned or p == run.max_length + 1):
            record_length(now, scratch, p - 1, log_prefix, output, run.known)
        if p > run.max_length:
            break
        log_prefix += log_mean_exp(scratch.log_w)
        resample(scratch, pinned)
        if not propagate(model, now, children, scratch, p, run.reference, stop):
            return
        if rest:
            carry_rest(model, children, scratch, p)
        now, children = children, now


@jit
def rest_scores(model, w, c, which, p, keys, out):
    """``out[m]``, for each history ``m`` in ``which`` (rows of ``w`` and ``c``): the weights that the proposal's local
    law left out at ``p`` with the word ``w[m, p]``: of the rows ``model.rest_rows`` firing there, each weight below
    ``model.rest_below`` in absolute value (every one for the partial proposal; for the trimmed one exactly the weights
    its successor lists lost) -- the importance correction (hash look-ups, no successor list).  The look-ups of all
    the histories are issued together, as :func:`find_contexts` issues one history's: every key and hash first,
    prefetching its first slot, then the first slots, prefetching a candidate's key and weight, then the comparisons
    (``keys = (key_hi, key_lo, hash, found)``, room for ``len(which) x rest rows``); a probe past the first slot, or a
    fingerprint that matched another key, takes :func:`table_find`.  Each history's sum adds its rows in order: the
    sum of one look-up at a time."""
    fa, lam, rows = model.features, model.lam, model.rest_rows
    slots = fa.slots
    mask = slots.size - 1
    key_hi, key_lo, hashed, found = keys
    R = rows.size
    for t in range(which.size):  # found[e]: -1 not firing, -2 - f a candidate, -3 - n_features probe on, 0 to look up
        m = which[t]
        for i in range(R):
            e = t * R + i
            if not row_fires(rows[i], p, p, fa):
                found[e] = -1
                continue
            hi, lo = row_key(rows[i], p, w[m], c[m], fa)
            h = key_hash(hi, lo)
            key_hi[e], key_lo[e], hashed[e], found[e] = hi, lo, h, 0
            _prefetch(slots, h & mask)
    for e in range(which.size * R):
        if found[e] == -1:
            continue
        h = hashed[e]
        v = slots[h & mask]
        if v < 0:
            found[e] = -1  # unseen: weight 0
        elif (v >> 32) == fingerprint(h):
            f = v & np.int64(0xFFFFFFFF)
            found[e] = -2 - f
            _prefetch(fa.key_hi, f)
            _prefetch(fa.key_lo, f)
            _prefetch(lam, f)
        else:
            found[e] = -2 - fa.key_hi.size
    for t in range(which.size):
        total = 0.0
        for e in range(t * R, (t + 1) * R):
            if found[e] == -1:
                continue
            f = -2 - found[e]
            if not (f < fa.key_hi.size and fa.key_hi[f] == key_hi[e] and fa.key_lo[f] == key_lo[e]):
                f = table_find(key_hi[e], key_lo[e], fa.key_hi, fa.key_lo, slots)
            x = lam[f] if f >= 0 else 0.0
            if abs(x) < model.rest_below:
                total += x
        out[which[t]] = total


@jit
def carry_rest(model, now, scratch, p):
    """``scratch.carry[n]``: :func:`rest_scores` of each particle's word at ``p``, the weight its proposal left out
    there, once per identity (``scratch.first``, as :func:`propagate` left it; an identity's first particle comes
    first), the look-ups of all of them issued together."""
    first, carry = scratch.first, scratch.carry
    which = np.empty(carry.size, dtype=np.int64)
    n = 0
    for m in range(carry.size):
        if first[now.ident[m]] == m:
            which[n] = m
            n += 1
    rest_scores(model, now.w, now.c, which[:n], p, scratch.rest_keys, carry)
    for m in range(carry.size):
        f = first[now.ident[m]]
        if f != m:
            carry[m] = carry[f]
