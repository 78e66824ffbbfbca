"""The core's suites, as data: problems x estimators x budgets.

* ``mrf-quick`` — AIS (log Z) and Gibbs (marginals) on small Ising/Potts grids;
* ``ais-ising`` — AIS log Z accuracy against temperatures per schedule, with AIS's own reported
  standard error and ESS beside the replicate RMSE;
* ``quick`` — every family's quick suite as parts (what ``make demo`` runs);
* ``cross-quick`` / ``cross`` — every registered problem tagged ``cross-quick`` / ``cross`` handed
  to every registered estimator that supports it, scored against the ``trivial`` baseline.

The problem factories of the cross suites are registered per family (``mcsa.problems`` entry
points); this module builds the core's own (:func:`cross_quick_problems`, :func:`cross_problems`).
"""

from __future__ import annotations

import warnings
from typing import Sequence

from .ais import SCHEDULES
from .estimators import AISEstimator, GibbsEstimator
from .harness import Suite, load_estimators, load_problems, load_suite
from .models import Grammar, ising_grid, potts_grid, random_mrf
from .problems import ChainCRF, ChainCRFProblem, PairwiseMRFProblem, PCFGProblem

#: The parts of the ``quick`` suite, in order (registered names).
QUICK_PARTS = ("mrf-quick", "rdp-quick", "doeblin-quick", "pruning-quick", "trf-quick")

#: Replicates of the cross suites.
CROSS_QUICK_REPLICATES, CROSS_REPLICATES = 3, 6


def mrf_problems() -> list[PairwiseMRFProblem]:
    """The ``mrf-quick`` problems: Ising 3x3 and 4x4 (coupling 0.4, field 0.1) and a 3x3 Potts grid."""
    return [PairwiseMRFProblem("ising-3x3", ising_grid(3, 3, coupling=0.4, field=0.1)),
            PairwiseMRFProblem("ising-4x4", ising_grid(4, 4, coupling=0.4, field=0.1)),
            PairwiseMRFProblem("potts-3x3-q3", potts_grid(3, 3, n_states=3, coupling=0.5, field=0.2))]


def mrf_quick_suite() -> Suite:
    """AIS (linear and sigmoid schedules; log Z only; budget = temperatures) and Gibbs marginals
    (budget = sweeps) on small Ising/Potts grids with exact answers by enumeration."""
    estimators = [AISEstimator(schedule="linear", name="ais-linear").only(("log_partition",)),
                  AISEstimator(schedule="sigmoid", name="ais-sigmoid").only(("log_partition",)), GibbsEstimator()]
    budgets: dict[str, Sequence[int]] = {"ais-linear": [5, 20, 80], "ais-sigmoid": [5, 20, 80], "gibbs": [100, 400, 1600]}
    return Suite(problems=mrf_problems(), estimators=estimators, budgets=budgets, replicates=5,
                 description="AIS log Z vs temperatures and Gibbs marginals vs sweeps on Ising 3x3/4x4 and Potts 3x3",
                 extra={"ais_chains": 100, "gibbs_chains": 4})


def ais_ising_suite(n_chains: int = 100, temperatures: Sequence[int] = (3, 10, 30, 100, 300),
                    replicates: int = 30) -> Suite:
    """AIS log Z accuracy against the number of temperatures, per schedule, on Ising grids with exact answers.

    Ising 4x4 (2^16 states) and 4x5 (2^20 states), coupling 0.4, field 0.1; every schedule of
    :data:`samplers.ais.SCHEDULES`; budget = temperatures.  Besides bias / RMSE against the exact log Z
    the rows carry AIS's own mean reported ``log_partition_stderr`` and ``ess`` (measured targets), which
    should track the replicate RMSE.  ``mcsa bench run --suite ais-ising --out DIR``.
    """
    measured = ("log_partition_stderr", "ess")
    problems = [PairwiseMRFProblem(f"ising-{r}x{c}", ising_grid(r, c, coupling=0.4, field=0.1),
                                   targets=("log_partition",), measured=measured) for r, c in ((4, 4), (4, 5))]
    estimators = [AISEstimator(n_chains=n_chains, schedule=s, name=f"ais-{s}") for s in SCHEDULES]
    return Suite(problems=problems, estimators=estimators, budgets=[int(t) for t in temperatures],
                 replicates=replicates,
                 description=f"AIS ({n_chains} chains) log Z vs temperatures per schedule on Ising 4x4 / 4x5",
                 extra={"ais_chains": n_chains})


def quick_suite(names: Sequence[str] = QUICK_PARTS) -> Suite:
    """Every family's quick suite as parts of one composite suite (what ``make demo`` runs).

    Each part keeps its own default replicates (the runner uses ``part.replicates`` unless the
    caller overrides them).  A part whose package cannot be imported (``ImportError``, e.g. torch
    not installed or the family not installed) is skipped with a warning naming it.
    """
    parts = []
    for name in names:
        try:
            parts.append(load_suite(name))
        except ImportError as exc:
            warnings.warn(f"quick suite: skipping part {name!r} ({type(exc).__name__}: {exc})", stacklevel=2)
    if not parts:
        raise ImportError(f"quick suite: none of its parts {list(names)} could be imported")
    return Suite(problems=[], estimators=[], budgets=[], replicates=max(p.replicates for p in parts),
                 description="every family's quick problems", extra={"parts": [n for n in names]},
                 parts=parts)


