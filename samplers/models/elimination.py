"""Exact inference in discrete factor graphs by variable elimination and a junction (elimination) tree.

Variable elimination (Zhang & Poole 1994; Koller & Friedman 2009, Alg. 9.1) sums the variables out
one at a time in log space.  Eliminating variable ``v`` adds every log factor whose scope holds ``v``
(and whose other variables are eliminated later) and the messages sent to ``v`` into one *cluster*
table ``psi_v`` over ``C_v = {v} u N(v)`` and sends the message ``m_v = logsumexp_v psi_v`` to the
cluster of the first variable of ``C_v \\ {v}`` to be eliminated.  The clusters with these messages
form a junction tree (K&F Thm. 10.4); a downward (Hugin) pass

    belief_v = psi_v + delta_{parent -> v},    delta_{v -> c} = logsumexp_{C_v \\ S_c} belief_v - m_c,

calibrates every cluster (K&F Sec. 10.3), so each belief is the unnormalised joint of its cluster and
every single-variable marginal follows from its own cluster.  ``0 / 0 = 0`` (``-inf - -inf``) is the
Hugin convention.  Only ``log Z`` asked: the upward pass alone.  No cluster table is kept between the
passes: the downward pass rebuilds each cluster from its factors and messages, so the calibrated tree
costs two passes of work but only the messages' memory.

All tables keep their axes sorted by elimination position, so a cluster's first axis is the variable
it eliminates and every factor or message broadcasts into it by a reshape (no transposes); the
log-sum-exp over that axis runs in place (max, subtract, exp, sum over the leading axis).

Cost is ``sum_v prod_{u in C_v} cards[u]`` table entries (the *total work*).  Orders are greedy
min-fill, weighted min-fill (fill edges weighted by the product of their end cardinalities) and
min-degree (:mod:`samplers.models._order_kernels`), and the variables' own order; the one of least
total work is used.  A model whose minor-min-width treewidth lower bound (Gogate & Dechter 2004) already
puts every order's largest cluster over the memory cap is refused before any order is built, so
refusing a model with thousands of high-degree variables costs one cheap pass, not the fill scoring.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass

import numpy as np

from ._order_kernels import GIVEN, MIN_DEGREE, MIN_FILL, WEIGHTED_MIN_FILL, greedy_order, minor_min_width

#: The greedy heuristics, and ``"natural"``: the variables' own order (optimal on a row-major grid).
ORDER_HEURISTICS = {"min-fill": MIN_FILL, "weighted-min-fill": WEIGHTED_MIN_FILL, "min-degree": MIN_DEGREE,
                    "natural": GIVEN}
_BYTES = 8  # float64 tables
#: Clusters above this many entries are summed out in slabs of at most this many (fits a CPU cache).
CHUNK_ENTRIES = 2**16


class ZeroPartitionError(ValueError):
    """The model (with its evidence) has ``Z = 0``: every configuration has a zero factor value."""


class TooWideError(ValueError):
    """Exact inference refused: the junction tree's tables exceed the memory cap."""


