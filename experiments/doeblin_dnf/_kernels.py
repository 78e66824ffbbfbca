"""Numba kernels for DNF formula search (Experiment 2 of Steinhardt & Liang 2015).

A formula is ``f(x) = OR_i AND_j [a_ij . x <= b_ij]`` with ``a`` (n, m, d) and ``b`` (n, m) in
{-1, 0, 1}.  The search is Metropolis-Hastings on ``exp(-beta * cost)`` with symmetric atom-edit
proposals, run as a staged chain of :mod:`doeblin.core` (the 0-, 1- and 2-stage chains differ only
in their stage chain ``C``, see :func:`stage_chain`); it stops at the first formula with zero errors.

The model (:class:`DNFData`) bundles the examples and the MH settings; the state
(:class:`FormulaState`) bundles the formula, its cached atom and disjunct truth tables and the current
cost.  Stages are ``RESTART`` (a uniform formula), ``FULL`` (MH on the full cost) and ``SIMPLIFIED``
(MH on the simplified cost).  No validation here.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from doeblin import core
from doeblin.core import implements, restart, stage_move
from samplers._jit import jit

RESTART, FULL, SIMPLIFIED = 0, 1, 2       # what each stage of the chain does (DNFData.stage_kinds)


class DNFData(NamedTuple):
    """Examples and settings: inputs ``X`` (N, d) int64; ``labels`` (N,) int8, 1 / 0 / -1 (unlabelled,
    a row only used by implication pairs); implication pairs ``src``, ``dst`` (P,) int64 (violated when
    ``f(X[src]) and not f(X[dst])``); ``settings`` = [beta, small] (small = 1/n, the simplified cost's
    charge for a rejected positive); ``stage_kinds`` (k,) int64, what stage z does."""

    X: np.ndarray
    labels: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    settings: np.ndarray
    stage_kinds: np.ndarray


class FormulaState(NamedTuple):
    """A formula ``a`` (n, m, d), ``b`` (n, m) with its truth tables ``atoms`` (n, m, N) and ``disj``
    (n, N), ``cost`` (1,) under the cost named by ``simplified`` (1,) bool, and scratch arrays."""

    a: np.ndarray
    b: np.ndarray
    atoms: np.ndarray
    disj: np.ndarray
    cost: np.ndarray
    simplified: np.ndarray
    col: np.ndarray
    old_atom: np.ndarray
    old_disj: np.ndarray
    old_a: np.ndarray


def formula_state(a, b, n_rows: int) -> FormulaState:
    """A :class:`FormulaState` around ``a``, ``b`` (updated in place) for ``n_rows`` examples."""
    n, m, d = a.shape
    return FormulaState(a, b, np.empty((n, m, n_rows), dtype=np.bool_), np.empty((n, n_rows), dtype=np.bool_),
                        np.zeros(1), np.zeros(1, dtype=np.bool_), np.empty(n_rows, dtype=np.bool_),
                        np.empty(n_rows, dtype=np.bool_), np.empty(n_rows, dtype=np.bool_), np.empty(d, dtype=np.int64))


def stage_chain(n_stages: int, eps_restart: float, eps_simplified: float):
    """``(stage_kinds, cdf_C, start)`` of the 0-, 1- or 2-stage chain (cumulative rows of C).

    0-stage: one FULL stage (plain MH).  1-stage: stages (RESTART, FULL), every row ``(eps_restart,
    1 - eps_restart)``: the strong Doeblin chain.  2-stage: stages (RESTART, FULL, SIMPLIFIED); from
    FULL restart w.p. ``eps_restart``; from RESTART and SIMPLIFIED go to FULL w.p. ``eps_simplified``,
    else (stay) SIMPLIFIED: the cyclic staged chain of Fig. 2(b).  The cdf rows are written so that
    one uniform below the leaving probability leaves (``U < eps``).  ``start`` is the first stage
    after the initial uniform formula (SIMPLIFIED for 2-stage, else FULL).
    """
    if n_stages == 0:
        return np.array([FULL]), np.ones((1, 1)), 0
    if n_stages == 1:
        return np.array([RESTART, FULL]), np.array([[eps_restart, 1.0]] * 2), 1
    leave = [0.0, eps_simplified, 1.0]
    return np.array([RESTART, FULL, SIMPLIFIED]), np.array([leave, [eps_restart, 1.0, 1.0], leave]), 2


@jit
def random_formula(a, b):
    n, m, d = a.shape
    for i in range(n):
        for j in range(m):
            for k in range(d):
                a[i, j, k] = np.random.randint(-1, 2)
            b[i, j] = np.random.randint(-1, 2)


@jit
def _atom_column(X, a, b, i, j, out):
    N, d = X.shape
    for r in range(N):
        s = 0
        for k in range(d):
            s += a[i, j, k] * X[r, k]
        out[r] = s <= b[i, j]


@jit
def _disjunct_row(atoms, i, disj):
    m = atoms.shape[1]
    for r in range(atoms.shape[2]):
        v = True
        for j in range(m):
            v = v and atoms[i, j, r]
        disj[i, r] = v


@jit
def _evaluate_all(X, state):
    n, m, _ = state.a.shape
    for i in range(n):
        for j in range(m):
            _atom_column(X, state.a, state.b, i, j, state.atoms[i, j])
        _disjunct_row(state.atoms, i, state.disj)


@jit
def _formula_value(disj, r):
    for i in range(disj.shape[0]):
        if disj[i, r]:
            return True
    return False


@jit
def _implication_cost(disj, src, dst):
    """Number of implication pairs ``(s, t)`` (rows of ``X``) with ``f(s)`` true and ``f(t)`` false."""
    c = 0
    for p in range(src.shape[0]):
        if _formula_value(disj, src[p]) and not _formula_value(disj, dst[p]):
            c += 1
    return float(c)


@jit
def full_cost(data, disj):
    """I(f): number of misclassified labelled examples plus the number of violated implication pairs."""
    labels = data.labels
    c = 0
    for r in range(disj.shape[1]):
        if labels[r] >= 0 and _formula_value(disj, r) != (labels[r] == 1):
            c += 1
    return float(c) + _implication_cost(disj, data.src, data.dst)


@jit
def simplified_cost(data, disj):
    """Per-disjunct cost: 1 for d_i(x) true on a negative example, ``small`` for d_i(x) false on a
    positive example, 0 otherwise (summed over disjuncts and labelled examples), plus the violated
    implication pairs of the whole formula (the paper defines the simplified cost for labelled
    examples only)."""
    labels = data.labels
    small = data.settings[1]
    n, N = disj.shape
    c = 0.0
    for i in range(n):
        for r in range(N):
            if disj[i, r] and labels[r] == 0:
                c += 1.0
            elif (not disj[i, r]) and labels[r] == 1:
                c += small
    return c + _implication_cost(disj, data.src, data.dst)


@jit(inline="always")
def _cost(data, disj, simplified):
    if simplified:
        return simplified_cost(data, disj)
    return full_cost(data, disj)


@jit(inline="always")
def _set_cost(data, state, simplified):
    """Make ``state.cost`` the cost named by ``simplified`` (recomputed only when it changes)."""
    if state.simplified[0] != simplified:
        state.simplified[0] = simplified
        state.cost[0] = _cost(data, state.disj, simplified)


@implements(restart, DNFData)
def _uniform_formula(data, state):
    """Restart: a uniform formula, its truth tables and full cost."""
    random_formula(state.a, state.b)
    _evaluate_all(data.X, state)
    state.simplified[0] = False
    state.cost[0] = full_cost(data, state.disj)


@jit(inline="always")
def metropolis_edit(data, state):
    """One MH step on ``exp(-beta * cost)``: edit one entry of ``[a_ij b_ij]`` or redraw the whole atom
    (a symmetric proposal), update the atom's column and its disjunct, accept or undo."""
    X, a, b = data.X, state.a, state.b
    n, m, d = a.shape
    i = np.random.randint(0, n)
    j = np.random.randint(0, m)
    for k in range(d):
        state.old_a[k] = a[i, j, k]
    old_b = b[i, j]
    if np.random.random() < 0.5:
        k = np.random.randint(0, d + 1)
        cur = a[i, j, k] if k < d else b[i, j]
        new = cur + np.random.randint(1, 3)      # uniform over the two other values
        new = (new + 1) % 3 - 1
        if k < d:
            a[i, j, k] = new
        else:
            b[i, j] = new
    else:
        for k in range(d):
            a[i, j, k] = np.random.randint(-1, 2)
        b[i, j] = np.random.randint(-1, 2)
    state.old_atom[:] = state.atoms[i, j]
    state.old_disj[:] = state.disj[i]
    _atom_column(X, a, b, i, j, state.col)
    state.atoms[i, j] = state.col
    _disjunct_row(state.atoms, i, state.disj)
    new_cost = _cost(data, state.disj, state.simplified[0])
    cost = state.cost[0]
    if new_cost <= cost or np.random.random() < np.exp(-data.settings[0] * (new_cost - cost)):
        state.cost[0] = new_cost
    else:
        for k in range(d):
            a[i, j, k] = state.old_a[k]
        b[i, j] = old_b
        state.atoms[i, j] = state.old_atom
        state.disj[i] = state.old_disj


