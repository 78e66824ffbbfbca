"""Single-site Gibbs sampling on factor graphs of any arity (Numba sweeps over the flat factor bundle).

Hard zeros (``-inf`` entries) are respected: chains start from feasible configurations (found by
:func:`feasible_states`, or refused with a clear error) and never leave the support.  Evidence is
applied by conditioning (:meth:`FactorGraph.condition`): the sampled graph holds the unobserved
variables only, so observed variables are clamped by construction.

:func:`gibbs_marginals` returns Rao-Blackwellised marginals (the average over sweeps of each
variable's full conditional, Gelfand & Smith 1990) with a between-chain standard error;
:func:`unary_sample` and :func:`gibbs_move` are the pieces AIS on factor graphs anneals with
(:func:`samplers.ais.ais_factor_graph`).

>>> import numpy as np
>>> from samplers.models import FactorGraph
>>> fg = FactorGraph([2, 2], [(0, 1)], [np.log([[1.0, 2.0], [3.0, 4.0]])])
>>> res = gibbs_marginals(fg, n_sweeps=2000, n_chains=4, seed=0)
>>> bool(abs(res.marginals[0, 1] - 0.7) < 5 * res.stderr[0, 1] + 1e-3)
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import logsumexp

from ..rng import as_generator, kernel_seed, kernel_seeds
from ..validation import check_float, check_int
from ._factor_kernels import find_feasible, gibbs_factor_chains, higher_order_log_weight
from .factor_graph import FactorGraph

#: Sweeps of the softened model :func:`feasible_states` spends per chain before refusing.
FEASIBLE_SEARCH_SWEEPS = 200

#: Nats below the smallest finite log entry that a zero of a factor of arity >= 2 weighs in the softened
#: model (:func:`softened_zero`): a violated zero costs at least this much more than any allowed entry.
ZERO_PENALTY = 20.0


def _check_graph(fg: Any) -> FactorGraph:
    if not isinstance(fg, FactorGraph):
        raise TypeError(f"fg must be a FactorGraph, got {type(fg).__name__}")
    return fg


def unary_log_tables(fg: FactorGraph) -> np.ndarray:
    """Sum of each variable's arity-1 log factors, ``(n_vars, max_states)`` (padding ``-inf``)."""
    out = np.full((fg.n_vars, fg.max_states), -np.inf)
    for i, k in enumerate(fg.cards):
        out[i, :k] = 0.0
    for sc, tab in zip(fg.scopes, fg.log_tables):
        if len(sc) == 1:
            out[sc[0], :tab.size] += tab
    return out


def unary_log_partition(fg: FactorGraph) -> float:
    """Exact ``log Z_0`` of the model keeping only unary and constant factors (``-inf`` if it is zero)."""
    with np.errstate(divide="ignore"):
        return float(np.sum(logsumexp(unary_log_tables(fg), axis=1))) + fg.log_constant


def unary_cdf(fg: FactorGraph) -> np.ndarray:
    """Cumulative rows ``(n_vars, max_states)`` of the unary-only model: row ``i`` is the running sum of
    the softmax of variable ``i``'s summed unary factors (flat at 1 over the padding).  Refuses a
    variable whose unary factors are all zero."""
    lu = unary_log_tables(fg)
    top = lu.max(axis=1, keepdims=True)
    if np.any(top == -np.inf):
        bad = int(np.flatnonzero(top[:, 0] == -np.inf)[0])
        raise ValueError(f"variable {bad}'s unary factors are zero in every state: the model has Z = 0")
    p = np.exp(lu - top)
    return np.cumsum(p / p.sum(axis=1, keepdims=True), axis=1)


def unary_sample(fg: FactorGraph, n: int, gen: np.random.Generator) -> np.ndarray:
    """``n`` exact independent draws ``(n, n_vars)`` of the unary-only model (each variable from the
    softmax of its summed unary factors, :func:`unary_cdf`).  Refuses a variable whose unary factors are
    all zero."""
    cdf = unary_cdf(fg)
    u = gen.random((n, fg.n_vars, 1))
    return np.minimum((u > cdf[None]).sum(axis=2), fg.cards - 1).astype(np.int64)


def softened_zero(fg: FactorGraph, penalty: float = ZERO_PENALTY) -> float:
    """The finite log weight a zero of a factor of arity >= 2 gets in the softened model: the smallest
    finite log entry of the graph minus ``penalty`` nats (``penalty > 0``)."""
    penalty = check_float(penalty, "zero_penalty", low=0.0, low_open=True)
    finite = fg.bundle.log_values[np.isfinite(fg.bundle.log_values)]
    return (float(finite.min()) if finite.size else 0.0) - penalty


def higher_order_log_weights(fg: FactorGraph, x: np.ndarray, zero_as: float = -np.inf) -> np.ndarray:
    """Sum of the log factors of arity >= 2 at each row of ``x``, a zero entry counting as ``zero_as``
    (default ``-inf``: the model's own weight; finite: the softened model, :func:`softened_zero`)."""
    return higher_order_log_weight(np.ascontiguousarray(x, dtype=np.int64), fg.bundle, float(zero_as))


def has_hard_zeros(fg: FactorGraph) -> bool:
    """Whether some factor of arity >= 2 has a zero (``-inf``) entry: the unary-only model can then draw
    configurations the model forbids."""
    b = fg.bundle
    arity = np.repeat(np.diff(b.scope_ptr), np.diff(b.table_ptr))
    return bool(np.any(np.isneginf(b.log_values[arity >= 2])))


