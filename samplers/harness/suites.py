"""Built-in suites: ``mrf-quick`` (AIS and Gibbs on small Ising/Potts MRFs) and ``quick`` (every
family's quick suite, the one ``make demo`` runs).
"""

from __future__ import annotations

import warnings
from functools import cached_property
from typing import Any, Sequence

from ..ais import SCHEDULES, ais_log_partition
from ..models import PairwiseMRF, ising_grid, potts_grid
from ..validation import check_float, check_int
from .estimator import Estimator
from .problem import Problem
from .registry import Suite, load_suite

#: The parts of the ``quick`` suite, in order (registered names).
QUICK_PARTS = ("mrf-quick", "rdp-quick", "doeblin-quick", "pruning-quick", "trf-quick")


class MRFProblem(Problem):
    """A pairwise MRF small enough to enumerate; targets ``log_partition`` and ``marginals``.

    Parameters
    ----------
    name : str
        Name used in result tables.
    mrf : PairwiseMRF
        The model (at most :data:`samplers.models.MAX_ENUMERATION_STATES` joint states).
    """

    def __init__(self, name: str, mrf: PairwiseMRF):
        if not isinstance(mrf, PairwiseMRF):
            raise TypeError(f"mrf must be a PairwiseMRF, got {type(mrf).__name__}")
        self.name = name
        self.mrf = mrf
        method = mrf.exact_method()
        what = (f"enumeration of all {mrf.n_configurations} joint states" if method == "enumeration"
                else "variable elimination (junction tree) in log space")
        self.provenance = f"{what} (PairwiseMRF.log_partition_exact / marginals_exact)"

    @cached_property
    def _exact(self) -> dict[str, Any]:
        return {"log_partition": self.mrf.log_partition_exact(), "marginals": self.mrf.marginals_exact()}

    def exact(self) -> dict[str, Any]:
        """``{"log_partition": float, "marginals": ndarray (n_vars, max_states)}`` by enumeration."""
        return dict(self._exact)

    def size(self) -> dict[str, int]:
        return {"n_vars": self.mrf.n_vars, "max_states": self.mrf.max_states, "n_edges": self.mrf.n_edges,
                "n_configurations": self.mrf.n_configurations}


class _MRFEstimator(Estimator):
    """Base for estimators that need ``problem.mrf``."""

    def supports(self, problem) -> bool:
        return isinstance(getattr(problem, "mrf", None), PairwiseMRF)


class AISEstimator(_MRFEstimator):
    """AIS estimate of ``log_partition``; the budget is the number of temperatures.

    ``evaluations`` = single-site Gibbs updates: n_chains x (temperatures - 1) x n_vars.

    Parameters
    ----------
    n_chains : int
        AIS chains per run.
    schedule : {"linear", "geometric", "sigmoid"}
        Temperature schedule (:func:`samplers.ais.annealing_schedule`).
    """

    budget_label = "temperatures"

    def __init__(self, n_chains: int = 100, schedule: str = "linear"):
        if schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
        self.n_chains = check_int(n_chains, "n_chains", low=1)
        self.schedule = schedule
        self.name = f"ais-{schedule}"

    def estimate(self, problem, budget: int, seed: int) -> dict[str, Any]:
        n_temperatures = max(int(budget), 2)
        result = ais_log_partition(problem.mrf, n_temperatures=n_temperatures, n_chains=self.n_chains,
                                   seed=seed, schedule=self.schedule)
        return {"log_partition": result.log_partition,
                "evaluations": self.n_chains * (n_temperatures - 1) * problem.mrf.n_vars}


class GibbsMarginalsEstimator(_MRFEstimator):
    """Gibbs-sampling estimate of the single-site ``marginals``; the budget is sweeps per chain.

    ``evaluations`` = single-site Gibbs updates: n_chains x sweeps x n_vars.

    Parameters
    ----------
    n_chains : int
        Independent chains (initialised from the unary-only model).
    burn_in_fraction : float
        Fraction of each chain's sweeps discarded, in [0, 1).
    """

    name = "gibbs"
    budget_label = "sweeps"

    def __init__(self, n_chains: int = 4, burn_in_fraction: float = 0.1):
        self.n_chains = check_int(n_chains, "n_chains", low=1)
        self.burn_in_fraction = check_float(burn_in_fraction, "burn_in_fraction", low=0.0, high=1.0, high_open=True)

    def estimate(self, problem, budget: int, seed: int) -> dict[str, Any]:
        mrf = problem.mrf
        burn_in = min(int(self.burn_in_fraction * budget), budget - 1)
        samples = mrf.gibbs_sample(budget, self.n_chains, seed=seed, burn_in=burn_in)
        return {"marginals": mrf.marginals_from_samples(samples),
                "evaluations": self.n_chains * int(budget) * mrf.n_vars}


