"""Numba kernels for the keyboard-gesture alignment model (Sec. 5, Experiment 1).

State of one example: ``x`` (l,) key ids in {0..K-1}; alignment ``z`` (l,) in {0..2K}:
``z_i = c`` (x_i starts output letter c), ``z_i = K + c`` (x_i continues letter c; only after a
start or continuation of the same letter), ``z_i = 2K`` (unaligned, '#'). The output word ``y`` is
the letters of the start states, in order.

Flat weight layout (``S = 2K + 1`` states)::

    [0, K*S)            unary (x_i, z_i)
    off_T  (4 x 3)      (type(z_{i-1}) or BOS, type(z_i)),   types: 0 start, 1 continue, 2 unaligned
    off_R  (2 x 3)      ([x_i == x_{i-1}], type(z_i)) for i >= 1
    n_base              --- end of the base features (u uses only these) ---
    off_B  ((K+1) x K)  output letter bigrams (y_{j-1} or BOS, y_j)
    off_D  (3)          [y in dictionary], log frequency if in dictionary, #prefixes of y in the dictionary

The dictionary is a trie: ``child`` (n_nodes, K) int64 (-1: none), ``word_logfreq`` (n_nodes,)
(NaN: the node ends no word).  No validation here.
"""

from __future__ import annotations

import numpy as np

from samplers._jit import jit
from samplers._kernels import categorical_from_logits, logsumexp_1d


@jit
def layout(K):
    """Offsets ``(S, off_T, off_R, n_base, off_B, off_D, n_full)`` of the flat weight vector."""
    S = 2 * K + 1
    off_T = K * S
    off_R = off_T + 12
    n_base = off_R + 6
    off_B = n_base
    off_D = off_B + (K + 1) * K
    return S, off_T, off_R, n_base, off_B, off_D, off_D + 3


@jit
def state_type(s, K):
    if s < K:
        return 0
    if s < 2 * K:
        return 1
    return 2


@jit
def allowed(prev, s, K):
    """Whether state ``s`` may follow ``prev`` (``prev = -1`` at the first position)."""
    if K <= s < 2 * K:
        return prev >= 0 and (prev == s - K or prev == s)
    return True


@jit
def base_local(x, z, i, w, K):
    """Base-feature score of position i: unary, type transition from i-1 (or BOS), repeat-key."""
    S, off_T, off_R, _, _, _, _ = layout(K)
    s = z[i]
    t = state_type(s, K)
    pt = 3 if i == 0 else state_type(z[i - 1], K)
    val = w[x[i] * S + s] + w[off_T + pt * 3 + t]
    if i > 0:
        r = 1 if x[i] == x[i - 1] else 0
        val += w[off_R + r * 3 + t]
    return val


@jit
def is_valid(z, K):
    prev = -1
    for i in range(z.shape[0]):
        if not allowed(prev, z[i], K):
            return False
        prev = z[i]
    return True


@jit
def output_word(z, K, y):
    """Write the output word of ``z`` into ``y``; return its length."""
    n = 0
    for i in range(z.shape[0]):
        if z[i] < K:
            y[n] = z[i]
            n += 1
    return n


@jit
def trie_walk(y, ny, child, word_logfreq):
    """``(number of prefixes y[:i], i >= 1, in the dictionary, log frequency of y or NaN)``."""
    node = 0
    for j in range(ny):
        nxt = child[node, y[j]]
        if nxt < 0:
            return j, np.nan
        node = nxt
    return ny, (word_logfreq[node] if ny > 0 else np.nan)


@jit
def rich_score(y, ny, w, K, child, word_logfreq):
    """Score of the richer features of A: bigrams, dictionary membership and log frequency, prefixes."""
    _, _, _, _, off_B, off_D, _ = layout(K)
    val = 0.0
    for j in range(ny):
        val += w[off_B + (K if j == 0 else y[j - 1]) * K + y[j]]
    depth, logf = trie_walk(y, ny, child, word_logfreq)
    val += w[off_D + 2] * depth
    if not np.isnan(logf):
        val += w[off_D] + w[off_D + 1] * logf
    return val


