"""The ``"itg-pair"`` problem kind: a sentence pair under an inversion transduction grammar (the ITG
model lives in the pruning family, so its kind does too)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..problems import ITG_PAIR, KindProblem
from .itg import ITG, itg_expectations


class ITGPairProblem(KindProblem):
    """A sentence pair under an ITG; exact ``counts`` (alignment and null posteriors, rule counts:
    :meth:`ITGExpectations.vector`) by O(p^3 q^3) bitext inside-outside.

    Parameters
    ----------
    name : str
        Name used in result tables.
    itg : ITG
        The grammar.
    e, f : array_like of int
        The two sentences as word ids.
    """

    kind = ITG_PAIR

    def __init__(self, name: str, itg: ITG, e: Any, f: Any):
        if not isinstance(itg, ITG):
            raise TypeError(f"itg must be an ITG, got {type(itg).__name__}")
        self.name = name
        self.itg = itg
        self.e = np.asarray(e, dtype=np.int64)
        self.f = np.asarray(f, dtype=np.int64)
        self._choose_targets(None)
        self.provenance = "exact bitext inside-outside (no mask)"

    def compute_exact(self) -> dict[str, Any]:
        return {"counts": itg_expectations(self.itg, self.e, self.f).vector()}

    def exact_evaluations(self) -> int:
        """Bitext chart cells: ``(p (p + 1) / 2) (q (q + 1) / 2)`` spans x nonterminals."""
        p, q = len(self.e), len(self.f)
        return p * (p + 1) // 2 * (q * (q + 1) // 2) * self.itg.n_nonterminals

    def size(self) -> dict[str, int]:
        return {"p": len(self.e), "q": len(self.f), "nonterminals": self.itg.n_nonterminals}
