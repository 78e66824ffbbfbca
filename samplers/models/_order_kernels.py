"""Numba kernels of the greedy elimination orders (min-fill, weighted min-fill, min-degree), of the
cost of a given order, and of the minor-min-width lower bound of the treewidth.

The interaction graph is a bit matrix ``adj`` (n, ceil(n / 64)) of uint64 words (21 MB for 13,000
variables).  Each step eliminates the remaining variable of least score (ties: smallest log cluster
size, then smallest index), joins its neighbours into a clique and rescores only the variables whose
score can have changed: the neighbours (degree, fill) and their neighbours (fill).  The kernel never
raises; :func:`samplers.models.elimination.plan_elimination` validates and wraps.
"""

from __future__ import annotations

import numpy as np

from .._jit import jit

MIN_FILL = 0
WEIGHTED_MIN_FILL = 1
MIN_DEGREE = 2
GIVEN = 3


@jit
def _has(adj, u, v):
    return (adj[u, v >> 6] >> np.uint64(v & 63)) & np.uint64(1)


@jit
def _set(adj, u, v):
    adj[u, v >> 6] |= np.uint64(1) << np.uint64(v & 63)


@jit
def _clear(adj, u, v):
    adj[u, v >> 6] &= ~(np.uint64(1) << np.uint64(v & 63))


@jit
def _neighbours(adj, u, out):
    """Write the neighbours of ``u`` into ``out``; return their number."""
    k = 0
    for w in range(adj.shape[1]):
        word = adj[u, w]
        while word != np.uint64(0):
            low = word & (~word + np.uint64(1))
            bit = 0
            t = low
            while t > np.uint64(1):
                t >>= np.uint64(1)
                bit += 1
            out[k] = w * 64 + bit
            k += 1
            word ^= low
    return k


@jit
def _score(adj, u, heuristic, log_cards, cards, buf):
    """(primary score, log cluster size, pairs tested for a fill edge) of eliminating ``u`` now."""
    d = _neighbours(adj, u, buf)
    size = log_cards[u]
    for a in range(d):
        size += log_cards[buf[a]]
    if heuristic == MIN_DEGREE:
        return float(d), size, 0
    fill = 0.0
    for a in range(d):
        x = buf[a]
        for b in range(a + 1, d):
            y = buf[b]
            if _has(adj, x, y) == np.uint64(0):
                fill += cards[x] * cards[y] if heuristic == WEIGHTED_MIN_FILL else 1.0
    return fill, size, d * (d - 1) // 2


@jit
def _mark(x, dirty, dirty_list, n_dirty):
    """Add ``x`` to the variables to rescore (once); return the new count."""
    if not dirty[x]:
        dirty[x] = True
        dirty_list[n_dirty] = x
        n_dirty += 1
    return n_dirty


