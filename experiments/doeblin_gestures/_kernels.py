"""Numba kernels for the keyboard-gesture alignment model (Sec. 5, Experiment 1).

State of one example: ``x`` (l,) key ids in {0..K-1}; alignment ``z`` (l,) in {0..2K}:
``z_i = c`` (x_i starts output letter c), ``z_i = K + c`` (x_i continues letter c; only after a
start or continuation of the same letter), ``z_i = 2K`` (unaligned, '#'). The output word ``y`` is
the letters of the start states, in order.

The paper's indicator features on (x_i, z_{i-1}, z_i), (x_i, x_{i-1}, z_i) and (x_i, y_i, y_{i-1})
are kept x-conditioned but reduced by describing a state (or letter) **relative to the key x_i**:
``rel[x, c]`` (K, K) int64 is 0 if c == x, 1 if c is a keyboard neighbour of x, 2 otherwise, and the
*class* of a state s at key x is ``rel[x, c]`` for a start of c, ``3 + rel[x, c]`` for a
continuation of c and 6 for '#' (7 classes; 7 = BOS for a missing predecessor).

Flat weight layout (``S = 2K + 1`` states)::

    [0, K*S)                 U: (x_i, z_i), full indicator
    off_P  K x 8 x 7         P: (x_i, class(z_{i-1} | x_i) or BOS, class(z_i | x_i))
    off_R  K x (K+1) x 7     R: (x_i, x_{i-1} or BOS, class(z_i | x_i))
    n_base                   --- end of the base features (u uses only these) ---
    off_Y  3 x (K+1) x K     Y: (rel(x_i, y_j), y_{j-1} or BOS, y_j) at the start position i of y_j
    off_D  (3)               [y in dictionary], log frequency if in dictionary, #prefixes of y in it

The dictionary is a trie: ``child`` (n_nodes, K) int64 (-1: none), ``word_logfreq`` (n_nodes,)
(NaN: the node ends no word; the root ends none).  Arrays travel bundled: :class:`LexiconTables`
(relation and trie), :class:`FeatureScratch`, and :class:`AlignmentChain`, the model that the
generic kernels of :mod:`doeblin.core` run (restart = a u draw by forward filtering / backward
sampling, move = one Gibbs sweep of A).  No validation here.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from doeblin import core
from doeblin.core import implements, move, restart
from samplers._jit import jit
from samplers._kernels import categorical_from_logits, categorical_from_probs, logsumexp_1d

N_CLASSES = 7     # classes of a state relative to a key; index 7 is BOS in the P block




class LexiconTables(NamedTuple):
    """Key-letter relation ``rel`` (K, K) int64 and the dictionary trie ``child`` (n_nodes, K),
    ``word_logfreq`` (n_nodes,)."""

    rel: np.ndarray
    child: np.ndarray
    word_logfreq: np.ndarray


class FeatureScratch(NamedTuple):
    """Scratch of :func:`features`: ``idx``/``val`` (>= 4 l + 3) and ``starts`` (l,)."""

    idx: np.ndarray
    val: np.ndarray
    starts: np.ndarray


def feature_scratch(L: int) -> FeatureScratch:
    return FeatureScratch(np.empty(4 * L + 3, dtype=np.int64), np.empty(4 * L + 3), np.empty(L, dtype=np.int64))


class Prefix(NamedTuple):
    """Where a sweep stands at site i: ``starts[k:n_starts]`` are the start positions after i, ``last``
    the last letter before i (K if none), ``(node, depth)`` the trie state of the prefix before i."""

    k: int
    n_starts: int
    last: int
    node: int
    depth: int


class AlignmentChain(NamedTuple):
    """One example's chain: keys ``x`` (l,), weights ``w_u`` (u) and ``w_A`` (A), the lexicon tables,
    :func:`base_tables` of u (``U_u``, ``C_u``) and of A (``U``, ``C``), u's forward messages
    ``alpha`` and the sweep's scratch (``logits`` (S,), ``starts`` (l,), ``idx``/``val`` (10,))."""

    x: np.ndarray
    w_u: np.ndarray
    w_A: np.ndarray
    tables: LexiconTables
    U_u: np.ndarray
    C_u: np.ndarray
    alpha: np.ndarray
    U: np.ndarray
    C: np.ndarray
    logits: np.ndarray
    starts: np.ndarray
    idx: np.ndarray
    val: np.ndarray

