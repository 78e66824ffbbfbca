"""Exact inference in pairwise MRFs by variable elimination and a junction (elimination) tree.

Variable elimination (Zhang & Poole 1994; Koller & Friedman 2009, Alg. 9.1) sums the variables out
one at a time in log space.  Eliminating variable ``v`` multiplies every factor whose scope holds
``v`` into one *cluster* table ``psi_v`` over ``C_v = {v} u N(v)`` (its neighbours not yet
eliminated) and sends the message ``m_v = logsumexp_v psi_v`` to the cluster of the first variable
of ``C_v \\ {v}`` to be eliminated.  The clusters with these messages form a junction tree
(K&F Thm. 10.4); a downward (Hugin) pass

    belief_v = psi_v + delta_{parent -> v},    delta_{v -> c} = logsumexp_{C_v \\ S_c} belief_v - m_c,

calibrates every cluster (K&F Sec. 10.3), so each belief is the unnormalised joint of its cluster
and the single-site marginals follow by summing out the others.  ``0 / 0 = 0`` (``-inf - -inf``) is
the Hugin convention.

Cost is ``sum_v prod_{u in C_v} n_states[u]`` table entries: exponential in the width of the order
(``max_v |C_v| - 1``, an upper bound of the graph's treewidth), linear in the number of variables.
Orders are chosen greedily (min-fill, min-degree, and the given variable order, which is optimal on
a row-major grid: width = the number of columns); the one with the smallest largest table is used.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

#: Default cap on the entries of the largest cluster table (2^24 doubles = 128 MiB).
MAX_TABLE_ENTRIES = 2**24
#: Default cap on all tables kept for the marginals pass (2^26 doubles = 512 MiB).
MAX_TOTAL_ENTRIES = 2**26

ORDER_HEURISTICS = ("min-fill", "min-degree", "natural")


@dataclass(frozen=True)
class EliminationPlan:
    """An elimination order with its cost.

    Attributes
    ----------
    order : tuple of int
        Variables in elimination order.
    heuristic : str
        Which heuristic produced it (one of :data:`ORDER_HEURISTICS`).
    width : int
        ``max_v |C_v| - 1``: the induced width of the order, an upper bound of the treewidth.
    max_table_entries : int
        Entries of the largest cluster table.
    total_table_entries : int
        Entries of all cluster tables together (the memory of the marginals pass).
    """

    order: tuple
    heuristic: str
    width: int
    max_table_entries: int
    total_table_entries: int


def _adjacency(n_vars: int, edges: np.ndarray) -> list[set]:
    adj: list[set] = [set() for _ in range(n_vars)]
    for u, v in edges:
        adj[int(u)].add(int(v))
        adj[int(v)].add(int(u))
    return adj


def _greedy_order(n_vars: int, edges: np.ndarray, cards: np.ndarray, heuristic: str) -> list[int]:
    """Greedy min-fill or min-degree order (ties broken by weighted cluster size, then index)."""
    adj = _adjacency(n_vars, edges)
    remaining = set(range(n_vars))
    order = []
    logc = np.log(cards.astype(np.float64))
    while remaining:
        best, best_key = -1, None
        for v in remaining:
            nb = adj[v]
            if heuristic == "min-fill":
                nbl = list(nb)
                fill = sum(1 for i in range(len(nbl)) for j in range(i + 1, len(nbl)) if nbl[j] not in adj[nbl[i]])
                key = (fill, logc[v] + sum(logc[u] for u in nb), v)
            else:
                key = (len(nb), logc[v] + sum(logc[u] for u in nb), v)
            if best_key is None or key < best_key:
                best, best_key = v, key
        nb = adj[best]
        for u in nb:
            adj[u].update(nb - {u})
            adj[u].discard(best)
        remaining.discard(best)
        order.append(best)
    return order


def order_cost(n_vars: int, edges: np.ndarray, cards: np.ndarray, order) -> tuple[int, int, int]:
    """``(width, max_table_entries, total_table_entries)`` of eliminating in ``order``."""
    adj = _adjacency(n_vars, edges)
    width, biggest, total = 0, 0, 0
    for v in order:
        nb = adj[v]
        size = int(cards[v]) * math.prod(int(cards[u]) for u in nb)
        width, biggest, total = max(width, len(nb)), max(biggest, size), total + size
        for u in nb:
            adj[u].update(nb - {u})
            adj[u].discard(v)
    return width, biggest, total


def plan_elimination(n_vars: int, edges, cards) -> EliminationPlan:
    """The cheapest of the min-fill, min-degree and natural orders: smallest largest table, then
    fewest table entries in all."""
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    cards = np.asarray(cards, dtype=np.int64)
    best = None
    for heuristic in ORDER_HEURISTICS:
        order = list(range(n_vars)) if heuristic == "natural" else _greedy_order(n_vars, edges, cards, heuristic)
        width, biggest, total = order_cost(n_vars, edges, cards, order)
        plan = EliminationPlan(tuple(order), heuristic, width, biggest, total)
        if best is None or (plan.max_table_entries, plan.total_table_entries) < (best.max_table_entries,
                                                                                 best.total_table_entries):
            best = plan
    return best


def _expand(scope: tuple, table: np.ndarray, target: tuple, cards) -> np.ndarray:
    """Reshape ``table`` (axes = sorted ``scope``) to broadcast against sorted ``target``."""
    s = set(scope)
    return table.reshape([int(cards[v]) if v in s else 1 for v in target])


def _combine(factors: list, cards) -> tuple[tuple, np.ndarray]:
    """Log-space product (sum) of factors ``(scope, table)``; scopes sorted, result scope sorted."""
    scope = tuple(sorted(set().union(*[f[0] for f in factors])))
    total = np.zeros([int(cards[v]) for v in scope])
    for sc, tab in factors:
        total = total + _expand(sc, tab, scope, cards)
    return scope, total


def _sum_out(scope: tuple, table: np.ndarray, keep: tuple) -> np.ndarray:
    """logsumexp of ``table`` over the variables of ``scope`` not in ``keep`` (result axes = sorted keep)."""
    axes = tuple(i for i, v in enumerate(scope) if v not in set(keep))
    if not axes:
        return table
    with np.errstate(divide="ignore", invalid="ignore"):
        return logsumexp(table, axis=axes)


def _hugin_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a - b`` in log space with ``-inf - -inf = -inf`` (0 / 0 = 0)."""
    with np.errstate(invalid="ignore"):
        out = a - b
    out[np.isneginf(b)] = -np.inf
    return out


