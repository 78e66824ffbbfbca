"""Numba kernels of exchange word clustering (Martin, Liermann, Ney 1998).  Private: no validation.

The bigram graph travels as one :class:`BigramGraph` bundle and a word's counts by class as one
:class:`WordMove` (NamedTuples, one Numba argument each); the per-class helpers are inlined into the
exchange loop (``inline="always"``) and unpack the fields they read first.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from samplers._jit import jit


class BigramGraph(NamedTuple):
    """Successor and predecessor lists in CSR form (:func:`trf.lm.cluster.bigram_graph`): the successors
    ``v`` of word ``w`` are ``succ_idx[succ_ptr[w]:succ_ptr[w + 1]]`` with counts ``succ_cnt`` (predecessors
    likewise), and each word's left and right bigram margins ``word_left``, ``word_right`` (float64)."""

    succ_ptr: np.ndarray
    succ_idx: np.ndarray
    succ_cnt: np.ndarray
    pred_ptr: np.ndarray
    pred_idx: np.ndarray
    pred_cnt: np.ndarray
    word_left: np.ndarray
    word_right: np.ndarray


class WordMove(NamedTuple):
    """One word's bigram counts by class while it is moved: counts from predecessor / to successor classes
    (``pred_cls``, ``succ_cls``, (n_classes + 1,)), the ``n_pred`` / ``n_succ`` classes touched (listed in
    ``nz_pred``, ``nz_succ``), the count of its self-loop ``self_n`` and its margins ``w_left``, ``w_right``."""

    pred_cls: np.ndarray
    succ_cls: np.ndarray
    nz_pred: np.ndarray
    n_pred: int
    nz_succ: np.ndarray
    n_succ: int
    self_n: float
    w_left: float
    w_right: float


@jit
def xlogx(x):
    return x * np.log(x) if x > 0.0 else 0.0


@jit
def class_bigram_counts(cls, n_classes, succ_ptr, succ_idx, succ_cnt):
    """Class bigram counts ``N(c, d)`` (boundary class at index ``n_classes``) and margins."""
    counts = np.zeros((n_classes + 1, n_classes + 1))
    for v in range(succ_ptr.size - 1):
        for e in range(succ_ptr[v], succ_ptr[v + 1]):
            counts[cls[v], cls[succ_idx[e]]] += succ_cnt[e]
    return counts, counts.sum(axis=1), counts.sum(axis=0)


@jit
def class_log_likelihood(counts, left, right, word_term):
    """Class bigram log-likelihood ``sum N(c,d) log N(c,d)/N(c) + sum_w N(w) log N(w)/N(class(w))``."""
    total = word_term
    for c in range(counts.shape[0]):
        total -= xlogx(left[c]) + xlogx(right[c])
        for d in range(counts.shape[1]):
            total += xlogx(counts[c, d])
    return total


@jit
def gather_classes(w, ptr, idx, cnt, cls, acc, nz):
    """``acc[class(v)] += count(w, v)`` over the neighbours ``v != w`` of ``w``; lists the touched classes
    in ``nz``; returns ``(number touched, count of the self-loop (w, w))``."""
    self_n = 0.0
    n = 0
    for e in range(ptr[w], ptr[w + 1]):
        v = idx[e]
        if v == w:
            self_n += cnt[e]
            continue
        k = cls[v]
        if acc[k] == 0.0:
            nz[n] = k
            n += 1
        acc[k] += cnt[e]
    return n, self_n


@jit(inline="always")
def shift_word(k, sign, counts, left, right, move):
    """Add (``sign = 1``) or remove (``sign = -1``) a word's bigram counts (``move``) to/from class ``k``."""
    pred_cls, succ_cls, nz_pred, n_pred, nz_succ, n_succ, self_n, w_left, w_right = move
    for i in range(n_pred):
        c = nz_pred[i]
        if c != k:
            counts[c, k] += sign * pred_cls[c]
    for i in range(n_succ):
        d = nz_succ[i]
        if d != k:
            counts[k, d] += sign * succ_cls[d]
    counts[k, k] += sign * (pred_cls[k] + succ_cls[k] + self_n)
    left[k] += sign * w_left
    right[k] += sign * w_right


