"""Constructors of standard pairwise MRFs: Ising and Potts grids, random graphs."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..rng import as_generator
from ..validation import as_int_array, check_float, check_int
from .mrf import PairwiseMRF


def grid_edges(rows: int, cols: int) -> np.ndarray:
    """Edges of a ``rows x cols`` 4-neighbour grid; variable ``(r, c)`` has index ``r * cols + c``.

    Returns an int64 array of shape (E, 2), horizontal edges first, with ``E = rows (cols - 1) +
    (rows - 1) cols``.
    """
    rows = check_int(rows, "rows", low=1)
    cols = check_int(cols, "cols", low=1)
    idx = np.arange(rows * cols).reshape(rows, cols)
    horizontal = np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], axis=1)
    vertical = np.stack([idx[:-1, :].ravel(), idx[1:, :].ravel()], axis=1)
    return np.concatenate([horizontal, vertical]).astype(np.int64)


def ising_grid(rows: int, cols: int, coupling: float = 0.4, field: float = 0.0) -> PairwiseMRF:
    """Ising model on a ``rows x cols`` grid.

    Spins ``s_i in {-1, +1}`` are encoded as states 0 (``s = -1``) and 1 (``s = +1``) and

        log p(x) = sum_i field * s_i + sum_(ij) coupling * s_i s_j - log Z,

    the second sum over the grid's 4-neighbour edges (each once).  So ``unary[i] = (-field, field)``
    and ``pairwise[e] = [[J, -J], [-J, J]]`` with ``J = coupling``.

    Examples
    --------
    >>> mrf = ising_grid(2, 2, coupling=0.4, field=0.1)
    >>> mrf.n_vars, mrf.n_edges
    (4, 4)
    """
    coupling = check_float(coupling, "coupling")
    field = check_float(field, "field")
    edges = grid_edges(rows, cols)
    spin = np.array([-1.0, 1.0])
    unary = np.tile(field * spin, (rows * cols, 1))
    pairwise = np.broadcast_to(coupling * np.outer(spin, spin), (edges.shape[0], 2, 2))
    return PairwiseMRF(unary, edges, pairwise)


def potts_grid(rows: int, cols: int, n_states: int = 3, coupling: float = 0.5, field: Any = 0.0) -> PairwiseMRF:
    """Potts model on a ``rows x cols`` grid: ``log p(x) = sum_i field[x_i] + sum_(ij) coupling [x_i = x_j] - log Z``.

    Parameters
    ----------
    rows, cols : int
        Grid shape, each at least 1; variable ``r * cols + c`` sits at row r, column c.
    n_states : int
        Number of colours, at least 2.
    coupling : float
        Reward for equal neighbours (ferromagnetic if positive).
    field : float or array_like, shape (n_states,) or (rows * cols, n_states)
        Unary log potentials; a scalar puts ``field`` on state 0 and zero elsewhere.
    """
    n_states = check_int(n_states, "n_states", low=2)
    coupling = check_float(coupling, "coupling")
    n_vars = check_int(rows, "rows", low=1) * check_int(cols, "cols", low=1)
    edges = grid_edges(rows, cols)
    if np.ndim(field) == 0:
        unary = np.zeros((n_vars, n_states))
        unary[:, 0] = check_float(field, "field")
    else:
        field = np.asarray(field, dtype=np.float64)
        if field.shape not in ((n_states,), (n_vars, n_states)):
            raise ValueError(f"field must be a scalar or have shape ({n_states},) or ({n_vars}, {n_states}), "
                             f"got {field.shape}")
        unary = np.broadcast_to(field, (n_vars, n_states))
    pairwise = np.broadcast_to(coupling * np.eye(n_states), (edges.shape[0], n_states, n_states))
    return PairwiseMRF(unary, edges, pairwise)


def random_mrf(n_vars: int, n_states: int = 2, *, edges: Any = None, density: float = 0.5, scale: float = 1.0,
               seed: Any = None) -> PairwiseMRF:
    """A random pairwise MRF with Gaussian log potentials (``N(0, scale^2)`` entries).

    Parameters
    ----------
    n_vars, n_states : int
        Number of variables (>= 1) and states per variable (>= 1).
    edges : array_like of int, shape (E, 2), optional
        The graph; by default each of the ``n_vars (n_vars - 1) / 2`` pairs is an edge with
        probability ``density`` (Erdos-Renyi).
    density : float
        Edge probability in [0, 1] when ``edges`` is not given.
    scale : float
        Standard deviation of the potentials (>= 0).
    seed : int, Generator or None
        Randomness (SPEC 7).
    """
    n_vars = check_int(n_vars, "n_vars", low=1)
    n_states = check_int(n_states, "n_states", low=1)
    scale = check_float(scale, "scale", low=0.0)
    gen = as_generator(seed)
    if edges is None:
        density = check_float(density, "density", low=0.0, high=1.0)
        iu, ju = np.triu_indices(n_vars, k=1)
        keep = gen.random(iu.size) < density
        edges = np.stack([iu[keep], ju[keep]], axis=1).astype(np.int64)
    else:
        edges = as_int_array(edges, "edges", ndim=2)
    unary = scale * gen.standard_normal((n_vars, n_states))
    pairwise = scale * gen.standard_normal((edges.shape[0], n_states, n_states))
    return PairwiseMRF(unary, edges, pairwise)


def random_factor_graph(n_vars: int, *, n_factors: int = 7, max_arity: int = 4, max_states: int = 3,
                        zero_rate: float = 0.1, scale: float = 1.0, tree: bool = False, seed: Any = None):
    """A random :class:`~samplers.models.FactorGraph` for tests and demos: cardinalities in
    ``2 .. max_states``, Gaussian log tables (sd ``scale``) with a fraction ``zero_rate`` of zero entries
    (``-inf``; never a whole table), one constant factor.

    ``tree=False``: ``n_factors`` factors of arity ``1 .. max_arity`` on random variables.  ``tree=True``: a
    factor graph without cycles (each factor joins one earlier variable to new ones) plus three unary
    factors, on which belief propagation is exact.
    """
    from .factor_graph import FactorGraph

    n_vars = check_int(n_vars, "n_vars", low=1)
    n_factors = check_int(n_factors, "n_factors", low=0)
    max_arity = check_int(max_arity, "max_arity", low=1 if not tree else 2)
    max_states = check_int(max_states, "max_states", low=2)
    zero_rate = check_float(zero_rate, "zero_rate", low=0.0, high=1.0, high_open=True)
    scale = check_float(scale, "scale", low=0.0)
    rng = as_generator(seed)
    cards = rng.integers(2, max_states + 1, size=n_vars)
    scopes: list = [()]
    if tree:
        placed = 1
        while placed < n_vars:
            fresh = int(rng.integers(1, min(max_arity - 1, n_vars - placed) + 1))
            scopes.append((int(rng.integers(placed)),) + tuple(range(placed, placed + fresh)))
            placed += fresh
        scopes += [(int(v),) for v in rng.choice(n_vars, min(3, n_vars), replace=False)]
    else:
        for _ in range(n_factors):
            arity = int(rng.integers(1, min(max_arity, n_vars) + 1))
            scopes.append(tuple(int(v) for v in rng.choice(n_vars, arity, replace=False)))
    tables = []
    for sc in scopes:
        t = rng.normal(scale=scale, size=tuple(int(cards[v]) for v in sc))
        if sc:
            t[rng.random(t.shape) < zero_rate] = -np.inf
            t.flat[int(rng.integers(t.size))] = 0.0  # never an all-zero factor
        tables.append(t)
    return FactorGraph(cards, scopes, tables)