def _run_chains(fg: FactorGraph, init: np.ndarray, n_sweeps: int, burn_in: int, seeds: np.ndarray, beta: float,
                zero_as: float = -np.inf):
    return gibbs_factor_chains(np.ascontiguousarray(init, dtype=np.int64), n_sweeps, burn_in, seeds, float(beta),
                               float(zero_as), fg.bundle, fg.max_states)


def gibbs_move(fg: FactorGraph, x: np.ndarray, beta: float, gen: np.random.Generator,
               zero_as: float = -np.inf) -> np.ndarray:
    """One Gibbs sweep of every row of ``x`` leaving ``unary * exp(beta * higher-order)`` invariant, a zero
    of a factor of arity >= 2 counting as ``zero_as`` (:func:`higher_order_log_weights`)."""
    seeds = kernel_seeds(gen, x.shape[0])
    return _run_chains(fg, x, 1, 1, seeds, beta, zero_as)[0]


def feasible_states(fg: FactorGraph, n: int, seed: Any = None, *,
                    max_sweeps: int = FEASIBLE_SEARCH_SWEEPS) -> np.ndarray:
    """``n`` configurations ``(n, n_vars)`` at which no factor is zero, for starting chains.

    Each starts from the unary-only model and takes Gibbs sweeps of the softened model (a zero of a
    factor of arity >= 2 weighs :func:`softened_zero`: violations are possible but strongly avoided)
    until it is feasible.

    Raises
    ------
    ValueError
        When some chain is still infeasible after ``max_sweeps`` sweeps (the message says so; pass
        ``init`` to the sampler instead).
    """
    fg = _check_graph(fg)
    n = check_int(n, "n", low=1)
    max_sweeps = check_int(max_sweeps, "max_sweeps", low=0)
    gen = as_generator(seed)
    x = unary_sample(fg, n, gen)
    ok = find_feasible(x, max_sweeps, kernel_seed(gen), softened_zero(fg), fg.bundle, fg.max_states)
    if not ok.all():
        raise ValueError(f"no feasible start found: {int((~ok).sum())} of {n} chains still meet a zero factor after "
                         f"{max_sweeps} sweeps of the softened model; pass init= (a configuration with no zero "
                         "factor) or check that the model has Z > 0")
    return x


@dataclass(frozen=True)
class GibbsMarginals:
    """Outcome of :func:`gibbs_marginals`.

    Attributes
    ----------
    marginals : ndarray (n_vars, max_states)
        Rao-Blackwellised marginal estimates (zero-padded), averaged over chains.
    stderr : ndarray (n_vars, max_states)
        Between-chain standard error of each entry (``sd over chains / sqrt(n_chains)``; ``inf`` with
        one chain).
    final_states : ndarray (n_chains, n_vars)
        The chains' last states.
    """

    marginals: np.ndarray
    stderr: np.ndarray
    final_states: np.ndarray


def gibbs_marginals(fg: FactorGraph, n_sweeps: int, n_chains: int = 4, seed: Any = None, *,
                    burn_in: int | None = None, init: Any = None) -> GibbsMarginals:
    """Single-variable marginals of a factor graph by systematic-scan Gibbs sampling.

    Parameters
    ----------
    fg : FactorGraph
        The model (condition it on evidence first: :meth:`FactorGraph.condition`).
    n_sweeps : int
        Sweeps per chain (>= 2).
    n_chains : int
        Independent chains (>= 1), each with its own child seed.
    seed : int, Generator or None
        Randomness (SPEC 7).
    burn_in : int, optional
        Sweeps discarded per chain, ``0 <= burn_in < n_sweeps``; default ``n_sweeps // 5``.
    init : array_like of int, shape (n_vars,) or (n_chains, n_vars), optional
        Feasible starting states; default :func:`feasible_states`.

    Returns
    -------
    GibbsMarginals
    """
    fg = _check_graph(fg)
    n_sweeps = check_int(n_sweeps, "n_sweeps", low=2)
    n_chains = check_int(n_chains, "n_chains", low=1)
    burn_in = n_sweeps // 5 if burn_in is None else check_int(burn_in, "burn_in", low=0, high=n_sweeps - 1)
    gen = as_generator(seed)
    if init is None:
        x0 = feasible_states(fg, n_chains, gen)
    else:
        x0 = fg.check_configurations(init, "init")
        x0 = np.array(np.broadcast_to(x0, (n_chains, fg.n_vars)) if x0.ndim == 1 else x0)
        if x0.shape != (n_chains, fg.n_vars):
            raise ValueError(f"init must have shape (n_vars,) or (n_chains, n_vars) = {(n_chains, fg.n_vars)}, "
                             f"got {x0.shape}")
        if np.any(higher_order_log_weights(fg, x0) == -np.inf) or np.any(
                unary_log_tables(fg)[np.arange(fg.n_vars), x0] == -np.inf):
            raise ValueError("init has a configuration at which a factor is zero; chains must start feasible")
    final, sums, _ = _run_chains(fg, x0, n_sweeps, burn_in, kernel_seeds(gen, n_chains), 1.0)
    per_chain = sums / (n_sweeps - burn_in)
    marg = per_chain.mean(axis=0)
    se = per_chain.std(axis=0, ddof=1) / np.sqrt(n_chains) if n_chains > 1 else np.full_like(marg, np.inf)
    return GibbsMarginals(marg, se, final)