def mrf_problems() -> list[MRFProblem]:
    """The ``mrf-quick`` problems: Ising 3x3 and 4x4 (coupling 0.4, field 0.1) and a 3x3 Potts grid."""
    return [MRFProblem("ising-3x3", ising_grid(3, 3, coupling=0.4, field=0.1)),
            MRFProblem("ising-4x4", ising_grid(4, 4, coupling=0.4, field=0.1)),
            MRFProblem("potts-3x3-q3", potts_grid(3, 3, n_states=3, coupling=0.5, field=0.2))]


def warm_up_kernels() -> None:
    """Compile (or load from the Numba cache) the Gibbs and AIS kernels on a 2-variable model, so
    that compile time does not land in the first run's wall time."""
    tiny = ising_grid(1, 2)
    tiny.gibbs_sample(2, 1, seed=0)
    ais_log_partition(tiny, n_temperatures=3, n_chains=1, seed=0)


def mrf_quick_suite() -> Suite:
    """AIS (linear and sigmoid schedules; budget = temperatures) and Gibbs marginals (budget =
    sweeps) on small Ising/Potts grids with exact answers by enumeration.  Compile time is kept
    out of the timed runs by the study's warm-up calls (see :class:`~samplers.harness.Study`)."""
    estimators = [AISEstimator(schedule="linear"), AISEstimator(schedule="sigmoid"), GibbsMarginalsEstimator()]
    budgets = {"ais-linear": [5, 20, 80], "ais-sigmoid": [5, 20, 80], "gibbs": [100, 400, 1600]}
    return Suite(problems=mrf_problems(), estimators=estimators, budgets=budgets, replicates=5,
                 description="AIS log Z vs temperatures and Gibbs marginals vs sweeps on Ising 3x3/4x4 and Potts 3x3",
                 extra={"ais_chains": 100, "gibbs_chains": 4})


class AISAccuracyProblem(MRFProblem):
    """:class:`MRFProblem` whose targets also include AIS's reported ``log_partition_stderr`` and ``ess``
    as *measured* targets (no reference: the summary gives their mean with an interval)."""

    def exact(self) -> dict[str, Any]:
        return {**super().exact(), "log_partition_stderr": None, "ess": None}


class AISAccuracyEstimator(AISEstimator):
    """:class:`AISEstimator` that also reports AIS's own ``log_partition_stderr`` and ``ess`` as measured
    targets, so a study can set the reported standard error beside the replicate RMSE it should match."""

    def estimate(self, problem, budget: int, seed: int) -> dict[str, Any]:
        n_temperatures = max(int(budget), 2)
        result = ais_log_partition(problem.mrf, n_temperatures=n_temperatures, n_chains=self.n_chains,
                                   seed=seed, schedule=self.schedule)
        return {"log_partition": result.log_partition, "log_partition_stderr": result.stderr, "ess": result.ess,
                "evaluations": self.n_chains * (n_temperatures - 1) * problem.mrf.n_vars}


def ais_ising_suite(n_chains: int = 100, temperatures: Sequence[int] = (3, 10, 30, 100, 300),
                    replicates: int = 30) -> Suite:
    """AIS log Z accuracy against the number of temperatures, per schedule, on Ising grids with exact answers.

    Ising 4x4 (2^16 states) and 4x5 (2^20 states), coupling 0.4, field 0.1; every schedule of
    :data:`samplers.ais.SCHEDULES`; budget = temperatures.  Besides bias / RMSE against the exact log Z
    the rows carry AIS's own mean reported ``log_partition_stderr`` and ``ess`` (measured targets), which
    should track the replicate RMSE.  ``mcsa bench run --suite ais-ising --out DIR``.
    """
    problems = [AISAccuracyProblem(f"ising-{r}x{c}", ising_grid(r, c, coupling=0.4, field=0.1))
                for r, c in ((4, 4), (4, 5))]
    estimators = [AISAccuracyEstimator(n_chains=n_chains, schedule=s) for s in SCHEDULES]
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
