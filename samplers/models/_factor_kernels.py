"""Numba kernels on the flat factor bundle (:class:`samplers.models.FactorBundle`): single-site Gibbs
sweeps over factors of any arity (hard zeros respected) and loopy belief propagation in log space.

Kernels take the bundle (a NamedTuple of arrays, which Numba passes as one argument) and plain
scalars, unpack the fields they read into locals first (field reads inside hot loops were measured
slower), never raise for user errors (the wrappers in :mod:`samplers.models.factor_gibbs` and
:mod:`samplers.models.belief_propagation` validate), and seed Numba's generator inside the kernel.
:func:`gibbs_sweep_factors` allocates nothing (scratch is passed in), so it can also run inside the
reference-count-free loop kernels of :mod:`doeblin.core`.

Factor ``f``'s table entry of a configuration ``x`` is
``log_values[table_ptr[f] + sum_k strides[k] * x[scope_vars[k]]]`` over its slots
``k in scope_ptr[f] .. scope_ptr[f + 1] - 1``.
"""

from __future__ import annotations

import numpy as np

from .._jit import jit
from .._kernels import categorical_from_probs, logaddexp


@jit
def gibbs_sweep_factors(x, beta, zero_as, bundle, logits, cond_sum):
    """One systematic-scan Gibbs sweep (in place) of ``unary + beta * higher-order`` log factors.

    A zero (``-inf``) entry of a factor of arity >= 2 counts as ``zero_as`` (``-inf``: the model itself;
    finite: the softened model of constraint annealing, :func:`samplers.ais.ais_factor_graph`); zeros of
    unary factors stay zeros.  A variable whose conditional is zero everywhere (possible only from an
    infeasible state) keeps its state.  When ``cond_sum`` has rows, each variable's full conditional probabilities are added to
    ``cond_sum[i]`` (the Rao-Blackwellised marginal estimate).  Returns the number of infeasible
    conditionals met.
    """
    cards, scope_ptr, scope_vars, strides = bundle.cards, bundle.scope_ptr, bundle.scope_vars, bundle.strides
    table_ptr, log_values = bundle.table_ptr, bundle.log_values
    var_ptr, var_factors, var_slots = bundle.var_ptr, bundle.var_factors, bundle.var_slots
    stuck = 0
    accumulate = cond_sum.shape[0] > 0
    for i in range(cards.shape[0]):
        n = cards[i]
        for k in range(n):
            logits[k] = 0.0
        for m in range(var_ptr[i], var_ptr[i + 1]):
            f = var_factors[m]
            own = var_slots[m]
            base = table_ptr[f]
            for s in range(scope_ptr[f], scope_ptr[f + 1]):
                if s != own:
                    base += strides[s] * x[scope_vars[s]]
            unary = scope_ptr[f + 1] - scope_ptr[f] == 1
            weight = 1.0 if unary else beta
            zero = -np.inf if unary else zero_as
            for k in range(n):
                v = log_values[base + strides[own] * k]
                if v == -np.inf:
                    v = zero
                if v == -np.inf:
                    logits[k] = -np.inf
                elif logits[k] != -np.inf:
                    logits[k] += weight * v
        top = -np.inf
        for k in range(n):
            if logits[k] > top:
                top = logits[k]
        if top == -np.inf:
            stuck += 1
            continue
        total = 0.0
        for k in range(n):
            logits[k] = np.exp(logits[k] - top)
            total += logits[k]
        x[i] = categorical_from_probs(logits[:n])
        if accumulate:
            for k in range(n):
                cond_sum[i, k] += logits[k] / total
    return stuck


@jit
def count_zero_factors(x, bundle):
    """Number of factors whose entry at ``x`` is ``-inf`` (0: ``x`` is feasible)."""
    scope_ptr, scope_vars, strides = bundle.scope_ptr, bundle.scope_vars, bundle.strides
    table_ptr, log_values = bundle.table_ptr, bundle.log_values
    bad = 0
    for f in range(scope_ptr.shape[0] - 1):
        idx = table_ptr[f]
        for s in range(scope_ptr[f], scope_ptr[f + 1]):
            idx += strides[s] * x[scope_vars[s]]
        if log_values[idx] == -np.inf:
            bad += 1
    return bad


