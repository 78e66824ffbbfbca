"""Results of a study: tidy per-run rows (and their array estimates), with the statistics of
:mod:`samplers.harness.summary` and the files of :mod:`samplers.harness.writers` one call away."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

from . import writers
from .problem import Exact, split_exact
from .records import normalise
from .summary import scores, summarise

FAILURE_FIELDS = ("study", "problem", "estimator", "budget", "replicate", "seed", "error")


class Results:
    """Tidy per-run rows of a :class:`~samplers.harness.Study`.

    Each row holds one (run, target): ``problem, estimator, budget, budget_label, replicate, seed,
    target, estimate, exact, exact_stderr, error, sq_error, seconds, evaluations, peak_bytes,
    memory_kind, diagnostics``.  For a scalar target ``error = estimate - exact``; for an array target
    (marginals, expected counts) the row's ``estimate`` and ``exact`` are None, the arrays are kept
    in :attr:`arrays` (same index as the row), ``error`` is the L2 norm of the difference and
    ``sq_error`` its square.  A *measured* target (the problem gives no reference, ``exact`` None)
    has ``error`` and ``sq_error`` None.  ``seconds`` is the warm wall time of the ``estimate``
    call; ``evaluations`` the machine-independent cost the estimator reported (None if it reports
    none); ``peak_bytes`` is what the estimator's memory meter measured (``memory_kind`` says which
    meter: ``tracemalloc`` = peak of Python/NumPy allocations during the call; ``torch-autograd``
    or ``autograd-saved+outputs`` = bytes saved for backward plus outputs; ``cuda-peak`` = the
    CUDA caching allocator's peak); ``diagnostics`` what the estimator reported about the run (a dict such
    as ``{"converged": False, "iterations": 3}``, written to CSV as JSON; None if it reports none).

    Attributes
    ----------
    failures : list of dict
        Failed runs: ``study, problem, estimator, budget, replicate, seed, error``.
    warmups : list of dict
        Untimed warm-up calls: ``problem, estimator, budget, seed, seconds, error``.
    meta : dict
        Study metadata (seed, replicates, budgets, provenance, references, skipped pairs ...).
    """

    def __init__(self, rows: Iterable[Mapping[str, Any]] | None = None):
        self.rows: list[dict[str, Any]] = [dict(r) for r in (rows or [])]
        self.arrays: dict[int, tuple[np.ndarray, np.ndarray | None]] = {}
        self.meta: dict[str, Any] = {}
        self.failures: list[dict[str, Any]] = []
        self.warmups: list[dict[str, Any]] = []

    # -- building ------------------------------------------------------------------------------
    def add_record(self, record: Mapping[str, Any], exact: Mapping[str, tuple]) -> None:
        """Add one run record (see :mod:`samplers.harness.store`) given the problem's exact entries
        ``{target: (value or None, stderr, provenance)}``; a failed run goes to :attr:`failures`."""
        if record.get("status") != "ok":
            self.failures.append({k: record.get(k, "") for k in FAILURE_FIELDS})
            return
        evaluations = record.get("evaluations")
        refs = self.meta.setdefault("references", {}).setdefault(record["problem"], {})
        for target, raw in record["estimates"].items():
            truth, stderr = exact[target][0], exact[target][1]
            if target not in refs:
                refs[target] = {"stderr": stderr, "provenance": exact[target][2] if len(exact[target]) > 2 else ""}
            value = raw if isinstance(raw, float) else (float(raw) if np.ndim(raw) == 0
                                                        else np.asarray(raw, dtype=np.float64))
            row = {"problem": record["problem"], "estimator": record["estimator"], "budget": int(record["budget"]),
                   "budget_label": record.get("budget_label", "budget"), "replicate": int(record["replicate"]),
                   "seed": int(record["seed"]), "target": target, "seconds": float(record["seconds"]),
                   "evaluations": None if evaluations is None else float(evaluations),
                   "peak_bytes": None if record.get("peak_bytes") is None else int(record["peak_bytes"]),
                   "memory_kind": record["memory_kind"], "diagnostics": record.get("diagnostics")}
            if truth is None:
                if isinstance(value, float):
                    row.update(estimate=value, exact=None, exact_stderr=None, error=None, sq_error=None)
                else:
                    row.update(estimate=None, exact=None, exact_stderr=None, error=None, sq_error=None)
                    self.arrays[len(self.rows)] = (value, None)
            elif isinstance(truth, float):
                err = value - truth
                row.update(estimate=value, exact=truth, exact_stderr=float(stderr), error=err, sq_error=err * err)
            else:
                sq = float(np.sum((value - truth) ** 2))
                row.update(estimate=None, exact=None, exact_stderr=None,
                           error=math.sqrt(sq) if math.isfinite(sq) else float("nan"), sq_error=sq)
                self.arrays[len(self.rows)] = (np.asarray(value, dtype=np.float64), truth)
            self.rows.append(row)

    def add_run(self, *, problem: str, estimator: str, budget: int, replicate: int, seed: int,
                estimates: Mapping[str, Any], exact: Mapping[str, Any], seconds: float, peak_bytes: int,
                memory_kind: str, budget_label: str = "budget") -> None:
        """Record one run's estimates against plain exact values; raises if a target is unknown or a
        shape is wrong (the :class:`Study` records such runs as failures instead)."""
        who = f"estimator {estimator!r} on problem {problem!r} (budget={budget}, replicate={replicate})"
        ex = {t: split_exact(v, t, "exact") for t, v in exact.items()}
        values, evaluations, diagnostics = normalise(estimates, ex, who)
        self.add_record({"status": "ok", "problem": problem, "estimator": estimator, "budget": budget,
                         "replicate": replicate, "seed": seed, "estimates": values, "evaluations": evaluations,
                         "diagnostics": diagnostics,
                         "seconds": seconds, "peak_bytes": peak_bytes, "memory_kind": memory_kind,
                         "budget_label": budget_label}, ex)

    @classmethod
    def from_records(cls, records: Iterable[Mapping[str, Any]], exact: Mapping[str, Mapping[str, tuple]]
                     ) -> "Results":
        """Results of run records (in row order) given each problem's exact entries ``{problem: {target:
        (value or None, stderr, provenance)}}``.  A run whose peak memory was not measured (every
        replicate but the cell's memory call) gets its cell's peak."""
        records = list(records)
        peaks = {(r["problem"], r["estimator"], r["budget"]): r["peak_bytes"] for r in records
                 if r.get("status") == "ok" and r.get("peak_bytes") is not None}
        out = cls()
        for rec in records:
            if rec.get("status") == "ok" and rec.get("peak_bytes") is None:
                rec = {**rec, "peak_bytes": peaks.get((rec["problem"], rec["estimator"], rec["budget"]))}
            out.add_record(rec, exact.get(rec["problem"], {}))
        return out

    @classmethod
    def concat(cls, parts: Iterable["Results"]) -> "Results":
        """Concatenate results of several studies (e.g. the sub-suites of ``quick``)."""
        out = cls()
        for part in parts:
            offset = len(out.rows)
            out.rows.extend(part.rows)
            out.arrays.update({offset + i: v for i, v in part.arrays.items()})
            out.failures.extend(part.failures)
            out.warmups.extend(part.warmups)
            for key, value in part.meta.items():
                if isinstance(value, list):
                    out.meta.setdefault(key, []).extend(value)
                elif isinstance(value, dict):
                    out.meta.setdefault(key, {}).update(value)
                elif isinstance(value, (int, float)) and key in ("runs", "resumed"):
                    out.meta[key] = out.meta.get(key, 0) + value
                else:
                    out.meta.setdefault(key, value)
        return out

    # -- summaries -----------------------------------------------------------------------------
    def summary(self, *, confidence: float = 0.95, n_boot: int = 2000) -> list[dict[str, Any]]:
        """One row per (problem, estimator, budget, target), with bootstrap confidence intervals.

        ``bias`` = mean error (scalar target) or the L2 norm of (mean estimate - exact) (array
        target); ``variance`` = sample variance over replicates (ddof=1; 0 for one replicate),
        summed over components for arrays; ``mse`` = mean squared error; ``rmse`` = sqrt(mse);
        ``mean_seconds``, ``mean_evaluations`` and ``max_peak_bytes`` over replicates;
        ``warmup_seconds`` = the longest warm-up call of the (problem, estimator) pair.

        ``*_lo``/``*_hi`` are expanded-percentile bootstrap intervals over replicates (Hesterberg
        2015: percentiles at Phi(+-sqrt(n/(n-1)) t_{n-1}), which keeps near-nominal coverage for
        means at small n), with ``n_boot`` resamples from a generator seeded by the cell's
        coordinates (so summaries are reproducible).  The reference's standard error (``Exact``)
        enters by perturbing the exact value in every resample by a normal draw with that
        standard deviation.  A cell with one replicate has no interval (None).

        ``score`` = 100 ln(E_b / E) / ln(E_b / tol) clipped to [0, 100] (:func:`samplers.harness.summary.score`):
        E the cell's RMSE, E_b the baseline estimator's (at its largest budget, same problem and target),
        ``score_tol`` = tol the reference's precision (the L2 norm of its standard error, at least
        :data:`~samplers.harness.summary.SCORE_FLOOR`); an error within tol scores 100, the baseline 0,
        and every halving of the error adds the same amount.  None without a baseline, or where the
        baseline's error is already within tol.  ``unconverged`` = the cell's runs whose ``diagnostics``
        say ``converged: False`` (None when no run reports convergence).

        Measured targets (no reference) get ``mean_estimate`` and its interval ``mean_lo``/
        ``mean_hi``; bias, MSE and their intervals are None.  A group with a non-finite estimate gets
        NaN statistics and a RuntimeWarning naming the group.
        """
        if not 0 < confidence < 1:
            raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
        n_boot = int(n_boot)
        if n_boot < 100:
            raise ValueError(f"n_boot must be >= 100, got {n_boot}")
        key = (confidence, n_boot, len(self.rows), len(self.warmups), repr(self.meta.get("baseline")))
        cached = getattr(self, "_summary_cache", None)
        if cached is None or cached[0] != key:
            cached = (key, summarise(self.rows, self.arrays, self.warmups, self.meta, confidence, n_boot))
            self._summary_cache = cached
        return [dict(cell) for cell in cached[1]]

    def scores(self, summary: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
        """Pooled UAI-style ranking: per estimator, the mean 0-100 score over the (problem, target)
        cells it ran, each at its largest budget (see :meth:`summary`); empty without a baseline."""
        return scores(self.summary() if summary is None else summary)

    def estimates(self, problem: str, estimator: str, budget: int, target: str) -> np.ndarray:
        """Per-replicate estimates of one cell, stacked (arrays for array targets)."""
        idx = [i for i, r in enumerate(self.rows) if (r["problem"], r["estimator"], r["budget"], r["target"])
               == (problem, estimator, budget, target)]
        if not idx:
            raise KeyError(f"no runs for ({problem!r}, {estimator!r}, {budget}, {target!r})")
        if idx[0] in self.arrays:
            return np.stack([self.arrays[i][0] for i in idx])
        return np.array([self.rows[i]["estimate"] for i in idx], dtype=float)

    # -- writers (samplers.harness.writers) ------------------------------------------------------
    def to_csv(self, path: str | Path) -> Path:
        """Write the per-run rows (array estimates are summarised by ``error``/``sq_error``)."""
        return writers.write_csv(path, writers.ROW_FIELDS, self.rows)

    def summary_to_csv(self, path: str | Path, summary: list[dict[str, Any]] | None = None) -> Path:
        """Write :meth:`summary` as CSV."""
        return writers.write_csv(path, writers.SUMMARY_FIELDS, self.summary() if summary is None else summary)

    def to_json(self, path: str | Path, summary: list[dict[str, Any]] | None = None) -> Path:
        """Write rows, summary, failures, warm-ups and study metadata as one JSON document."""
        return writers.to_json(self, self.summary() if summary is None else summary, path)

    def to_markdown(self, digits: int = 4, summary: list[dict[str, Any]] | None = None) -> str:
        """The summary as a Markdown table (:func:`samplers.harness.writers.to_markdown`)."""
        return writers.to_markdown(self.summary() if summary is None else summary, digits)

    def report_markdown(self, title: str = "mcsa study", summary: list[dict[str, Any]] | None = None) -> str:
        """summary.md: the table plus what its numbers mean (:func:`samplers.harness.writers.report_markdown`)."""
        return writers.report_markdown(self, self.summary() if summary is None else summary, title)

    def plot(self, out_dir: str | Path, *, prefix: str = "", summary: list[dict[str, Any]] | None = None
             ) -> list[Path]:
        """Error-vs-cost plots; see :func:`samplers.harness.writers.plot_error_vs_cost`."""
        return writers.plot_error_vs_cost(self.summary() if summary is None else summary, out_dir, prefix=prefix)

    def save(self, out_dir: str | Path, *, plots: bool = True, title: str = "mcsa study") -> dict[str, Path]:
        """Write results.csv, summary.csv, summary.md, results.json and (optionally) PNG plots, through
        the one writer every path uses (:func:`samplers.harness.writers.write_outputs`)."""
        names = writers.write_outputs(self, out_dir, title=title, plots=plots)
        return {name: Path(out_dir) / name for name in names}

    def to_pandas(self, which: str = "rows") -> "Any":
        """The tidy rows (``which="rows"``, the columns of results.csv plus ``study``-free array targets'
        estimates as arrays in ``estimate_array``) or the summary (``which="summary"``) as a
        :class:`pandas.DataFrame`.  Needs pandas: ``pip install "mcsa[analysis]"``.

        Examples
        --------
        >>> from samplers.harness import FunctionEstimator, FunctionProblem, Study
        >>> res = Study([FunctionProblem("c", lambda: {"m": 0.5})],
        ...             [FunctionEstimator("e", lambda p, n, s: {"m": 0.5})], [1], replicates=2).run(progress=False)
        >>> res.to_pandas().shape[0], list(res.to_pandas("summary")["rmse"])  # doctest: +SKIP
        (2, [0.0])
        """
        if which not in ("rows", "summary"):
            raise ValueError(f"which must be 'rows' or 'summary', got {which!r}")
        try:
            import pandas as pd
        except ImportError:
            raise ImportError('Results.to_pandas needs pandas, which is not installed; install the extra with '
                              'pip install "mcsa[analysis]" (or pip install pandas)') from None
        if which == "summary":
            return pd.DataFrame(self.summary(), columns=list(writers.SUMMARY_FIELDS))
        frame = pd.DataFrame(self.rows, columns=list(writers.ROW_FIELDS))
        frame["estimate_array"] = [self.arrays[i][0] if i in self.arrays else None for i in range(len(self.rows))]
        return frame

    def __len__(self) -> int:
        return len(self.rows)

    def __repr__(self) -> str:
        failed = f", {len(self.failures)} failed runs" if self.failures else ""
        return f"Results({len(self.rows)} rows{failed})"


def read_results(folder: str | Path) -> Results:
    """The results of a study folder written by ``mcsa bench run --out`` / ``run_suite(out=...)``,
    finished or not (interrupted, or still running), rebuilt from its run store alone.

    Every finished run's rows come back exactly as the study returned them (the store keeps the
    problems' exact answers and the study's metadata beside the runs), so a partial folder can be
    analysed before it is resumed, e.g. with :meth:`Results.to_pandas`.  ``meta["status"]`` is the
    manifest's ``complete`` / ``incomplete``.

    Raises
    ------
    ValueError
        If the folder holds no run store, or one written before the store kept exact answers.
    """
    from .store import MANIFEST, RUNS, read_manifest, read_records, run_key

    folder = Path(folder)
    if not (folder / RUNS).is_file():
        raise ValueError(f"{folder} holds no run store ({RUNS}); is it the --out folder of `mcsa bench run`?")
    manifest = read_manifest(folder) if (folder / MANIFEST).exists() else None
    studies: dict[str, dict[str, Any]] = {}
    for rec in read_records(folder / RUNS):
        st = studies.setdefault(rec.get("study", ""), {"meta": None, "exact": {}, "runs": {}, "warmups": []})
        kind = rec.get("type")
        if kind == "study":
            st["meta"] = {k: v for k, v in rec.items() if k not in ("type", "study")}
        elif kind == "exact":
            st["exact"][rec["problem"]] = {
                t: split_exact(Exact(e["value"], e["stderr"], e.get("provenance", "")), t, f"{RUNS}")
                for t, e in rec["targets"].items()}
        elif kind == "warmup":
            st["warmups"].append(rec)
        elif kind == "run":
            key = run_key(rec)
            if rec.get("status") == "ok" or st["runs"].get(key, {}).get("status") != "ok":
                st["runs"][key] = rec
    parts = []
    for st in studies.values():
        if st["meta"] is None:
            raise ValueError(f"{folder / RUNS} was written by an older mcsa that did not store exact answers; "
                             "rerun the study (or read its results.csv)")
        res = Results.from_records(st["runs"].values(), st["exact"])
        res.warmups = st["warmups"]
        res.meta.update(st["meta"])
        res.meta["runs_read"] = len(st["runs"])
        parts.append(res)
    out = Results.concat(parts)
    out.meta["status"] = (manifest or {}).get("status", "incomplete")
    if manifest is not None:
        out.meta["suite"] = manifest.get("suite")
    return out

