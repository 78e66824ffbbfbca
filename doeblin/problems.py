"""The ``"finite-chain"`` problem kind: a finite strong Doeblin chain with exact stationary laws.

Targets: the base kernel's stationary law ``pi_base`` and the Doeblin chain's ``pi_doeblin``
(``pi~`` of ``(1 - eps) A + eps 1 u``), both by GTH elimination (:func:`doeblin.markov.stationary_gth`).
"""

from __future__ import annotations

from typing import Any

from samplers.problems import FINITE_CHAIN, KindProblem

from .chains import StrongDoeblinChain


class DoeblinChainProblem(KindProblem):
    """A finite strong Doeblin chain; targets ``pi_base`` (stationary law of A) and ``pi_doeblin``.

    Parameters
    ----------
    name : str
        Name used in result tables.
    chain : StrongDoeblinChain
        The chain (row-stochastic A, restart law u, restart probability eps).
    """

    kind = FINITE_CHAIN

    def __init__(self, name: str, chain: StrongDoeblinChain):
        if not isinstance(chain, StrongDoeblinChain):
            raise TypeError(f"chain must be a StrongDoeblinChain, got {type(chain).__name__}")
        self.name = name
        self.chain = chain
        self._choose_targets(None)
        self.provenance = "GTH elimination of A and of (1 - eps) A + eps 1 u (doeblin.markov.stationary_gth)"

    def compute_exact(self) -> dict[str, Any]:
        """Exact stationary laws of the base chain (``pi_base``) and of its Doeblin restart chain (``pi_doeblin``), by GTH elimination."""
        return {"pi_base": self.chain.base_stationary(), "pi_doeblin": self.chain.stationary(method="gth")}

    def exact_evaluations(self) -> int:
        """Two GTH eliminations, ``2 n^3`` operations."""
        return 2 * self.chain.n_states ** 3

    def size(self) -> dict[str, int]:
        """Sizes: ``n_states`` and ``inv_eps`` (``1 / eps`` rounded)."""
        return {"n_states": self.chain.n_states, "inv_eps": int(round(1.0 / self.chain.eps))}