@jit
def full_score(x, z, w, K, child, word_logfreq, use_rich):
    """Log potential of ``z`` (-inf if invalid); base features only unless ``use_rich``."""
    if not is_valid(z, K):
        return -np.inf
    val = 0.0
    for i in range(z.shape[0]):
        val += base_local(x, z, i, w, K)
    if use_rich:
        y = np.empty(z.shape[0], dtype=np.int64)
        ny = output_word(z, K, y)
        val += rich_score(y, ny, w, K, child, word_logfreq)
    return val


@jit
def add_features(x, z, K, child, word_logfreq, use_rich, scale, grad, y):
    """``grad += scale * phi(x, z)`` (sparse adds; ``y`` is scratch of length l)."""
    S, off_T, off_R, _, off_B, off_D, _ = layout(K)
    prev_t = 3
    for i in range(z.shape[0]):
        t = state_type(z[i], K)
        grad[x[i] * S + z[i]] += scale
        grad[off_T + prev_t * 3 + t] += scale
        if i > 0:
            r = 1 if x[i] == x[i - 1] else 0
            grad[off_R + r * 3 + t] += scale
        prev_t = t
    if not use_rich:
        return
    ny = output_word(z, K, y)
    for j in range(ny):
        grad[off_B + (K if j == 0 else y[j - 1]) * K + y[j]] += scale
    depth, logf = trie_walk(y, ny, child, word_logfreq)
    grad[off_D + 2] += scale * depth
    if not np.isnan(logf):
        grad[off_D] += scale
        grad[off_D + 1] += scale * logf


@jit
def _unary_u(x, i, s, w, K):
    S, _, off_R, _, _, _, _ = layout(K)
    val = w[x[i] * S + s]
    if i > 0:
        r = 1 if x[i] == x[i - 1] else 0
        val += w[off_R + r * 3 + state_type(s, K)]
    return val


@jit
def _trans_u(prev, s, w, K):
    _, off_T, _, _, _, _, _ = layout(K)
    if not allowed(prev, s, K):
        return -np.inf
    pt = 3 if prev < 0 else state_type(prev, K)
    return w[off_T + pt * 3 + state_type(s, K)]


@jit
def u_forward(x, w, K):
    """Forward log-messages ``alpha`` (l, S) of the base chain model u; log Z = logsumexp(alpha[-1])."""
    S = 2 * K + 1
    L = x.shape[0]
    alpha = np.empty((L, S))
    buf = np.empty(S)
    for s in range(S):
        alpha[0, s] = _unary_u(x, 0, s, w, K) + _trans_u(-1, s, w, K)
    for i in range(1, L):
        for s in range(S):
            for p in range(S):
                buf[p] = alpha[i - 1, p] + _trans_u(p, s, w, K)
            alpha[i, s] = _unary_u(x, i, s, w, K) + logsumexp_1d(buf)
    return alpha


@jit
def u_sample_from_alpha(alpha, w, K, z):
    """Backward sampling (FFBS) of ``z ~ u`` in place, given forward messages."""
    L, S = alpha.shape
    buf = np.empty(S)
    z[L - 1] = categorical_from_logits(alpha[L - 1])
    for i in range(L - 2, -1, -1):
        for p in range(S):
            buf[p] = alpha[i, p] + _trans_u(p, z[i + 1], w, K)
        z[i] = categorical_from_logits(buf)


@jit
def u_draws(x, w, K, size, seed):
    """``size`` exact draws from u (forward filtering, backward sampling)."""
    np.random.seed(seed)
    alpha = u_forward(x, w, K)
    out = np.empty((size, x.shape[0]), dtype=np.int64)
    z = np.empty(x.shape[0], dtype=np.int64)
    for n in range(size):
        u_sample_from_alpha(alpha, w, K, z)
        out[n] = z
    return out


@jit
def gibbs_site(x, z, i, w, K, child, word_logfreq, logits, y):
    """Resample ``z_i`` from its conditional under the full model (base + rich features)."""
    S = 2 * K + 1
    L = z.shape[0]
    prev = z[i - 1] if i > 0 else -1
    for v in range(S):
        if not allowed(prev, v, K) or (i + 1 < L and not allowed(v, z[i + 1], K)):
            logits[v] = -np.inf
            continue
        z[i] = v
        val = base_local(x, z, i, w, K)
        if i + 1 < L:
            val += base_local(x, z, i + 1, w, K)
        ny = output_word(z, K, y)
        logits[v] = val + rich_score(y, ny, w, K, child, word_logfreq)
    z[i] = categorical_from_logits(logits)


