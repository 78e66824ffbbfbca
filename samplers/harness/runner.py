"""Running a registered suite: one Study per part, results merged."""

from __future__ import annotations

from typing import Sequence

from .registry import Suite, load_suite
from .results import Results
from .study import Study


def run_suite(suite: Suite | str, *, replicates: int | None = None, seed: int = 0, n_jobs: int = 1,
              budgets: Sequence[int] | None = None, progress: bool | None = None) -> Results:
    """Run a suite (or a registered suite name) and return its results.

    A suite with ``parts`` (like ``quick``) runs each part as its own study, so estimators meet only
    the problems of their own part; ``replicates`` and ``budgets`` override the suite's defaults for
    every part.
    """
    if isinstance(suite, str):
        suite = load_suite(suite)
    parts = suite.parts or [suite]
    results = []
    for part in parts:
        if part.parts:
            results.append(run_suite(part, replicates=replicates, seed=seed, n_jobs=n_jobs, budgets=budgets,
                                     progress=progress))
            continue
        study = Study(part.problems, part.estimators, part.budgets if budgets is None else list(budgets),
                      replicates=part.replicates if replicates is None else replicates, seed=seed)
        results.append(study.run(n_jobs=n_jobs, progress=progress))
    return Results.concat(results)
