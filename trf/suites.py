"""TRF suites, as data: AugSA's zeta vs AIS per length against exact ``zeta*`` (Sec. 4.2, 7).

``trf-quick`` uses a 4-symbol alphabet and m = 6 (seconds); ``trf-zeta`` uses the morphology TRF
(web2 words, m = 24, the longest word) with lambda from a short AugSA run.  Problems and
estimators: :mod:`trf.estimators`.
"""

from __future__ import annotations

import numpy as np

from samplers.harness import Suite

from .augsa import AugSA, AugSAConfig
from .data import Alphabet, WordData, encode_words
from .estimators import AISZetaEstimator, AugSAZetaEstimator, TRFProblem
from .transms import WordBackend

#: The suites' estimator names.
AUGSA, AIS = "AugSA-zeta", "AIS"


def trf_quick_suite(replicates: int = 3) -> Suite:
    """A 4-symbol TRF (every n-gram a feature, lambda ~ N(0, 0.5^2)), m = 6: runs in seconds."""
    problem = TRFProblem.random("trf-V4-m6", "abcd", m=6, pi=np.array([0.05, 0.15, 0.25, 0.25, 0.2, 0.1]))
    return Suite([problem], [AugSAZetaEstimator(AUGSA), AISZetaEstimator(AIS)], {AUGSA: [50, 200], AIS: [10, 50]},
                 replicates=replicates,
                 description="AugSA's zeta (lambda frozen) vs AIS per length on a tiny TRF with exact zeta*")


def trf_zeta_suite(replicates: int = 5, n_words: int = 139_000, train_iters: int = 300) -> Suite:
    """The morphology TRF (web2, m = longest training word, lambda from a short AugSA run): AugSA zeta vs AIS."""
    from .data import ENGLISH_LOWER, web2_split

    train_words, _ = web2_split(n_train=n_words, n_test=1)
    m = max(len(w) for w in train_words)   # 24 on web2: every length 1..m occurs, so every zeta_j is learnable
    train: WordData = encode_words(train_words, Alphabet(ENGLISH_LOWER), m)
    backend = WordBackend(train, seed=0)
    lam = AugSA(backend, AugSAConfig(t_max=train_iters, seed=0), progress=False).fit().lam
    problem = TRFProblem(f"morph-web2-m{m}", backend.features, lam, backend.pi,
                         provenance=f"lambda from {train_iters} AugSA iterations on web2")
    return Suite([problem], [AugSAZetaEstimator(AUGSA), AISZetaEstimator(AIS)], {AUGSA: [100, 1000], AIS: [20, 100]},
                 replicates=replicates,
                 description="AugSA's zeta (lambda frozen) vs AIS per length on the word-morphology TRF")


def cross_quick_problems() -> list[TRFProblem]:
    """The ``cross-quick`` TRF: V = 4, m = 6."""
    return [TRFProblem.random("trf-V4-m6", "abcd", m=6)]


def cross_problems() -> list[TRFProblem]:
    """The ``cross`` TRFs: V = 4, m = 6 and V = 6, m = 8."""
    return [TRFProblem.random("trf-V4-m6", "abcd", m=6), TRFProblem.random("trf-V6-m8", "abcdef", m=8, seed=7)]
