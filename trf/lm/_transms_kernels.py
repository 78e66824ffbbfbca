"""The hashed-n-gram (sentence) backend of TransMS: Numba operations for :mod:`trf._transms_skeleton`.  Private.

Class-based TransMS (Algorithm 2 of Table 1, Appendix C).  Sentence buffers follow
:mod:`trf.lm._feature_kernels` (``w[0] = <s>``, ``w[1..j]`` the words, ``w[j+1] = </s>``; ``c`` the
classes).  The model bundle :class:`SentenceModel` holds the hashed feature table
(:class:`HashedFeatures`), the per-distance row lists (:class:`TouchTables`, built by
:func:`trf.lm.transms.touch_tables` and :func:`trf.lm.transms.proposal_tables`): for each distance
``d = p - i`` the template rows that read position ``i`` through its class and those that read its word,
and the dense class-proposal tables; and the hole tables (:class:`HoleTables`) that give a row's features
for every word of a class at once.  ``span`` is the largest look-back of any template: changing position
``i`` changes the features at ``i .. i+span`` only.

The appended word is drawn as a class ``c0 ~ Q_{k+1}`` then a word within ``c0`` (Eq. 35), with the
density ``g`` of Eq. (36)/(37); the move within a length draws a class ``c0 ~ Q_i`` accepted by
Eq. (34), then a Gibbs draw of the word within the (new) class.  Word scores cover only the rows that
read the word itself (see :func:`class_word_scores`); the class part is the same for every word of a
class, which simplifies Eq. (34)-(37) without changing them.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from samplers._jit import jit
from samplers._kernels import categorical_from_logits, logsumexp_1d
from trf import _transms_skeleton as skeleton
from trf.lm._feature_kernels import (
    HashedFeatures,
    load_sentence,
    pattern_key,
    positions_score,
    row_feature,
    row_fires,
    table_find,
)


class TouchTables(NamedTuple):
    """Per distance ``d`` (CSR ``*_ptr``/``*_rows``): rows reading position ``i`` through its class, through
    its word; the class-proposal rows with their dense index tables."""

    class_ptr: np.ndarray
    class_rows: np.ndarray
    word_ptr: np.ndarray
    word_rows: np.ndarray
    proposal_ptr: np.ndarray
    proposal_rows: np.ndarray
    proposal_base: np.ndarray
    proposal_dense: np.ndarray


class HoleTables(NamedTuple):
    """Features grouped by their key with one word element blanked (:func:`trf.lm.transms.hole_tables`): group ``g``
    (key ``hi[g], lo[g]``, found through ``slots``) holds the blanked word's positions in the class order
    ``position[start[g]:start[g + 1]]`` (increasing) and the features ``feature[...]``."""

    hi: np.ndarray
    lo: np.ndarray
    slots: np.ndarray
    start: np.ndarray
    position: np.ndarray
    feature: np.ndarray


class SentenceModel(NamedTuple):
    """Everything the sentence TransMS kernels read: sizes, class map, lambda and the tables.
    ``proposal_weight[x]`` is ``lam[tables.proposal_dense[x]]`` (0 where the entry is -1): the class proposal's
    weights, read without going through the 3M-entry ``lam``."""

    m: int
    n_words: int
    n_classes: int
    word_class: np.ndarray      # (n_words,)
    class_start: np.ndarray     # (n_classes + 1,): words of class k are class_words[class_start[k]:class_start[k+1]]
    class_words: np.ndarray
    max_class_size: int
    span: int
    lam: np.ndarray
    features: HashedFeatures
    tables: TouchTables
    proposal_weight: np.ndarray
    holes: HoleTables


class SentenceWork(NamedTuple):
    """One chain's sentence buffers ``w``/``c`` (m + 3) and scratch: ``log_q`` (class proposal) and the word
    scores of two classes."""

    w: np.ndarray
    c: np.ndarray
    log_q: np.ndarray
    scores_a: np.ndarray
    scores_b: np.ndarray


@jit
def touched_score(model, work, j, i, ptr, rows):
    """Sum of ``lam`` over the features at ``p = i..i+span`` of the rows listed for ``d = p - i`` in
    ``rows[ptr[d]:ptr[d+1]]`` (rows that read position ``i``), one hash look-up each."""
    total = 0.0
    for d in range(model.span + 1):
        p = i + d
        if p > j + 1:
            break
        for t in range(ptr[d], ptr[d + 1]):
            f = row_feature(rows[t], p, j, work.w, work.c, model.features)
            if f >= 0:
                total += model.lam[f]
    return total


@jit
def class_proposal_logits(model, work, j, i):
    """``log_q[k] = log Q_i(k)`` (normalised): the class-only reduced model (Appendix C) restricted to the
    class unigram and (skip-)bigram rows that read position ``i``, read from dense tables.

    Each row that fires at ``p = i + d`` gives one run of weights over the candidate classes ``k``: its dense
    table's row for the fixed context class (``d = 0``, ``k`` the final class: consecutive entries) or its column
    for the fixed final class (``d > 0``, ``k`` the context class: entries ``C + 2`` apart), added to every
    ``log_q[k]`` in the order of the rows, so each ``log_q[k]`` is the same sum, in the same order, as one row at a
    time per class."""
    c, out = work.c, work.log_q
    fa, ptr, rows, base = model.features, model.tables.proposal_ptr, model.tables.proposal_rows, model.tables.proposal_base
    weight = model.proposal_weight
    n_classes, span = model.n_classes, model.span
    width = n_classes + 2
    out[:n_classes] = 0.0
    for d in range(span + 1):
        p = i + d
        if p > j + 1:
            break
        for t in range(ptr[d], ptr[d + 1]):
            r = rows[t]
            if not row_fires(r, p, j, fa):
                continue
            if fa.row_len[r] == 1:
                start, stride = base[r], 1
            elif d == 0:
                start, stride = base[r] + c[p + fa.row_off[r, 0]] * width, 1
            else:  # position i is the row's context
                start, stride = base[r] + c[p], width
            for k in range(n_classes):
                out[k] += weight[start + k * stride]
    lz = logsumexp_1d(out[:n_classes])
    for k in range(n_classes):
        out[k] -= lz


@jit
def class_score(model, work, j, i, k):
    """Log-potential of every row that reads position ``i`` through its class, with ``c_i = k``."""
    saved = work.c[i]
    work.c[i] = k
    total = touched_score(model, work, j, i, model.tables.class_ptr, model.tables.class_rows)
    work.c[i] = saved
    return total


@jit
def word_score(model, work, j, i):
    """Log-potential of the rows reading the *word* at position ``i``."""
    return touched_score(model, work, j, i, model.tables.word_ptr, model.tables.word_rows)


@jit
def class_word_scores(model, work, j, i, k, out):
    """``out[n]`` = log-potential of the rows reading the *word* at position ``i`` with ``x_i`` = the
    n-th word of class ``k``; returns the class size.  The rows reading ``i`` through its class add
    the same amount to every word of ``k`` (the unnormalised ``log Q_i(k)``) and the other rows do not
    depend on ``x_i``, so these scores are the within-class conditional up to a constant.

    Each row that reads the word at ``i`` from ``p = i + d`` looks up its key with that word blanked in
    :class:`HoleTables` once, and the binary search for the class's positions gives the features of every word of
    the class that it fires; the weights are added row by row in the order of ``tables.word_rows``, so each score is
    the same sum, in the same order, as one look-up per word and row (:func:`touched_score`)."""
    fa, tab, holes, lam = model.features, model.tables, model.holes, model.lam
    first, stop = model.class_start[k], model.class_start[k + 1]
    n = stop - first
    out[:n] = 0.0
    for d in range(model.span + 1):
        p = i + d
        if p > j + 1:
            break
        for t in range(tab.word_ptr[d], tab.word_ptr[d + 1]):
            r = tab.word_rows[t]
            if not row_fires(r, p, j, fa):
                continue
            hole = 0
            while fa.row_off[r, hole] != -d:
                hole += 1
            hi, lo = pattern_key(r, p, work.w, work.c, fa, hole)
            g = table_find(hi, lo, holes.hi, holes.lo, holes.slots)
            if g < 0:
                continue
            end = holes.start[g + 1]
            s = holes.start[g] + np.searchsorted(holes.position[holes.start[g]:end], first)
            while s < end and holes.position[s] < stop:
                out[holes.position[s] - first] += lam[holes.feature[s]]
                s += 1
    return n


@jit
def local_sum(model, work, j, p_lo, p_hi):
    """Sum of ``lam`` over all features firing at positions ``p_lo..p_hi``."""
    return positions_score(work.w, work.c, j, p_lo, p_hi, model.lam, model.features)


# --------------------------------------------------------------------------- the backend's operations


@skeleton.implements(skeleton.new_workspace, SentenceModel)
def _new_workspace(model):
    return SentenceWork(np.empty(model.m + 3, dtype=np.int64), np.empty(model.m + 3, dtype=np.int64),
                        np.empty(model.n_classes), np.empty(model.max_class_size), np.empty(model.max_class_size))


@skeleton.implements(skeleton.load_chain, SentenceModel)
def _load_chain(model, work, tokens_row, length):
    load_sentence(tokens_row[:length], model, work.w, work.c)


@skeleton.implements(skeleton.store_chain, SentenceModel)
def _store_chain(model, work, length, out_row):
    for i in range(length):
        out_row[i] = work.w[i + 1]


@skeleton.implements(skeleton.propose_append, SentenceModel)
def _propose_append(model, work, k):
    """Append ``c0 ~ Q_{k+1}`` and a word of ``c0`` (Eq. 35); return the feature part of Eq. (20) with g of Eq. (36)."""
    w, c = work.w, work.c
    old_local = local_sum(model, work, k, k + 1, k + 1)
    w[k + 2], c[k + 2] = model.n_words, model.n_classes
    class_proposal_logits(model, work, k + 1, k + 1)
    c0 = categorical_from_logits(work.log_q[:model.n_classes])
    n = class_word_scores(model, work, k + 1, k + 1, c0, work.scores_a)
    t = categorical_from_logits(work.scores_a[:n])
    w[k + 1], c[k + 1] = model.class_words[model.class_start[c0] + t], c0
    new_local = local_sum(model, work, k + 1, k + 1, k + 2)                 # all features at k+1, k+2
    log_g = work.log_q[c0] + work.scores_a[t] - logsumexp_1d(work.scores_a[:n])   # Eq. (35)-(36)
    return new_local - old_local - log_g


@skeleton.implements(skeleton.reject_append, SentenceModel)
def _reject_append(model, work, k):
    work.w[k + 1], work.c[k + 1] = model.n_words, model.n_classes


@skeleton.implements(skeleton.removal_log_ratio, SentenceModel)
def _removal_log_ratio(model, work, k):
    """``log p~(x^{k-1}) - log p~(x^k) + log g(x_k | x^{k-1})`` with g of Eq. (37) (the state is unchanged)."""
    w, c = work.w, work.c
    u_c = c[k]
    cur_local = local_sum(model, work, k, k, k + 1)
    class_proposal_logits(model, work, k, k)
    n = class_word_scores(model, work, k, k, u_c, work.scores_a)
    own = word_score(model, work, k, k)
    log_g = work.log_q[u_c] + own - logsumexp_1d(work.scores_a[:n])         # Eq. (37)
    u_w = w[k]
    w[k], c[k] = model.n_words, model.n_classes
    new_local = local_sum(model, work, k - 1, k, k)
    w[k], c[k] = u_w, u_c
    return new_local + log_g - cur_local


@skeleton.implements(skeleton.remove_last, SentenceModel)
def _remove_last(model, work, k):
    work.w[k], work.c[k] = model.n_words, model.n_classes


@skeleton.implements(skeleton.within_length_move, SentenceModel)
def _within_length_move(model, work, j, stats):
    """Class-based Markov move over positions ``1..j``: ``c0 ~ Q_i`` accepted by Eq. (34), then a word of the class."""
    w, c = work.w, work.c
    for i in range(1, j + 1):
        cur = c[i]
        class_proposal_logits(model, work, j, i)
        c0 = categorical_from_logits(work.log_q[:model.n_classes])
        n_cur = class_word_scores(model, work, j, i, cur, work.scores_a)
        n_new = 0
        chosen = cur
        if c0 != cur:
            stats[4] += 1
            n_new = class_word_scores(model, work, j, i, c0, work.scores_b)
            # Eq. (34): Q_i(cur)/Q_i(c0) times the ratio of the class marginals (class rows + word sums)
            log_acc = (work.log_q[cur] - work.log_q[c0] + class_score(model, work, j, i, c0)
                       + logsumexp_1d(work.scores_b[:n_new]) - class_score(model, work, j, i, cur)
                       - logsumexp_1d(work.scores_a[:n_cur]))
            if np.log(np.random.random()) < log_acc:
                chosen = c0
                stats[5] += 1
        if chosen == cur:
            t = categorical_from_logits(work.scores_a[:n_cur])
        else:
            t = categorical_from_logits(work.scores_b[:n_new])
        w[i], c[i] = model.class_words[model.class_start[chosen] + t], chosen
