"""Discrete factor graphs in log space: factors of any arity (constant factors included), mixed
domains, hard zeros, evidence by conditioning, and the flat array bundle the Numba kernels read.

The model over ``x = (x_0, ..., x_{n-1})`` with ``x_i in {0, ..., cards[i] - 1}`` is

    log p(x) = sum_f log_tables[f][x_{scope_f}] - log Z,

where ``log_tables[f]`` has one axis per variable of ``scopes[f]`` (in that order, so its flat C-order
index has the **last** scope variable varying fastest, as in the UAI format).  Entries may be
``-inf`` (a zero factor value: an impossible configuration); arity-0 factors are constants and are
kept (they shift ``log Z``).  :class:`~samplers.models.PairwiseMRF` is the special case with unary
and pairwise factors only (:meth:`FactorGraph.from_pairwise`, :meth:`FactorGraph.to_pairwise`).

Exact answers: :meth:`FactorGraph.log_partition_enumerate` / :meth:`FactorGraph.marginals_enumerate`
(the brute-force oracle for tiny graphs) and :meth:`FactorGraph.log_partition_exact` /
:meth:`FactorGraph.marginals_exact` (variable elimination / junction tree,
:mod:`samplers.models.elimination`).

>>> import numpy as np
>>> from samplers.models import FactorGraph
>>> fg = FactorGraph([2, 3], [(0, 1), ()], [np.log([[1, 2, 3], [4, 5, 6]]), np.log([2.0])])
>>> round(float(np.exp(fg.log_partition_enumerate())), 9)  # 2 * (1 + ... + 6)
42.0
"""

from __future__ import annotations

import math
from functools import cached_property
from typing import Any, NamedTuple

import numpy as np
from scipy.special import logsumexp

from .elimination import (
    EliminationPlan,
    ZeroPartitionError,
    default_memory_cap,
    eliminate,
    plan_elimination,
)
from .mrf import MAX_ENUMERATION_STATES, PairwiseMRF

_CHUNK = 2**16


class FactorBundle(NamedTuple):
    """The factor graph as flat arrays (what Numba kernels take; all read-only, C-contiguous).

    Attributes
    ----------
    cards : int64 (n_vars,)
        Number of states of each variable.
    scope_ptr : int64 (n_factors + 1,)
        The scope of factor ``f`` is ``scope_vars[scope_ptr[f]:scope_ptr[f + 1]]``.
    scope_vars : int64 (sum of arities,)
        Scope variables, factor after factor, in each factor's axis order.
    strides : int64 (sum of arities,)
        ``strides[k]`` is the step in factor ``f``'s flat table of its variable ``scope_vars[k]``
        (the last scope variable has stride 1).
    table_ptr : int64 (n_factors + 1,)
        The flat log table of factor ``f`` is ``log_values[table_ptr[f]:table_ptr[f + 1]]``.
    log_values : float64 (sum of table sizes,)
        All log tables, flattened in C order (``-inf`` = zero entry).
    var_ptr : int64 (n_vars + 1,)
        The factors holding variable ``i`` are ``var_factors[var_ptr[i]:var_ptr[i + 1]]``.
    var_factors : int64 (sum of arities,)
    var_slots : int64 (sum of arities,)
        ``var_slots[m]`` is the index into ``scope_vars`` / ``strides`` of variable ``i`` in factor
        ``var_factors[m]`` (so its stride is ``strides[var_slots[m]]``).
    """

    cards: np.ndarray
    scope_ptr: np.ndarray
    scope_vars: np.ndarray
    strides: np.ndarray
    table_ptr: np.ndarray
    log_values: np.ndarray
    var_ptr: np.ndarray
    var_factors: np.ndarray
    var_slots: np.ndarray


class ConditionedGraph(NamedTuple):
    """A factor graph conditioned on evidence (:meth:`FactorGraph.condition`).

    ``graph`` is over the unobserved variables only, renumbered ``0 .. len(kept) - 1`` in their
    original order; factors left without variables become constant factors, so
    ``graph``'s ``log Z`` is ``log`` of the unnormalised probability of the evidence,
    ``log sum_{x: x_E = e} prod_f phi_f(x)``.

    Attributes
    ----------
    graph : FactorGraph
    kept : int64 (n_kept,)
        ``kept[j]`` is the original index of ``graph``'s variable ``j``.
    evidence : dict
        ``{original variable: observed state}``.
    n_vars : int
        Number of variables of the original graph.
    """

    graph: "FactorGraph"
    kept: np.ndarray
    evidence: dict
    n_vars: int

    def expand_marginals(self, marginals: np.ndarray, max_states: int) -> np.ndarray:
        """Marginals ``(len(kept), K)`` of ``graph`` as ``(n_vars, max_states)`` of the original
        graph: observed variables get the point mass on their state, padding stays zero."""
        out = np.zeros((self.n_vars, max_states))
        out[self.kept, :marginals.shape[1]] = marginals[:self.kept.size]
        for v, s in self.evidence.items():
            out[v, s] = 1.0
        return out


