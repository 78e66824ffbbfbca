"""Numba kernels for DNF formula search (Experiment 2 of Steinhardt & Liang 2015).

A formula is ``f(x) = OR_i AND_j [a_ij . x <= b_ij]`` with ``a`` (n, m, d) and ``b`` (n, m) in
{-1, 0, 1}.  The search is Metropolis-Hastings on ``exp(-beta * cost)`` with symmetric atom-edit
proposals, run as a 0-, 1- or 2-stage chain; it stops at the first formula with zero errors.
"""

from __future__ import annotations

import numpy as np

from samplers._jit import jit


@jit
def _random_formula(a, b):
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
def _evaluate_all(X, a, b, atoms, disj):
    n, m, _ = a.shape
    N = X.shape[0]
    for i in range(n):
        for j in range(m):
            _atom_column(X, a, b, i, j, atoms[i, j])
        for r in range(N):
            v = True
            for j in range(m):
                v = v and atoms[i, j, r]
            disj[i, r] = v


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
def _full_cost(disj, labels, src, dst):
    """I(f): number of misclassified labelled examples (``labels`` 1 / 0; -1 = unlabelled) plus the
    number of violated implication pairs."""
    N = disj.shape[1]
    c = 0
    for r in range(N):
        if labels[r] >= 0 and _formula_value(disj, r) != (labels[r] == 1):
            c += 1
    return float(c) + _implication_cost(disj, src, dst)


@jit
def _simplified_cost(disj, labels, small, src, dst):
    """Per-disjunct cost: 1 for d_i(x) true on a negative example, ``small`` for d_i(x) false on a
    positive example, 0 otherwise (summed over disjuncts and labelled examples), plus the violated
    implication pairs of the whole formula (the paper defines the simplified cost for labelled
    examples only)."""
    n, N = disj.shape
    c = 0.0
    for i in range(n):
        for r in range(N):
            if disj[i, r] and labels[r] == 0:
                c += 1.0
            elif (not disj[i, r]) and labels[r] == 1:
                c += small
    return c + _implication_cost(disj, src, dst)


@jit
def _cost(disj, labels, simplified, small, src, dst):
    if simplified:
        return _simplified_cost(disj, labels, small, src, dst)
    return _full_cost(disj, labels, src, dst)


@jit
def dnf_search(X, labels, n, m, n_stages, eps_simplified, eps_restart, beta, max_steps, seed):
    """Draw a uniform formula and run :func:`dnf_chain` from it (stage 1 for the 2-stage chain).

    Returns ``(steps, a, b)``; ``steps = -1`` if no consistent formula was found within ``max_steps``.
    """
    np.random.seed(seed)
    d = X.shape[1]
    a = np.empty((n, m, d), dtype=np.int64)
    b = np.empty((n, m), dtype=np.int64)
    _random_formula(a, b)
    stage = 1 if n_stages == 2 else 2
    lab = np.empty(labels.shape[0], dtype=np.int8)
    for r in range(labels.shape[0]):
        lab[r] = 1 if labels[r] else 0
    no_pairs = np.empty(0, dtype=np.int64)
    steps, stage = _chain(X, lab, no_pairs, no_pairs, a, b, stage, n_stages, eps_simplified, eps_restart, beta,
                          max_steps)
    return steps, a, b


@jit
def dnf_chain(X, labels, src, dst, a, b, stage, n_stages, eps_simplified, eps_restart, beta, max_steps, seed):
    """Continue the 0-, 1- or 2-stage chain from formula ``(a, b)`` in ``stage`` until it is consistent.

    ``labels`` (int8, one per row of ``X``) is 1 (positive), 0 (negative) or -1 (unlabelled: a row that
    only appears in implication pairs); ``src``, ``dst`` (int64) are implication pairs of row indices,
    violated when ``f(X[src]) and not f(X[dst])`` (each costs 1, like a misclassified example).
    ``a`` (n, m, d) and ``b`` (n, m) are updated in place, so a caller (the CEGAR loop of
    ``doeblin.dnf_verify``) can add examples and continue the same chain.  ``stage`` is 1 (simplified
    cost, 2-stage chain only) or 2 (full cost).  Returns ``(steps, stage)``; ``steps = -1`` if no
    consistent formula was found within ``max_steps`` steps.
    """
    np.random.seed(seed)
    return _chain(X, labels, src, dst, a, b, stage, n_stages, eps_simplified, eps_restart, beta, max_steps)


@jit
def _chain(X, labels, src, dst, a, b, stage, n_stages, eps_simplified, eps_restart, beta, max_steps):
    """Stages: 0-stage = MH on the full cost, no restarts; 1-stage = each step restarts from a
    uniform formula w.p. ``eps_restart``, else MH on the full cost; 2-stage = restart (uniform), then
    MH on the simplified cost, leaving w.p. ``eps_simplified`` per step, then MH on the full cost,
    restarting w.p. ``eps_restart`` per step (the cyclic staged chain of Fig. 2(b)).  Every step (a
    restart or an MH proposal) counts as one."""
    n, m, d = a.shape
    N = X.shape[0]
    atoms = np.empty((n, m, N), dtype=np.bool_)
    disj = np.empty((n, N), dtype=np.bool_)
    col = np.empty(N, dtype=np.bool_)
    old_disj = np.empty(N, dtype=np.bool_)
    old_atom = np.empty(N, dtype=np.bool_)
    old_a = np.empty(d, dtype=np.int64)
    small = 1.0 / n
    _evaluate_all(X, a, b, atoms, disj)
    cost = _cost(disj, labels, stage == 1, small, src, dst)
    if _full_cost(disj, labels, src, dst) == 0.0:
        return 0, stage
    for step in range(1, max_steps + 1):
        if n_stages >= 1 and stage == 2 and np.random.random() < eps_restart:
            _random_formula(a, b)
            _evaluate_all(X, a, b, atoms, disj)
            stage = 1 if n_stages == 2 else 2
            cost = _cost(disj, labels, stage == 1, small, src, dst)
        else:
            if stage == 1 and np.random.random() < eps_simplified:
                stage = 2
                cost = _full_cost(disj, labels, src, dst)
            # propose an atom edit: one entry of [a_ij b_ij] or the whole atom
            i = np.random.randint(0, n)
            j = np.random.randint(0, m)
            for k in range(d):
                old_a[k] = a[i, j, k]
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
            old_atom[:] = atoms[i, j]
            old_disj[:] = disj[i]
            _atom_column(X, a, b, i, j, col)
            atoms[i, j] = col
            for r in range(N):
                v = True
                for jj in range(m):
                    v = v and atoms[i, jj, r]
                disj[i, r] = v
            new_cost = _cost(disj, labels, stage == 1, small, src, dst)
            if new_cost <= cost or np.random.random() < np.exp(-beta * (new_cost - cost)):
                cost = new_cost
            else:
                for k in range(d):
                    a[i, j, k] = old_a[k]
                b[i, j] = old_b
                atoms[i, j] = old_atom
                disj[i] = old_disj
        if stage == 2 and cost == 0.0:
            return step, stage
        if stage == 1 and _full_cost(disj, labels, src, dst) == 0.0:
            return step, stage
    return -1, stage