@jit
def gibbs_sweep(x, z, w, K, child, word_logfreq, logits, y):
    """One transition of A: a systematic Gibbs sweep over positions 0..l-1."""
    for i in range(z.shape[0]):
        gibbs_site(x, z, i, w, K, child, word_logfreq, logits, y)


@jit
def seeded_sweep(x, z, w, K, child, word_logfreq, seed):
    """One Gibbs sweep of ``z`` in place with Numba's generator seeded by ``seed``."""
    np.random.seed(seed)
    gibbs_sweep(x, z, w, K, child, word_logfreq, np.empty(2 * K + 1), np.empty(z.shape[0], dtype=np.int64))


@jit
def run_chains(x, w_u, w_A, K, child, word_logfreq, n_steps, eps, n_chains, mode, seed):
    """Run ``n_chains`` chains of ``n_steps`` transitions each; return the post-burn-in states.

    ``mode`` 0: basic Gibbs from ``z_i = start x_i``; 1: Gibbs from a u draw (smart restart);
    2: strong Doeblin chain from a u draw, each transition a restart from u w.p. ``eps``, else a
    Gibbs sweep.  The first half of every chain (``n_steps // 2`` transitions) is burn-in; the
    states after transitions ``n_steps // 2 + 1 .. n_steps`` are returned, shape (n_chains * m, l).
    """
    np.random.seed(seed)
    L = x.shape[0]
    S = 2 * K + 1
    burn = n_steps // 2
    m = n_steps - burn
    out = np.empty((n_chains * m, L), dtype=np.int64)
    logits = np.empty(S)
    y = np.empty(L, dtype=np.int64)
    z = np.empty(L, dtype=np.int64)
    alpha = u_forward(x, w_u, K) if mode > 0 else np.empty((1, S))
    r = 0
    for c in range(n_chains):
        if mode == 0:
            for i in range(L):
                z[i] = x[i]
        else:
            u_sample_from_alpha(alpha, w_u, K, z)
        for t in range(1, n_steps + 1):
            if mode == 2 and np.random.random() < eps:
                u_sample_from_alpha(alpha, w_u, K, z)
            else:
                gibbs_sweep(x, z, w_A, K, child, word_logfreq, logits, y)
            if t > burn:
                out[r] = z
                r += 1
    return out


@jit
def edit_distance(a, na, b, nb):
    """Levenshtein distance between ``a[:na]`` and ``b[:nb]``."""
    prev = np.arange(nb + 1)
    cur = np.empty(nb + 1, dtype=np.int64)
    for i in range(1, na + 1):
        cur[0] = i
        for j in range(1, nb + 1):
            sub = prev[j - 1] + (0 if a[i - 1] == b[j - 1] else 1)
            cur[j] = min(sub, prev[j] + 1, cur[j - 1] + 1)
        prev[:] = cur
    return prev[nb]


@jit
def contrastive_gradient(x, samples, target, K, child, word_logfreq, use_rich, n_params):
    """Sampled gradient of Sec. 5: ``sum_s w_s phi(z_s) / sum_s w_s - mean_s phi(z_s)`` with
    ``w_s = 1`` if the sample's word equals ``target`` else ``exp(-(D + 1))``, D the edit distance."""
    L = x.shape[0]
    grad = np.zeros(n_params)
    pos = np.zeros(n_params)
    y = np.empty(L, dtype=np.int64)
    n = samples.shape[0]
    wsum = 0.0
    for s in range(n):
        ny = output_word(samples[s], K, y)
        d = edit_distance(y, ny, target, target.shape[0])
        wt = 1.0 if d == 0 else np.exp(-(d + 1.0))
        wsum += wt
        add_features(x, samples[s], K, child, word_logfreq, use_rich, wt, pos, y)
        add_features(x, samples[s], K, child, word_logfreq, use_rich, -1.0 / n, grad, y)
    for j in range(n_params):
        grad[j] += pos[j] / wsum
    return grad
