"""Strong Doeblin chains, staged chains, learning their stationary laws (Steinhardt & Liang 2015).

Row-stochastic convention throughout: ``A[i, j] = P(next = j | current = i)``.
"""

from .chains import StagedDoeblinChain, StrongDoeblinChain, cyclic_stage_chain, cyclic_stage_gap_bound
from .staged_implicit import SequenceStagedDoeblinChain

__all__ = ["StrongDoeblinChain", "StagedDoeblinChain", "cyclic_stage_chain", "cyclic_stage_gap_bound",
           "SequenceStagedDoeblinChain"]
