"""Problem kinds with exact answers and exact converters, for handing one problem to every family.

>>> from samplers.problems import ChainCRF, ChainCRFProblem
>>> problem = ChainCRFProblem("crf", ChainCRF.random(5, 4, seed=0))
>>> sorted(problem.exact())
['entropy', 'log_partition', 'marginals']
"""

from .chain_crf import ChainCRF
from .kinds import (
                    CHAIN_CRF,
                    KINDS,
                    PAIRWISE_MRF,
                    PCFG,
                    TRF,
                    ChainCRFProblem,
                    KindProblem,
                    PairwiseMRFProblem,
                    PCFGProblem,
                    span_vector,
)

__all__ = ["CHAIN_CRF", "KINDS", "PAIRWISE_MRF", "PCFG", "TRF", "ChainCRF", "ChainCRFProblem", "KindProblem",
           "PCFGProblem", "PairwiseMRFProblem", "span_vector"]