@implements(stage_move, DNFData)
def _dnf_stage_move(data, stage, state):
    kind = data.stage_kinds[stage]
    if kind == RESTART:
        _uniform_formula(data, state)
    else:
        _set_cost(data, state, kind == SIMPLIFIED)
        metropolis_edit(data, state)


@jit(inline="always")
def _solved(data, state):
    if not state.simplified[0]:
        return state.cost[0] == 0.0
    return full_cost(data, state.disj) == 0.0


@jit
def run_until_consistent(data, cdf_C, stage, state, max_steps):
    """Run the staged chain (:func:`doeblin.core.staged_step`) from ``(stage, state)`` until the
    formula has zero full cost; every step (a restart or an MH proposal) counts as one.  Returns
    ``(steps, stage)``; ``steps = -1`` if not solved within ``max_steps``."""
    _evaluate_all(data.X, state)
    state.simplified[0] = False
    state.cost[0] = full_cost(data, state.disj)
    if state.cost[0] == 0.0:
        return 0, stage
    for step in range(1, max_steps + 1):
        stage = core.staged_step(data, cdf_C, stage, state)
        if _solved(data, state):
            return step, stage
    return -1, stage


@jit
def dnf_search(data, cdf_C, start, state, max_steps, seed):
    """Draw a uniform formula into ``state`` and run :func:`run_until_consistent` from stage ``start``.

    Returns ``(steps, stage)``; ``steps = -1`` if no consistent formula was found within ``max_steps``.
    """
    np.random.seed(seed)
    random_formula(state.a, state.b)
    return run_until_consistent(data, cdf_C, start, state, max_steps)


@jit
def dnf_chain(data, cdf_C, stage, state, max_steps, seed):
    """Continue the chain from the formula in ``state`` (updated in place, so a caller such as the
    CEGAR loop can add examples and continue) in ``stage`` until it is consistent with ``data``.
    Returns ``(steps, stage)`` as :func:`run_until_consistent`."""
    np.random.seed(seed)
    return run_until_consistent(data, cdf_C, stage, state, max_steps)
