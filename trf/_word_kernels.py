"""Numba kernels for character n-gram features of words (private; wrappers validate input).

Every feature of a word is a *term* at a dense position of a table laid out as
``[uni V | bi V^2 | tri V^3 | begin-uni V | end-uni V | begin-bi V^2 | end-bi V^2]`` (V = alphabet
size).  :func:`fired_positions` lists the terms of one word; scoring, counting and the local score
changes used by TransMS (:mod:`trf._word_transms_kernels`) all follow from it, so the template set is written down once.
"""

from __future__ import annotations

import numpy as np

from samplers._jit import jit
from samplers._kernels import categorical_from_logits


@jit
def table_bases(V):
    """Start of each template block: uni, bi, tri, begin-uni, end-uni, begin-bi, end-bi, total."""
    b = np.empty(8, dtype=np.int64)
    b[0] = 0
    b[1] = V
    b[2] = b[1] + V * V
    b[3] = b[2] + V * V * V
    b[4] = b[3] + V
    b[5] = b[4] + V
    b[6] = b[5] + V * V
    b[7] = b[6] + V * V
    return b


@jit
def fired_positions(x, start, L, V, out):
    """Write the dense positions of all terms of word ``x[start:start+L]`` into ``out``; return count."""
    b = table_bases(V)
    n = 0
    for i in range(L):
        out[n] = b[0] + x[start + i]
        n += 1
    for i in range(L - 1):
        out[n] = b[1] + x[start + i] * V + x[start + i + 1]
        n += 1
    for i in range(L - 2):
        out[n] = b[2] + (x[start + i] * V + x[start + i + 1]) * V + x[start + i + 2]
        n += 1
    out[n] = b[3] + x[start]
    n += 1
    out[n] = b[4] + x[start + L - 1]
    n += 1
    if L >= 2:
        out[n] = b[5] + x[start] * V + x[start + 1]
        n += 1
        out[n] = b[6] + x[start + L - 2] * V + x[start + L - 1]
        n += 1
    return n


@jit
def score_word(w, V, x, start, L, scratch):
    """lambda . f(x) for one word, reading dense weights ``w``."""
    n = fired_positions(x, start, L, V, scratch)
    s = 0.0
    for k in range(n):
        s += w[scratch[k]]
    return s


@jit
def score_batch(w, V, tokens, offsets, out):
    """lambda . f(x_i) for every word of a flat batch."""
    scratch = np.empty(3 * (np.max(np.diff(offsets)) + 2), dtype=np.int64)
    for i in range(offsets.shape[0] - 1):
        out[i] = score_word(w, V, tokens, offsets[i], offsets[i + 1] - offsets[i], scratch)


@jit
def terms_at(w, V, x, L, i):
    """Sum of the weights of all terms of ``x[:L]`` that involve position ``i`` (each once)."""
    b = table_bases(V)
    s = w[b[0] + x[i]]
    if i >= 1:
        s += w[b[1] + x[i - 1] * V + x[i]]
    if i + 1 < L:
        s += w[b[1] + x[i] * V + x[i + 1]]
    if i >= 2:
        s += w[b[2] + (x[i - 2] * V + x[i - 1]) * V + x[i]]
    if i >= 1 and i + 1 < L:
        s += w[b[2] + (x[i - 1] * V + x[i]) * V + x[i + 1]]
    if i + 2 < L:
        s += w[b[2] + (x[i] * V + x[i + 1]) * V + x[i + 2]]
    if i == 0:
        s += w[b[3] + x[0]]
    if i == L - 1:
        s += w[b[4] + x[L - 1]]
    if L >= 2:
        if i <= 1:
            s += w[b[5] + x[0] * V + x[1]]
        if i >= L - 2:
            s += w[b[6] + x[L - 2] * V + x[L - 1]]
    return s


@jit
def end_terms(w, V, x, L):
    """Weights of the end-of-word terms of ``x[:L]`` (end unigram and, for L >= 2, end bigram)."""
    b = table_bases(V)
    s = w[b[4] + x[L - 1]]
    if L >= 2:
        s += w[b[6] + x[L - 2] * V + x[L - 1]]
    return s


@jit
def append_deltas(w, V, x, L, out):
    """``out[u] = score(x[:L] + u) - score(x[:L])`` for every symbol u (x must have room for L+1)."""
    removed = end_terms(w, V, x, L)
    for u in range(V):
        x[L] = u
        out[u] = terms_at(w, V, x, L + 1, L) - removed


@jit
def weighted_counts(index, V, tokens, offsets, weights, out):
    """``out[k] += weights[i] * count of feature k in word i`` (``index`` maps dense position -> k or -1)."""
    scratch = np.empty(3 * (np.max(np.diff(offsets)) + 2), dtype=np.int64)
    for i in range(offsets.shape[0] - 1):
        n = fired_positions(tokens, offsets[i], offsets[i + 1] - offsets[i], V, scratch)
        for k in range(n):
            f = index[scratch[k]]
            if f >= 0:
                out[f] += weights[i]


@jit
def per_length_moments(index, V, tokens, offsets, d, m, sums, sumsq):
    """Per-length sums and sums of squares of feature counts: ``sums[j-1, k]``, ``sumsq[j-1, k]``."""
    scratch = np.empty(3 * (np.max(np.diff(offsets)) + 2), dtype=np.int64)
    cnt = np.zeros(d, dtype=np.float64)
    for i in range(offsets.shape[0] - 1):
        L = offsets[i + 1] - offsets[i]
        n = fired_positions(tokens, offsets[i], L, V, scratch)
        for k in range(n):
            f = index[scratch[k]]
            if f >= 0:
                cnt[f] += 1.0
        for k in range(n):
            f = index[scratch[k]]
            if f >= 0 and cnt[f] > 0.0:
                sums[L - 1, f] += cnt[f]
                sumsq[L - 1, f] += cnt[f] * cnt[f]
                cnt[f] = 0.0


@jit
def gibbs_sweep(w, V, x, L, logits, scale):
    """One systematic-scan Gibbs sweep over positions 0..L-1 of ``x[:L]`` at ``exp(scale * lambda . f)``.

    Table 1, step II (``scale`` = 1); AIS uses ``scale`` = the inverse temperature.
    """
    for i in range(L):
        for u in range(V):
            x[i] = u
            logits[u] = scale * terms_at(w, V, x, L, i)
        x[i] = categorical_from_logits(logits)


@jit
def word_scores_batch(w, V, x, L, out):
    """``out[p] = lambda . f(x[p, :L])`` for a batch of words of one length ``L`` (AIS log ratios)."""
    scratch = np.empty(3 * L + 4, dtype=np.int64)
    for p in range(x.shape[0]):
        out[p] = score_word(w, V, x[p], 0, L, scratch)


@jit
def gibbs_sweeps_batch(w, V, x, L, beta, seed):
    """One Gibbs sweep of each word ``x[p, :L]`` at ``exp(beta lambda . f)`` (AIS transitions; one stream
    from ``seed`` through all words: reseeding per word cost about 2 us, as much as a short word's sweep)."""
    logits = np.empty(V)
    np.random.seed(seed)
    for p in range(x.shape[0]):
        gibbs_sweep(w, V, x[p], L, logits, beta)