@jit
def layout(K):
    """Offsets ``(S, off_P, off_R, n_base, off_Y, off_D, n_full)`` of the flat weight vector."""
    S = 2 * K + 1
    off_P = K * S
    off_R = off_P + K * 8 * 7
    n_base = off_R + K * (K + 1) * 7
    off_Y = n_base
    off_D = off_Y + 3 * (K + 1) * K
    return S, off_P, off_R, n_base, off_Y, off_D, off_D + 3


@jit
def state_class(s, key, K, rel):
    """Class of state ``s`` relative to key ``key`` (0-2 start, 3-5 continue, 6 unaligned)."""
    if s < K:
        return rel[key, s]
    if s < 2 * K:
        return 3 + rel[key, s - K]
    return 6


@jit
def allowed(prev, s, K):
    """Whether state ``s`` may follow ``prev`` (``prev = -1`` at the first position)."""
    if K <= s < 2 * K:
        return prev >= 0 and (prev == s - K or prev == s)
    return True


@jit
def is_valid(z, K):
    prev = -1
    for i in range(z.shape[0]):
        if not allowed(prev, z[i], K):
            return False
        prev = z[i]
    return True


@jit
def r_index(x, i, s, K, rel):
    """Index of the (x_i, x_{i-1} or BOS, class(z_i)) indicator."""
    _, _, off_R, _, _, _, _ = layout(K)
    xp = K if i == 0 else x[i - 1]
    return off_R + (x[i] * (K + 1) + xp) * 7 + state_class(s, x[i], K, rel)


@jit
def p_index(x, i, prev, s, K, rel):
    """Index of the (x_i, class(z_{i-1}) or BOS, class(z_i)) indicator (``prev = -1``: BOS)."""
    _, off_P, _, _, _, _, _ = layout(K)
    pc = 7 if prev < 0 else state_class(prev, x[i], K, rel)
    return off_P + (x[i] * 8 + pc) * 7 + state_class(s, x[i], K, rel)


@jit
def y_index(key, last, c, K, rel):
    """Index of the (rel(key, c), previous letter ``last`` or BOS = K, letter c) indicator."""
    _, _, _, _, off_Y, _, _ = layout(K)
    return off_Y + (rel[key, c] * (K + 1) + last) * K + c


@jit
def unary(x, i, s, w, K, rel):
    """Score of the single-site base features of ``z_i = s``: (x_i, z_i) and (x_i, x_{i-1}, z_i)."""
    return w[x[i] * (2 * K + 1) + s] + w[r_index(x, i, s, K, rel)]


@jit
def pair(x, i, prev, s, w, K, C):
    """Score of (x_i, z_{i-1}, z_i) given the class table ``C`` of :func:`base_tables`; -inf if ``s``
    may not follow ``prev`` (``prev = -1``: first position)."""
    if not allowed(prev, s, K):
        return -np.inf
    _, off_P, _, _, _, _, _ = layout(K)
    return w[off_P + (x[i] * 8 + (7 if prev < 0 else C[i, prev])) * 7 + C[i, s]]


@jit
def trie_walk(z, starts, k, n_starts, node, depth, child):
    """Walk the trie from ``node`` (``-1``: fallen off) along the letters ``z[starts[k:n_starts]]``;
    return the final node (-1 if off the trie) and ``depth`` plus the number of steps that stayed on."""
    j = k
    while node >= 0 and j < n_starts:
        node = child[node, z[starts[j]]]
        if node >= 0:
            depth += 1
        j += 1
    return node, depth


@jit
def dictionary_score(node, depth, w, K, word_logfreq):
    """Dictionary features of a word whose trie walk ended at ``node`` having matched ``depth``
    prefixes: #prefixes, and membership plus log frequency if ``node`` ends a word."""
    _, _, _, _, _, off_D, _ = layout(K)
    val = w[off_D + 2] * depth
    if node >= 0 and not np.isnan(word_logfreq[node]):
        val += w[off_D] + w[off_D + 1] * word_logfreq[node]
    return val