@jit
def greedy_order(adj, cards, heuristic, log_entry_cap, given):
    """Greedy elimination order (``heuristic == GIVEN``: the order ``given``, only costed); ``adj`` is
    modified (it ends empty).

    Returns ``(order, widths, log_sizes, complete, pairs)``: ``widths[t]`` / ``log_sizes[t]`` are the
    neighbour count and natural log of the cluster table size of step ``t``; ``pairs`` counts the
    variable pairs tested for a fill edge (the work of the min-fill heuristics).  The kernel stops
    early (``complete = False``) once a cluster's log size exceeds ``log_entry_cap``, so refusing a
    too-wide model costs little.
    """
    n = cards.shape[0]
    log_cards = np.log(cards.astype(np.float64))
    fcards = cards.astype(np.float64)
    score = np.empty(n)
    tie = np.empty(n)
    alive = np.ones(n, dtype=np.bool_)
    buf = np.empty(n, dtype=np.int64)
    nb = np.empty(n, dtype=np.int64)
    dirty = np.zeros(n, dtype=np.bool_)
    dirty_list = np.empty(n, dtype=np.int64)
    order = np.empty(n, dtype=np.int64)
    widths = np.zeros(n, dtype=np.int64)
    log_sizes = np.zeros(n)
    pairs = 0
    if heuristic != GIVEN:
        for u in range(n):
            score[u], tie[u], tested = _score(adj, u, heuristic, log_cards, fcards, buf)
            pairs += tested
    for t in range(n):
        if heuristic == GIVEN:
            v = given[t]
        else:
            v = -1
            for u in range(n):
                if alive[u] and (v < 0 or score[u] < score[v] or (score[u] == score[v] and tie[u] < tie[v])):
                    v = u
        order[t] = v
        alive[v] = False
        d = _neighbours(adj, v, nb)
        widths[t] = d
        log_sizes[t] = log_cards[v]
        for a in range(d):
            log_sizes[t] += log_cards[nb[a]]
        if log_sizes[t] > log_entry_cap:
            return order[:t + 1], widths[:t + 1], log_sizes[:t + 1], False, pairs
        for a in range(d):
            x = nb[a]
            _clear(adj, x, v)
            for b in range(a + 1, d):
                y = nb[b]
                _set(adj, x, y)
                _set(adj, y, x)
        for w in range(adj.shape[1]):
            adj[v, w] = np.uint64(0)
        if heuristic == GIVEN:
            continue
        n_dirty = 0
        for a in range(d):
            x = nb[a]
            n_dirty = _mark(x, dirty, dirty_list, n_dirty)
            if heuristic == MIN_FILL or heuristic == WEIGHTED_MIN_FILL:
                k = _neighbours(adj, x, buf)
                for c in range(k):
                    n_dirty = _mark(buf[c], dirty, dirty_list, n_dirty)
        for a in range(n_dirty):
            x = dirty_list[a]
            dirty[x] = False
            score[x], tie[x], tested = _score(adj, x, heuristic, log_cards, fcards, buf)
            pairs += tested
    return order, widths, log_sizes, True, pairs


@jit
def _popcount(word):
    word = word - ((word >> np.uint64(1)) & np.uint64(0x5555555555555555))
    word = (word & np.uint64(0x3333333333333333)) + ((word >> np.uint64(2)) & np.uint64(0x3333333333333333))
    word = (word + (word >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return int((word * np.uint64(0x0101010101010101)) >> np.uint64(56))


@jit
def minor_min_width(adj):
    """Minor-min-width lower bound of the treewidth (Gogate & Dechter 2004; Bodlaender & Koster 2011,
    MMD+ with the least-common-neighbours contraction); ``adj`` is modified.

    Repeatedly records the least degree of the current graph and contracts a vertex of least degree
    into its neighbour with the fewest common neighbours.  Every recorded degree is the minimum
    degree of a minor of the graph, hence at most its treewidth (treewidth is minor-monotone and at
    least the minimum degree), so the largest is a lower bound.  Cost: ``O(n^2 + n * deg * n / 64)``.
    """
    n = adj.shape[0]
    words = adj.shape[1]
    deg = np.zeros(n, dtype=np.int64)
    for u in range(n):
        for w in range(words):
            deg[u] += _popcount(adj[u, w])
    alive = np.ones(n, dtype=np.bool_)
    nb = np.empty(n, dtype=np.int64)
    bound = 0
    for n_alive in range(n, 1, -1):
        if n_alive - 1 <= bound:  # no minor of n_alive vertices has a larger minimum degree
            break
        v = -1
        for u in range(n):
            if alive[u] and (v < 0 or deg[u] < deg[v]):
                v = u
        bound = max(bound, deg[v])
        k = _neighbours(adj, v, nb)
        target = -1
        least = n
        for a in range(k):
            x = nb[a]
            common = 0
            for w in range(words):
                common += _popcount(adj[v, w] & adj[x, w])
            if common < least or (common == least and deg[x] < deg[target]):
                target = x
                least = common
        for a in range(k):
            x = nb[a]
            _clear(adj, x, v)
            deg[x] -= 1
            if x != target and _has(adj, target, x) == np.uint64(0):
                _set(adj, target, x)
                _set(adj, x, target)
                deg[x] += 1
                deg[target] += 1
        for w in range(words):
            adj[v, w] = np.uint64(0)
        alive[v] = False
    return bound
