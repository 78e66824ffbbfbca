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
