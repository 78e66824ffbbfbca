"""Numba kernels of class-based TransMS for sentence TRFs (Algorithm 2 of Table 1, Appendix C).  Private.

Sentence buffers follow :mod:`trf.lm._feature_kernels` (``w[0] = <s>``, ``w[j+1] = </s>``).  ``fa`` is
the tuple of feature arrays ``(key_hi, key_lo, slots, row_group, row_len, row_off, row_type)``.
``lw[j-1] = log pi0_j - zeta_j`` is the length part of ``log q`` (Eq. 12).  ``tab`` is :func:`trf.lm.transms.touch_tables`: for each distance ``d = p - i`` the template rows
that read position ``i`` through its class, those that read its word, those that do not read it, and
each row's parent rows (an unseen parent means an unseen n-gram, so the look-up is skipped).  ``res[d, r]``
holds the feature index row ``r`` fired at ``p = i + d`` (-1: none).  ``span`` is the largest
look-back of any template: changing position ``i`` changes the features at ``i .. i+span`` only.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from samplers._jit import jit
from samplers._kernels import categorical_from_logits, logsumexp_1d
from trf.lm._feature_kernels import accumulate_features, load_sentence, positions_score, row_feature, row_fires


@jit
def checked_weight(r, p, j, w, c, res_d, parents, lam, fa):
    """``lam`` of the feature row ``r`` fires at ``p``, with its index stored in ``res_d[r]`` (-1: none).

    A row whose pattern extends a parent row's pattern (``parents[r]``, already evaluated at ``p``) can
    only be an observed n-gram if the parent is: an unseen parent skips the hash look-up.
    """
    key_hi, key_lo, slots, row_group, row_len, row_off, row_type = fa
    for a in range(parents.shape[1]):
        q = parents[r, a]
        if q >= 0 and res_d[q] < 0:
            res_d[r] = -1
            return 0.0
    f = row_feature(r, p, j, w, c, key_hi, key_lo, slots, row_group, row_len, row_off, row_type)
    res_d[r] = f
    return lam[f] if f >= 0 else 0.0


@jit
def context_features(w, c, j, i, span, lam, fa, tab, res):
    """Fill ``res[d]`` for the rows at ``p = i + d`` that do not read position ``i`` (fixed while
    ``x_i`` is resampled; they serve as parents of the rows that do)."""
    ctx_ptr, ctx_rows, parents = tab[4], tab[5], tab[6]
    for d in range(span + 1):
        p = i + d
        if p > j + 1:
            break
        for t in range(ctx_ptr[d], ctx_ptr[d + 1]):
            checked_weight(ctx_rows[t], p, j, w, c, res[d], parents, lam, fa)


@jit
def touched_score(w, c, j, i, span, lam, fa, ptr, rows, parents, res):
    """Sum of ``lam`` over the features at ``p = i..i+span`` of the rows listed for ``d = p - i`` in
    ``rows[ptr[d]:ptr[d+1]]`` (rows that read position ``i``; sorted so parents come first).
    ``res`` must hold :func:`context_features` of position ``i``."""
    total = 0.0
    for d in range(span + 1):
        p = i + d
        if p > j + 1:
            break
        for t in range(ptr[d], ptr[d + 1]):
            total += checked_weight(rows[t], p, j, w, c, res[d], parents, lam, fa)
    return total


@jit
def dense_class_weight(r, p, j, c, n_symbols, base, dense, lam, row_len, row_off):
    """``lam`` of the class unigram/(skip-)bigram row ``r`` at ``p``, read from its dense index table."""
    if not row_fires(r, p, j, row_len, row_off):
        return 0.0
    if row_len[r] == 1:
        f = dense[base[r] + c[p]]
    else:
        f = dense[base[r] + c[p + row_off[r, 0]] * n_symbols + c[p]]
    return lam[f] if f >= 0 else 0.0


@jit
def class_proposal_logits(w, c, j, i, span, n_classes, lam, fa, tab, out):
    """``out[k] = log Q_i(k)`` (normalised): the class-only reduced model (Appendix C) restricted to the
    class unigram and (skip-)bigram rows that read position ``i``, read from dense tables."""
    row_len, row_off = fa[4], fa[5]
    prop_ptr, prop_rows, base, dense = tab[7], tab[8], tab[9], tab[10]
    saved = c[i]
    for k in range(n_classes):
        c[i] = k
        total = 0.0
        for d in range(span + 1):
            p = i + d
            if p > j + 1:
                break
            for t in range(prop_ptr[d], prop_ptr[d + 1]):
                total += dense_class_weight(prop_rows[t], p, j, c, n_classes + 2, base, dense, lam, row_len, row_off)
        out[k] = total
    c[i] = saved
    lz = logsumexp_1d(out[:n_classes])
    for k in range(n_classes):
        out[k] -= lz


@jit
def class_score(w, c, j, i, k, span, lam, fa, tab, res):
    """Log-potential of every row that reads position ``i`` through its class, with ``c_i = k``
    (needs :func:`context_features` of position ``i`` in ``res``)."""
    saved = c[i]
    c[i] = k
    total = touched_score(w, c, j, i, span, lam, fa, tab[0], tab[1], tab[6], res)
    c[i] = saved
    return total


@jit
def class_word_scores(w, c, j, i, k, span, class_ptr, class_words, lam, fa, tab, res, out):
    """``out[n]`` = log-potential of the rows reading the *word* at position ``i`` with ``x_i`` = the
    n-th word of class ``k``; returns the class size.  The rows reading ``i`` through its class add
    the same amount to every word of ``k`` (the unnormalised ``log Q_i(k)``) and the other rows do not
    depend on ``x_i``, so these scores are the within-class conditional up to a constant."""
    saved_w, saved_c = w[i], c[i]
    n = class_ptr[k + 1] - class_ptr[k]
    c[i] = k
    for t in range(n):
        w[i] = class_words[class_ptr[k] + t]
        out[t] = touched_score(w, c, j, i, span, lam, fa, tab[2], tab[3], tab[6], res)
    w[i], c[i] = saved_w, saved_c
    return n


@jit
def jump_prob(k, j, m):
    """Gamma(k, j) of Eq. (19)."""
    if m == 1:
        return 1.0 if j == 1 else 0.0
    if abs(j - k) > 1 or j < 1 or j > m:
        return 0.0
    if k == 1 or k == m:
        return 0.5
    return 1.0 / 3.0


@jit
def draw_jump(k, m):
    if m == 1:
        return 1
    u = np.random.random()
    if k == 1:
        return 1 if u < 0.5 else 2
    if k == m:
        return m - 1 if u < 0.5 else m
    if u < 1.0 / 3.0:
        return k - 1
    if u < 2.0 / 3.0:
        return k
    return k + 1


@jit
def local_sum(w, c, j, p_lo, p_hi, lam, fa):
    key_hi, key_lo, slots, row_group, row_len, row_off, row_type = fa
    return positions_score(w, c, j, p_lo, p_hi, lam, key_hi, key_lo, slots, row_group, row_len, row_off, row_type)


@jit
def chain_step(w, c, j, m, n_words, n_classes, word_class, class_ptr, class_words, lam, fa, tab, lw, span,
               log_q, scores_a, scores_b, res, stats, jump):
    """One TransMS step (local jump unless ``jump`` is False, then a class-based Markov move over all
    positions); returns the new length.  Word scores cover only the rows that read the word itself
    (see :func:`class_word_scores`); the class part is the same for every word of a class, which
    simplifies Eq. (34)-(37) without changing them."""
    eos_w, eos_c = n_words, n_classes
    k = j
    target = draw_jump(k, m) if jump else k
    if target == k + 1:
        stats[0] += 1
        old_local = local_sum(w, c, k, k + 1, k + 1, lam, fa)
        w[k + 2], c[k + 2] = eos_w, eos_c
        context_features(w, c, k + 1, k + 1, span, lam, fa, tab, res)
        class_proposal_logits(w, c, k + 1, k + 1, span, n_classes, lam, fa, tab, log_q)
        c0 = categorical_from_logits(log_q[:n_classes])
        n = class_word_scores(w, c, k + 1, k + 1, c0, span, class_ptr, class_words, lam, fa, tab, res, scores_a)
        t = categorical_from_logits(scores_a[:n])
        w[k + 1], c[k + 1] = class_words[class_ptr[c0] + t], c0
        new_local = local_sum(w, c, k + 1, k + 1, k + 2, lam, fa)             # all features at k+1, k+2
        log_g = log_q[c0] + scores_a[t] - logsumexp_1d(scores_a[:n])           # Eq. (35)-(36)
        log_ratio = (np.log(jump_prob(k + 1, k, m) / jump_prob(k, k + 1, m)) + lw[k] - lw[k - 1]
                     + new_local - old_local - log_g)                          # Eq. (20)
        if np.log(np.random.random()) < log_ratio:
            j = k + 1
            stats[1] += 1
        else:
            w[k + 1], c[k + 1] = eos_w, eos_c
    elif target == k - 1:
        stats[2] += 1
        u_c = c[k]
        cur_local = local_sum(w, c, k, k, k + 1, lam, fa)
        context_features(w, c, k, k, span, lam, fa, tab, res)
        class_proposal_logits(w, c, k, k, span, n_classes, lam, fa, tab, log_q)
        n = class_word_scores(w, c, k, k, u_c, span, class_ptr, class_words, lam, fa, tab, res, scores_a)
        own = touched_score(w, c, k, k, span, lam, fa, tab[2], tab[3], tab[6], res)
        log_g = log_q[u_c] + own - logsumexp_1d(scores_a[:n])                  # Eq. (37)
        u_w = w[k]
        w[k], c[k] = eos_w, eos_c
        new_local = local_sum(w, c, k - 1, k, k, lam, fa)
        log_ratio = (np.log(jump_prob(k - 1, k, m) / jump_prob(k, k - 1, m)) + lw[k - 2] - lw[k - 1]
                     + new_local + log_g - cur_local)                           # Eq. (21)
        if np.log(np.random.random()) < log_ratio:
            j = k - 1
            stats[3] += 1
        else:
            w[k], c[k] = u_w, u_c
    for i in range(1, j + 1):                                                   # Markov move
        cur = c[i]
        context_features(w, c, j, i, span, lam, fa, tab, res)
        class_proposal_logits(w, c, j, i, span, n_classes, lam, fa, tab, log_q)
        c0 = categorical_from_logits(log_q[:n_classes])
        n_cur = class_word_scores(w, c, j, i, cur, span, class_ptr, class_words, lam, fa, tab, res, scores_a)
        chosen = cur
        if c0 != cur:
            stats[4] += 1
            n_new = class_word_scores(w, c, j, i, c0, span, class_ptr, class_words, lam, fa, tab, res, scores_b)
            # Eq. (34): Q_i(cur)/Q_i(c0) times the ratio of the class marginals (class rows + word sums)
            log_acc = (log_q[cur] - log_q[c0] + class_score(w, c, j, i, c0, span, lam, fa, tab, res)
                       + logsumexp_1d(scores_b[:n_new]) - class_score(w, c, j, i, cur, span, lam, fa, tab, res)
                       - logsumexp_1d(scores_a[:n_cur]))
            if np.log(np.random.random()) < log_acc:
                chosen = c0
                stats[5] += 1
        if chosen == cur:
            t = categorical_from_logits(scores_a[:n_cur])
        else:
            t = categorical_from_logits(scores_b[:n_new])
        w[i], c[i] = class_words[class_ptr[chosen] + t], chosen
    return j


@jit
def run_chain(ch, steps, seed, tokens, lengths, m, n_words, n_classes, word_class, class_ptr, class_words, lam, fa,
              tab, lw, span, max_class, out_tokens, out_len, stats, jump):
    """Advance chain ``ch`` by ``steps`` steps from ``tokens[ch, :lengths[ch]]``, recording every state."""
    np.random.seed(seed)
    w = np.empty(m + 3, dtype=np.int64)
    c = np.empty(m + 3, dtype=np.int64)
    j = lengths[ch]
    w[0], c[0] = n_words + 1, n_classes + 1
    for i in range(j):
        w[i + 1] = tokens[ch, i]
        c[i + 1] = word_class[tokens[ch, i]]
    w[j + 1], c[j + 1] = n_words, n_classes
    log_q = np.empty(n_classes)
    scores_a = np.empty(max_class)
    scores_b = np.empty(max_class)
    res = np.full((span + 1, fa[4].size), -1, dtype=np.int64)
    for s in range(steps):
        j = chain_step(w, c, j, m, n_words, n_classes, word_class, class_ptr, class_words, lam, fa, tab, lw, span,
                       log_q, scores_a, scores_b, res, stats[ch], jump)
        row = ch * steps + s
        out_len[row] = j
        for i in range(j):
            out_tokens[row, i] = w[i + 1]
    lengths[ch] = j
    for i in range(j):
        tokens[ch, i] = w[i + 1]


@jit
def run_chains_serial(steps, seeds, tokens, lengths, m, n_words, n_classes, word_class, class_ptr, class_words,
                      lam, fa, tab, lw, span, max_class, out_tokens, out_len, stats, jump):
    for ch in range(lengths.size):
        run_chain(ch, steps, seeds[ch], tokens, lengths, m, n_words, n_classes, word_class, class_ptr, class_words,
                  lam, fa, tab, lw, span, max_class, out_tokens, out_len, stats, jump)


@jit(parallel=True)
def run_chains_parallel(steps, seeds, tokens, lengths, m, n_words, n_classes, word_class, class_ptr, class_words,
                        lam, fa, tab, lw, span, max_class, out_tokens, out_len, stats, jump):
    """Appendix D: chains on separate cores; each reseeds Numba's generator, so results match the serial build."""
    for ch in prange(lengths.size):
        run_chain(ch, steps, seeds[ch], tokens, lengths, m, n_words, n_classes, word_class, class_ptr, class_words,
                  lam, fa, tab, lw, span, max_class, out_tokens, out_len, stats, jump)


@jit
def weighted_feature_sum(out_tokens, out_len, weights, word_class, n_words, n_classes, key_hi, key_lo, slots,
                         row_group, row_len, row_off, row_type, acc):
    """``acc += sum_r weights[r] f(x_r)`` over recorded samples (the sum in Eq. 16/38)."""
    m = out_tokens.shape[1]
    w = np.empty(m + 2, dtype=np.int64)
    c = np.empty(m + 2, dtype=np.int64)
    for r in range(out_len.size):
        j = load_sentence(out_tokens[r, :out_len[r]], word_class, n_words, n_classes, w, c)
        accumulate_features(w, c, j, weights[r], acc, key_hi, key_lo, slots, row_group, row_len, row_off, row_type)
