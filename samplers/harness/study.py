"""Study: problems x estimators x budgets x replicates, run reproducibly (optionally in parallel).

Every run gets its own integer seed derived from the study seed and the run's coordinates
(problem name, estimator name, budget, replicate) through ``np.random.SeedSequence``, so the
estimates do not depend on ``n_jobs``, on the joblib backend, or on which other runs are in the
study.  Runs are dispatched through :class:`joblib.Parallel`; inside
``with joblib.parallel_config(backend="dask"):`` they go to a Dask cluster unchanged.
"""

from __future__ import annotations

import sys
import time
import zlib
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import joblib
import numpy as np

from ..validation import check_int
from .problem import as_target_value
from .results import Results


@dataclass(frozen=True)
class RunSpec:
    """Coordinates of one run."""

    problem_index: int
    estimator_index: int
    budget: int
    replicate: int
    seed: int


def run_seed(study_seed: int, problem: str, estimator: str, budget: int, replicate: int) -> int:
    """The integer seed of one run: a SeedSequence child keyed by the run's coordinates.

    Keys are CRC32 hashes of the names, so adding an estimator or problem to a study does not
    change the seeds (hence the estimates) of the others.
    """
    key = (zlib.crc32(problem.encode()), zlib.crc32(estimator.encode()), int(budget), int(replicate))
    ss = np.random.SeedSequence(entropy=int(study_seed), spawn_key=key)
    return int(ss.generate_state(1, dtype=np.uint32)[0] & 0x7FFFFFFF)


def _named(items: Sequence[Any], what: str) -> list[Any]:
    if isinstance(items, (str, bytes)) or not isinstance(items, Sequence) and not hasattr(items, "__iter__"):
        raise TypeError(f"{what} must be a sequence")
    items = list(items)
    if not items:
        raise ValueError(f"{what} must not be empty")
    names = []
    for obj in items:
        name = getattr(obj, "name", None)
        if not isinstance(name, str) or not name:
            raise TypeError(f"every element of {what} needs a non-empty string attribute 'name'; got {obj!r}")
        names.append(name)
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise ValueError(f"{what} names must be unique; repeated: {sorted(dup)}")
    return items


def _check_budgets(values: Any, what: str) -> list[int]:
    if isinstance(values, (int, np.integer)) and not isinstance(values, bool):
        values = [values]
    values = list(values)
    if not values:
        raise ValueError(f"{what} must not be empty")
    out = []
    for b in values:
        if isinstance(b, bool) or not isinstance(b, (int, np.integer)):
            raise TypeError(f"{what} must hold integers, got {b!r}")
        if b <= 0:
            raise ValueError(f"{what} must be positive integers, got {b}")
        out.append(int(b))
    return out


def _execute(problem, estimator, budget: int, seed: int) -> tuple[dict[str, Any], float, int, str]:
    """Run one estimate under timing and the estimator's memory meter (executes in a worker)."""
    meter = estimator.memory_meter()
    try:
        with meter:
            start = time.perf_counter()
            estimates = estimator.estimate(problem, budget, seed)
            seconds = time.perf_counter() - start
    except Exception as exc:  # re-raised with the run's coordinates
        raise RuntimeError(
            f"estimator {estimator.name!r} failed on problem {problem.name!r} (budget={budget}, seed={seed}): "
            f"{type(exc).__name__}: {exc}") from exc
    return estimates, seconds, int(meter.peak_bytes), meter.kind


