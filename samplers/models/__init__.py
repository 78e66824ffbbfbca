"""Discrete graphical models: :class:`PairwiseMRF` (exact answers by enumeration or variable
elimination, Numba Gibbs sampling), constructors of Ising, Potts and random models, and the UAI
factor graphs of any arity (:class:`FactorGraph`: evidence, exact inference by a junction tree) and the
UAI competitions' ``.uai`` / ``.evid`` / ``.PR`` / ``.MAR`` file formats.

>>> from samplers.models import ising_grid
>>> mrf = ising_grid(3, 3, coupling=0.4, field=0.1)
>>> z = mrf.log_partition_exact()
"""

from .constructors import grid_edges, ising_grid, potts_grid, random_mrf
from .elimination import EliminationPlan, TooWideError, ZeroPartitionError, plan_elimination
from .factor_graph import ConditionedGraph, FactorBundle, FactorGraph
from .mrf import MAX_ENUMERATION_STATES, PairwiseMRF
from .uai import (
    UAIFormatError,
    parse_evid,
    parse_mar,
    parse_pr,
    parse_uai,
    read_evid,
    read_mar,
    read_pr,
    read_uai,
    write_evid,
    write_mar,
    write_pr,
    write_uai,
)

__all__ = ["MAX_ENUMERATION_STATES", "ConditionedGraph", "EliminationPlan", "FactorBundle", "FactorGraph",
           "PairwiseMRF", "TooWideError", "UAIFormatError", "ZeroPartitionError", "grid_edges", "ising_grid",
           "parse_evid", "parse_mar", "parse_pr", "parse_uai", "plan_elimination", "potts_grid", "random_mrf",
           "read_evid", "read_mar", "read_pr", "read_uai", "write_evid", "write_mar", "write_pr", "write_uai"]