def _as_scope(scope: Any, f: int, n_vars: int) -> tuple:
    try:
        sc = tuple(int(v) for v in np.asarray(scope, dtype=np.int64).reshape(-1))
    except (TypeError, ValueError):
        raise TypeError(f"scopes[{f}] must be a sequence of variable indices, got {scope!r}") from None
    for v in sc:
        if not 0 <= v < n_vars:
            raise ValueError(f"scopes[{f}] names variable {v}, but there are {n_vars} variables (0..{n_vars - 1})")
    if len(set(sc)) != len(sc):
        raise ValueError(f"scopes[{f}] = {sc} names a variable twice")
    return sc


class FactorGraph:
    """A discrete factor graph with log-space tables (see the module docstring).

    Parameters
    ----------
    cards : array_like of int, shape (n_vars,)
        Number of states of each variable (each >= 1).
    scopes : sequence of sequences of int
        ``scopes[f]``: the variables of factor ``f`` (distinct; ``()`` for a constant factor).
    log_tables : sequence of array_like
        ``log_tables[f]``: log factor values, of shape ``tuple(cards[v] for v in scopes[f])`` or flat
        with that many entries (C order: last scope variable fastest).  ``-inf`` marks a zero; ``nan``
        and ``+inf`` are refused.

    Raises
    ------
    ValueError, TypeError
        Bad cardinalities, scopes out of range or with repeats, tables of the wrong size, ``nan`` or
        ``+inf`` entries; the message names the argument and the factor.

    Examples
    --------
    >>> import numpy as np
    >>> fg = FactorGraph([2, 2], [(0,), (0, 1)], [np.zeros(2), np.log([[1.0, 0.0], [1.0, 1.0]])])
    >>> fg.marginals_exact()[0].round(4).tolist()
    [0.3333, 0.6667]
    """

    def __init__(self, cards: Any, scopes: Any, log_tables: Any):
        card_arr = np.asarray(cards)
        if card_arr.ndim != 1 or card_arr.size == 0 or not np.issubdtype(card_arr.dtype, np.integer):
            raise TypeError(f"cards must be a non-empty 1-D array of integers, got {cards!r:.80}")
        if np.any(card_arr < 1):
            bad = int(np.flatnonzero(card_arr < 1)[0])
            raise ValueError(f"cards must be >= 1; cards[{bad}] = {int(card_arr[bad])}")
        scopes = list(scopes)
        log_tables = list(log_tables)
        if len(scopes) != len(log_tables):
            raise ValueError(f"scopes and log_tables must have the same length, got {len(scopes)} and "
                             f"{len(log_tables)}")
        n_vars = card_arr.size
        self.cards = np.array(card_arr, dtype=np.int64)
        self.cards.flags.writeable = False
        sc_out, tab_out = [], []
        for f, (scope, table) in enumerate(zip(scopes, log_tables)):
            sc = _as_scope(scope, f, n_vars)
            shape = tuple(int(self.cards[v]) for v in sc)
            try:
                tab = np.array(table, dtype=np.float64)
            except (TypeError, ValueError):
                raise TypeError(f"log_tables[{f}] must be an array of numbers") from None
            if tab.size != math.prod(shape):
                raise ValueError(f"log_tables[{f}] over scope {sc} must have shape {shape} "
                                 f"({math.prod(shape)} entries), got shape {tab.shape}")
            tab = np.array(tab.reshape(shape), order="C")
            bad = np.isnan(tab) | (tab == np.inf)
            if bad.any():
                idx = np.unravel_index(int(np.flatnonzero(bad)[0]), shape) if shape else ()
                raise ValueError(f"log_tables[{f}] has entry {tab[idx]} at {tuple(int(i) for i in idx)}; log "
                                 "factor values must be finite or -inf (a zero)")
            tab.flags.writeable = False
            sc_out.append(sc)
            tab_out.append(tab)
        self.scopes: tuple = tuple(sc_out)
        self.log_tables: tuple = tuple(tab_out)

    # -- shape ---------------------------------------------------------------------------------
    @property
    def n_vars(self) -> int:
        """Number of variables."""
        return int(self.cards.size)

    @property
    def n_factors(self) -> int:
        """Number of factors (constant factors included)."""
        return len(self.scopes)

    @property
    def max_states(self) -> int:
        """Largest cardinality."""
        return int(self.cards.max())

    @property
    def max_arity(self) -> int:
        """Largest factor arity (0 when every factor is constant or there are none)."""
        return max((len(s) for s in self.scopes), default=0)

    @property
    def n_configurations(self) -> int:
        """Number of joint states ``prod_i cards[i]`` (a Python int, exact)."""
        return math.prod(int(k) for k in self.cards)

    @property
    def log_constant(self) -> float:
        """Sum of the arity-0 (constant) log factors."""
        return float(sum(float(t) for s, t in zip(self.scopes, self.log_tables) if not s))

    def __repr__(self) -> str:
        return (f"FactorGraph(n_vars={self.n_vars}, n_factors={self.n_factors}, max_arity={self.max_arity}, "
                f"max_states={self.max_states})")

    # -- flat layout ---------------------------------------------------------------------------
    @cached_property
    def bundle(self) -> FactorBundle:
        """The flat arrays of :class:`FactorBundle` (computed once, read-only)."""
        arity = np.array([len(s) for s in self.scopes], dtype=np.int64)
        scope_ptr = np.zeros(self.n_factors + 1, dtype=np.int64)
        np.cumsum(arity, out=scope_ptr[1:])
        scope_vars = np.array([v for s in self.scopes for v in s], dtype=np.int64)
        strides = np.array([st // 8 for t in self.log_tables for st in t.strides], dtype=np.int64)
        sizes = np.array([t.size for t in self.log_tables], dtype=np.int64)
        table_ptr = np.zeros(self.n_factors + 1, dtype=np.int64)
        np.cumsum(sizes, out=table_ptr[1:])
        log_values = (np.concatenate([t.ravel() for t in self.log_tables]) if self.n_factors
                      else np.zeros(0))
        slot_owner = np.repeat(np.arange(self.n_factors, dtype=np.int64), arity)
        by_var = np.argsort(scope_vars, kind="stable")
        var_ptr = np.zeros(self.n_vars + 1, dtype=np.int64)
        np.cumsum(np.bincount(scope_vars, minlength=self.n_vars), out=var_ptr[1:])
        arrays = [self.cards.copy(), scope_ptr, scope_vars, strides, table_ptr, log_values, var_ptr,
                  slot_owner[by_var], by_var.astype(np.int64)]
        for a in arrays:
            a.flags.writeable = False
        return FactorBundle(*arrays)

    # -- evaluation ----------------------------------------------------------------------------
    def check_configurations(self, x: Any, name: str = "x") -> np.ndarray:
        """``x`` as an int64 array ``(..., n_vars)`` of valid states, or a ``ValueError`` naming ``name``."""
        arr = np.asarray(x)
        if arr.ndim == 0 or arr.shape[-1] != self.n_vars or not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(f"{name} must be an integer array with last axis n_vars = {self.n_vars}, got "
                             f"shape {arr.shape} and dtype {arr.dtype}")
        if np.any(arr < 0) or np.any(arr >= self.cards):
            raise ValueError(f"{name} has states outside 0 .. cards[i] - 1")
        return arr.astype(np.int64)

    def log_unnormalized(self, x: Any) -> np.ndarray | float:
        """``sum_f log phi_f(x_{scope_f})`` of configurations ``x`` (shape ``(n_vars,)`` or ``(m, n_vars)``)."""
        arr = self.check_configurations(x)
        flat = arr.reshape(-1, self.n_vars)
        out = np.full(flat.shape[0], self.log_constant)
        for sc, tab in zip(self.scopes, self.log_tables):
            if sc:
                out += tab[tuple(flat[:, v] for v in sc)]
        return float(out[0]) if arr.ndim == 1 else out.reshape(arr.shape[:-1])

    # -- enumeration oracle --------------------------------------------------------------------
    def _check_enumerable(self, max_states: int) -> None:
        if self.n_configurations > max_states:
            raise ValueError(f"enumeration refused: {self.n_configurations} joint states exceed max_states="
                             f"{max_states}; use log_partition_exact (variable elimination)")

    def _enumerated_log_weights(self, max_states: int):
        """Yield ``(configurations, log weights)`` chunks over all joint states in C order."""
        self._check_enumerable(max_states)
        total = self.n_configurations
        for start in range(0, total, _CHUNK):
            idx = np.arange(start, min(start + _CHUNK, total), dtype=np.int64)
            x = np.stack(np.unravel_index(idx, tuple(int(c) for c in self.cards)), axis=1)
            yield x, self.log_unnormalized(x)

    def log_partition_enumerate(self, *, max_states: int = MAX_ENUMERATION_STATES) -> float:
        """``log Z`` by summing over every joint state (``-inf`` when ``Z = 0``); the oracle for tests."""
        parts = [logsumexp(w) for _, w in self._enumerated_log_weights(max_states)]
        with np.errstate(divide="ignore"):
            return float(logsumexp(parts))

    def marginals_enumerate(self, *, max_states: int = MAX_ENUMERATION_STATES) -> np.ndarray:
        """Single-variable marginals ``(n_vars, max_states)`` (zero-padded) by enumeration.

        Raises
        ------
        ZeroPartitionError
            When every configuration has weight zero (``Z = 0``).
        """
        log_z = self.log_partition_enumerate(max_states=max_states)
        if log_z == -np.inf:
            raise ZeroPartitionError("the model has Z = 0: every configuration has a zero factor value")
        out = np.zeros((self.n_vars, self.max_states))
        for x, w in self._enumerated_log_weights(max_states):
            p = np.exp(w - log_z)
            for i in range(self.n_vars):
                out[i] += np.bincount(x[:, i], weights=p, minlength=self.max_states)
        return out

    # -- evidence ------------------------------------------------------------------------------
    def condition(self, evidence: Any) -> ConditionedGraph:
        """Condition on observed states: ``evidence`` maps variable -> state (a dict, or pairs).

        Every factor is sliced at the observed states; the result (a :class:`ConditionedGraph`) holds
        the graph over the unobserved variables, whose ``log Z`` is the log unnormalised probability
        of the evidence (``-inf`` when the evidence is impossible).
        """
        items = evidence.items() if isinstance(evidence, dict) else evidence
        ev: dict = {}
        for pair in items:
            try:
                v, s = (int(t) for t in pair)
            except (TypeError, ValueError):
                raise TypeError(f"evidence must map variable -> state, got item {pair!r}") from None
            if not 0 <= v < self.n_vars:
                raise ValueError(f"evidence names variable {v}, but there are {self.n_vars} variables")
            if not 0 <= s < self.cards[v]:
                raise ValueError(f"evidence sets variable {v} to state {s}, but it has {int(self.cards[v])} states")
            if ev.get(v, s) != s:
                raise ValueError(f"evidence sets variable {v} twice, to {ev[v]} and {s}")
            ev[v] = s
        kept = np.array([v for v in range(self.n_vars) if v not in ev], dtype=np.int64)
        new_index = {int(v): j for j, v in enumerate(kept)}
        scopes, tables = [], []
        for sc, tab in zip(self.scopes, self.log_tables):
            tab = tab[tuple(ev[v] if v in ev else slice(None) for v in sc)]
            scopes.append(tuple(new_index[v] for v in sc if v not in ev))
            tables.append(tab)
        if kept.size == 0:  # a graph needs one variable: keep a single-state dummy
            return ConditionedGraph(FactorGraph([1], scopes, tables), kept, ev, self.n_vars)
        return ConditionedGraph(FactorGraph(self.cards[kept], scopes, tables), kept, ev, self.n_vars)

    # -- pairwise special case -----------------------------------------------------------------
    @classmethod
    def from_pairwise(cls, mrf: PairwiseMRF) -> "FactorGraph":
        """The factor graph of ``mrf``: one unary factor per variable, one pairwise factor per edge
        (exact: same ``log Z`` and marginals)."""
        if not isinstance(mrf, PairwiseMRF):
            raise TypeError(f"mrf must be a PairwiseMRF, got {type(mrf).__name__}")
        k = mrf.n_states
        scopes = [(i,) for i in range(mrf.n_vars)] + [(int(u), int(v)) for u, v in mrf.edges]
        tables = [mrf.unary[i, :k[i]] for i in range(mrf.n_vars)]
        tables += [mrf.pairwise[e, :k[u], :k[v]] for e, (u, v) in enumerate(mrf.edges)]
        return cls(k, scopes, tables)

    def to_pairwise(self) -> tuple[PairwiseMRF, float]:
        """``(mrf, log_constant)`` with ``log Z = mrf.log_partition_exact() + log_constant``.

        Unary factors on one variable are added; each pairwise factor becomes one edge; constant
        factors go into ``log_constant``.

        Raises
        ------
        ValueError
            Factors of arity above 2 (no exact pairwise form without new variables) or ``-inf``
            entries (``PairwiseMRF`` needs finite potentials); the message names the factor.
        """
        k_max = self.max_states
        unary = np.zeros((self.n_vars, k_max))
        edges, pairwise = [], []
        for f, (sc, tab) in enumerate(zip(self.scopes, self.log_tables)):
            if len(sc) > 2:
                raise ValueError(f"to_pairwise refused: factor {f} has arity {len(sc)} (scope {sc}); a PairwiseMRF "
                                 "holds unary and pairwise factors only")
            if np.any(np.isneginf(tab)):
                raise ValueError(f"to_pairwise refused: factor {f} has zero entries (-inf); a PairwiseMRF needs "
                                 "finite log potentials")
            if len(sc) == 1:
                unary[sc[0], :tab.size] += tab
            elif len(sc) == 2:
                pot = np.zeros((k_max, k_max))
                pot[:tab.shape[0], :tab.shape[1]] = tab
                edges.append(sc)
                pairwise.append(pot)
        mrf = PairwiseMRF(unary, np.array(edges, dtype=np.int64).reshape(-1, 2),
                          np.array(pairwise).reshape(-1, k_max, k_max), n_states=self.cards)
        return mrf, self.log_constant

    # -- exact inference -----------------------------------------------------------------------
    @cached_property
    def elimination_plan(self) -> EliminationPlan:
        """The elimination order of least total work among min-fill, weighted min-fill and min-degree
        (:func:`samplers.models.elimination.plan_elimination`)."""
        return plan_elimination(self.cards, self.scopes)

    def _plan_for(self, memory_cap: int) -> EliminationPlan:
        """:attr:`elimination_plan`, planned again when it was abandoned at the default cap and a larger
        ``memory_cap`` is given."""
        plan = self.elimination_plan
        if not plan.complete and memory_cap > default_memory_cap():
            plan = plan_elimination(self.cards, self.scopes, memory_cap=memory_cap)
        return plan

    def log_partition_exact(self, *, memory_cap: int | None = None) -> float:
        """Exact ``log Z`` by variable elimination along :attr:`elimination_plan` (no marginals pass).

        Parameters
        ----------
        memory_cap : int, optional
            Bytes the elimination may use; default :func:`~samplers.models.elimination.default_memory_cap`
            (a quarter of the machine's memory).

        Returns
        -------
        float
            ``log Z``; ``-inf`` when ``Z = 0`` (e.g. impossible evidence).

        Raises
        ------
        MemoryError
            When the order's largest table does not fit ``memory_cap`` (the message names the width
            and the bytes needed); raised before any table is built.
        """
        cap = default_memory_cap() if memory_cap is None else memory_cap
        return eliminate(self.cards, self.scopes, self.log_tables, self._plan_for(cap), marginals=False,
                         memory_cap=cap)[0]

    def marginals_exact(self, *, memory_cap: int | None = None) -> np.ndarray:
        """All single-variable marginals ``(n_vars, max_states)`` (zero-padded) from one calibrated
        junction tree (:func:`samplers.models.elimination.eliminate`).

        Raises
        ------
        ZeroPartitionError
            When ``Z = 0``.
        MemoryError
            When the junction tree's tables do not fit ``memory_cap`` (bytes; default a quarter of the
            machine's memory); raised before any table is built.
        """
        return self.solve(memory_cap=memory_cap)[1]

    def solve(self, *, memory_cap: int | None = None) -> tuple[float, np.ndarray]:
        """``(log Z, marginals)`` from one upward and one downward pass (see :meth:`marginals_exact`)."""
        cap = default_memory_cap() if memory_cap is None else memory_cap
        log_z, marg = eliminate(self.cards, self.scopes, self.log_tables, self._plan_for(cap), marginals=True,
                                memory_cap=cap)
        assert marg is not None  # marginals=True
        out = np.zeros((self.n_vars, self.max_states))
        for v, m in enumerate(marg):
            out[v, :m.size] = m
        return log_z, out
