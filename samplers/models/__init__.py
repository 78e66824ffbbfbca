"""Discrete graphical models: :class:`PairwiseMRF` (exact answers by enumeration or variable
elimination, Numba Gibbs sampling), constructors of Ising, Potts and random models, the UAI
competition's ``.uai`` / ``.PR`` file formats, and the PCFG model :class:`Grammar` with its exact chart
(inside/outside, expected counts, Viterbi, exact tree sampling; :mod:`samplers.models.chart`).

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
from .elimination import EliminationPlan, plan_elimination
from .mrf import MAX_ENUMERATION_STATES, PairwiseMRF
from .pcfg import Grammar
from .uai import UAIModel, parse_uai, read_pr, read_uai, uai_answer, write_pr, write_uai

__all__ = ["MAX_ENUMERATION_STATES", "EliminationPlan", "Expectations", "Grammar", "InsideChart", "PairwiseMRF",
           "UAIModel", "expected_counts", "grid_edges", "inside_chart", "ising_grid", "log_inside", "log_probability",
           "parse_uai", "plan_elimination", "potts_grid", "random_mrf", "read_pr", "read_uai", "sample_trees",
           "uai_answer", "viterbi", "write_pr", "write_uai"]