@jit
def gibbs_factor_chains(init, n_sweeps, burn_in, seeds, beta, zero_as, bundle, max_states):
    """Run ``init.shape[0]`` Gibbs chains of ``n_sweeps`` sweeps at ``beta`` (one seed per chain), a zero of
    a factor of arity >= 2 counting as ``zero_as`` (:func:`gibbs_sweep_factors`).

    Returns ``(final states (n_chains, n_vars), conditional sums (n_chains, n_vars, max_states) over the
    sweeps after burn_in, infeasible conditionals met)``.
    """
    n_chains, n_vars = init.shape
    final = np.empty((n_chains, n_vars), dtype=np.int64)
    sums = np.zeros((n_chains, n_vars, max_states))
    empty = np.zeros((0, max_states))
    logits = np.empty(max_states)
    stuck = 0
    for c in range(n_chains):
        np.random.seed(seeds[c])
        x = init[c].copy()
        for s in range(n_sweeps):
            target = sums[c] if s >= burn_in else empty
            stuck += gibbs_sweep_factors(x, beta, zero_as, bundle, logits, target)
        final[c] = x
    return final, sums, stuck


@jit
def find_feasible(init, max_sweeps, seed, penalty, bundle, max_states):
    """Search for configurations with no zero factor, one per row of ``init`` (in place).

    Gibbs sweeps of the softened model (each ``-inf`` entry of a factor of arity >= 2 counts as
    ``penalty``) until the state is feasible or ``max_sweeps`` sweeps are spent.  Returns a boolean array: which rows are feasible.
    """
    np.random.seed(seed)
    ok = np.zeros(init.shape[0], dtype=np.bool_)
    logits = np.empty(max_states)
    empty = np.zeros((0, max_states))
    for c in range(init.shape[0]):
        x = init[c]
        for _ in range(max_sweeps + 1):
            if count_zero_factors(x, bundle) == 0:
                ok[c] = True
                break
            gibbs_sweep_factors(x, 1.0, penalty, bundle, logits, empty)
    return ok


@jit
def higher_order_log_weight(x, bundle, zero_as):
    """Sum over factors of arity >= 2 of their log entries at each row of ``x``, a zero entry counting as
    ``zero_as`` (``-inf``: the model's own weight)."""
    scope_ptr, scope_vars, strides = bundle.scope_ptr, bundle.scope_vars, bundle.strides
    table_ptr, log_values = bundle.table_ptr, bundle.log_values
    out = np.zeros(x.shape[0])
    for c in range(x.shape[0]):
        acc = 0.0
        for f in range(scope_ptr.shape[0] - 1):
            if scope_ptr[f + 1] - scope_ptr[f] < 2:
                continue
            idx = table_ptr[f]
            for s in range(scope_ptr[f], scope_ptr[f + 1]):
                idx += strides[s] * x[c, scope_vars[s]]
            v = log_values[idx]
            acc += zero_as if v == -np.inf else v
        out[c] = acc
    return out


# -- loopy belief propagation ------------------------------------------------------------------------

@jit
def _normalise(msg, n):
    """Shift ``msg[:n]`` to log-sum-exp 0; an all ``-inf`` message becomes uniform.  Returns False then."""
    top = -np.inf
    for k in range(n):
        if msg[k] > top:
            top = msg[k]
    if top == -np.inf:
        for k in range(n):
            msg[k] = -np.log(n)
        return False
    s = 0.0
    for k in range(n):
        s += np.exp(msg[k] - top)
    lz = top + np.log(s)
    for k in range(n):
        msg[k] -= lz
    return True


@jit
def _var_to_factor(bundle, f2v, v2f):
    """``v2f[slot] = normalise(sum of the other factors' messages into the slot's variable)``."""
    cards, var_ptr, var_slots = bundle.cards, bundle.var_ptr, bundle.var_slots
    for i in range(cards.shape[0]):
        for a in range(var_ptr[i], var_ptr[i + 1]):
            slot = var_slots[a]
            for k in range(cards[i]):
                acc = 0.0
                for b in range(var_ptr[i], var_ptr[i + 1]):
                    if b != a:
                        acc += f2v[var_slots[b], k]
                v2f[slot, k] = acc
            _normalise(v2f[slot], cards[i])


