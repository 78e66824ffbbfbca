"""rdp's problem kinds: synthetic chains (``"synthetic-chain"``) and span-labelled tree CRFs
(``"tree-crf"``) with controlled entropy (:mod:`rdp.synthetic`), exact answers from the exact DPs
in float64 (:func:`rdp.chain.chain_exact_reference`, :func:`rdp.tree.tree_log_partition`).

A problem is built lazily (in the worker that first needs it) from (N, T, regime, seed), so a study
ships four numbers to each worker, not N x N tensors.
"""

from __future__ import annotations

from typing import Any

from samplers.problems import SYNTHETIC_CHAIN, TREE_CRF, KindProblem

from ._torch import torch
from .chain import chain_exact_reference
from .synthetic import make_chain, make_tree
from .tree import tree_log_partition


class _SyntheticProblem(KindProblem):
    """A synthetic problem built lazily from (N, T, regime, seed); ``name`` = ``{prefix}-{regime}-N{N}-T{T}``."""

    prefix = ""
    method = ""

    def __init__(self, n_states: int, length: int, regime: str, *, seed: int = 0):
        self.n_states, self.length, self.regime, self.seed = n_states, length, regime, seed
        self.name = f"{self.prefix}-{regime}-N{n_states}-T{length}"
        self.provenance = f"{self.method} in float64; rdp.synthetic.make_{self.prefix}(seed={seed})"
        self._choose_targets(None)
        self._built = None

    @property
    def instance(self):
        """The synthetic instance (:class:`rdp.synthetic.SyntheticChain` or ``SyntheticTree``), built once."""
        if self._built is None:
            make = make_chain if self.prefix == "chain" else make_tree
            self._built = make(self.n_states, self.length, self.regime, seed=self.seed)
        return self._built

    def size(self) -> dict[str, int]:
        return {"N": self.n_states, "T": self.length}


class SyntheticChainProblem(_SyntheticProblem):
    """A synthetic chain (:func:`rdp.synthetic.make_chain`) with exact log Z and entropy."""

    kind = SYNTHETIC_CHAIN
    prefix = "chain"
    method = "exact forward and entropy DP (rdp.chain_exact_reference, chunked)"

    def compute_exact(self) -> dict[str, Any]:
        ref = chain_exact_reference(self.instance.emissions, state_embeddings=self.instance.state_embeddings)
        return {"log_partition": float(ref["log_partition"][0]), "entropy": float(ref["entropy"][0])}

    def exact_evaluations(self) -> int:
        """Transition entries of the forward and entropy passes: ``2 T N^2``."""
        return 2 * self.length * self.n_states ** 2


class TreeCRFProblem(_SyntheticProblem):
    """A synthetic span-labelled tree CRF (:func:`rdp.synthetic.make_tree`) with exact log Z."""

    kind = TREE_CRF
    prefix = "tree"
    method = "exact inside (rdp.tree_log_partition)"

    def compute_exact(self) -> dict[str, Any]:
        with torch.no_grad():
            return {"log_partition": float(tree_log_partition(self.instance.span_potentials)[0])}

    def exact_evaluations(self) -> int:
        """Span x label cells of the inside chart: ``T (T + 1) / 2 x N``."""
        return self.length * (self.length + 1) // 2 * self.n_states
