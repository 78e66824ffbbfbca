"""Discrete graphical models: :class:`PairwiseMRF` (exact answers by enumeration or variable
elimination, Numba Gibbs sampling), constructors of Ising, Potts and random models, factor graphs of
any arity (:class:`FactorGraph`: evidence, exact inference by a junction tree), the UAI competitions'
``.uai`` / ``.evid`` / ``.PR`` / ``.MAR`` file formats, and the PCFG model :class:`Grammar` with its exact
chart (inside/outside, expected counts, Viterbi, exact tree sampling; :mod:`samplers.models.chart`).

>>> from samplers.models import ising_grid
>>> mrf = ising_grid(3, 3, coupling=0.4, field=0.1)
>>> z = mrf.log_partition_exact()
"""

from .chart import (
                    Expectations,
                    InsideChart,
                    expected_counts,
                    inside_chart,
                    log_inside,
                    log_probability,
                    sample_trees,
                    viterbi,
)
from .constructors import grid_edges, ising_grid, potts_grid, random_mrf
from .elimination import EliminationPlan, TooWideError, ZeroPartitionError, plan_elimination
from .factor_graph import ConditionedGraph, FactorBundle, FactorGraph
from .mrf import MAX_ENUMERATION_STATES, PairwiseMRF
from .pcfg import Grammar
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

__all__ = ["MAX_ENUMERATION_STATES", "ConditionedGraph", "EliminationPlan", "Expectations", "FactorBundle",
           "FactorGraph", "Grammar", "InsideChart", "PairwiseMRF", "TooWideError", "UAIFormatError",
           "ZeroPartitionError", "expected_counts", "grid_edges", "inside_chart", "ising_grid", "log_inside",
           "log_probability", "sample_trees", "viterbi", "parse_evid", "parse_mar", "parse_pr", "parse_uai", "plan_elimination", "potts_grid", "random_mrf",
           "read_evid", "read_mar", "read_pr", "read_uai", "write_evid", "write_mar", "write_pr", "write_uai"]
