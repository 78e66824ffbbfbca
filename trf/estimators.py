"""TRF problems and estimators for the harness.

:class:`TRFProblem` (kind ``"trf"``) is a word TRF with fixed lambda; its exact target ``zeta``
(``zeta*_j = log Z_j - log Z_1`` for every length j = 1..m) comes from the forward pass over
histories (:func:`trf.exact.exact_zeta`).  Estimators, one class per method:

* :class:`AugSAZetaEstimator` — AugSA's zeta recursion (Eqs. 17-18) with lambda not learned but
  moved linearly from 0 to the problem's lambda over the first quarter of the budget, pi0 of
  Eq. (26), K = 100 draws per iteration by TransMS; budget = iterations;
* :class:`AISZetaEstimator` — :func:`trf.ais.ais_log_partition` per length, 10 particles; budget =
  temperatures.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from samplers.harness import KindEstimator
from samplers.harness.problem import EVALUATIONS
from samplers.problems import TRF, KindProblem
from samplers.validation import check_int

from . import exact
from .ais import ais_log_partition
from .augsa import AugSA, AugSAConfig
from .data import Alphabet, encode_words
from .features import FeatureSet, n_dense
from .transms import WordBackend

#: TransMS draws per AugSA iteration and AIS particles per length.
AUGSA_SAMPLES, AIS_PARTICLES = 100, 10


class TRFProblem(KindProblem):
    """A small word TRF with exact per-length normalisers (target ``zeta``, shape (m,)).

    Parameters
    ----------
    name : str
        Name used in result tables.
    features : FeatureSet
        The TRF's features.
    lam : array_like, shape (d,)
        Feature weights.
    pi : array_like, shape (m,)
        Length distribution (positive, summing to 1).
    provenance : str, optional
        How lambda and pi were obtained (appended to the exact method's provenance).
    """

    kind = TRF

    def __init__(self, name: str, features: FeatureSet, lam: Any, pi: Any, *, provenance: str = ""):
        self.name = name
        self.features = features
        self.lam = np.asarray(lam, dtype=np.float64)
        self.pi = np.asarray(pi, dtype=np.float64)
        if self.lam.shape != (features.d,):
            raise ValueError(f"lam must have shape ({features.d},), got {self.lam.shape}")
        if self.pi.ndim != 1 or self.pi.size < 1 or np.any(self.pi <= 0) or abs(self.pi.sum() - 1) > 1e-9:
            raise ValueError("pi must be a positive length distribution (m,) summing to 1")
        self.payload = {"features": features, "lam": self.lam, "pi": self.pi}
        self._choose_targets(None)
        self.provenance = "exact forward pass over n-gram histories (trf.exact.exact_zeta)" + (
            f"; {provenance}" if provenance else "")

    @classmethod
    def random(cls, name: str, alphabet: str = "abcd", m: int = 6, *, scale: float = 0.5, seed: int = 6,
               pi: Any = None) -> "TRFProblem":
        """Every n-gram of ``alphabet`` a feature with weight ``N(0, scale^2)``; length prior ``pi``
        (default proportional to sqrt(j))."""
        m = check_int(m, "m", low=1)
        alpha = Alphabet(alphabet)
        features = FeatureSet(alpha, np.arange(n_dense(alpha.size)))
        lam = np.random.default_rng(seed).normal(scale=scale, size=features.d)
        if pi is None:
            pi = np.arange(1, m + 1, dtype=np.float64) ** 0.5
            pi = pi / pi.sum()
        return cls(name, features, lam, pi)

    def compute_exact(self) -> dict[str, Any]:
        """Exact ``zeta`` (``log Z_j - log Z_1``, j = 1..m) by the forward pass over n-gram histories."""
        return {"zeta": exact.exact_zeta(self.features, self.lam, self.pi.shape[0])}

    def size(self) -> dict[str, int]:
        """Sizes: ``V`` (vocabulary), ``m`` (maximum length) and ``d`` (features)."""
        return {"V": self.features.V, "m": int(self.pi.shape[0]), "d": self.features.d}


class _FixedLambdaBackend(WordBackend):
    """A WordBackend whose length law is given (the problem's pi) instead of read from data."""

    def __init__(self, features: FeatureSet, pi: np.ndarray, seed: int) -> None:
        m = pi.shape[0]
        dummy = encode_words(["".join(features.alphabet.symbols[0] * j) for j in range(1, m + 1)],
                             features.alphabet, m)
        super().__init__(dummy, features=features, n_chains=100, seed=seed)
        self.pi = pi


class _ZetaEstimator(KindEstimator):
    """Base of the trf estimators: ``zeta`` of ``"trf"`` problems, named ``name`` (the class's by default)."""

    family = "trf"
    kinds = {TRF: ("zeta",)}

    def __init__(self, name: str | None = None):
        if name is not None:
            self.name = name


class AugSAZetaEstimator(_ZetaEstimator):
    """AugSA's zeta recursion (17)-(18) with lambda moved along ``min(1, 4t/budget) * lambda`` then
    frozen; budget = iterations (at least 4).  ``evaluations`` = TransMS draws (100 per iteration).

    Starting at lambda = 0 where zeta is exact, the ramp lets zeta track ``zeta*(lambda_t)`` as in
    training (a cold start at the target lambda with zeta(0) is far off for large models).
    """

    name = "augsa-zeta"
    budget_label = "iterations"
    quick_budgets = (50, 100)
    budgets = (50, 200, 400)

    def _estimate(self, problem, budget, seed, targets):
        budget = max(budget, 4)
        backend = _FixedLambdaBackend(problem.features, problem.pi, seed)
        ramp = max(1, budget // 4)
        cfg = AugSAConfig(n_samples=AUGSA_SAMPLES, t_max=budget, t0=min(200, ramp), seed=seed, learn_lambda=False)

        def move_lambda(trainer, t, _):
            trainer.lam = min(1.0, t / ramp) * problem.lam

        zeta = AugSA(backend, cfg, callbacks=[move_lambda], progress=False).fit().zeta
        return {"zeta": zeta, EVALUATIONS: budget * cfg.n_samples}


class AISZetaEstimator(_ZetaEstimator):
    """AIS per length with 10 particles (:func:`trf.ais.ais_log_partition`); budget = temperatures
    (at least 2).  ``evaluations`` = particle moves: temperatures x 10 x lengths."""

    name = "ais-zeta"
    budget_label = "temperatures"
    quick_budgets = (10, 50)
    budgets = (10, 50, 200)

    def _estimate(self, problem, budget, seed, targets):
        budget = max(budget, 2)
        m = problem.pi.shape[0]
        log_z, _ = ais_log_partition(problem.features, problem.lam, m, budget, n_particles=AIS_PARTICLES, seed=seed)
        return {"zeta": log_z - log_z[0], EVALUATIONS: budget * AIS_PARTICLES * m}


def trf_estimators() -> list[KindEstimator]:
    """AugSA zeta and AIS zeta."""
    return [AugSAZetaEstimator(), AISZetaEstimator()]
