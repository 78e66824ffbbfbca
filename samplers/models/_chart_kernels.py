"""Numba kernels for masked CKY charts over a CNF grammar (log space).

Charts are ``(n+1, n+1, N)`` arrays indexed by span ``(i, k)`` and nonterminal; ``keep`` is an
``(n+1, n+1)`` boolean span mask (Algorithm 3 of Bouchard-Cote et al. 2009: pruned spans are
skipped, and a split ``j`` is used only when both ``(i, j)`` and ``(j, k)`` are kept).  Kernels take
the grammar as one :class:`GrammarArrays` bundle (a NamedTuple of arrays, one Numba argument) and
unpack the fields they read into locals first; a filled chart travels as a :class:`Chart`.  They
never raise for user errors and draw randomness after seeding Numba's generator.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import types
from numba.extending import overload

from .._jit import jit
from .._kernels import logaddexp


class GrammarArrays(NamedTuple):
    """A CNF grammar's arrays (:class:`~samplers.models.pcfg.Grammar`), bundled for the kernels.

    Attributes
    ----------
    lex : ndarray, shape (N, V)
        Lexical log weights ``A -> terminal``.
    rules : ndarray of int64, shape (R, 3)
        Binary rules ``(A, B, C)`` sorted by parent.
    logw : ndarray, shape (R,)
        Binary-rule log weights.
    offsets : ndarray of int64, shape (N + 1,)
        The rules of parent ``A`` are rows ``offsets[A]:offsets[A + 1]``.
    """

    lex: np.ndarray
    rules: np.ndarray
    logw: np.ndarray
    offsets: np.ndarray


class Chart(NamedTuple):
    """A filled chart: scores ``(n+1, n+1, N)``, ``alive`` flags ``(n+1, n+1)`` (span has a finite entry)
    and Viterbi back-pointers ``back_rule``, ``back_split`` (``(1, 1, 1)`` placeholders for an inside chart)."""

    score: np.ndarray
    alive: np.ndarray
    back_rule: np.ndarray
    back_split: np.ndarray


@jit
def _splits(alive, keep, i, k, buf):
    """Fill ``buf`` with the usable split points of span (i, k); return how many."""
    m = 0
    for j in range(i + 1, k):
        if keep[i, j] and keep[j, k] and alive[i, j] and alive[j, k]:
            buf[m] = j
            m += 1
    return m


@jit
def _word_chart(words, lex, keep):
    """A chart (n+1, n+1, nt) holding the lexical log weights of kept one-word spans (-inf elsewhere)
    and the ``alive`` flags (span has a finite entry)."""
    n = words.shape[0]
    nt = lex.shape[0]
    chart = np.full((n + 1, n + 1, nt), -np.inf)
    alive = np.zeros((n + 1, n + 1), dtype=np.bool_)
    for i in range(n):
        if keep[i, i + 1]:
            for a in range(nt):
                v = lex[a, words[i]]
                chart[i, i + 1, a] = v
                if v > -np.inf:
                    alive[i, i + 1] = True
    return chart, alive


# --------------------------------------------------------------------------- one CKY recursion, two semirings
# The inside chart (log-sum-exp over splits and rules) and the Viterbi chart (max, with back-pointers) are one
# recursion, ``_fill_chart``; the semiring is a NamedTuple *type* (``_SumProduct`` or ``_MaxProduct``), so
# Numba compiles the recursion once per semiring with the rule update inlined (no branch in the loops).


class _SumProduct(NamedTuple):
    """Inside chart: log-sum-exp over splits and rules."""

    tag: int = 0


class _MaxProduct(NamedTuple):
    """Viterbi chart: max over splits and rules, with back-pointers."""

    tag: int = 1


def _is(semiring, cls) -> bool:
    # instance_class is set by BaseNamedTuple's subclasses (NamedTuple, NamedUniTuple), not declared on it
    return isinstance(semiring, types.BaseNamedTuple) and getattr(semiring, "instance_class", None) is cls


def _back_pointers(semiring, n, nt):
    """Back-pointer arrays (rule, split) for the max semiring; 1-element placeholders for the sum one."""
    raise NotImplementedError("Numba-only")


@overload(_back_pointers, inline="always")
def _back_pointers_impl(semiring, n, nt):
    if _is(semiring, _MaxProduct):
        return lambda semiring, n, nt: (np.full((n + 1, n + 1, nt), -1, dtype=np.int64),
                                        np.full((n + 1, n + 1, nt), -1, dtype=np.int64))
    return lambda semiring, n, nt: (np.full((1, 1, 1), -1, dtype=np.int64), np.full((1, 1, 1), -1, dtype=np.int64))


def _add_rule(semiring, chart, back_r, back_j, cell, rule, vals, split):
    """Fold binary rule ``rule = (r, log weight)`` into ``chart[cell]``, ``cell = (i, k, a)``, given its
    split scores ``vals[:m]`` and ``split = (m, their maximum best, the split point arg attaining it)``."""
    raise NotImplementedError("Numba-only")


@overload(_add_rule, inline="always")
def _add_rule_impl(semiring, chart, back_r, back_j, cell, rule, vals, split):
    # the tuples are unpacked first: reading them by index (rule[1], split[1]) made the Viterbi chart 3x slower
    if _is(semiring, _SumProduct):
        def add_sum(semiring, chart, back_r, back_j, cell, rule, vals, split):
            i, k, a = cell
            _, log_w = rule
            m, best, _ = split
            s = 0.0
            for t in range(m):
                s += np.exp(vals[t] - best)
            chart[i, k, a] = logaddexp(chart[i, k, a], log_w + best + np.log(s))
        return add_sum
    if _is(semiring, _MaxProduct):
        def add_max(semiring, chart, back_r, back_j, cell, rule, vals, split):
            i, k, a = cell
            r, log_w = rule
            _, best, arg = split
            v = log_w + best
            if v > chart[i, k, a]:
                chart[i, k, a] = v
                back_r[i, k, a] = r
                back_j[i, k, a] = arg
        return add_max
    return None


@jit
def _fill_chart(words, grammar, keep, semiring):
    """The pruned CKY recursion (Algorithm 3) in ``semiring``: a :class:`Chart` (back-pointers are
    placeholders for the sum semiring)."""
    lex, rules, logw = grammar.lex, grammar.rules, grammar.logw
    n = words.shape[0]
    nt = lex.shape[0]
    chart, alive = _word_chart(words, lex, keep)
    back_r, back_j = _back_pointers(semiring, n, nt)
    buf = np.empty(n + 1, dtype=np.int64)
    vals = np.empty(n + 1)
    for length in range(2, n + 1):
        for i in range(n - length + 1):
            k = i + length
            if not keep[i, k]:
                continue
            m = _splits(alive, keep, i, k, buf)
            if m == 0:
                continue
            for r in range(rules.shape[0]):
                a = rules[r, 0]
                b = rules[r, 1]
                c = rules[r, 2]
                best = -np.inf
                arg = -1
                for t in range(m):
                    j = buf[t]
                    v = chart[i, j, b] + chart[j, k, c]
                    vals[t] = v
                    if v > best:
                        best = v
                        arg = j
                if best == -np.inf:
                    continue
                _add_rule(semiring, chart, back_r, back_j, (i, k, a), (r, logw[r]), vals, (m, best, arg))
            for a in range(nt):
                if chart[i, k, a] > -np.inf:
                    alive[i, k] = True
                    break
    return Chart(chart, alive, back_r, back_j)


@jit
def inside_kernel(words, grammar, keep):
    """Pruned inside chart (Algorithm 3) and the ``alive`` flags (span has a finite entry)."""
    out = _fill_chart(words, grammar, keep, _SumProduct(0))
    return out.score, out.alive


@jit
def outside_kernel(words, grammar, keep, inside, alive, start):
    """Pruned outside chart, expected binary-rule counts and expected lexical counts.

    Returns ``(outside, binary_counts[R], lexical_counts[N, V])``; counts are posterior
    expectations of how often each rule is used (inside-outside, soft counts E_m[f]).
    """
    lex, rules, logw = grammar.lex, grammar.rules, grammar.logw
    n = words.shape[0]
    nt = lex.shape[0]
    outside = np.full((n + 1, n + 1, nt), -np.inf)
    counts = np.zeros(rules.shape[0])
    lexc = np.zeros(lex.shape)
    log_z = inside[0, n, start]
    if log_z == -np.inf:
        return outside, counts, lexc
    outside[0, n, start] = 0.0
    buf = np.empty(n + 1, dtype=np.int64)
    for length in range(n, 1, -1):
        for i in range(n - length + 1):
            k = i + length
            if not (keep[i, k] and alive[i, k]):
                continue
            m = _splits(alive, keep, i, k, buf)
            for r in range(rules.shape[0]):
                a = rules[r, 0]
                oa = outside[i, k, a]
                if oa == -np.inf:
                    continue
                b = rules[r, 1]
                c = rules[r, 2]
                base = oa + logw[r]
                for t in range(m):
                    j = buf[t]
                    vb = inside[i, j, b]
                    vc = inside[j, k, c]
                    if vb == -np.inf or vc == -np.inf:
                        continue
                    outside[i, j, b] = logaddexp(outside[i, j, b], base + vc)
                    outside[j, k, c] = logaddexp(outside[j, k, c], base + vb)
                    counts[r] += np.exp(base + vb + vc - log_z)
    for i in range(n):
        for a in range(nt):
            v = outside[i, i + 1, a] + inside[i, i + 1, a]
            if v > -np.inf:
                lexc[a, words[i]] += np.exp(v - log_z)
    return outside, counts, lexc


@jit
def span_posteriors_kernel(inside, outside, log_z):
    """P(span (i, k) is a constituent) = sum_A exp(inside + outside - log Z)."""
    n1 = inside.shape[0]
    nt = inside.shape[2]
    post = np.zeros((n1, n1))
    for i in range(n1):
        for k in range(i + 1, n1):
            s = 0.0
            for a in range(nt):
                v = inside[i, k, a] + outside[i, k, a]
                if v > -np.inf:
                    s += np.exp(v - log_z)
            post[i, k] = s
    return post


@jit
def _push_children(stack, top, i, j, k, left, right):
    """Push the children (i, j, left) and (j, k, right) so the left one is popped first."""
    stack[top + 1, 0] = j
    stack[top + 1, 1] = k
    stack[top + 1, 2] = right
    stack[top + 2, 0] = i
    stack[top + 2, 1] = j
    stack[top + 2, 2] = left
    return top + 2


@jit
def _draw_split(chart, keep, grammar, i, k, a, buf):
    """Draw (rule, split) of node (i, k, a) with probability w(rule) inside(left) inside(right) / inside(i, k, a)."""
    inside, rules, logw, offsets = chart.score, grammar.rules, grammar.logw, grammar.offsets
    m = _splits(chart.alive, keep, i, k, buf)
    target = inside[i, k, a]
    u = np.random.random()
    acc = 0.0
    pick_r = -1
    pick_j = -1
    for r in range(offsets[a], offsets[a + 1]):
        b = rules[r, 1]
        c = rules[r, 2]
        for t in range(m):
            j = buf[t]
            v = logw[r] + inside[i, j, b] + inside[j, k, c]
            if v == -np.inf:
                continue
            pick_r = r
            pick_j = j
            acc += np.exp(v - target)
            if u < acc:
                return pick_r, pick_j
    return pick_r, pick_j


@jit
def _walk_tree(sample, chart, keep, grammar, start, nodes, stack, buf):
    """Write a tree top-down into ``nodes`` rows (i, k, label, rule), pre-order.  Each binary node's
    (rule, split) is drawn from the inside chart (``sample``) or read from Viterbi back-pointers."""
    rules, back_r, back_j = grammar.rules, chart.back_rule, chart.back_split
    n = chart.score.shape[0] - 1
    top = 0
    stack[0, 0] = 0
    stack[0, 1] = n
    stack[0, 2] = start
    count = 0
    while top >= 0:
        i = stack[top, 0]
        k = stack[top, 1]
        a = stack[top, 2]
        top -= 1
        nodes[count, 0] = i
        nodes[count, 1] = k
        nodes[count, 2] = a
        nodes[count, 3] = -1
        count += 1
        if k - i == 1:
            continue
        if sample:
            r, j = _draw_split(chart, keep, grammar, i, k, a, buf)
        else:
            r = back_r[i, k, a]
            j = back_j[i, k, a]
        nodes[count - 1, 3] = r
        top = _push_children(stack, top, i, j, k, rules[r, 1], rules[r, 2])
    return count


@jit
def sample_trees_kernel(inside, alive, keep, grammar, start, n_samples, seed):
    """``n_samples`` exact draws from the (pruned) tree posterior: array (n_samples, 2n-1, 4)."""
    np.random.seed(seed)
    n = inside.shape[0] - 1
    out = np.empty((n_samples, 2 * n - 1, 4), dtype=np.int64)
    stack = np.empty((2 * n + 1, 3), dtype=np.int64)
    buf = np.empty(n + 1, dtype=np.int64)
    no_back = np.empty((1, 1, 1), dtype=np.int64)
    chart = Chart(inside, alive, no_back, no_back)
    for s in range(n_samples):
        _walk_tree(True, chart, keep, grammar, start, out[s], stack, buf)
    return out


@jit
def viterbi_kernel(words, grammar, keep, start):
    """Max-product chart with back-pointers (the inside recursion in the max semiring); returns (best log
    weight, nodes (2n-1, 4))."""
    n = words.shape[0]
    best = _fill_chart(words, grammar, keep, _MaxProduct(1))
    buf = np.empty(n + 1, dtype=np.int64)
    nodes = np.full((2 * n - 1, 4), -1, dtype=np.int64)
    score = best.score[0, n, start]
    if score == -np.inf:
        return score, nodes
    stack = np.empty((2 * n + 1, 3), dtype=np.int64)
    _walk_tree(False, best, keep, grammar, start, nodes, stack, buf)
    return score, nodes
