"""Numba kernels of exchange word clustering (Martin, Liermann, Ney 1998).  Private: no validation."""

from __future__ import annotations

import numpy as np

from samplers._jit import jit


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
def _move_gain(k, counts, left, right, pred_cls, succ_cls, nz_pred, n_pred, nz_succ, n_succ, self_n, w_left, w_right):
    """Change of the log-likelihood when a word (already removed) joins class ``k``."""
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
def exchange_passes(cls, n_classes, order, succ_ptr, succ_idx, succ_cnt, pred_ptr, pred_idx, pred_cnt,
                    word_left, word_right, word_term, max_passes, history):
    """Run up to ``max_passes`` exchange passes in place on ``cls``; ``history[p]`` gets the
    log-likelihood after pass ``p`` (``history[0]``: initial).  Returns the number of passes run."""
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
            self_n = 0.0
            n_pred = 0
            for e in range(pred_ptr[w], pred_ptr[w + 1]):
                v = pred_idx[e]
                if v == w:
                    self_n += pred_cnt[e]
                    continue
                c = cls[v]
                if pred_cls[c] == 0.0:
                    nz_pred[n_pred] = c
                    n_pred += 1
                pred_cls[c] += pred_cnt[e]
            n_succ = 0
            for e in range(succ_ptr[w], succ_ptr[w + 1]):
                v = succ_idx[e]
                if v == w:
                    continue
                c = cls[v]
                if succ_cls[c] == 0.0:
                    nz_succ[n_succ] = c
                    n_succ += 1
                succ_cls[c] += succ_cnt[e]
            # remove w from its class
            for i in range(n_pred):
                c = nz_pred[i]
                if c != old:
                    counts[c, old] -= pred_cls[c]
            for i in range(n_succ):
                d = nz_succ[i]
                if d != old:
                    counts[old, d] -= succ_cls[d]
            counts[old, old] -= pred_cls[old] + succ_cls[old] + self_n
            left[old] -= word_left[w]
            right[old] -= word_right[w]
            # staying put is the reference; another class must be strictly better
            best = old
            best_gain = _move_gain(old, counts, left, right, pred_cls, succ_cls, nz_pred, n_pred, nz_succ, n_succ,
                                   self_n, word_left[w], word_right[w])
            for k in range(n_classes):
                if k == old:
                    continue
                gain = _move_gain(k, counts, left, right, pred_cls, succ_cls, nz_pred, n_pred, nz_succ, n_succ,
                                  self_n, word_left[w], word_right[w])
                if gain > best_gain + 1e-10 * (1.0 + abs(best_gain)):
                    best_gain = gain
                    best = k
            # add w to the best class
            for i in range(n_pred):
                c = nz_pred[i]
                if c != best:
                    counts[c, best] += pred_cls[c]
            for i in range(n_succ):
                d = nz_succ[i]
                if d != best:
                    counts[best, d] += succ_cls[d]
            counts[best, best] += pred_cls[best] + succ_cls[best] + self_n
            left[best] += word_left[w]
            right[best] += word_right[w]
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