@jit
def dictionary_features(z, starts, at, tables, idx, val, n):
    """Append the dictionary features of the word whose prefix left the trie at ``(at.node, at.depth)``
    and continues with the letters ``z[starts[at.k:at.n_starts]]`` to ``idx``/``val`` from entry n
    (#prefixes; membership and log frequency if a word); return the new count."""
    _, _, _, _, _, off_D, _ = layout(tables.rel.shape[0])
    node, depth = trie_walk(z, starts, at.k, at.n_starts, at.node, at.depth, tables.child)
    idx[n] = off_D + 2
    val[n] = depth
    n += 1
    if node >= 0 and not np.isnan(tables.word_logfreq[node]):
        idx[n] = off_D
        idx[n + 1] = off_D + 1
        val[n] = 1.0
        val[n + 1] = tables.word_logfreq[node]
        n += 2
    return n


@jit
def start_positions(z, K, starts):
    """Write the positions of start states of ``z`` into ``starts``; return how many."""
    n = 0
    for i in range(z.shape[0]):
        if z[i] < K:
            starts[n] = i
            n += 1
    return n


@jit
def features(x, z, tables, use_rich, scratch):
    """Sparse feature vector of ``z`` (valid): writes indices/values into ``scratch.idx``/``scratch.val``
    and returns their number; base features only unless ``use_rich``."""
    K, rel = tables.rel.shape[0], tables.rel
    idx, val, starts = scratch.idx, scratch.val, scratch.starts
    S = 2 * K + 1
    n = 0
    prev = -1
    for i in range(z.shape[0]):
        idx[n] = x[i] * S + z[i]
        idx[n + 1] = r_index(x, i, z[i], K, rel)
        idx[n + 2] = p_index(x, i, prev, z[i], K, rel)
        val[n] = val[n + 1] = val[n + 2] = 1.0
        n += 3
        prev = z[i]
    if not use_rich:
        return n
    ns = start_positions(z, K, starts)
    last = K
    for j in range(ns):
        q = starts[j]
        idx[n] = y_index(x[q], last, z[q], K, rel)
        val[n] = 1.0
        n += 1
        last = z[q]
    return dictionary_features(z, starts, Prefix(0, ns, K, 0, 0), tables, idx, val, n)


@jit
def full_score(x, z, w, tables, use_rich):
    """Log potential ``w . phi(x, z)`` (-inf if invalid); base features only unless ``use_rich``."""
    if not is_valid(z, tables.rel.shape[0]):
        return -np.inf
    L = z.shape[0]
    scratch = FeatureScratch(np.empty(4 * L + 3, dtype=np.int64), np.empty(4 * L + 3), np.empty(L, dtype=np.int64))
    n = features(x, z, tables, use_rich, scratch)
    out = 0.0
    for j in range(n):
        out += w[scratch.idx[j]] * scratch.val[j]
    return out


@jit
def add_features(x, z, tables, use_rich, scale, grad, scratch):
    """``grad += scale * phi(x, z)`` (see :func:`features`)."""
    n = features(x, z, tables, use_rich, scratch)
    for j in range(n):
        grad[scratch.idx[j]] += scale * scratch.val[j]


@jit
def base_tables(x, w, K, rel):
    """Per-example tables of the base model: ``U[i, s]`` = :func:`unary` and ``C[i, s]`` = class
    of state s at key x_i (shape (l, S)); they turn every base score into two or three lookups."""
    S = 2 * K + 1
    L = x.shape[0]
    U = np.empty((L, S))
    C = np.empty((L, S), dtype=np.int64)
    for i in range(L):
        for s in range(S):
            U[i, s] = unary(x, i, s, w, K, rel)
            C[i, s] = state_class(s, x[i], K, rel)
    return U, C


