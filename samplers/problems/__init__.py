"""Problem kinds with exact answers and exact converters, for handing one problem to every family.

>>> from samplers.problems import ChainCRF, ChainCRFProblem
>>> problem = ChainCRFProblem("crf", ChainCRF.random(5, 4, seed=0))
>>> sorted(problem.exact())
['entropy', 'log_partition', 'marginals']
"""

from .chain_crf import ChainCRF
from .factor_graph import FACTOR_GRAPH, FactorGraphProblem
from .kinds import (
    CHAIN_CRF,
    FINITE_CHAIN,
    ITG_PAIR,
    KINDS,
    PAIRWISE_MRF,
    PCFG,
    SYNTHETIC_CHAIN,
    TREE_CRF,
    TRF,
    ChainCRFProblem,
    KindProblem,
    PairwiseMRFProblem,
    PCFGProblem,
    chart_rule_entries,
    pcfg_targets,
    register_kind,
    span_vector,
)

__all__ = ["CHAIN_CRF", "FACTOR_GRAPH", "FINITE_CHAIN", "ITG_PAIR", "KINDS", "PAIRWISE_MRF", "PCFG", "SYNTHETIC_CHAIN", "TREE_CRF",
           "TRF", "ChainCRF", "ChainCRFProblem", "FactorGraphProblem", "KindProblem", "PCFGProblem", "PairwiseMRFProblem",
           "chart_rule_entries", "pcfg_targets", "register_kind", "span_vector"]
