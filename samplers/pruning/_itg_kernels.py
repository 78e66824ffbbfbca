"""Numba kernels for masked bitext charts of an inversion transduction grammar (ITG).

Charts are ``(p+1, p+1, q+1, q+1, N)`` arrays over bispans ``(s, t, u, v)`` (English words s..t-1,
foreign words u..v-1, one side may be empty but not both).  Binary rules combine two non-empty
bispans either straight, ``[B C]``: (s,S,u,U) + (S,t,U,v), or inverted, ``<B C>``: (s,S,U,v) +
(S,t,u,U).  Lexical rules emit a word pair (e_i, f_j) or one null-aligned word.  ``keep`` masks
bispans, ``pair_keep[i, j]`` masks the lexical pair rule of (i, j).  O(p^3 q^3 N^3) when unpruned.
Inside sums use per-cell scaling (linear-space products, one exp per child label).  Kernels take the
grammar as one :class:`ITGArrays` bundle and the masked sentence pair as one :class:`MaskedPair`
(NamedTuples of arrays, one Numba argument each) and unpack the fields they read into locals first.
The helpers called per bispan and label are inlined into the loops (``inline="always"``): as plain
calls, passing the bundles made the outside pass about 1.5x slower; a per-split helper taking tuples
was 1.1x slower than the loop written in place.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._jit import jit
from .._kernels import logaddexp


class ITGArrays(NamedTuple):
    """An ITG's log weights (:class:`~samplers.pruning.itg.ITG`), bundled for the kernels: ``straight``,
    ``inverted`` (N, N, N), ``pair`` (N, Ve, Vf), ``null_e`` (N, Ve), ``null_f`` (N, Vf)."""

    straight: np.ndarray
    inverted: np.ndarray
    pair: np.ndarray
    null_e: np.ndarray
    null_f: np.ndarray


class MaskedPair(NamedTuple):
    """A sentence pair ``e`` (p,), ``f`` (q,) (int64 word ids) with its bispan mask ``keep``
    (p+1, p+1, q+1, q+1) and lexical pair-rule mask ``pair_keep`` (p, q), bundled for the kernels."""

    e: np.ndarray
    f: np.ndarray
    keep: np.ndarray
    pair_keep: np.ndarray


@jit(inline="always")
def _lexical(itg, bitext, s, t, u, v, a):
    """Log weight of the lexical rule of label ``a`` over bispan (s, t, u, v) (``-inf``: none or masked)."""
    e, f, pair_keep = bitext.e, bitext.f, bitext.pair_keep
    le = t - s
    lf = v - u
    if le == 1 and lf == 1:
        if pair_keep[s, u]:
            return itg.pair[a, e[s], f[u]]
        return -np.inf
    if le == 1 and lf == 0:
        return itg.null_e[a, e[s]]
    if le == 0 and lf == 1:
        return itg.null_f[a, f[u]]
    return -np.inf


@jit
def _children(s, t, u, v, ss, uu, inverted):
    """Child bispans of split (ss, uu); returns (ls, lt, lu, lv, rs, rt, ru, rv, ok)."""
    if inverted:
        ls, lt, lu, lv = s, ss, uu, v
        rs, rt, ru, rv = ss, t, u, uu
    else:
        ls, lt, lu, lv = s, ss, u, uu
        rs, rt, ru, rv = ss, t, uu, v
    ok = (lt - ls) + (lv - lu) >= 1 and (rt - rs) + (rv - ru) >= 1
    return ls, lt, lu, lv, rs, rt, ru, rv, ok


@jit
def _bispan_splits(s, t, u, v, alive, buf):
    """Rows (ls, lt, lu, lv, rs, rt, ru, rv, inverted) of the usable splits of bispan (s, t, u, v):
    both children non-empty and alive.  Returns how many rows were written into ``buf``."""
    m = 0
    for orient in range(2):
        for ss in range(s, t + 1):
            for uu in range(u, v + 1):
                ls, lt, lu, lv, rs, rt, ru, rv, ok = _children(s, t, u, v, ss, uu, orient == 1)
                if not ok or not (alive[ls, lt, lu, lv] and alive[rs, rt, ru, rv]):
                    continue
                buf[m, 0] = ls
                buf[m, 1] = lt
                buf[m, 2] = lu
                buf[m, 3] = lv
                buf[m, 4] = rs
                buf[m, 5] = rt
                buf[m, 6] = ru
                buf[m, 7] = rv
                buf[m, 8] = orient
                m += 1
    return m


@jit
def _bilinear(w, a, el, er):
    """sum_{B, C} w[a, B, C] el[B] er[C]."""
    x = 0.0
    nt = el.shape[0]
    for b in range(nt):
        if el[b] == 0.0:
            continue
        y = 0.0
        for c in range(nt):
            y += w[a, b, c] * er[c]
        x += el[b] * y
    return x


@jit
def itg_inside_kernel(itg, bitext):
    """Pruned inside chart and ``alive`` flags of an ITG."""
    keep = bitext.keep
    p = bitext.e.shape[0]
    q = bitext.f.shape[0]
    nt = itg.straight.shape[0]
    chart = np.full((p + 1, p + 1, q + 1, q + 1, nt), -np.inf)
    alive = np.zeros((p + 1, p + 1, q + 1, q + 1), dtype=np.bool_)
    ws = np.exp(itg.straight)
    wi = np.exp(itg.inverted)
    acc = np.zeros(nt)
    el = np.empty(nt)
    er = np.empty(nt)
    buf = np.empty((2 * (p + 1) * (q + 1), 9), dtype=np.int64)
    for total in range(1, p + q + 1):
        for le in range(max(0, total - q), min(p, total) + 1):
            lf = total - le
            for s in range(p - le + 1):
                t = s + le
                for u in range(q - lf + 1):
                    v = u + lf
                    if not keep[s, t, u, v]:
                        continue
                    m = _bispan_splits(s, t, u, v, alive, buf)
                    best = -np.inf  # pass 1: the largest split score, for scaling
                    for x in range(m):
                        sc = np.max(chart[buf[x, 0], buf[x, 1], buf[x, 2], buf[x, 3]]) + \
                            np.max(chart[buf[x, 4], buf[x, 5], buf[x, 6], buf[x, 7]])
                        if sc > best:
                            best = sc
                    acc[:] = 0.0
                    for x in range(m if best > -np.inf else 0):
                        w = wi if buf[x, 8] == 1 else ws
                        left = chart[buf[x, 0], buf[x, 1], buf[x, 2], buf[x, 3]]
                        right = chart[buf[x, 4], buf[x, 5], buf[x, 6], buf[x, 7]]
                        ml = np.max(left)
                        mr = np.max(right)
                        scale = np.exp(ml + mr - best)
                        for b in range(nt):
                            el[b] = np.exp(left[b] - ml)
                            er[b] = np.exp(right[b] - mr) * scale
                        for a in range(nt):
                            acc[a] += _bilinear(w, a, el, er)
                    for a in range(nt):
                        val = best + np.log(acc[a]) if acc[a] > 0.0 else -np.inf
                        val = logaddexp(val, _lexical(itg, bitext, s, t, u, v, a))
                        chart[s, t, u, v, a] = val
                        if val > -np.inf:
                            alive[s, t, u, v] = True
    return chart, alive


@jit(inline="always")
def _lexical_posteriors(itg, bitext, bispan, out_cell, log_z, posteriors):
    """Add the posterior of each lexical rule over ``bispan = (s, t, u, v)`` (outside scores ``out_cell``)
    to ``posteriors = (align (p, q), null_e (p,), null_f (q,))``."""
    s, t, u, v = bispan
    align, nul_e, nul_f = posteriors
    for a in range(out_cell.shape[0]):
        lx = _lexical(itg, bitext, s, t, u, v, a)
        if lx == -np.inf:
            continue
        post = np.exp(out_cell[a] + lx - log_z)
        if t - s == 1 and v - u == 1:
            align[s, u] += post
        elif t - s == 1:
            nul_e[s] += post
        else:
            nul_f[u] += post


@jit
def itg_outside_kernel(itg, bitext, inside, alive, start):
    """Pruned outside pass: returns (alignment posteriors (p, q), null_e posteriors (p,),
    null_f posteriors (q,), straight counts (N, N, N), inverted counts (N, N, N))."""
    keep = bitext.keep
    p = bitext.e.shape[0]
    q = bitext.f.shape[0]
    nt = itg.straight.shape[0]
    out = np.full(inside.shape, -np.inf)
    align = np.zeros((p, q))
    nul_e = np.zeros(p)
    nul_f = np.zeros(q)
    cs = np.zeros((nt, nt, nt))
    ci = np.zeros((nt, nt, nt))
    log_z = inside[0, p, 0, q, start]
    if log_z == -np.inf:
        return align, nul_e, nul_f, cs, ci
    out[0, p, 0, q, start] = 0.0
    ws = np.exp(itg.straight)
    wi = np.exp(itg.inverted)
    oa = np.empty(nt)
    el = np.empty(nt)
    er = np.empty(nt)
    buf = np.empty((2 * (p + 1) * (q + 1), 9), dtype=np.int64)
    for total in range(p + q, 0, -1):
        for le in range(max(0, total - q), min(p, total) + 1):
            lf = total - le
            for s in range(p - le + 1):
                t = s + le
                for u in range(q - lf + 1):
                    v = u + lf
                    if not (keep[s, t, u, v] and alive[s, t, u, v]):
                        continue
                    mo = np.max(out[s, t, u, v])
                    if mo == -np.inf:
                        continue
                    for a in range(nt):
                        oa[a] = np.exp(out[s, t, u, v, a] - mo)
                    _lexical_posteriors(itg, bitext, (s, t, u, v), out[s, t, u, v], log_z, (align, nul_e, nul_f))
                    if total == 1:
                        continue
                    m = _bispan_splits(s, t, u, v, alive, buf)
                    for x in range(m):
                        w = wi if buf[x, 8] == 1 else ws
                        cnt = ci if buf[x, 8] == 1 else cs
                        ls, lt, lu, lv = buf[x, 0], buf[x, 1], buf[x, 2], buf[x, 3]
                        rs, rt, ru, rv = buf[x, 4], buf[x, 5], buf[x, 6], buf[x, 7]
                        ml = np.max(inside[ls, lt, lu, lv])
                        mr = np.max(inside[rs, rt, ru, rv])
                        for b in range(nt):
                            el[b] = np.exp(inside[ls, lt, lu, lv, b] - ml)
                            er[b] = np.exp(inside[rs, rt, ru, rv, b] - mr)
                        z = np.exp(mo + ml + mr - log_z)
                        for b in range(nt):
                            xl = 0.0  # sum_{A, C} oa[A] w[A, b, C] er[C]
                            xr = 0.0  # sum_{A, B} oa[A] w[A, B, b] el[B]
                            for a in range(nt):
                                if oa[a] == 0.0:
                                    continue
                                for c in range(nt):
                                    xl += oa[a] * w[a, b, c] * er[c]
                                    xr += oa[a] * w[a, c, b] * el[c]
                                    cnt[a, b, c] += z * oa[a] * w[a, b, c] * el[b] * er[c]
                            if xl > 0.0:
                                out[ls, lt, lu, lv, b] = logaddexp(out[ls, lt, lu, lv, b], mo + mr + np.log(xl))
                            if xr > 0.0:
                                out[rs, rt, ru, rv, b] = logaddexp(out[rs, rt, ru, rv, b], mo + ml + np.log(xr))
    return align, nul_e, nul_f, cs, ci


@jit
def itg_sample_alignments_kernel(itg, bitext, inside, alive, start, seed):
    """Draw one derivation top-down from the pruned inside chart; return its word alignment (p, q) bool."""
    np.random.seed(seed)
    straight, inverted = itg.straight, itg.inverted
    p = bitext.e.shape[0]
    q = bitext.f.shape[0]
    nt = straight.shape[0]
    links = np.zeros((p, q), dtype=np.bool_)
    stack = np.empty((2 * (p + q) + 2, 5), dtype=np.int64)
    buf = np.empty((2 * (p + 1) * (q + 1), 9), dtype=np.int64)
    top = 0
    stack[0, 0] = 0
    stack[0, 1] = p
    stack[0, 2] = 0
    stack[0, 3] = q
    stack[0, 4] = start
    while top >= 0:
        s = stack[top, 0]
        t = stack[top, 1]
        u = stack[top, 2]
        v = stack[top, 3]
        a = stack[top, 4]
        top -= 1
        target = inside[s, t, u, v, a]
        r = np.random.random()
        lx = _lexical(itg, bitext, s, t, u, v, a)
        acc = 0.0
        if lx > -np.inf:
            acc += np.exp(lx - target)
            if r < acc:
                if t - s == 1 and v - u == 1:
                    links[s, u] = True
                continue
        m = _bispan_splits(s, t, u, v, alive, buf)
        pick = -1
        pick_bc = 0
        for x in range(m):
            w = inverted if buf[x, 8] == 1 else straight
            left = inside[buf[x, 0], buf[x, 1], buf[x, 2], buf[x, 3]]
            right = inside[buf[x, 4], buf[x, 5], buf[x, 6], buf[x, 7]]
            for bc in range(nt * nt):
                y = w[a, bc // nt, bc % nt] + left[bc // nt] + right[bc % nt]
                if y == -np.inf:
                    continue
                acc += np.exp(y - target)
                pick = x
                pick_bc = bc
                if r < acc:
                    break
            if r < acc:
                break
        have = pick >= 0
        last = np.empty(9, dtype=np.int64)
        if have:
            last[:8] = buf[pick, :8]
            last[8] = pick_bc
        if not have:
            continue
        top += 1
        stack[top, 0] = last[0]
        stack[top, 1] = last[1]
        stack[top, 2] = last[2]
        stack[top, 3] = last[3]
        stack[top, 4] = last[8] // nt
        top += 1
        stack[top, 0] = last[4]
        stack[top, 1] = last[5]
        stack[top, 2] = last[6]
        stack[top, 3] = last[7]
        stack[top, 4] = last[8] % nt
    return links


@jit
def itg_alignment_mask_kernel(p, q, pos_i, pos_j, neg_i, neg_j):
    """CreateMask for alignment auxiliary variables: a selected link (i, j) prunes every bispan that
    contains exactly one of e_i and f_j; a selected non-link prunes the lexical pair rule of (i, j)."""
    keep = np.ones((p + 1, p + 1, q + 1, q + 1), dtype=np.bool_)
    pair_keep = np.ones((p, q), dtype=np.bool_)
    for x in range(neg_i.shape[0]):
        pair_keep[neg_i[x], neg_j[x]] = False
    if pos_i.shape[0] == 0:
        return keep, pair_keep
    for s in range(p + 1):
        for t in range(s, p + 1):
            for u in range(q + 1):
                for v in range(u, q + 1):
                    for x in range(pos_i.shape[0]):
                        ine = s <= pos_i[x] and pos_i[x] < t
                        inf = u <= pos_j[x] and pos_j[x] < v
                        if ine != inf:
                            keep[s, t, u, v] = False
                            break
    return keep, pair_keep
