"""Harness suites for TRFs: AugSA's zeta vs AIS per length against exact ``zeta*`` (Sec. 4.2, 7).

Problem: a word TRF with fixed lambda whose exact ``zeta*_j = log Z_j - log Z_1`` comes from the
forward pass (:mod:`trf.exact`).  Estimators (target ``"zeta"``, an array over lengths):

* ``AugSA-zeta``: the zeta recursion (17)-(18) with lambda not learned but moved linearly from 0 to
  the problem's lambda over the first quarter of the budget, pi0 of Eq. (26), K = 100 draws per
  iteration by TransMS; budget = iterations.
* ``AIS``: :func:`trf.ais.ais_log_partition` per length, 10 particles; budget = temperatures.

``trf-quick`` uses a 4-symbol alphabet and m = 6 (seconds); ``trf-zeta`` uses the morphology TRF
(web2 words, m = 24, the longest word) with lambda from a short AugSA run.
"""

from __future__ import annotations

import numpy as np

from samplers.harness import FunctionEstimator, FunctionProblem
from samplers.harness.registry import Suite

from . import exact
from .ais import ais_log_partition
from .augsa import AugSA, AugSAConfig
from .data import Alphabet, WordData, encode_words
from .features import FeatureSet, n_dense
from .transms import WordBackend


class _FixedLambdaBackend(WordBackend):
    """A WordBackend whose length law is given (the problem's pi) instead of read from data."""

    def __init__(self, features: FeatureSet, pi: np.ndarray, seed: int) -> None:
        m = pi.shape[0]
        dummy = encode_words(["".join(features.alphabet.symbols[0] * j) for j in range(1, m + 1)],
                             features.alphabet, m)
        super().__init__(dummy, features=features, n_chains=100, seed=seed)
        self.pi = pi


def trf_problem(name: str, features: FeatureSet, lam: np.ndarray, pi: np.ndarray, provenance: str) -> FunctionProblem:
    """A problem whose exact target ``"zeta"`` is ``log Z_j - log Z_1`` from the forward pass."""
    m = pi.shape[0]
    return FunctionProblem(name, lambda: {"zeta": exact.exact_zeta(features, lam, m)},
                           payload={"features": features, "lam": lam, "pi": pi}, provenance=provenance,
                           size={"V": features.V, "m": m, "d": features.d})


def augsa_zeta(problem, budget: int, seed: int) -> dict:
    """Zeta recursion (17)-(18) with lambda moved along ``min(1, 4t/budget) * lambda`` then frozen.

    Starting at lambda = 0 where zeta is exact, the ramp lets zeta track ``zeta*(lambda_t)`` as in
    training (a cold start at the target lambda with zeta(0) is far off for large models).
    """
    p = problem.payload
    backend = _FixedLambdaBackend(p["features"], p["pi"], seed)
    budget = int(budget)
    ramp = max(1, budget // 4)
    cfg = AugSAConfig(n_samples=100, t_max=budget, t0=min(200, ramp), seed=seed, learn_lambda=False)

    def move_lambda(trainer, t, _):
        trainer.lam = min(1.0, t / ramp) * p["lam"]

    zeta = AugSA(backend, cfg, callbacks=[move_lambda], progress=False).fit().zeta
    return {"zeta": zeta, "evaluations": budget * cfg.n_samples}  # TransMS samples drawn


def ais_zeta(problem, budget: int, seed: int) -> dict:
    p = problem.payload
    log_z, _ = ais_log_partition(p["features"], p["lam"], p["pi"].shape[0], int(budget), n_particles=10, seed=seed)
    # transitions: one per temperature, particle and length
    return {"zeta": log_z - log_z[0], "evaluations": int(budget) * 10 * p["pi"].shape[0]}


ESTIMATORS = [FunctionEstimator("AugSA-zeta", augsa_zeta, budget_label="iterations"),
              FunctionEstimator("AIS", ais_zeta, budget_label="temperatures")]


def trf_quick_suite(replicates: int = 3) -> Suite:
    """A 4-symbol TRF (every n-gram a feature, lambda ~ N(0, 0.5^2)), m = 6: runs in seconds."""
    alphabet = Alphabet("abcd")
    features = FeatureSet(alphabet, np.arange(n_dense(alphabet.size)))
    lam = np.random.default_rng(6).normal(scale=0.5, size=features.d)
    pi = np.array([0.05, 0.15, 0.25, 0.25, 0.2, 0.1])
    problem = trf_problem("trf-V4-m6", features, lam, pi, "forward pass over 2-symbol histories (trf.exact)")
    return Suite([problem], ESTIMATORS, {"AugSA-zeta": [50, 200], "AIS": [10, 50]}, replicates=replicates,
                 description="AugSA's zeta (lambda frozen) vs AIS per length on a tiny TRF with exact zeta*")


def trf_zeta_suite(replicates: int = 5, n_words: int = 139_000, train_iters: int = 300) -> Suite:
    """The morphology TRF (web2, m = longest training word, lambda from a short AugSA run): AugSA zeta vs AIS."""
    from .data import ENGLISH_LOWER, web2_split

    train_words, _ = web2_split(n_train=n_words, n_test=1)
    m = max(len(w) for w in train_words)   # 24 on web2: every length 1..m occurs, so every zeta_j is learnable
    train: WordData = encode_words(train_words, Alphabet(ENGLISH_LOWER), m)
    backend = WordBackend(train, seed=0)
    lam = AugSA(backend, AugSAConfig(t_max=train_iters, seed=0), progress=False).fit().lam
    problem = trf_problem(f"morph-web2-m{m}", backend.features, lam, backend.pi,
                          f"forward pass (trf.exact); lambda from {train_iters} AugSA iterations on web2")
    return Suite([problem], ESTIMATORS, {"AugSA-zeta": [100, 1000], "AIS": [20, 100]}, replicates=replicates,
                 description="AugSA's zeta (lambda frozen) vs AIS per length on the word-morphology TRF")
