"""Discrete graphical models: :class:`PairwiseMRF` (exact answers by enumeration, Numba Gibbs
sampling) and constructors of Ising, Potts and random models.

>>> from samplers.models import ising_grid
>>> mrf = ising_grid(3, 3, coupling=0.4, field=0.1)
>>> z = mrf.log_partition_exact()
"""

from .constructors import grid_edges, ising_grid, potts_grid, random_mrf
from .mrf import MAX_ENUMERATION_STATES, PairwiseMRF

__all__ = ["MAX_ENUMERATION_STATES", "PairwiseMRF", "grid_edges", "ising_grid", "potts_grid", "random_mrf"]