@jit
def u_forward(x, w, K, U, C):
    """Forward log-messages ``alpha`` (l, S) of the base chain model u with weights ``w`` and its
    :func:`base_tables` ``U``, ``C``; log Z = logsumexp(alpha[-1])."""
    S = 2 * K + 1
    L = x.shape[0]
    alpha = np.empty((L, S))
    buf = np.empty(S)
    for s in range(S):
        alpha[0, s] = U[0, s] + pair(x, 0, -1, s, w, K, C)
    for i in range(1, L):
        for s in range(S):
            for p in range(S):
                buf[p] = alpha[i - 1, p] + pair(x, i, p, s, w, K, C)
            alpha[i, s] = U[i, s] + logsumexp_1d(buf)
    return alpha


@jit
def u_sample_from_alpha(x, alpha, w, K, C, z, buf):
    """Backward sampling (FFBS) of ``z ~ u`` in place, given forward messages; ``buf`` (2K+1,) is scratch.

    It allocates nothing: it is a Doeblin restart, called from the core's loop kernels, which are compiled
    without reference counting (``doeblin.core.loop_jit``).
    """
    L, S = alpha.shape
    z[L - 1] = categorical_from_logits(alpha[L - 1])
    for i in range(L - 2, -1, -1):
        for p in range(S):
            buf[p] = alpha[i, p] + pair(x, i + 1, p, z[i + 1], w, K, C)
        z[i] = categorical_from_logits(buf)


@jit
def u_draws(x, w, K, rel, size, seed):
    """``size`` exact draws from u (forward filtering, backward sampling)."""
    np.random.seed(seed)
    U, C = base_tables(x, w, K, rel)
    alpha = u_forward(x, w, K, U, C)
    out = np.empty((size, x.shape[0]), dtype=np.int64)
    z = np.empty(x.shape[0], dtype=np.int64)
    buf = np.empty(2 * K + 1)
    for n in range(size):
        u_sample_from_alpha(x, alpha, w, K, C, z, buf)
        out[n] = z
    return out


@jit(inline="always")
def site_value_features(chain, z, i, v, at):
    """Features of ``z_i = v`` that can depend on v (sparse, into ``chain.idx``/``chain.val`` of length
    >= 10); returns their number, or -1 if v is not allowed between z_{i-1} and z_{i+1}.

    ``at`` (:class:`Prefix`) says where the sweep stands; ``chain.starts`` holds z's start positions.
    Left out (the same for every v): base features away from i and i+1, the prefix's own bigram
    features and the suffix's internal ones.
    """
    x, C, starts, idx, val = chain.x, chain.C, chain.starts, chain.idx, chain.val
    rel, child = chain.tables.rel, chain.tables.child
    K = rel.shape[0]
    S, off_P, off_R, _, _, _, _ = layout(K)
    L = z.shape[0]
    last, node, depth = at.last, at.node, at.depth
    prev = z[i - 1] if i > 0 else -1
    nxt = z[i + 1] if i + 1 < L else -1
    if not allowed(prev, v, K) or (nxt >= 0 and not allowed(v, nxt, K)):
        return -1
    idx[0] = x[i] * S + v
    idx[1] = off_R + (x[i] * (K + 1) + (K if i == 0 else x[i - 1])) * 7 + C[i, v]
    idx[2] = off_P + (x[i] * 8 + (7 if prev < 0 else C[i, prev])) * 7 + C[i, v]
    n = 3
    if nxt >= 0:
        idx[n] = off_P + (x[i + 1] * 8 + C[i + 1, v]) * 7 + C[i + 1, nxt]
        n += 1
    if v < K:      # the word is prefix + v + suffix
        idx[n] = y_index(x[i], last, v, K, rel)
        n += 1
        last = v
        node = child[node, v] if node >= 0 else -1
        if node >= 0:
            depth += 1
    if at.k < at.n_starts:
        q = starts[at.k]
        idx[n] = y_index(x[q], last, z[q], K, rel)
        n += 1
    for j in range(n):
        val[j] = 1.0
    return dictionary_features(z, starts, Prefix(at.k, at.n_starts, last, node, depth), chain.tables, idx, val, n)