@jit
def _factor_to_var(bundle, v2f, out, states):
    """``out[slot, k] = log sum over the factor's entries with its slot variable at k of
    phi * prod of the other slots' incoming messages`` (unnormalised)."""
    scope_ptr, strides = bundle.scope_ptr, bundle.strides
    table_ptr, log_values = bundle.table_ptr, bundle.log_values
    out[:, :] = -np.inf
    for f in range(scope_ptr.shape[0] - 1):
        lo, hi = scope_ptr[f], scope_ptr[f + 1]
        if hi == lo:
            continue
        size = table_ptr[f + 1] - table_ptr[f]
        for e in range(size):
            phi = log_values[table_ptr[f] + e]
            if phi == -np.inf:
                continue
            rest = e
            for s in range(lo, hi):  # decode the entry's states (C order)
                states[s - lo] = rest // strides[s]
                rest -= states[s - lo] * strides[s]
            for s in range(lo, hi):
                acc = phi
                for t in range(lo, hi):
                    if t != s:
                        acc += v2f[t, states[t - lo]]
                out[s, states[s - lo]] = logaddexp(out[s, states[s - lo]], acc)


@jit
def loopy_bp(bundle, max_states, damping, tol, max_iter):
    """Flooding-schedule loopy BP with damped factor-to-variable messages, in log space.

    Returns ``(bethe log Z, beliefs (n_vars, max_states), converged, iterations, largest last change)``;
    the Bethe ``log Z`` is ``sum_f log Z_f + sum_i log Z_i - sum_(i,f) log Z_if`` (the Bethe free energy at
    a fixed point, exact on trees; Yedidia, Freeman & Weiss 2005, Eq. 25 in message form).
    """
    cards, scope_ptr, scope_vars, strides = bundle.cards, bundle.scope_ptr, bundle.scope_vars, bundle.strides
    table_ptr, log_values = bundle.table_ptr, bundle.log_values
    var_ptr, var_slots = bundle.var_ptr, bundle.var_slots
    n_slots = scope_vars.shape[0]
    n_vars = cards.shape[0]
    f2v = np.full((n_slots, max_states), -np.inf)
    v2f = np.full((n_slots, max_states), -np.inf)
    new = np.empty((n_slots, max_states))
    states = np.zeros(max(1, max_arity(scope_ptr)), dtype=np.int64)
    for s in range(n_slots):
        n = cards[scope_vars[s]]
        for k in range(n):
            f2v[s, k] = -np.log(n)
    converged = False
    change = np.inf
    it = 0
    while it < max_iter:
        it += 1
        _var_to_factor(bundle, f2v, v2f)
        _factor_to_var(bundle, v2f, new, states)
        change = 0.0
        for s in range(n_slots):
            n = cards[scope_vars[s]]
            _normalise(new[s], n)
            for k in range(n):
                if damping > 0.0:
                    mixed = logaddexp(np.log1p(-damping) + new[s, k], np.log(damping) + f2v[s, k])
                else:
                    mixed = new[s, k]
                d = abs(np.exp(mixed) - np.exp(f2v[s, k]))
                if d > change:
                    change = d
                f2v[s, k] = mixed
        if change < tol:
            converged = True
            break
    _var_to_factor(bundle, f2v, v2f)
    # Bethe log Z in message form.
    log_z = 0.0
    for f in range(scope_ptr.shape[0] - 1):
        lo, hi = scope_ptr[f], scope_ptr[f + 1]
        zf = -np.inf
        size = table_ptr[f + 1] - table_ptr[f]
        for e in range(size):
            acc = log_values[table_ptr[f] + e]
            if acc == -np.inf:
                continue
            rest = e
            for s in range(lo, hi):
                st = rest // strides[s]
                rest -= st * strides[s]
                acc += v2f[s, st]
            zf = logaddexp(zf, acc)
        log_z += zf
    beliefs = np.zeros((n_vars, max_states))
    for i in range(n_vars):
        n = cards[i]
        b = np.zeros(n)
        for a in range(var_ptr[i], var_ptr[i + 1]):
            slot = var_slots[a]
            for k in range(n):
                b[k] += f2v[slot, k]
        zi = -np.inf
        for k in range(n):
            zi = logaddexp(zi, b[k])
        log_z += zi
        for a in range(var_ptr[i], var_ptr[i + 1]):
            slot = var_slots[a]
            zif = -np.inf
            for k in range(n):
                zif = logaddexp(zif, v2f[slot, k] + f2v[slot, k])
            log_z -= zif
        for k in range(n):
            beliefs[i, k] = np.exp(b[k] - zi) if zi > -np.inf else 0.0
    return log_z, beliefs, converged, it, change


@jit
def max_arity(scope_ptr):
    """Largest factor arity of a bundle."""
    m = 0
    for f in range(scope_ptr.shape[0] - 1):
        if scope_ptr[f + 1] - scope_ptr[f] > m:
            m = scope_ptr[f + 1] - scope_ptr[f]
    return m
