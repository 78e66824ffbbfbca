"""TRF problems and estimators for cross-family studies (see :mod:`samplers.harness.cross`).

:class:`TRFProblem` (kind ``"trf"``) is a word TRF with fixed lambda; its exact target ``zeta``
(``zeta*_j = log Z_j - log Z_1`` for every length j = 1..m) comes from the forward pass over
histories (:func:`trf.exact.exact_zeta`).  Estimators: AugSA's zeta recursion with lambda frozen
(Eqs. 17-18, budget = iterations) and AIS per length (budget = temperatures), the two of
:mod:`trf.bench`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from samplers.harness.cross import KindEstimator
from samplers.harness.problem import EVALUATIONS
from samplers.problems import KindProblem
from samplers.validation import check_int

from . import exact
from .bench import ais_zeta, augsa_zeta
from .data import Alphabet
from .features import FeatureSet, n_dense


class TRFProblem(KindProblem):
    """A small word TRF with exact per-length normalisers (target ``zeta``, shape (m,))."""

    kind = "trf"
    targets = ("zeta",)

    def __init__(self, name: str, features: FeatureSet, lam: Any, pi: Any):
        self.name = name
        self.features = features
        self.lam = np.asarray(lam, dtype=np.float64)
        self.pi = np.asarray(pi, dtype=np.float64)
        if self.lam.shape != (features.d,):
            raise ValueError(f"lam must have shape ({features.d},), got {self.lam.shape}")
        if self.pi.ndim != 1 or self.pi.size < 1 or np.any(self.pi <= 0) or abs(self.pi.sum() - 1) > 1e-9:
            raise ValueError("pi must be a positive length distribution (m,) summing to 1")
        self.payload = {"features": features, "lam": self.lam, "pi": self.pi}
        self.provenance = "exact forward pass over n-gram histories (trf.exact.exact_zeta)"

    @classmethod
    def random(cls, name: str, alphabet: str = "abcd", m: int = 6, *, scale: float = 0.5, seed: int = 6) -> "TRFProblem":
        """Every n-gram of ``alphabet`` a feature with weight ``N(0, scale^2)``; length prior ~ uniform-ish."""
        m = check_int(m, "m", low=1)
        alpha = Alphabet(alphabet)
        features = FeatureSet(alpha, np.arange(n_dense(alpha.size)))
        lam = np.random.default_rng(seed).normal(scale=scale, size=features.d)
        pi = np.arange(1, m + 1, dtype=np.float64) ** 0.5
        return cls(name, features, lam, pi / pi.sum())

    def _compute_exact(self) -> dict[str, Any]:
        return {"zeta": exact.exact_zeta(self.features, self.lam, self.pi.shape[0])}

    def size(self) -> dict[str, int]:
        return {"V": self.features.V, "m": int(self.pi.shape[0]), "d": self.features.d}


class AugSAZetaEstimator(KindEstimator):
    """AugSA's zeta with lambda frozen (:func:`trf.bench.augsa_zeta`); budget = iterations."""

    name = "augsa-zeta"
    family = "trf"
    budget_label = "iterations"
    kinds = {"trf": ("zeta",)}
    quick_budgets = (50, 100)
    budgets = (50, 200, 400)

    def _estimate(self, problem, budget, seed, targets):
        out = augsa_zeta(problem, max(budget, 4), seed)
        out[EVALUATIONS] = max(budget, 4) * 100  # TransMS draws (100 per iteration)
        return out


class AISZetaEstimator(KindEstimator):
    """AIS per length, 10 particles (:func:`trf.bench.ais_zeta`); budget = temperatures."""

    name = "ais-zeta"
    family = "trf"
    budget_label = "temperatures"
    kinds = {"trf": ("zeta",)}
    quick_budgets = (10, 50)
    budgets = (10, 50, 200)

    def _estimate(self, problem, budget, seed, targets):
        out = ais_zeta(problem, max(budget, 2), seed)
        out[EVALUATIONS] = max(budget, 2) * 10 * problem.pi.shape[0]  # particle moves: temps x 10 x lengths
        return out


def trf_estimators() -> list[KindEstimator]:
    """AugSA zeta and AIS zeta."""
    return [AugSAZetaEstimator(), AISZetaEstimator()]