def eliminate(log_unary: np.ndarray, edges: np.ndarray, pairwise: np.ndarray, n_states: np.ndarray,
              plan: EliminationPlan, *, marginals: bool = True) -> tuple[float, np.ndarray | None]:
    """Exact ``log Z`` (and single-site marginals) of a pairwise MRF by elimination along ``plan.order``.

    Parameters
    ----------
    log_unary : ndarray (n_vars, K)
        Unary log potentials (entries beyond ``n_states[i]`` are ignored).
    edges : ndarray of int (E, 2)
    pairwise : ndarray (E, K, K)
    n_states : ndarray of int (n_vars,)
    plan : EliminationPlan
    marginals : bool
        Also run the downward pass and return the marginals ``(n_vars, K)`` (zero beyond ``n_states``).

    Returns
    -------
    (float, ndarray or None)
    """
    n_vars, k_max = log_unary.shape
    cards = n_states
    position = np.empty(n_vars, dtype=np.int64)
    position[list(plan.order)] = np.arange(n_vars)
    bucket: list[list] = [[] for _ in range(n_vars)]
    for i in range(n_vars):
        bucket[i].append(((i,), np.array(log_unary[i, :cards[i]], dtype=np.float64)))
    for e, (u, v) in enumerate(edges):
        u, v = int(u), int(v)
        tab = pairwise[e, :cards[u], :cards[v]]
        scope, tab = ((u, v), tab) if u < v else ((v, u), tab.T)
        first = u if position[u] < position[v] else v
        bucket[first].append((scope, np.array(tab, dtype=np.float64)))
    incoming: list[list] = [[] for _ in range(n_vars)]  # (child, scope, message)
    clusters: dict[int, tuple] = {}
    parent = np.full(n_vars, -1, dtype=np.int64)
    message_of: dict[int, tuple] = {}
    log_z = 0.0
    for v in plan.order:
        factors = bucket[v] + [(sc, m) for _, sc, m in incoming[v]]
        scope, psi = _combine(factors, cards)
        rest = tuple(u for u in scope if u != v)
        msg = _sum_out(scope, psi, rest)
        if marginals:
            clusters[v] = (scope, psi)
        else:
            bucket[v] = []
            incoming[v] = []
        if rest:
            p = min(rest, key=lambda u: position[u])
            parent[v] = p
            incoming[p].append((v, rest, msg))
            message_of[v] = (rest, msg)
        else:
            log_z += float(msg)
    if not marginals:
        return log_z, None
    out = np.zeros((n_vars, k_max))
    down: dict[int, tuple] = {}
    for v in reversed(plan.order):
        scope, belief = clusters.pop(v)
        if v in down:
            sc, delta = down.pop(v)
            belief = belief + _expand(sc, delta, scope, cards)
        with np.errstate(divide="ignore"):
            site = _sum_out(scope, belief, (v,))
        out[v, :cards[v]] = np.exp(site - logsumexp(site))
        for child, sc, msg in incoming[v]:
            down[child] = (sc, _hugin_divide(_sum_out(scope, belief, sc), msg))
    return log_z, out
