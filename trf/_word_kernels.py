"""Numba kernels for character n-gram features of words (private; wrappers validate input).

Every feature of a word is a *term* at a dense position of a table laid out as
``[uni V | bi V^2 | tri V^3 | begin-uni V | end-uni V | begin-bi V^2 | end-bi V^2]`` (V = alphabet
size).  :func:`fired_positions` lists the terms of one word; scoring, counting and the local score
changes used by TransMS all follow from it, so the template set is written down once.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from samplers._jit import jit
from samplers._kernels import categorical_from_logits, logsumexp_1d


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
def _log_gamma_ratio(k, j, m):
    """log Gamma(j, k) - log Gamma(k, j) for the uniform neighbour jump law Eq. (19)."""
    gk = np.log(0.5) if (k == 1 or k == m) else np.log(1.0 / 3.0)
    gj = np.log(0.5) if (j == 1 or j == m) else np.log(1.0 / 3.0)
    return gj - gk


@jit
def transms_step(w, V, log_len_weight, m, x, lengths, c, jump, logits, stats):
    """One TransMS step of chain c: local jump (Eq. 19-22, skipped unless ``jump``) then a Gibbs sweep.

    ``stats`` accumulates [up proposals, up accepts, down proposals, down accepts].
    """
    xc = x[c]
    k = lengths[c]
    if jump and m > 1:
        u01 = np.random.random()
        if k == 1:
            j = 1 if u01 < 0.5 else 2
        elif k == m:
            j = m - 1 if u01 < 0.5 else m
        else:
            j = k - 1 + int(u01 * 3.0)
            if j > k + 1:
                j = k + 1
        if j == k + 1:
            append_deltas(w, V, xc, k, logits)
            lse = logsumexp_1d(logits)
            u = categorical_from_logits(logits)
            log_acc = _log_gamma_ratio(k, j, m) + log_len_weight[j - 1] - log_len_weight[k - 1] + lse
            stats[0] += 1
            if np.log(np.random.random()) < log_acc:
                xc[k] = u
                lengths[c] = j
                stats[1] += 1
        elif j == k - 1:
            last = xc[k - 1]
            append_deltas(w, V, xc, k - 1, logits)
            xc[k - 1] = last
            lse = logsumexp_1d(logits)
            log_acc = _log_gamma_ratio(k, j, m) + log_len_weight[j - 1] - log_len_weight[k - 1] - lse
            stats[2] += 1
            if np.log(np.random.random()) < log_acc:
                lengths[c] = j
                stats[3] += 1
    gibbs_sweep(w, V, xc, lengths[c], logits, 1.0)


@jit
def _record(x, lengths, c, r, out_x, out_len):
    for i in range(lengths[c]):
        out_x[r, i] = x[c, i]
    out_len[r] = lengths[c]


@jit
def transms_run(w, V, log_len_weight, m, x, lengths, schedule, jump, seed, out_x, out_len, stats):
    """Advance chains by TransMS (Table 1) following ``schedule`` and record every state.

    For record r, chain ``schedule[r]`` makes one step (:func:`transms_step`) and its state is written
    to ``out_x[r]``, ``out_len[r]``.  ``log_len_weight[j-1] = log pi0_j - zeta_j``.  One seed, one
    random stream (the serial reference).
    """
    np.random.seed(seed)
    logits = np.empty(V)
    for r in range(schedule.shape[0]):
        c = schedule[r]
        transms_step(w, V, log_len_weight, m, x, lengths, c, jump, logits, stats)
        _record(x, lengths, c, r, out_x, out_len)


def _chains_body(w, V, log_len_weight, m, x, lengths, n_steps, jump, seeds, out_x, out_len, stats):
    C = x.shape[0]
    for c in prange(C):
        np.random.seed(seeds[c])          # one stream per chain: same result for any thread count
        logits = np.empty(V)
        for s in range(n_steps):
            transms_step(w, V, log_len_weight, m, x, lengths, c, jump, logits, stats[c])
            _record(x, lengths, c, s * C + c, out_x, out_len)


transms_chains_serial = jit(_chains_body)
transms_chains_serial.__doc__ = """Each chain c makes ``n_steps`` steps with its own seed ``seeds[c]``; record s*C + c."""
transms_chains_parallel = jit(parallel=True)(_chains_body)
transms_chains_parallel.__doc__ = "Parallel build (prange over chains) of :data:`transms_chains_serial`; same results."


@jit
def word_scores_batch(w, V, x, L, out):
    """``out[p] = lambda . f(x[p, :L])`` for a batch of words of one length ``L`` (AIS log ratios)."""
    scratch = np.empty(3 * L + 4, dtype=np.int64)
    for p in range(x.shape[0]):
        out[p] = score_word(w, V, x[p], 0, L, scratch)


@jit
def gibbs_sweeps_batch(w, V, x, L, beta, seeds):
    """One Gibbs sweep of each word ``x[p, :L]`` at ``exp(beta lambda . f)`` (AIS transitions; seed per word)."""
    logits = np.empty(V)
    for p in range(x.shape[0]):
        np.random.seed(seeds[p])
        gibbs_sweep(w, V, x[p], L, logits, beta)