@jit(inline="always")
def site_logits(chain, z, i, at):
    """Conditional log-potentials (up to a constant) of ``z_i`` under A's full model, into ``chain.logits``.

    ``at`` (:class:`Prefix`) says where the sweep stands; the prefix's own bigram features and the
    suffix's internal ones do not depend on ``z_i`` and are left out. Equals ``w_A`` dotted with
    :func:`site_value_features` (tested); written out with table lookups and the rows of the two
    :func:`pair` terms hoisted out of the loop over values because it is the sweep's hot spot (3-4x
    faster than the dot product).
    """
    x, w, U, C, starts, logits = chain.x, chain.w_A, chain.U, chain.C, chain.starts, chain.logits
    rel, child, word_logfreq = chain.tables.rel, chain.tables.child, chain.tables.word_logfreq
    K = rel.shape[0]
    k, n_starts, last, node, depth = at.k, at.n_starts, at.last, at.node, at.depth
    S = 2 * K + 1
    L = z.shape[0]
    _, off_P, _, _, _, _, _ = layout(K)
    prev = z[i - 1] if i > 0 else -1
    nxt = z[i + 1] if i + 1 < L else -1
    row = off_P + (x[i] * 8 + (7 if prev < 0 else C[i, prev])) * 7        # P block of (x_i, z_{i-1})
    row_next = off_P + x[i + 1] * 56 if nxt >= 0 else 0                   # P block of x_{i+1}
    q = starts[k] if k < n_starts else -1

    # rich part shared by every non-start value: the word is prefix + suffix
    n_node, n_depth = trie_walk(z, starts, k, n_starts, node, depth, child)
    rich_nonstart = dictionary_score(n_node, n_depth, w, K, word_logfreq)
    if q >= 0:
        rich_nonstart += w[y_index(x[q], last, z[q], K, rel)]
    for v in range(S):
        if not allowed(prev, v, K) or (nxt >= 0 and not allowed(v, nxt, K)):
            logits[v] = -np.inf
            continue
        val = U[i, v] + w[row + C[i, v]]
        if nxt >= 0:
            val += w[row_next + C[i + 1, v] * 7 + C[i + 1, nxt]]
        if v < K:      # the word is prefix + v + suffix
            v_node = child[node, v] if node >= 0 else -1
            v_node, v_depth = trie_walk(z, starts, k, n_starts, v_node, depth + (1 if v_node >= 0 else 0), child)
            val += w[y_index(x[i], last, v, K, rel)] + dictionary_score(v_node, v_depth, w, K, word_logfreq)
            if q >= 0:
                val += w[y_index(x[q], v, z[q], K, rel)]
        else:
            val += rich_nonstart
        logits[v] = val


@jit
def categorical_from_logits_once(logits):
    """Draw from softmax(logits), overwriting ``logits`` with unnormalised probabilities (one pass
    of exp instead of :func:`categorical_from_logits`'s two; the Gibbs sweep's hot spot)."""
    m = -np.inf
    for v in range(logits.shape[0]):
        if logits[v] > m:
            m = logits[v]
    for v in range(logits.shape[0]):
        logits[v] = np.exp(logits[v] - m)
    return categorical_from_probs(logits)


@jit
def sweep(chain, z, z_new, scale, grad):
    """One transition of A, a systematic-scan Gibbs sweep over positions 0..l-1, on ``z`` in place.

    Sampling (``z_new`` empty): each z_i is drawn from its conditional. Replay (``z_new`` of length
    l): the sweep is forced to move ``z`` to ``z_new`` and ``grad += scale * d log A(z_new | z) / dw``
    is accumulated: the sum over sites of ``phi(v) - sum_v' p(v') phi(v')`` (features of
    :func:`site_value_features`; the others cancel).
    """
    K = chain.tables.rel.shape[0]
    child = chain.tables.child
    logits, idx, val = chain.logits, chain.idx, chain.val
    replay = z_new.shape[0] > 0
    n_starts = start_positions(z, K, chain.starts)     # positions > i are unchanged when site i is visited
    k = 0
    last = K
    node = 0
    depth = 0
    for i in range(z.shape[0]):
        while k < n_starts and chain.starts[k] <= i:
            k += 1
        at = Prefix(k, n_starts, last, node, depth)
        site_logits(chain, z, i, at)
        if not replay:
            v = categorical_from_logits_once(logits)
        else:
            v = z_new[i]
            lz = logsumexp_1d(logits)
            for v2 in range(2 * K + 1):
                coef = (1.0 if v2 == v else 0.0) - np.exp(logits[v2] - lz)
                if coef == 0.0:
                    continue
                n = site_value_features(chain, z, i, v2, at)
                for j in range(n):
                    grad[idx[j]] += scale * coef * val[j]
        z[i] = v
        if v < K:
            last = v
            if node >= 0:
                node = child[node, v]
                if node >= 0:
                    depth += 1