class Study:
    """Problems x estimators x budgets x replicates with independent, reproducible seeds.

    Parameters
    ----------
    problems : sequence of Problem
        Each has a unique ``name`` and ``exact()``.
    estimators : sequence of Estimator
        Each has a unique ``name`` and ``estimate(problem, budget, seed)``; pairs for which
        ``estimator.supports(problem)`` is False are skipped.
    budgets : sequence of int or mapping
        Positive integers shared by all estimators, or ``{estimator name: budgets}``.
    replicates : int
        Independent runs per (problem, estimator, budget), at least 1.
    seed : int
        Study seed; every run's seed is derived from it (see :func:`run_seed`).

    Examples
    --------
    >>> from samplers.harness import FunctionProblem, FunctionEstimator, Study
    >>> import numpy as np
    >>> p = FunctionProblem("coin", lambda: {"mean": 0.5})
    >>> e = FunctionEstimator("mc", lambda prob, n, s: {"mean": np.random.default_rng(s).random(n).mean()})
    >>> res = Study([p], [e], budgets=[10, 100], replicates=5, seed=1).run(progress=False)
    >>> len(res.rows)
    10
    """

    def __init__(self, problems: Sequence[Any], estimators: Sequence[Any],
                 budgets: Sequence[int] | Mapping[str, Sequence[int]], replicates: int = 10,
                 seed: int = 0):
        self.problems = _named(problems, "problems")
        self.estimators = _named(estimators, "estimators")
        self.replicates = check_int(replicates, "replicates", low=1)
        self.seed = check_int(seed, "seed", low=0)
        if isinstance(budgets, Mapping):
            names = {e.name for e in self.estimators}
            missing = names - set(budgets)
            if missing:
                raise ValueError(f"budgets has no entry for estimators {sorted(missing)}")
            unknown = set(budgets) - names
            if unknown:
                raise ValueError(f"budgets names unknown estimators {sorted(unknown)}")
            self.budgets = {name: _check_budgets(b, f"budgets[{name!r}]") for name, b in budgets.items()}
        else:
            shared = _check_budgets(budgets, "budgets")
            self.budgets = {e.name: shared for e in self.estimators}

    def runs(self) -> list[RunSpec]:
        """All run coordinates in a fixed order."""
        specs = []
        for pi, problem in enumerate(self.problems):
            for ei, est in enumerate(self.estimators):
                if not est.supports(problem):
                    continue
                for budget in self.budgets[est.name]:
                    for r in range(self.replicates):
                        specs.append(RunSpec(pi, ei, budget, r, run_seed(self.seed, problem.name, est.name, budget, r)))
        if not specs:
            raise ValueError("no estimator supports any problem: the study has no runs")
        return specs

    def exact_values(self) -> dict[str, dict[str, Any]]:
        """Exact targets per problem name, validated (finite numbers or arrays)."""
        out = {}
        for problem in self.problems:
            raw = problem.exact()
            if not isinstance(raw, Mapping) or not raw:
                raise TypeError(f"problem {problem.name!r}.exact() must return a non-empty dict of targets")
            vals = {t: as_target_value(v, t, f"problem {problem.name!r}.exact()") for t, v in raw.items()}
            for t, v in vals.items():
                if not np.all(np.isfinite(v)):
                    raise ValueError(f"problem {problem.name!r} has a non-finite exact value for target {t!r}")
            out[problem.name] = vals
        return out

    def run(self, n_jobs: int = 1, *, progress: bool | None = None, backend: str | None = None) -> Results:
        """Run every (problem, estimator, budget, replicate) and collect tidy rows.

        Parameters
        ----------
        n_jobs : int
            Parallel workers (joblib semantics: -1 = all cores).  Results do not depend on it.
        progress : bool, optional
            Show a tqdm bar (default: only when stderr is a terminal).
        backend : str, optional
            A joblib backend name; by default the active ``joblib.parallel_config`` decides
            (``"loky"`` processes unless a Dask/Ray context is active).
        """
        if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) or n_jobs == 0 or n_jobs < -1:
            raise ValueError(f"n_jobs must be a positive integer or -1, got {n_jobs!r}")
        exact = self.exact_values()
        specs = self.runs()
        from tqdm.auto import tqdm

        disable = (not sys.stderr.isatty()) if progress is None else not progress
        work = [(self.problems[s.problem_index], self.estimators[s.estimator_index], s.budget, s.seed)
                for s in specs]
        if n_jobs == 1 and backend is None:
            outputs = (_execute(*args) for args in work)
        else:
            parallel = joblib.Parallel(n_jobs=int(n_jobs), backend=backend, return_as="generator")
            outputs = parallel(joblib.delayed(_execute)(*args) for args in work)
        results = Results()
        for spec, out in tqdm(zip(specs, outputs), total=len(specs), disable=disable, desc="mcsa study", unit="run"):
            problem = self.problems[spec.problem_index]
            est = self.estimators[spec.estimator_index]
            estimates, seconds, peak, kind = out
            results.add_run(problem=problem.name, estimator=est.name, budget=spec.budget, replicate=spec.replicate,
                            seed=spec.seed, estimates=estimates, exact=exact[problem.name], seconds=seconds,
                            peak_bytes=peak, memory_kind=kind, budget_label=getattr(est, "budget_label", "budget"))
        results.meta.update({"seed": self.seed, "replicates": self.replicates,
                             "problems": [p.name for p in self.problems],
                             "estimators": [e.name for e in self.estimators],
                             "provenance": {p.name: getattr(p, "provenance", "") for p in self.problems},
                             "sizes": {p.name: dict(p.size()) if hasattr(p, "size") else {} for p in self.problems}})
        return results
