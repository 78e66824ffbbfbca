"""Discrete graphical models: :class:`PairwiseMRF` (exact answers by enumeration or variable
elimination, Numba Gibbs sampling), constructors of Ising, Potts and random models, and the UAI
competition's ``.uai`` / ``.PR`` file formats.

>>> from samplers.models import ising_grid
>>> mrf = ising_grid(3, 3, coupling=0.4, field=0.1)
>>> z = mrf.log_partition_exact()
"""

from .constructors import grid_edges, ising_grid, potts_grid, random_mrf
from .elimination import EliminationPlan, plan_elimination
from .mrf import MAX_ENUMERATION_STATES, PairwiseMRF
from .uai import UAIModel, parse_uai, read_pr, read_uai, uai_answer, write_pr, write_uai

__all__ = ["MAX_ENUMERATION_STATES", "EliminationPlan", "PairwiseMRF", "UAIModel", "grid_edges", "ising_grid",
           "parse_uai", "plan_elimination", "potts_grid", "random_mrf", "read_pr", "read_uai", "uai_answer",
           "write_pr", "write_uai"]
