"""Problem kinds for cross-family studies: each problem carries a ``kind`` and its exact targets.

======================  =========================================  =========================================
kind                    exact targets                              method
======================  =========================================  =========================================
``"chain-crf"``         ``log_partition``, ``marginals`` (T, N),   forward-backward (:class:`ChainCRF`)
                        ``entropy``
``"pairwise-mrf"``      ``log_partition``, ``marginals``           enumeration or junction tree
                                                                   (:meth:`PairwiseMRF.log_partition_exact`)
``"pcfg"``              ``log_probability``, ``span_posteriors``,  inside-outside (:mod:`samplers.pruning`)
                        ``rule_counts``
``"trf"``               ``zeta`` (per-length log Z_j - log Z_1)    :class:`trf.estimators.TRFProblem`
======================  =========================================  =========================================

A chain CRF is also a pairwise MRF (:meth:`ChainCRFProblem.mrf`), so estimators of the
``"pairwise-mrf"`` kind that only need ``problem.mrf`` apply to it as well.
"""

from __future__ import annotations

from abc import abstractmethod
from functools import cached_property
from typing import Any, Sequence

import numpy as np

from ..harness import Problem
from ..models import Grammar, PairwiseMRF, expected_counts
from .chain_crf import ChainCRF

CHAIN_CRF, PAIRWISE_MRF, PCFG, TRF = "chain-crf", "pairwise-mrf", "pcfg", "trf"
KINDS = (CHAIN_CRF, PAIRWISE_MRF, PCFG, TRF)


class KindProblem(Problem):
    """A problem of a known kind (:data:`KINDS`) with exact targets named in :attr:`targets`."""

    kind: str = ""
    targets: tuple = ()

    @cached_property
    def _exact_cached(self) -> dict[str, Any]:
        return self._compute_exact()

    @abstractmethod
    def _compute_exact(self) -> dict[str, Any]:
        """The exact targets (called once by :meth:`exact`)."""

    def exact(self) -> dict[str, Any]:
        """The exact targets (computed once, then cached)."""
        return dict(self._exact_cached)


class ChainCRFProblem(KindProblem):
    """A linear-chain CRF; exact ``log_partition``, ``marginals`` (T, N) and ``entropy``.

    Parameters
    ----------
    name : str
    crf : ChainCRF
    """

    kind = CHAIN_CRF
    targets = ("log_partition", "marginals", "entropy")

    def __init__(self, name: str, crf: ChainCRF):
        if not isinstance(crf, ChainCRF):
            raise TypeError(f"crf must be a ChainCRF, got {type(crf).__name__}")
        self.name = name
        self.crf = crf
        self.provenance = "exact forward-backward in float64 (samplers.problems.ChainCRF)"

    @cached_property
    def mrf(self) -> PairwiseMRF:
        """The same distribution as a chain-shaped :class:`PairwiseMRF` (:meth:`ChainCRF.to_mrf`)."""
        return self.crf.to_mrf()

    def _compute_exact(self) -> dict[str, Any]:
        return {"log_partition": self.crf.log_partition(), "marginals": self.crf.marginals(),
                "entropy": self.crf.entropy()}

    def size(self) -> dict[str, int]:
        return {"T": self.crf.length, "N": self.crf.n_states}


class PairwiseMRFProblem(KindProblem):
    """A pairwise MRF; exact ``log_partition`` and ``marginals`` by enumeration or the junction tree."""

    kind = PAIRWISE_MRF
    targets = ("log_partition", "marginals")

    def __init__(self, name: str, mrf: PairwiseMRF):
        if not isinstance(mrf, PairwiseMRF):
            raise TypeError(f"mrf must be a PairwiseMRF, got {type(mrf).__name__}")
        self.name = name
        self.mrf = mrf
        method = mrf.exact_method()
        self.provenance = (f"enumeration of {mrf.n_configurations} joint states" if method == "enumeration" else
                           f"junction tree ({mrf.elimination_plan.heuristic} order, width "
                           f"{mrf.elimination_plan.width})") + " (PairwiseMRF.log_partition_exact / marginals_exact)"

    def _compute_exact(self) -> dict[str, Any]:
        return {"log_partition": self.mrf.log_partition_exact(), "marginals": self.mrf.marginals_exact()}

    def size(self) -> dict[str, int]:
        return {"n_vars": self.mrf.n_vars, "max_states": self.mrf.max_states, "n_edges": self.mrf.n_edges,
                "width": self.mrf.elimination_plan.width}


def span_vector(span_posteriors: np.ndarray) -> np.ndarray:
    """The ambiguous spans' posteriors (fenceposts ``i < k - 1``, upper triangle, row-major) as a vector."""
    post = np.asarray(span_posteriors)
    return post[np.triu_indices(post.shape[0], k=2)]


class PCFGProblem(KindProblem):
    """A CNF PCFG and a sentence; exact ``log_probability`` (log P(sentence)), ``span_posteriors``
    (P(span is a constituent) for spans of >= 2 words, :func:`span_vector` order) and ``rule_counts``
    (expected uses of each binary rule, ``grammar.binary_rules`` order)."""

    kind = PCFG
    targets = ("log_probability", "span_posteriors", "rule_counts")

    def __init__(self, name: str, grammar: Grammar, words: str | Sequence[str]):
        if not isinstance(grammar, Grammar):
            raise TypeError(f"grammar must be a Grammar, got {type(grammar).__name__}")
        self.name = name
        self.grammar = grammar
        self.words = words.split() if isinstance(words, str) else list(words)
        grammar.encode(self.words)  # validates the sentence
        self.provenance = "exact inside-outside (samplers.pruning.expected_counts, all-keep mask)"

    def _compute_exact(self) -> dict[str, Any]:
        e = expected_counts(self.grammar, self.words)
        return {"log_probability": e.log_z, "span_posteriors": span_vector(e.span_posteriors),
                "rule_counts": e.binary_counts}

    def size(self) -> dict[str, int]:
        return {"T": len(self.words), "NT": self.grammar.n_nonterminals, "rules": self.grammar.n_binary}