def default_memory_cap() -> int:
    """Bytes exact inference may use by default: a quarter of this machine's physical memory."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 4


def _format_bytes(n: float) -> str:
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{int(n)} B"


@dataclass(frozen=True)
class EliminationPlan:
    """An elimination order with its cost.

    Attributes
    ----------
    order : tuple of int
        Variables in elimination order (shorter than ``n_vars`` when ``complete`` is false).
    heuristic : str
        Which heuristic produced it (a key of :data:`ORDER_HEURISTICS`), or ``"minor-min-width"``: no
        order was built because the treewidth lower bound alone puts every order over the memory cap
        (``order`` is empty).
    width : int
        ``max_v |C_v| - 1``: the induced width of the order (an upper bound of the treewidth); when
        ``complete`` is false, a lower bound of the order's width (of every order's, for
        ``"minor-min-width"``).
    max_table_entries : int
        Entries of the largest cluster table (for ``"minor-min-width"``: a lower bound of every
        order's largest cluster).
    total_table_entries : int
        Entries of all cluster tables together (the total work of one pass).
    complete : bool
        False when the order was abandoned because a cluster's message alone exceeded the memory cap
        it was planned for.
    message_entries : int
        Entries of all messages together (what the calibrated tree keeps between its passes).
    max_states : int
        Largest cardinality of a variable (bounds the slabs of the upward pass).
    fill_evaluations : int
        Work of the planning: variable pairs tested for a fill edge by the min-fill heuristics.
    """

    order: tuple
    heuristic: str
    width: int
    max_table_entries: int
    total_table_entries: int
    complete: bool = True
    message_entries: int = 0
    max_states: int = 1
    fill_evaluations: int = 0

    def bytes_needed(self, marginals: bool) -> int:
        """Bytes of the elimination, an upper bound: for ``log Z`` every message (as if all were alive
        at once) and two slab buffers; for the calibrated tree every message, every downward message and
        two buffers of the largest cluster (cluster tables are rebuilt in the downward pass, not kept)."""
        if marginals:
            return _BYTES * (2 * self.message_entries + 2 * self.max_table_entries)
        slab = min(self.max_table_entries, CHUNK_ENTRIES * self.max_states)
        return _BYTES * (self.message_entries + 2 * slab)

    def check_memory(self, memory_cap: int, marginals: bool) -> None:
        """Raise :class:`TooWideError` (naming the width and the bytes needed) when over ``memory_cap``."""
        # an abandoned order's message of its largest cluster alone is this large
        need = self.bytes_needed(marginals) if self.complete else _BYTES * self.max_table_entries // self.max_states
        if need > memory_cap or not self.complete:
            least = "at least " if self.heuristic == "minor-min-width" else ""
            entries = self.max_table_entries
            entries_s = f"{entries:.3g}" if entries >= 10**12 else str(entries)
            what = "log Z and the marginals" if marginals else "log Z"
            width = f"width {self.width}" if self.complete else f"width at least {self.width}"
            need_s = _format_bytes(need) if self.complete else f"more than {_format_bytes(need)}"
            found = ("every elimination order has induced" if self.heuristic == "minor-min-width" else
                     f"the best elimination order found ({self.heuristic}) has induced")
            raise TooWideError(
                f"exact inference refused: {found} {width}; {what} would need {need_s} of tables (largest "
                f"cluster {least}{entries_s} entries), over the memory cap of {_format_bytes(memory_cap)} (default: a quarter of this "
                "machine's memory; pass memory_cap / --memory-cap to change it)")


def interaction_bits(n_vars: int, scopes) -> np.ndarray:
    """The interaction graph of the scopes as a bit matrix ``(n_vars, ceil(n_vars / 64))`` of uint64."""
    words = (n_vars + 63) // 64
    adj = np.zeros((n_vars, words), dtype=np.uint64)
    pairs = [(u, v) for sc in scopes for u in sc for v in sc if u != v]
    if pairs:
        p = np.unique(np.array(pairs, dtype=np.int64), axis=0)
        np.bitwise_or.at(adj, (p[:, 0], p[:, 1] >> 6), np.left_shift(np.uint64(1), (p[:, 1] & 63).astype(np.uint64)))
    return adj


def plan_elimination(cards, scopes, *, heuristics=tuple(ORDER_HEURISTICS), memory_cap: int | None = None
                     ) -> EliminationPlan:
    """The order of least total work (then smallest largest table) among ``heuristics``.

    Parameters
    ----------
    cards : array_like of int (n_vars,)
        Number of states of each variable (weights the table sizes an order builds).
    scopes : sequence of sequences of int
        Factor scopes (only which variables share a factor matters).
    heuristics : sequence of str
        Keys of :data:`ORDER_HEURISTICS`.
    memory_cap : int, optional
        Bytes; a heuristic with a cluster whose message alone would exceed this is abandoned there
        (``complete=False``: refused at this cap), so planning a hopelessly wide model stays fast.
        Default: :func:`default_memory_cap`.

    Returns
    -------
    EliminationPlan
    """
    cards = np.asarray(cards, dtype=np.int64)
    unknown = [h for h in heuristics if h not in ORDER_HEURISTICS]
    if unknown or not heuristics:
        raise ValueError(f"heuristics must be among {sorted(ORDER_HEURISTICS)}, got {list(heuristics)}")
    cap = default_memory_cap() if memory_cap is None else memory_cap
    # a cluster this large sends a message (>= cluster / largest cardinality entries) over the cap on its
    # own: any order reaching it is refused at this cap, so it is abandoned there
    log_entry_cap = math.log(cap / _BYTES) + math.log(max(int(cards.max(initial=1)), 1))
    bits = interaction_bits(cards.size, scopes)
    # every order has a cluster of at least bound + 1 variables (a treewidth lower bound): when even the
    # smallest such cluster is abandoned, no order can be planned within the cap
    bound = int(minor_min_width(bits.copy()))
    log_least = float(np.sort(np.log(cards.astype(np.float64)))[:bound + 1].sum())
    if log_least > log_entry_cap + 1e-9:
        least = math.prod(sorted(int(c) for c in cards)[:bound + 1])
        return EliminationPlan((), "minor-min-width", bound, least, least, False, 0, int(cards.max(initial=1)))
    plans = []
    work = 0
    for name in heuristics:
        order, widths, log_sizes, complete, pairs = greedy_order(bits.copy(), cards, ORDER_HEURISTICS[name],
                                                                 log_entry_cap, np.arange(cards.size, dtype=np.int64))
        work += int(pairs)
        sizes = [int(round(math.exp(x))) for x in log_sizes]
        messages = sum(size // int(cards[v]) for size, v in zip(sizes, order))
        plans.append(EliminationPlan(tuple(int(v) for v in order), name, int(widths.max(initial=0)),
                                     max(sizes, default=0), sum(sizes), bool(complete), messages,
                                     int(cards.max(initial=1))))
    # complete plans first, then the fewest table entries in all, then the smallest largest table (first on ties)
    best = min(plans, key=lambda p: (not p.complete, p.total_table_entries, p.max_table_entries))
    return dataclasses.replace(best, fill_evaluations=work)


def _logsumexp_leading(table: np.ndarray) -> np.ndarray:
    """``log sum_k exp(table[k, ...])`` (shape ``table.shape[1:]``); destroys ``table``."""
    work = table.reshape(table.shape[0], -1)  # C-contiguous: a view
    m = work.max(axis=0)
    finite = np.isfinite(m)
    shift = np.where(finite, m, 0.0)
    with np.errstate(invalid="ignore"):
        np.subtract(work, shift, out=work)
    np.exp(work, out=work)
    s = work.sum(axis=0)
    with np.errstate(divide="ignore"):
        return (np.log(s) + shift).reshape(table.shape[1:])


def _merged_shapes(target: tuple, scopes: list, cards) -> tuple[list, list]:
    """Shapes that view tables over ``scopes`` (subsets of ``target``, all sorted by position) as
    broadcastable arrays with the fewest axes: runs of consecutive target variables that every table
    either holds or lacks become one axis.  NumPy then loops over long rows, not over axes of size 2.

    Returns ``(shape of target, [shape of each table])``.
    """
    groups: list = []  # [membership pattern, size]
    for u in target:
        pattern = tuple(u in sc for sc in scopes)
        if groups and groups[-1][0] == pattern:
            groups[-1][1] *= int(cards[u])
        else:
            groups.append([pattern, int(cards[u])])
    return [g[1] for g in groups], [[g[1] if g[0][i] else 1 for g in groups] for i in range(len(scopes))]


def _add_into(psi: np.ndarray, scope: tuple, sc: tuple, tab: np.ndarray, cards) -> None:
    """``psi += tab`` in place, ``tab`` over ``sc`` (a subset of ``scope``) broadcast."""
    shape, (shape_psi, shape_tab) = _merged_shapes(scope, [set(scope), set(sc)], cards)
    psi.reshape(shape_psi)[...] += tab.reshape(shape_tab)


def _combine(v: int, factors: list, cards, position: np.ndarray, buffers: list) -> tuple[tuple, np.ndarray]:
    """The cluster table ``psi_v``: the sum of ``factors`` (scope, log table; scopes sorted by
    position) over the union of their scopes and ``{v}``, written into one of the two ``buffers``
    (each as large as the largest cluster; reused for every cluster, so the memory is touched once).

    The table grows one factor at a time, cheapest growth first, and every factor whose scope the
    table already covers is added at once, so factors are added while the table is small (a
    variable with forty pairwise factors costs about two passes over its cluster, not forty).
    """
    scope: tuple = (v,)
    psi = np.zeros(int(cards[v]))
    current = 1  # the buffer psi is in (psi starts outside both)
    pending = list(factors)
    while pending:
        members = set(scope)
        rest = []
        for sc, tab in pending:
            if members.issuperset(sc):
                _add_into(psi, scope, sc, tab, cards)
            else:
                rest.append((sc, tab))
        if not rest:
            break
        growth = [math.prod(int(cards[u]) for u in sc if u not in members) for sc, _ in rest]
        sc, tab = rest.pop(int(np.argmin(growth)))
        target = tuple(sorted(members.union(sc), key=lambda u: position[u]))
        shape, (shape_psi, shape_tab) = _merged_shapes(target, [members, set(sc)], cards)
        current = 1 - current
        out = buffers[current][:math.prod(shape)]
        np.add(psi.reshape(shape_psi), tab.reshape(shape_tab), out=out.reshape(shape))
        psi = out.reshape([int(cards[u]) for u in target])
        scope = target
        pending = rest
    return scope, psi


def _message(v: int, factors: list, cards, position: np.ndarray, buffers: list) -> tuple[tuple, np.ndarray]:
    """``(C_v, m_v)``: the cluster's scope and its message ``logsumexp_v psi_v`` (over ``C_v \\ {v}``).

    A cluster above :data:`CHUNK_ENTRIES` entries is never built whole: it is summed slab by slab over
    its first variables after ``v`` (each slab small enough for the CPU cache), every factor sliced at
    the slab's states.
    """
    scope = tuple(sorted(set().union(*[sc for sc, _ in factors]) | {v}, key=lambda u: position[u]))
    shape = [int(cards[u]) for u in scope]
    n_chunk_vars = 0
    while math.prod(shape[1 + n_chunk_vars:]) > CHUNK_ENTRIES and 1 + n_chunk_vars < len(scope):
        n_chunk_vars += 1
    if n_chunk_vars == 0:
        _, psi = _combine(v, factors, cards, position, buffers)
        return scope, _logsumexp_leading(psi)
    chunk = {u: i for i, u in enumerate(scope[1:1 + n_chunk_vars])}
    msg = np.empty(shape[1:])
    for idx in np.ndindex(*shape[1:1 + n_chunk_vars]):
        sliced = [(tuple(u for u in sc if u not in chunk),
                   tab[tuple(idx[chunk[u]] if u in chunk else slice(None) for u in sc)]) for sc, tab in factors]
        _, psi = _combine(v, sliced, cards, position, buffers)
        msg[idx] = _logsumexp_leading(psi)
    return scope, msg


def eliminate(cards, scopes, log_tables, plan: EliminationPlan, *, marginals: bool, memory_cap: int
              ) -> tuple[float, list | None]:
    """Exact ``log Z`` (and all single-variable marginals) by elimination along ``plan.order``.

    Parameters
    ----------
    cards : ndarray of int (n_vars,)
        Number of states of each variable.
    scopes : sequence of tuples of int
        The variables of each factor, in the order of its table's axes.
    log_tables : sequence of ndarray
        ``log_tables[f]`` has one axis per variable of ``scopes[f]``, in that order.
    plan : EliminationPlan
        From :func:`plan_elimination` on the same ``cards`` and ``scopes``.
    marginals : bool
        Also calibrate the tree (downward pass) and return the marginals.
    memory_cap : int
        Bytes; :class:`TooWideError` before any work when ``plan`` needs more.

    Returns
    -------
    (float, list of ndarray or None)
        ``log Z`` (``-inf`` when ``Z = 0``) and, when asked, ``marginals[v]`` of shape ``(cards[v],)``.

    Raises
    ------
    TooWideError
        The plan's tables exceed ``memory_cap``.
    ZeroPartitionError
        Marginals asked of a model with ``Z = 0``.
    """
    plan.check_memory(memory_cap, marginals)
    n_vars = len(cards)
    position = np.empty(n_vars, dtype=np.int64)
    position[list(plan.order)] = np.arange(n_vars)
    bucket: list[list] = [[] for _ in range(n_vars)]
    log_z = 0.0
    for sc, tab in zip(scopes, log_tables):
        if not sc:
            log_z += float(tab)
            continue
        axes = sorted(range(len(sc)), key=lambda a: position[sc[a]])
        sorted_scope = tuple(sc[a] for a in axes)
        bucket[sorted_scope[0]].append((sorted_scope, np.array(np.transpose(tab, axes), order="C")))
    size = plan.max_table_entries if marginals else min(plan.max_table_entries, CHUNK_ENTRIES * plan.max_states)
    buffers = [np.empty(size), np.empty(size)]
    kept: dict[int, list] = {}  # the factors of each cluster, to rebuild it in the downward pass
    children: list[list] = [[] for _ in range(n_vars)]  # (child, message scope, message)
    for v in plan.order:
        factors = bucket[v]
        bucket[v] = []
        scope, msg = _message(v, factors, cards, position, buffers)
        rest = scope[1:]
        if marginals:
            kept[v] = factors
        if rest:
            bucket[rest[0]].append((rest, msg))
            children[rest[0]].append((v, rest, msg))
        else:
            log_z += float(msg)
    if not marginals:
        return log_z, None
    if log_z == -np.inf:
        raise ZeroPartitionError("Z = 0: every configuration has a zero factor value (with evidence: the "
                                 "evidence has probability zero)")
    out: list = [None] * n_vars
    down: dict[int, np.ndarray] = {}
    for v in reversed(plan.order):
        scope, belief = _combine(v, kept.pop(v), cards, position, buffers)
        if v in down:
            delta = down.pop(v)
            belief.reshape(belief.shape[0], -1)[...] += delta.reshape(1, -1)
        # the calibrated belief is proportional to the cluster's joint law, so one shift (its maximum)
        # loses only entries below 1e-308 of the largest, whose share of any marginal is as small
        shift = belief.max()
        np.subtract(belief, shift, out=belief)
        np.exp(belief, out=belief)
        site = belief.reshape(belief.shape[0], -1).sum(axis=1)
        out[v] = site / site.sum()
        for child, sc, msg in children[v]:
            _, (shape_b, shape_s) = _merged_shapes(scope, [set(scope), set(sc)], cards)
            summed = belief.reshape(shape_b).sum(axis=tuple(a for a, n in enumerate(shape_s) if n == 1 and
                                                            shape_b[a] > 1)).reshape(msg.shape)
            # Hugin division with 0 / 0 = 0
            with np.errstate(divide="ignore", invalid="ignore"):
                delta = np.log(summed) + shift - msg
            delta[np.isneginf(msg)] = -np.inf
            down[child] = delta
    return log_z, out