@jit
def alignment_chain(x, w_u, w_A, tables):
    """Bundle one example's :class:`AlignmentChain` (tables of u and A, u's forward messages, scratch)."""
    K = tables.rel.shape[0]
    L = x.shape[0]
    U_u, C_u = base_tables(x, w_u, K, tables.rel)
    alpha = u_forward(x, w_u, K, U_u, C_u)
    U, C = base_tables(x, w_A, K, tables.rel)
    return AlignmentChain(x, w_u, w_A, tables, U_u, C_u, alpha, U, C, np.empty(2 * K + 1),
                          np.empty(L, dtype=np.int64), np.empty(10, dtype=np.int64), np.empty(10))


@implements(restart, AlignmentChain)
def draw_from_u(chain, z):
    """Restart: ``z ~ u`` by backward sampling from the forward messages (FFBS); scratch: ``chain.logits``."""
    u_sample_from_alpha(chain.x, chain.alpha, chain.w_u, chain.tables.rel.shape[0], chain.C_u, z, chain.logits)


@implements(move, AlignmentChain)
def gibbs_sweep(chain, z):
    """One transition of A (a sampling :func:`sweep`)."""
    sweep(chain, z, z[:0], 0.0, chain.w_A[:0])


@jit
def seeded_sweep(x, z, w, tables, seed):
    """One Gibbs sweep of ``z`` in place (A's weights ``w``) with Numba's generator seeded by ``seed``."""
    np.random.seed(seed)
    gibbs_sweep(alignment_chain(x, w, w, tables), z)


@jit
def site_state(z, i, K, child, starts):
    """:class:`Prefix` of site ``i`` of ``z`` (``starts`` filled with z's start positions)."""
    n_starts = start_positions(z, K, starts)
    k = 0
    while k < n_starts and starts[k] < i:
        k += 1
    last = z[starts[k - 1]] if k > 0 else K
    node, depth = trie_walk(z, starts, 0, k, 0, 0, child)
    if k < n_starts and starts[k] == i:
        k += 1
    return Prefix(k, n_starts, last, node, depth)


@jit
def conditional_logits(x, z, i, w, tables):
    """:func:`site_logits` at site ``i`` of ``z`` (prefix state rebuilt from z[:i]); for tests."""
    chain = alignment_chain(x, w, w, tables)
    at = site_state(z, i, tables.rel.shape[0], tables.child, chain.starts)
    site_logits(chain, z, i, at)
    return chain.logits


@core.loop_jit
def _collect(chain, z, n_steps, eps, out, r):
    """``n_steps`` steps of :func:`doeblin.core.restart_step` (``eps = 0``: plain Gibbs sweeps) from
    ``z``; the states after the first ``n_steps // 2`` steps (burn-in) go to ``out[r:]``; returns the
    next free row."""
    burn = n_steps // 2
    for t in range(1, n_steps + 1):
        core.restart_step(chain, z, eps)
        if t > burn:
            for j in range(z.shape[0]):   # an explicit copy: the loop counts no references (core.loop_jit)
                out[r, j] = z[j]
            r += 1
    return r


