"""Study: problems x estimators x budgets x replicates, run reproducibly (optionally in parallel).

Every run gets its own integer seed derived from the study seed and the run's coordinates
(problem name, estimator name, budget, replicate) through ``np.random.SeedSequence``, so the
estimates do not depend on ``n_jobs``, on the joblib backend, or on which other runs are in the
study.  Runs are dispatched through :class:`joblib.Parallel`; inside
``with joblib.parallel_config(backend="dask"):`` they go to a Dask cluster unchanged.

Discipline (asv/benchopt style): before its first timed run in a process, every (problem,
estimator) pair gets one untimed warm-up call at the estimator's smallest budget with a seed
outside the replicate streams (:func:`warmup_seed`), so compilation does not count as cost; its
time is recorded separately.  Time and memory are measured in separate calls (asv/pyperf style): the
timed call runs under no meter, and the estimator's memory meter (tracemalloc by default, which slows
Python-heavy code several-fold) wraps one further untimed call per cell (problem, estimator, budget),
at replicate 0's seed; every row of the cell reports that peak.  So a run's ``seconds`` inside a
study equal the same call timed alone, whatever the family.  Failures are data: a raising estimator, a raising ``exact()`` or an
invalid estimate is recorded with its coordinates and seed, and the study continues (unless
``fail_fast``).  With a store, every finished run is appended to disk at once and runs already in
the store are not repeated (resume).  A Ctrl-C stops the study at once, also when it lands inside a
Numba kernel and comes back as a ``SystemError`` chained to a ``KeyboardInterrupt``: finished runs
stay in the store, the interrupted run is not recorded (a resume runs it).
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
import uuid
import warnings
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import joblib
import numpy as np

from ..validation import check_int
from .dask_runs import dask_runs
from .problem import EVALUATIONS, split_exact
from .records import error_text, is_interrupt, normalise, user_stacklevel
from .results import Results
from .store import RunStore, dumps, read_records, run_key


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


def warmup_seed(study_seed: int, problem: str, estimator: str, budget: int) -> int:
    """The seed of a pair's untimed warm-up call: a SeedSequence child with a 5-element spawn key,
    hence outside every replicate stream of :func:`run_seed` (which use 4-element keys)."""
    key = (zlib.crc32(problem.encode()), zlib.crc32(estimator.encode()), int(budget), 0, 1)
    ss = np.random.SeedSequence(entropy=int(study_seed), spawn_key=key)
    return int(ss.generate_state(1, dtype=np.uint32)[0] & 0x7FFFFFFF)


class RunFailedWarning(UserWarning):
    """Some runs of a study failed; they are listed in ``Results.failures``."""


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


#: (run token, problem, estimator) pairs already warmed up in this process.
_WARMED: set[tuple[str, str, str]] = set()


#: The clock of the timed call (a module attribute so that tests can inject a fake one).
clock = time.perf_counter


def _execute(problem, estimator, budget: int, seed: int, warm: tuple[str, int, int] | None = None,
             index: int = -1, memory: bool = False) -> dict[str, Any]:
    """Run one timed estimate, then (``memory``) the same call again, untimed, under the estimator's
    memory meter (executes in a worker).

    ``warm = (token, budget, seed)`` asks for the pair's untimed warm-up call first, unless this
    process already made it for this study run.  Exceptions are caught and returned as data; a
    failing memory call leaves the peak unmeasured (None).
    """
    out: dict[str, Any] = {"index": index, "warmup": None, "pid": os.getpid()}
    if warm is not None:
        key = (warm[0], problem.name, estimator.name)
        if key not in _WARMED:
            _WARMED.add(key)
            start = clock()
            error = None
            try:
                estimator.estimate(problem, warm[1], warm[2])
            except Exception as exc:  # the timed run will show whether it is persistent
                if is_interrupt(exc):
                    raise KeyboardInterrupt from exc
                error = error_text(exc)
            out["warmup"] = {"seconds": clock() - start, "budget": int(warm[1]), "seed": int(warm[2]),
                             "error": error}
    try:
        start = clock()
        estimates = estimator.estimate(problem, budget, seed)
        seconds = clock() - start
    except Exception as exc:
        if is_interrupt(exc):  # Ctrl-C inside a kernel: stop the study, never a failed run
            raise KeyboardInterrupt from exc
        out.update(status="error", error=error_text(exc),
                   traceback="".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-3:]))
        return out
    meter = estimator.memory_meter()
    peak = None
    if memory and meter.kind != "none":
        try:
            with meter:
                estimator.estimate(problem, budget, seed)
            peak = int(meter.peak_bytes)
        except Exception as exc:  # the timed run succeeded; the peak stays unmeasured
            if is_interrupt(exc):
                raise KeyboardInterrupt from exc
            peak = None
    out.update(status="ok", estimates=estimates, seconds=seconds, peak_bytes=peak if memory else None,
               memory_kind=meter.kind)
    return out


class Study:
    """Problems x estimators x budgets x replicates with independent, reproducible seeds.

    Parameters
    ----------
    problems : sequence of Problem
        Each has a unique ``name`` and ``exact()``.
    estimators : sequence of Estimator
        Each has a unique ``name`` and ``estimate(problem, budget, seed)``; pairs for which
        ``estimator.supports(problem)`` is False are skipped (and listed in ``Results.meta["skipped"]``).
    budgets : sequence of int or mapping
        Positive integers shared by all estimators, or ``{estimator name: budgets}``.
    replicates : int
        Independent runs per (problem, estimator, budget), at least 1.
    seed : int
        Study seed; every run's seed is derived from it (see :func:`run_seed`).
    baseline : str, optional
        Name of a trivial estimator of this study against which the UAI-style 0-100 score is
        computed (see :meth:`Results.scores`).
    name : str
        Label of the study inside a run store (the part's suite name in a composite suite).

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
                 seed: int = 0, *, baseline: str | None = None, name: str = ""):
        self.problems = _named(problems, "problems")
        self.estimators = _named(estimators, "estimators")
        self.replicates = check_int(replicates, "replicates", low=1)
        self.seed = check_int(seed, "seed", low=0)
        if not isinstance(name, str):
            raise TypeError(f"name must be a string, got {type(name).__name__}")
        self.name = name
        if baseline is not None and baseline not in {e.name for e in self.estimators}:
            raise ValueError(f"baseline {baseline!r} is not one of the estimators "
                             f"{[e.name for e in self.estimators]}")
        self.baseline = baseline
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
        """All run coordinates in a fixed order (problem, estimator, budget, replicate)."""
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

    def skipped_pairs(self) -> list[tuple[str, str]]:
        """(problem, estimator) pairs left out because ``estimator.supports(problem)`` is False."""
        return [(p.name, e.name) for p in self.problems for e in self.estimators if not e.supports(p)]

    def exact_values(self) -> dict[str, dict[str, Any]]:
        """Exact target values per problem name (floats, float arrays or None), validated.

        Raises if a problem's ``exact()`` raises or returns something invalid; :meth:`run` records
        such a problem's runs as failed instead.
        """
        return {p.name: {t: v[0] for t, v in self._exact_of(p).items()} for p in self.problems}

    def _exact_of(self, problem) -> dict[str, tuple[Any, Any, str]]:
        raw = problem.exact()
        who = f"problem {problem.name!r}.exact()"
        if not isinstance(raw, Mapping) or not raw:
            raise TypeError(f"{who} must return a non-empty dict of targets")
        out = {}
        for t, v in raw.items():
            if t == EVALUATIONS:
                raise ValueError(f"{who}: {EVALUATIONS!r} is reserved for the estimators' cost and cannot be a target")
            value, stderr, provenance = split_exact(v, t, who)
            if value is not None and not np.all(np.isfinite(value)):
                raise ValueError(f"problem {problem.name!r} has a non-finite exact value for target {t!r}")
            out[t] = (value, stderr, provenance)
        return out

    def run(self, n_jobs: int = 1, *, progress: bool | None = None, backend: str | None = None,
            store: str | Path | RunStore | None = None, fail_fast: bool = False) -> Results:
        """Run every (problem, estimator, budget, replicate) and collect tidy rows.

        Parameters
        ----------
        n_jobs : int
            Parallel workers (joblib semantics: -1 = all cores).  Results do not depend on it.
        progress : bool, optional
            Show a tqdm bar on stderr (default: only when stderr is a terminal; True forces it).
        backend : str, optional
            A joblib backend name; by default the active ``joblib.parallel_config`` decides
            (``"loky"`` processes unless a Dask/Ray context is active).  ``"dask"`` sends the runs to the
            cluster of the current ``distributed.Client`` (they stream into ``store`` as they finish).
        store : path or RunStore, optional
            A JSON-lines run store (see :mod:`samplers.harness.store`): every finished run is
            appended and flushed as it arrives, and runs of this study already stored with status
            ok are not run again (resume).  The returned results are the same either way.
        fail_fast : bool
            Stop at the first failure (after recording it) and raise: ``RuntimeError`` naming the
            run for a raising estimator, the original error for an invalid estimate or ``exact()``.

        Returns
        -------
        Results
            Rows in the fixed run order, ``failures`` (failed runs with coordinates, seed and
            message), ``warmups`` (warm-up seconds per pair) and ``meta``.
        """
        if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) or n_jobs == 0 or n_jobs < -1:
            raise ValueError(f"n_jobs must be a positive integer or -1, got {n_jobs!r}")
        if isinstance(store, (str, Path)):
            with RunStore(store) as opened:
                return self.run(n_jobs, progress=progress, backend=backend, store=opened, fail_fast=fail_fast)
        specs = self.runs()
        exact, exact_errors = self._all_exact(fail_fast)
        records: dict[tuple, dict[str, Any]] = {}
        warmups: list[dict[str, Any]] = []
        if store is not None:
            self._resume(store, exact, records, warmups)
        keys = [self._key(s) for s in specs]
        pending = [i for i, k in enumerate(keys) if k not in records]

        def record(rec: dict[str, Any]) -> None:
            if store is not None:
                store.append(rec)
            records[run_key(rec)] = rec

        todo = []
        for i in pending:
            s = specs[i]
            problem = self.problems[s.problem_index]
            if problem.name in exact_errors:
                failure = exact_errors[problem.name]
                record(self._base_record(s) | {"status": "error",
                                               "error": f"exact() of problem {problem.name!r} failed: "
                                                        f"{error_text(failure)}"})
            else:
                todo.append(i)

        from tqdm.auto import tqdm

        disable = (not sys.stderr.isatty()) if progress is None else not progress
        work = self._work(specs, todo)
        outputs: Iterator[Any]
        if n_jobs == 1 and backend is None:
            outputs = (_execute(*args) for args in work)
        elif backend == "dask":
            outputs = dask_runs(_execute, work)
        else:
            outputs = _parallel(int(n_jobs), backend)(joblib.delayed(_execute)(*args) for args in work)
        bar = tqdm(total=len(specs), initial=len(specs) - len(todo), disable=disable, desc="mcsa study", unit="run",
                   file=sys.stderr)
        with warnings.catch_warnings():
            # joblib warns about tasks computed but not consumed when a study stops early (Ctrl-C,
            # fail_fast); those runs were never recorded, so a resume runs them: nothing is lost.
            warnings.filterwarnings("ignore", message=".*adjusting the input task iterator", category=UserWarning)
            self._consume(outputs, specs, exact, warmups, record, store, bar, fail_fast)

        results = Results.from_records([records[k] for k in keys], exact)
        results.warmups = [w for w in warmups if w.get("study", "") == self.name]
        results.meta.update({**self._meta(exact), "runs": len(specs), "resumed": len(specs) - len(pending)})
        if results.failures:
            warnings.warn(f"{len(results.failures)} of {len(specs)} runs failed (see Results.failures); the "
                          f"first: {results.failures[0]['error']}", RunFailedWarning, stacklevel=user_stacklevel())
        return results

    def _all_exact(self, fail_fast: bool) -> tuple[dict[str, dict[str, tuple]], dict[str, BaseException]]:
        """Every problem's exact values, and the errors of those whose ``exact()`` failed (unless ``fail_fast``)."""
        exact: dict[str, dict[str, tuple]] = {}
        exact_errors: dict[str, BaseException] = {}
        for problem in self.problems:
            try:
                exact[problem.name] = self._exact_of(problem)
            except Exception as exc:  # failures are data: this problem's runs are recorded as failed
                if is_interrupt(exc):
                    raise KeyboardInterrupt from exc
                if fail_fast:
                    raise
                exact_errors[problem.name] = exc
        return exact, exact_errors

    def _resume(self, store: RunStore, exact: Mapping[str, Mapping[str, tuple]],
                records: dict[tuple, dict[str, Any]], warmups: list[dict[str, Any]]) -> None:
        """Load this study's finished runs and warm-ups from ``store`` into ``records`` / ``warmups``, and
        append the study's metadata and exact values where the store does not hold them yet."""
        stored_exact: set[str] = set()
        stored_meta: dict[str, Any] | None = None
        for rec in read_records(store.path):
            if rec.get("study", "") != self.name:
                continue
            if rec.get("type") == "warmup":
                warmups.append(rec)
            elif rec.get("type") == "run" and rec.get("status") == "ok":
                records[run_key(rec)] = rec
            elif rec.get("type") == "exact":
                stored_exact.add(rec["problem"])
            elif rec.get("type") == "study":
                stored_meta = rec
        # what a reader of the folder needs to rebuild the rows without the suite's code (once)
        meta = json.loads(dumps({"type": "study", "study": self.name, **self._meta(exact)}))
        if meta != stored_meta:
            store.append(meta)
        for name, ex in exact.items():
            if name not in stored_exact:
                store.append({"type": "exact", "study": self.name, "problem": name,
                              "targets": {t: {"value": v[0], "stderr": v[1], "provenance": v[2]}
                                          for t, v in ex.items()}})

    def _work(self, specs: Sequence[RunSpec], todo: Sequence[int]) -> list[tuple]:
        """The arguments of :func:`_execute` for runs ``todo`` (the warm-up at the estimator's smallest budget)."""
        token = uuid.uuid4().hex
        work = []
        for i in todo:
            s = specs[i]
            problem, est = self.problems[s.problem_index], self.estimators[s.estimator_index]
            warm = None
            if getattr(est, "warmup", True):
                b0 = min(self.budgets[est.name])
                warm = (token, b0, warmup_seed(self.seed, problem.name, est.name, b0))
            work.append((problem, est, s.budget, s.seed, warm, i, s.replicate == 0))
        return work

    def _meta(self, exact: Mapping[str, Mapping[str, tuple]]) -> dict[str, Any]:
        """The study's metadata (what :attr:`Results.meta` and the store's study record hold)."""
        return {
            "seed": self.seed, "replicates": self.replicates,
            "problems": [p.name for p in self.problems], "estimators": [e.name for e in self.estimators],
            "budgets": {k: list(v) for k, v in self.budgets.items()},
            "budget_labels": {e.name: getattr(e, "budget_label", "budget") for e in self.estimators},
            "provenance": {p.name: getattr(p, "provenance", "") for p in self.problems},
            "references": {p: {t: {"stderr": v[1], "provenance": v[2]} for t, v in ex.items()}
                           for p, ex in exact.items()},
            "sizes": {p.name: dict(p.size()) if hasattr(p, "size") else {} for p in self.problems},
            "kinds": {p.name: getattr(p, "kind", None) for p in self.problems},
            "skipped": [list(pair) for pair in self.skipped_pairs()],
            "baseline": {p.name: self.baseline for p in self.problems} if self.baseline else {}}

    def _consume(self, outputs, specs, exact, warmups, record, store, bar, fail_fast) -> None:
        """Record each run output as it arrives (validated), appending it to the store."""
        try:
            for out in outputs:
                s = specs[out["index"]]
                problem, est = self.problems[s.problem_index], self.estimators[s.estimator_index]
                if out["warmup"] is not None:
                    w = {"type": "warmup", "study": self.name, "problem": problem.name, "estimator": est.name,
                         **out["warmup"]}
                    warmups.append(w)
                    if store is not None:
                        store.append(w)
                rec = self._base_record(s)
                error: BaseException | None = None
                if out["status"] == "ok":
                    who = (f"estimator {est.name!r} on problem {problem.name!r} "
                           f"(budget={s.budget}, replicate={s.replicate}, seed={s.seed})")
                    try:
                        estimates, evaluations, diagnostics = normalise(out["estimates"], exact[problem.name], who)
                    except (TypeError, ValueError) as exc:
                        error = exc
                        rec.update(status="error", error=str(exc))
                    else:
                        rec.update(status="ok", estimates=estimates, evaluations=evaluations, diagnostics=diagnostics,
                                   seconds=out["seconds"], peak_bytes=out["peak_bytes"],
                                   memory_kind=out["memory_kind"])
                else:
                    msg = (f"estimator {est.name!r} failed on problem {problem.name!r} (budget={s.budget}, "
                           f"seed={s.seed}): {out['error']}")
                    rec.update(status="error", error=msg, traceback=out.get("traceback", ""))
                    error = RuntimeError(msg)
                record(rec)
                bar.update(1)
                if error is not None and fail_fast:
                    raise error
        finally:
            bar.close()
            close = getattr(outputs, "close", None)
            if close is not None:
                close()

    def _key(self, s: RunSpec) -> tuple:
        return (self.name, self.problems[s.problem_index].name, self.estimators[s.estimator_index].name,
                int(s.budget), int(s.replicate), int(s.seed))

    def _base_record(self, s: RunSpec) -> dict[str, Any]:
        est = self.estimators[s.estimator_index]
        return {"type": "run", "study": self.name, "problem": self.problems[s.problem_index].name,
                "estimator": est.name, "budget": int(s.budget), "replicate": int(s.replicate), "seed": int(s.seed),
                "budget_label": getattr(est, "budget_label", "budget")}


def _parallel(n_jobs: int, backend: str | None) -> joblib.Parallel:
    """A joblib.Parallel yielding results as they finish (``generator_unordered``) where the backend
    allows it, else in submission order; either way each result is recorded as soon as it arrives.

    (``backend="dask"`` goes to :func:`samplers.harness.dask_runs.dask_runs` instead.)
    """
    try:
        return joblib.Parallel(n_jobs=n_jobs, backend=backend, return_as="generator_unordered")
    except (ValueError, TypeError):  # pragma: no cover - backends without unordered generators
        return joblib.Parallel(n_jobs=n_jobs, backend=backend, return_as="generator")
