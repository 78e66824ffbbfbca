"""Running a registered suite: one Study per part, results streamed to an output folder and merged.

:func:`run_suite` with ``out`` is what ``mcsa bench run`` does: it validates the folder before any
run (:func:`~samplers.harness.store.prepare_output_dir`), writes a manifest saying the folder holds
an *incomplete* study of this suite and seed, appends every finished run to ``runs.jsonl``, and at
the end writes the summaries and plots through a temporary folder and marks the manifest
*complete*.  Interrupted (Ctrl-C, a kill), the folder keeps every finished run and says it is
incomplete; ``resume=True`` continues it without repeating finished runs, with results identical
to an uninterrupted run.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

from .registry import Suite, load_suite
from .results import Results
from .store import (
    FORMAT,
    MANIFEST,
    RUNS,
    OutputLock,
    RunStore,
    now,
    prepare_output_dir,
    versions,
    write_json_atomic,
)
from .study import Study
from .writers import write_outputs


def _studies(suite: Suite, replicates: int | None, seed: int, budgets: Sequence[int] | None,
             baseline: str | None) -> list[Study]:
    out = []
    parts = suite.parts or [suite]
    for i, part in enumerate(parts):
        if part.parts:
            out.extend(_studies(part, replicates, seed, budgets, baseline))
            continue
        label = part.name or (suite.name if part is suite else f"{suite.name or 'part'}-{i}")
        names = {e.name for e in part.estimators}
        base = baseline if baseline in names else part.baseline
        if baseline is not None and not any(baseline in {e.name for e in p.estimators} for p in parts):
            raise ValueError(f"baseline {baseline!r} is not an estimator of suite {suite.name!r}")
        out.append(Study(part.problems, part.estimators, part.budgets if budgets is None else list(budgets),
                         replicates=part.replicates if replicates is None else replicates, seed=seed,
                         baseline=base, name=label if suite.parts else ""))
    return out


def run_suite(suite: Suite | str, *, replicates: int | None = None, seed: int = 0, n_jobs: int = 1,
              budgets: Sequence[int] | None = None, progress: bool | None = None, out: str | Path | None = None,
              resume: bool = False, force: bool = False, fail_fast: bool = False, plots: bool = True,
              baseline: str | None = None, suite_options: Mapping[str, Any] | None = None,
              backend: str | None = None) -> Results:
    """Run a suite (or a registered suite name) and return its results.

    A suite with ``parts`` (like ``quick``) runs each part as its own study, so estimators meet only
    the problems of their own part; ``replicates`` and ``budgets`` override the suite's defaults for
    every part.

    Parameters
    ----------
    suite : Suite or str
        The suite, or the name of a registered one (see ``mcsa bench list suites``).
    replicates : int, optional
        Independent replicates per (problem, estimator, budget) cell; default: the suite's.
    seed : int
        Study seed; every run's seed is derived from it and the run's coordinates
        (:func:`~samplers.harness.study.run_seed`).
    n_jobs : int
        Parallel workers (joblib semantics: -1 = all cores).  Results do not depend on it.
    budgets : sequence of int, optional
        Budgets overriding every part's own.
    progress : bool, optional
        Show a progress bar on stderr (default: only when stderr is a terminal).
    out : path, optional
        Output folder: validated before anything runs, then ``runs.jsonl`` (streamed),
        ``manifest.json``, ``results.csv``, ``summary.csv``, ``summary.md``, ``results.json`` and the
        plots (see :mod:`samplers.harness.store`).  Without it nothing is written.
    resume, force : bool
        Continue the study already in ``out`` (finished runs are kept), or replace it.  A resume
        takes ``replicates``, ``budgets`` and ``baseline`` from the folder's manifest unless given.
        The folder is locked while the study runs (:class:`~samplers.harness.store.OutputLock`): a
        second run or resume on it is refused at once with ``OutputDirError``.
    fail_fast : bool
        Stop at the first failed run instead of recording it and continuing.
    plots : bool
        Write the PNG plots (with ``out``).
    baseline : str, optional
        Estimator name for the UAI-style score, overriding the suite's ``baseline``.
    suite_options : mapping, optional
        Keyword arguments of a registered suite's factory (``mcsa bench run --suite-arg KEY=VALUE``).
    backend : str, optional
        joblib backend of the studies (``"dask"``: the current ``distributed.Client``'s cluster; see
        :meth:`Study.run`).
    """
    name = suite if isinstance(suite, str) else (suite.name or "suite")
    if out is None:
        if isinstance(suite, str):
            suite = load_suite(suite, **dict(suite_options or {}))
        studies = _studies(suite, replicates, seed, budgets, baseline)
        return Results.concat([s.run(n_jobs=n_jobs, progress=progress, fail_fast=fail_fast, backend=backend)
                               for s in studies])
    if isinstance(suite, str):
        from .registry import suite_exists

        if not suite_exists(suite):
            load_suite(suite)  # raises the unknown-suite error listing the known ones
    with OutputLock(out):  # a second run or resume on this folder is refused while this one runs
        folder, previous = prepare_output_dir(out, suite=name, seed=seed, resume=resume, force=force)
        if previous is not None:  # a resume keeps the flags that shaped the study unless they are given again
            replicates = previous.get("replicates") if replicates is None else replicates
            budgets = previous.get("budgets") if budgets is None else budgets
            baseline = previous.get("baseline") if baseline is None else baseline
        return _run_in(folder, previous,
                       suite if not isinstance(suite, str) else load_suite(suite, **dict(suite_options or {})), name,
                       replicates=replicates, seed=seed, n_jobs=n_jobs, budgets=budgets, progress=progress,
                       fail_fast=fail_fast, plots=plots, baseline=baseline, backend=backend)


def _run_in(folder: Path, previous: dict[str, Any] | None, suite: Suite, name: str, *, replicates: int | None,
            seed: int, n_jobs: int, budgets: Sequence[int] | None, progress: bool | None, fail_fast: bool,
            plots: bool, baseline: str | None, backend: str | None = None) -> Results:
    """Run ``suite``'s studies streaming into ``folder`` (locked and prepared), then write the outputs."""
    studies = _studies(suite, replicates, seed, budgets, baseline)
    manifest: dict[str, Any] = {
        "format": FORMAT, "suite": name, "description": suite.description, "seed": seed,
        "replicates": replicates, "budgets": None if budgets is None else list(budgets), "baseline": baseline,
        "n_jobs": n_jobs, "status": "incomplete", "started": (previous or {}).get("started", now()),
        "resumed": previous is not None, "versions": versions(),
        "command": " ".join(sys.argv) if sys.argv and sys.argv[0] else "",
        "runs": sum(len(s.runs()) for s in studies), "files": (previous or {}).get("files", [])}
    write_json_atomic(folder / MANIFEST, manifest)
    with RunStore(folder / RUNS) as store:
        results = Results.concat([s.run(n_jobs=n_jobs, progress=progress, store=store, fail_fast=fail_fast,
                                        backend=backend)
                                  for s in studies])
    results.meta["suite"] = name
    written = write_outputs(results, folder, title=f"mcsa bench run --suite {name} (seed {seed})", plots=plots,
                            stale=list(manifest["files"]))
    manifest.update(status="complete", finished=now(), files=sorted(written), failed=len(results.failures),
                    references={p: {t: r.get("provenance", "") for t, r in refs.items()}
                                for p, refs in results.meta.get("references", {}).items()})
    write_json_atomic(folder / MANIFEST, manifest)
    results.meta["written"] = sorted(written)
    return results