@jit
def basic_gibbs_samples(chain, n_steps, n_chains, seed):
    """Basic Gibbs: ``n_chains`` chains of ``n_steps`` sweeps from ``z_i = start x_i``; post-burn-in
    states stacked, ``n_chains * (n_steps - n_steps // 2)`` rows."""
    np.random.seed(seed)
    out = np.empty((n_chains * (n_steps - n_steps // 2), chain.x.shape[0]), dtype=np.int64)
    r = 0
    for _ in range(n_chains):
        z = chain.x.copy()
        r = _collect(chain, z, n_steps, 0.0, out, r)
    return out


@jit
def doeblin_sampler_samples(chain, eps, n_chains, seed):
    """The strong Doeblin sampler as tested in the paper (Sec. 5): per chain a u draw, then ``T_c ~
    Geometric(eps)`` sweeps (support 1, 2, ...; mean ``1 / eps``), the first ``T_c // 2`` of them
    burn-in, so chains differ in length and long chains give more samples."""
    np.random.seed(seed)
    length = np.empty(n_chains, dtype=np.int64)
    rows = 0
    for c in range(n_chains):
        length[c] = np.random.geometric(eps)
        rows += length[c] - length[c] // 2
    out = np.empty((rows, chain.x.shape[0]), dtype=np.int64)
    z = np.empty(chain.x.shape[0], dtype=np.int64)
    r = 0
    for c in range(n_chains):
        draw_from_u(chain, z)
        r = _collect(chain, z, length[c], 0.0, out, r)
    return out


@jit
def doeblin_chain_samples(chain, n_steps, eps, n_chains, seed):
    """The strong Doeblin *chain* (Sec. 2) from a u draw: ``n_steps`` transitions, each a restart from
    u w.p. ``eps``, else a Gibbs sweep; first half burn-in.  ``eps = 0`` is u-Gibbs ("smart
    restarts": Gibbs sweeps from a u draw)."""
    np.random.seed(seed)
    out = np.empty((n_chains * (n_steps - n_steps // 2), chain.x.shape[0]), dtype=np.int64)
    z = np.empty(chain.x.shape[0], dtype=np.int64)
    r = 0
    for _ in range(n_chains):
        draw_from_u(chain, z)
        r = _collect(chain, z, n_steps, eps, out, r)
    return out


@jit
def output_word(z, K, y):
    """Write the output word of ``z`` (the letters of its start states) into ``y``; return its length."""
    n = start_positions(z, K, y)
    for k in range(n):
        y[k] = z[y[k]]
    return n


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
def sample_weight(z, target, K, y):
    """Sec. 5 importance weight of an alignment: 1 if its word equals ``target``, else
    ``exp(-(D + 1))`` with D the edit distance (``y``: scratch of length l)."""
    ny = output_word(z, K, y)
    d = edit_distance(y, ny, target, target.shape[0])
    return 1.0 if d == 0 else np.exp(-(d + 1.0))


@jit
def contrastive_gradient(x, samples, target, tables, use_rich, n_params):
    """Sampled gradient of Sec. 5: ``sum_s w_s phi(z_s) / sum_s w_s - mean_s phi(z_s)`` with the
    weights of :func:`sample_weight`."""
    L = x.shape[0]
    K = tables.rel.shape[0]
    grad = np.zeros(n_params)
    pos = np.zeros(n_params)
    y = np.empty(L, dtype=np.int64)
    scratch = FeatureScratch(np.empty(4 * L + 3, dtype=np.int64), np.empty(4 * L + 3), np.empty(L, dtype=np.int64))
    n = samples.shape[0]
    wsum = 0.0
    for s in range(n):
        wt = sample_weight(samples[s], target, K, y)
        wsum += wt
        add_features(x, samples[s], tables, use_rich, wt, pos, scratch)
        add_features(x, samples[s], tables, use_rich, -1.0 / n, grad, scratch)
    for j in range(n_params):
        grad[j] += pos[j] / wsum
    return grad


@jit
def doeblin_path_gradient(chain, target, eps, n_chains, control_variate, seed):
    """Algorithm 1 (SampleGradient) for A's weights, with the Sec. 5 importance weights.

    Per chain c: T_c ~ Geometric(eps) on {0, 1, ...}, z_0 ~ u (FFBS), z_t = one sweep of A from
    z_{t-1} for t = 1..T_c (:func:`doeblin.core.restart_path`), weights ``w_t`` = :func:`sample_weight`
    of z_t (the paper's replacement for ``eps A(y | y_{t-1})``). The gradient mass ``sum_t w_t
    sum_{s<=t} dlog A(z_s | z_{s-1})`` is accumulated in O(T) as ``sum_s W_s dlog A(z_s | z_{s-1})``
    with suffix sums ``W_s = sum_{t>=s} w_t`` (Sec. 4.2, :func:`doeblin.core.suffix_weights`); u's
    term ``dlog u(z_0)`` is 0 for A's weights (Assumption 4.3: disjoint coordinates) when u is held
    fixed; its gradient for u's weights is returned separately: the coefficient of ``dlog u(z_0) =
    phi_u(z_0) - E_u[phi_u]`` is the chain's whole weight ``W_0``, and ``E_u[phi_u]`` is estimated
    from ``n_chains`` fresh u draws, independent of the chains.

    With ``control_variate`` the coefficient of step s of chain c is ``W_s - (T_c - s + 1) wbar_c``,
    ``wbar_c`` being the mean weight of the states of the *other* chains (leave-one-out; no
    correction with a single chain). The subtracted term is independent of chain c's states and
    ``dlog A(z_s | z_{s-1})`` has conditional mean 0 given the past, so ``g``'s expectation is
    unchanged, while the part of the future weight that every path collects anyway no longer
    multiplies the score noise.

    Returns ``(g (n_full,), g_u (n_base,), Z, transitions)``; the estimates are ``g / Z`` and
    ``g_u / Z``, consistent for the gradients of ``log sum_z pi~(z) weight(z)`` in ``w_A`` and ``w_u``
    as ``n_chains`` grows.
    """
    np.random.seed(seed)
    x, w_u, w_A, tables = chain.x, chain.w_u, chain.w_A, chain.tables
    L = x.shape[0]
    K = tables.rel.shape[0]
    grad = np.zeros(w_A.shape[0])
    y = np.empty(L, dtype=np.int64)
    offset = np.zeros(n_chains + 1, dtype=np.int64)      # chain c's states: rows offset[c]..offset[c+1]-1
    for c in range(n_chains):
        offset[c + 1] = offset[c] + np.random.geometric(eps)
    path = np.empty((offset[n_chains], L), dtype=np.int64)
    weights = np.empty(offset[n_chains])
    for c in range(n_chains):
        core.restart_path(chain, path[offset[c]:offset[c + 1]], offset[c + 1] - offset[c])
        for r in range(offset[c], offset[c + 1]):
            weights[r] = sample_weight(path[r], target, K, y)
    Z = weights.sum()
    grad_u = np.zeros(w_u.shape[0])
    scratch = FeatureScratch(np.empty(4 * L + 3, dtype=np.int64), np.empty(4 * L + 3), np.empty(L, dtype=np.int64))
    z = np.empty(L, dtype=np.int64)
    mean_phi_u = np.zeros(w_u.shape[0])        # E_u[phi_u] from independent draws
    for _ in range(n_chains):
        draw_from_u(chain, z)
        add_features(x, z, tables, False, 1.0 / n_chains, mean_phi_u, scratch)
    total_u = 0.0
    coef = np.empty(offset[n_chains])
    for c in range(n_chains):
        first, end = offset[c], offset[c + 1]
        own = weights[first:end].sum()
        others = offset[n_chains] - (end - first)
        wbar = (Z - own) / others if control_variate and others > 0 else 0.0
        coef_u = own - (end - first) * wbar
        add_features(x, path[first], tables, False, coef_u, grad_u, scratch)
        total_u += coef_u
        core.suffix_weights(weights[first:end], wbar, coef[first:end])
        for r in range(end - 1, first, -1):
            if coef[r] != 0.0:
                z = path[r - 1].copy()
                sweep(chain, z, path[r], coef[r], grad)
    grad_u -= total_u * mean_phi_u
    return grad, grad_u, Z, offset[n_chains] - n_chains