@jit(inline="always")
def _move_gain(k, counts, left, right, move):
    """Change of the log-likelihood when a word (already removed; its counts ``move``) joins class ``k``."""
    pred_cls, succ_cls, nz_pred, n_pred, nz_succ, n_succ, self_n, w_left, w_right = move
    gain = 0.0
    for i in range(n_pred):
        c = nz_pred[i]
        if c != k:
            gain += xlogx(counts[c, k] + pred_cls[c]) - xlogx(counts[c, k])
    for i in range(n_succ):
        d = nz_succ[i]
        if d != k:
            gain += xlogx(counts[k, d] + succ_cls[d]) - xlogx(counts[k, d])
    gain += xlogx(counts[k, k] + pred_cls[k] + succ_cls[k] + self_n) - xlogx(counts[k, k])
    gain -= xlogx(left[k] + w_left) - xlogx(left[k])
    gain -= xlogx(right[k] + w_right) - xlogx(right[k])
    return gain


@jit
def exchange_passes(cls, n_classes, order, graph, word_term, max_passes, history):
    """Run up to ``max_passes`` exchange passes in place on ``cls`` over the bigram ``graph`` (a
    :class:`BigramGraph`); ``history[p]`` gets the log-likelihood after pass ``p`` (``history[0]``:
    initial).  Returns the number of passes run."""
    succ_ptr, succ_idx, succ_cnt = graph.succ_ptr, graph.succ_idx, graph.succ_cnt
    pred_ptr, pred_idx, pred_cnt = graph.pred_ptr, graph.pred_idx, graph.pred_cnt
    word_left, word_right = graph.word_left, graph.word_right
    counts, left, right = class_bigram_counts(cls, n_classes, succ_ptr, succ_idx, succ_cnt)
    history[0] = class_log_likelihood(counts, left, right, word_term)
    sizes = np.zeros(n_classes, dtype=np.int64)
    for w in range(order.size):
        sizes[cls[w]] += 1
    pred_cls = np.zeros(n_classes + 1)
    succ_cls = np.zeros(n_classes + 1)
    nz_pred = np.empty(n_classes + 1, dtype=np.int64)
    nz_succ = np.empty(n_classes + 1, dtype=np.int64)
    passes = 0
    for p in range(1, max_passes + 1):
        moved = 0
        for w in order:
            old = cls[w]
            if sizes[old] == 1:
                continue  # keep every class non-empty
            n_pred, self_n = gather_classes(w, pred_ptr, pred_idx, pred_cnt, cls, pred_cls, nz_pred)
            n_succ, _ = gather_classes(w, succ_ptr, succ_idx, succ_cnt, cls, succ_cls, nz_succ)
            move = WordMove(pred_cls, succ_cls, nz_pred, n_pred, nz_succ, n_succ, self_n, word_left[w], word_right[w])
            shift_word(old, -1.0, counts, left, right, move)
            # staying put is the reference; another class must be strictly better
            best = old
            best_gain = _move_gain(old, counts, left, right, move)
            for k in range(n_classes):
                if k == old:
                    continue
                gain = _move_gain(k, counts, left, right, move)
                if gain > best_gain + 1e-10 * (1.0 + abs(best_gain)):
                    best_gain = gain
                    best = k
            shift_word(best, 1.0, counts, left, right, move)
            if best != old:
                sizes[old] -= 1
                sizes[best] += 1
                cls[w] = best
                moved += 1
            for i in range(n_pred):
                pred_cls[nz_pred[i]] = 0.0
            for i in range(n_succ):
                succ_cls[nz_succ[i]] = 0.0
        counts, left, right = class_bigram_counts(cls, n_classes, succ_ptr, succ_idx, succ_cnt)
        history[p] = class_log_likelihood(counts, left, right, word_term)
        passes = p
        if moved == 0:
            break
    return passes