def cross_quick_problems() -> list:
    """The core's ``cross-quick`` problems: chain CRF T=8 N=10, Ising 4x4, PCFG NT=6 T=6."""
    return [ChainCRFProblem("crf-T8-N10", ChainCRF.random(8, 10, seed=0)),
            PairwiseMRFProblem("ising-4x4", ising_grid(4, 4, coupling=0.4, field=0.1)),
            PCFGProblem("pcfg-NT6-T6", Grammar.random(6, 8, seed=0), "w0 w1 w2 w3 w4 w5")]


def cross_problems() -> list:
    """The core's ``cross`` problems: chain CRFs (N = 20, N = 50 with embeddings), Ising 10x10 and
    Potts 6x6 (exact by junction tree), a random MRF, two PCFGs."""
    return [ChainCRFProblem("crf-T20-N20", ChainCRF.random(20, 20, scale=1.0, seed=1)),
            ChainCRFProblem("crf-T20-N50-emb", ChainCRF.random(20, 50, scale=1.0, embedding_dim=8, seed=2)),
            PairwiseMRFProblem("ising-10x10-J0.4", ising_grid(10, 10, coupling=0.4, field=0.1)),
            PairwiseMRFProblem("potts-6x6-q3", potts_grid(6, 6, n_states=3, coupling=0.6, field=0.2)),
            PairwiseMRFProblem("random-12-q3", random_mrf(12, 3, density=0.3, scale=0.7, seed=3)),
            PCFGProblem("pcfg-NT10-T10", Grammar.random(10, 20, seed=4),
                        [f"w{i}" for i in (0, 3, 7, 1, 12, 5, 9, 2, 18, 4)]),
            PCFGProblem("pcfg-split-NT12-T8", Grammar.random_split(6, 2, 20, seed=5),
                        [f"w{i}" for i in (2, 11, 5, 0, 17, 3, 8, 14)])]


def _cross(tag: str, replicates: int) -> Suite:
    estimators = load_estimators()
    budgets: dict[str, Sequence[int]] = {e.name: list(getattr(e, "budgets" if tag == "cross" else "quick_budgets", (1,))) for e in estimators}
    problems = load_problems(tag)
    kinds = sorted({p.kind for p in problems})
    return Suite(problems=problems, estimators=estimators, budgets=budgets, replicates=replicates,
                 description=("every estimator that supports a problem, on one problem of each kind "
                              f"({', '.join(kinds)}); score against the trivial baseline"),
                 baseline="trivial", extra={"kinds": {p.name: p.kind for p in problems}})


def cross_quick_suite(replicates: int = CROSS_QUICK_REPLICATES) -> Suite:
    """Small problems of every kind (registered with the tag ``cross-quick``), two budgets per
    estimator, 3 replicates: under a minute on 2 cores."""
    return _cross("cross-quick", replicates)


def cross_suite(replicates: int = CROSS_REPLICATES) -> Suite:
    """The cross leaderboard: every problem registered with the tag ``cross``; four budgets per estimator."""
    return _cross("cross", replicates)


def uai_suite(instances: str | None = None, replicates: int = 3, scale: str = "full") -> Suite:
    """Every applicable estimator on a folder of UAI instances, scored against the trivial baseline.

    Each ``DIR/*.uai`` becomes a :class:`~samplers.problems.FactorGraphProblem`
    (:meth:`~samplers.problems.FactorGraphProblem.from_uai`: ``.evid`` evidence applied, the published
    ``.PR`` / ``.MAR`` answers as references with their provenance, targets those with a published
    answer).  ``mcsa bench run --suite uai --instances DIR`` (``--instances`` is
    ``--suite-arg instances=DIR``).

    Parameters
    ----------
    instances : str
        The folder of ``.uai`` files (required).
    replicates : int
        Replicates of each randomized run.
    scale : {"full", "quick"}
        Each estimator's ``budgets`` or its (smaller) ``quick_budgets``.
    """
    from pathlib import Path

    from .problems import FactorGraphProblem

    if instances is None:
        raise ValueError("the uai suite needs a folder of .uai files: --instances DIR")
    folder = Path(instances)
    if not folder.is_dir():
        raise ValueError(f"--instances: {folder} is not a folder")
    paths = sorted(folder.glob("*.uai"))
    if not paths:
        raise ValueError(f"--instances: {folder} holds no .uai file")
    if scale not in ("full", "quick"):
        raise ValueError(f"scale must be 'full' or 'quick', got {scale!r}")
    replicates = int(replicates)
    if replicates < 1:
        raise ValueError(f"replicates must be >= 1, got {replicates}")
    problems = [FactorGraphProblem.from_uai(p) for p in paths]
    estimators = [e for e in load_estimators() if any(e.supports(p) for p in problems)]
    attr = "budgets" if scale == "full" else "quick_budgets"
    budgets: dict[str, Sequence[int]] = {e.name: list(getattr(e, attr, (1,))) for e in estimators}
    return Suite(problems=problems, estimators=estimators, budgets=budgets, replicates=replicates,
                 description=f"every applicable estimator on the {len(problems)} UAI instances of {folder}; "
                             "score against the trivial baseline (unary-only model)",
                 baseline="trivial", extra={"kinds": {p.name: p.kind for p in problems}, "instances": str(folder)})
