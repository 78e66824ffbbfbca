"""Results of a study: tidy rows, summaries (bias, variance, MSE, time, memory) and writers."""

from __future__ import annotations

import csv
import json
import math
import shutil
import tempfile
import warnings
import zlib
from collections import OrderedDict
from functools import lru_cache
from pathlib import Path
from statistics import NormalDist
from typing import Any, Iterable, Mapping

import numpy as np

ROW_FIELDS = ("problem", "estimator", "budget", "budget_label", "replicate", "seed", "target", "estimate",
              "exact", "exact_stderr", "error", "sq_error", "seconds", "evaluations", "peak_bytes", "memory_kind")
SUMMARY_FIELDS = ("problem", "estimator", "budget", "budget_label", "target", "n", "exact", "exact_stderr",
                  "mean_estimate", "mean_lo", "mean_hi", "bias", "bias_lo", "bias_hi", "variance", "mse", "mse_lo",
                  "mse_hi", "rmse", "rmse_lo", "rmse_hi", "score", "mean_seconds", "mean_evaluations",
                  "warmup_seconds", "max_peak_bytes", "memory_kind")
FAILURE_FIELDS = ("study", "problem", "estimator", "budget", "replicate", "seed", "error")

#: Meaning of each memory meter's number (summary.md legend).
MEMORY_KINDS = {
    "tracemalloc": "peak of Python/NumPy allocations during the call (not Numba-native or torch memory)",
    "autograd-saved+outputs": "bytes torch autograd saved for backward plus the outputs (CPU)",
    "torch-autograd": "bytes torch autograd saved for backward plus the outputs (CPU)",
    "cuda-peak": "torch.cuda.max_memory_allocated above the level at entry",
    "none": "not measured",
}


class Results:
    """Tidy per-run rows of a :class:`~samplers.harness.Study`.

    Each row holds one (run, target): ``problem, estimator, budget, budget_label, replicate, seed,
    target, estimate, exact, exact_stderr, error, sq_error, seconds, evaluations, peak_bytes,
    memory_kind``.  For a scalar target ``error = estimate - exact``; for an array target
    (marginals, expected counts) the row's ``estimate`` and ``exact`` are None, the arrays are kept
    in :attr:`arrays` (same index as the row), ``error`` is the L2 norm of the difference and
    ``sq_error`` its square.  A *measured* target (the problem gives no reference, ``exact`` None)
    has ``error`` and ``sq_error`` None.  ``seconds`` is the warm wall time of the ``estimate``
    call; ``evaluations`` the machine-independent cost the estimator reported (None if it reports
    none); ``peak_bytes`` is what the estimator's memory meter measured (``memory_kind`` says which
    meter: ``tracemalloc`` = peak of Python/NumPy allocations during the call; ``torch-autograd``
    or ``autograd-saved+outputs`` = bytes saved for backward plus outputs; ``cuda-peak`` = the
    CUDA caching allocator's peak).

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
                   "peak_bytes": int(record["peak_bytes"]), "memory_kind": record["memory_kind"]}
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
                self.arrays[len(self.rows)] = (value, truth)
            self.rows.append(row)

    def add_run(self, *, problem: str, estimator: str, budget: int, replicate: int, seed: int,
                estimates: Mapping[str, Any], exact: Mapping[str, Any], seconds: float, peak_bytes: int,
                memory_kind: str, budget_label: str = "budget") -> None:
        """Record one run's estimates against plain exact values; raises if a target is unknown or a
        shape is wrong (the :class:`Study` records such runs as failures instead)."""
        from .problem import split_exact
        from .study import _normalise

        who = f"estimator {estimator!r} on problem {problem!r} (budget={budget}, replicate={replicate})"
        ex = {t: split_exact(v, t, "exact") for t, v in exact.items()}
        values, evaluations = _normalise(estimates, ex, who)
        self.add_record({"status": "ok", "problem": problem, "estimator": estimator, "budget": budget,
                         "replicate": replicate, "seed": seed, "estimates": values, "evaluations": evaluations,
                         "seconds": seconds, "peak_bytes": peak_bytes, "memory_kind": memory_kind,
                         "budget_label": budget_label}, ex)

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

        ``score`` = max(0, 100 (1 - RMSE / RMSE_baseline)): the UAI inference competition's
        partition-function score with the baseline estimator's RMSE (at its largest budget, same
        problem and target) as MaxErr; None without a baseline.

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
            cached = (key, self._summary(confidence, n_boot))
            self._summary_cache = cached
        return [dict(cell) for cell in cached[1]]

    def _summary(self, confidence: float, n_boot: int) -> list[dict[str, Any]]:
        from .study import user_stacklevel

        references = self.meta.get("references", {})
        warm = {}
        for w in self.warmups:
            key = (w["problem"], w["estimator"])
            warm[key] = max(warm.get(key, 0.0), float(w["seconds"]))
        groups: "OrderedDict[tuple, list[int]]" = OrderedDict()
        for i, row in enumerate(self.rows):
            groups.setdefault((row["problem"], row["estimator"], row["budget"], row["target"]), []).append(i)
        out = []
        for (problem, estimator, budget, target), idx in groups.items():
            rows = [self.rows[i] for i in idx]
            n = len(rows)
            rng = np.random.default_rng(zlib.crc32(repr((problem, estimator, budget, target)).encode()))
            cell = {"problem": problem, "estimator": estimator, "budget": budget,
                    "budget_label": rows[0]["budget_label"], "target": target, "n": n, "exact": None,
                    "exact_stderr": None, **{f: None for f in _STAT_FIELDS}, "score": None,
                    "mean_seconds": float(np.mean([r["seconds"] for r in rows])),
                    "mean_evaluations": (None if any(r.get("evaluations") is None for r in rows)
                                         else float(np.mean([r["evaluations"] for r in rows]))),
                    "warmup_seconds": warm.get((problem, estimator)),
                    "max_peak_bytes": int(max(r["peak_bytes"] for r in rows)),
                    "memory_kind": rows[0]["memory_kind"]}
            is_array = idx[0] in self.arrays
            est = (np.stack([self.arrays[i][0] for i in idx]) if is_array
                   else np.array([r["estimate"] for r in rows], dtype=float))
            truth = self.arrays[idx[0]][1] if is_array else rows[0]["exact"]
            finite = bool(np.all(np.isfinite(est)))
            if not finite:
                bad = [self.rows[i]["replicate"] for i in idx
                       if not np.all(np.isfinite(self.arrays[i][0] if is_array else self.rows[i]["estimate"]))]
                warnings.warn(f"summary of estimator {estimator!r} on problem {problem!r} (budget={budget}, "
                              f"target {target!r}) includes non-finite estimates (replicates {bad}): NaN",
                              RuntimeWarning, stacklevel=user_stacklevel())
            if truth is None:  # measured target: mean and its interval only
                if not is_array:
                    cell["mean_estimate"] = float(est.mean()) if finite else float("nan")
                    cell["variance"] = (float(est.var(ddof=1)) if n > 1 else 0.0) if finite else float("nan")
                    if finite and n > 1:
                        lo, hi = _expanded_percentile(_resample_means(est, n_boot, rng), n, confidence)
                        cell.update(mean_lo=lo, mean_hi=hi)
                out.append(cell)
                continue
            stderr = _stderr(references, problem, target, truth)
            cell["exact"] = None if is_array else truth
            cell["exact_stderr"] = None if is_array else float(stderr)
            if not finite:
                cell.update(bias=float("nan"), variance=float("nan"), mse=float("nan"), rmse=float("nan"))
                if not is_array:
                    cell["mean_estimate"] = float("nan")
                out.append(cell)
                continue
            if is_array:
                mean_est = est.mean(axis=0)
                cell["bias"] = float(np.linalg.norm(mean_est - truth))
                cell["variance"] = float(np.sum(est.var(axis=0, ddof=1))) if n > 1 else 0.0
            else:
                cell["mean_estimate"] = float(est.mean())
                cell["bias"] = cell["mean_estimate"] - truth
                cell["variance"] = float(est.var(ddof=1)) if n > 1 else 0.0
            mse = float(np.mean([r["sq_error"] for r in rows]))
            cell.update(mse=mse, rmse=math.sqrt(mse))
            if n > 1:
                bias_b, mse_b = _bootstrap_bias_mse(est, truth, stderr, n_boot, rng, confidence)
                cell["bias_lo"], cell["bias_hi"] = _expanded_percentile(bias_b, n, confidence)
                cell["mse_lo"], cell["mse_hi"] = _expanded_percentile(mse_b, n, confidence)
                cell["rmse_lo"] = math.sqrt(max(cell["mse_lo"], 0.0))
                cell["rmse_hi"] = math.sqrt(max(cell["mse_hi"], 0.0))
            out.append(cell)
        _add_scores(out, self.meta.get("baseline", {}))
        return out

    def scores(self, summary: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
        """Pooled UAI-style ranking: per estimator, the mean 0-100 score over the (problem, target)
        cells it ran, each at its largest budget (see :meth:`summary`); empty without a baseline."""
        best: dict[tuple, dict[str, Any]] = {}
        for cell in self.summary() if summary is None else summary:
            if cell["score"] is None:
                continue
            key = (cell["estimator"], cell["problem"], cell["target"])
            if key not in best or cell["budget"] > best[key]["budget"]:
                best[key] = cell
        by_est: "OrderedDict[str, list[float]]" = OrderedDict()
        for (est, _, _), cell in best.items():
            by_est.setdefault(est, []).append(cell["score"])
        table = [{"estimator": e, "score": float(np.mean(v)), "cells": len(v)} for e, v in by_est.items()]
        return sorted(table, key=lambda r: -r["score"])

    def estimates(self, problem: str, estimator: str, budget: int, target: str) -> np.ndarray:
        """Per-replicate estimates of one cell, stacked (arrays for array targets)."""
        idx = [i for i, r in enumerate(self.rows) if (r["problem"], r["estimator"], r["budget"], r["target"])
               == (problem, estimator, budget, target)]
        if not idx:
            raise KeyError(f"no runs for ({problem!r}, {estimator!r}, {budget}, {target!r})")
        if idx[0] in self.arrays:
            return np.stack([self.arrays[i][0] for i in idx])
        return np.array([self.rows[i]["estimate"] for i in idx], dtype=float)

    # -- writers -------------------------------------------------------------------------------
    def to_csv(self, path: str | Path) -> Path:
        """Write the per-run rows (array estimates are summarised by ``error``/``sq_error``)."""
        return _write_csv(path, ROW_FIELDS, self.rows)

    def summary_to_csv(self, path: str | Path, summary: list[dict[str, Any]] | None = None) -> Path:
        """Write :meth:`summary` as CSV."""
        return _write_csv(path, SUMMARY_FIELDS, self.summary() if summary is None else summary)

    def to_json(self, path: str | Path, summary: list[dict[str, Any]] | None = None) -> Path:
        """Write rows, summary, failures, warm-ups and study metadata as one JSON document."""
        path = Path(path)
        doc = {"meta": self.meta, "summary": self.summary() if summary is None else summary, "rows": self.rows,
               "failures": self.failures, "warmups": self.warmups}
        path.write_text(json.dumps(doc, indent=1, default=_json_default, allow_nan=True))
        return path

    def to_markdown(self, digits: int = 4, summary: list[dict[str, Any]] | None = None) -> str:
        """The summary as a Markdown table: one line per (problem, target, estimator, budget), with the
        budget's unit, 95% bootstrap intervals, score, warm seconds, evaluations and memory (meter)."""
        summary = self.summary() if summary is None else summary
        has_score = any(r["score"] is not None for r in summary)
        has_evals = any(r["mean_evaluations"] is not None for r in summary)
        has_measured = any(r["mean_lo"] is not None or (r["exact"] is None and r["bias"] is None) for r in summary)
        cols = ["problem", "target", "estimator", "budget", "unit", "n"]
        if has_measured:
            cols.append("mean [95% CI]")
        cols += ["bias [95% CI]", "RMSE [95% CI]"]
        if has_score:
            cols.append("score")
        cols.append("seconds")
        if has_evals:
            cols.append("evaluations")
        cols.append("peak memory (meter)")
        lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]

        def num(v: Any) -> str:
            return "" if v is None else f"{v:.{digits}g}"

        def ci(v: Any, lo: Any, hi: Any) -> str:
            if v is None:
                return ""
            return num(v) if lo is None else f"{num(v)} [{num(lo)}, {num(hi)}]"

        for r in sorted(summary, key=lambda r: (r["problem"], r["target"], r["estimator"], r["budget"])):
            cells = [r["problem"], r["target"], r["estimator"], str(r["budget"]), r["budget_label"], str(r["n"])]
            if has_measured:
                cells.append(ci(r["mean_estimate"], r["mean_lo"], r["mean_hi"]) if r["exact"] is None
                             and r["bias"] is None else "")
            cells += [ci(r["bias"], r["bias_lo"], r["bias_hi"]), ci(r["rmse"], r["rmse_lo"], r["rmse_hi"])]
            if has_score:
                cells.append("" if r["score"] is None else f"{r['score']:.1f}")
            cells.append(num(r["mean_seconds"]))
            if has_evals:
                cells.append(num(r["mean_evaluations"]))
            cells.append(f"{_human_bytes(r['max_peak_bytes'])} ({r['memory_kind']})")
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join(lines) + "\n"

    def report_markdown(self, title: str = "mcsa study", summary: list[dict[str, Any]] | None = None) -> str:
        """summary.md: the table plus what its numbers mean (units, meters, intervals, references),
        warm-up times, the pooled score ranking, skipped pairs and failed runs."""
        summary = self.summary() if summary is None else summary
        meta = self.meta
        parts = [f"# {title}", ""]
        if "seed" in meta:
            parts.append(f"Study seed {meta['seed']}; {len(self.rows)} rows from {meta.get('runs', '?')} runs "
                         f"({len(self.failures)} failed). Times are warm wall seconds per run (each (problem, "
                         "estimator) pair had one untimed warm-up call first; see below).")
            parts.append("")
        parts += ["Intervals: 95% expanded-percentile bootstrap over replicates (the reference's standard error, "
                  "where it has one, is included). `bias` for an array target is the L2 norm of mean estimate "
                  "minus exact.", ""]
        labels = meta.get("budget_labels") or {r["estimator"]: r["budget_label"] for r in summary}
        parts.append("Budget units: " + "; ".join(f"`{e}`: {u}" for e, u in labels.items()) + ".")
        kinds = sorted({r["memory_kind"] for r in summary})
        parts.append("")
        parts.append("Memory meters: " + "; ".join(f"`{k}` = {MEMORY_KINDS.get(k, 'see the estimator')}"
                                                    for k in kinds) + ".")
        parts += ["", self.to_markdown(summary=summary)]
        ranking = self.scores(summary) if any(r["score"] is not None for r in summary) else []
        if ranking:
            base = ", ".join(sorted(set(meta.get("baseline", {}).values())))
            parts += [f"## Score (UAI style, 0-100, baseline `{base}` = 0)", "",
                      "max(0, 100 (1 - RMSE / RMSE of the baseline at its largest budget)) per (problem, target), "
                      "averaged over the cells each estimator ran at its largest budget.", "",
                      "| estimator | score | cells |", "|---|---|---|"]
            parts += [f"| {r['estimator']} | {r['score']:.1f} | {r['cells']} |" for r in ranking]
            parts.append("")
        refs = meta.get("provenance", {})
        if any(refs.values()):
            parts += ["## References", ""] + [f"- `{p}`: {v}" for p, v in refs.items() if v] + [""]
        if self.warmups:
            parts += ["## Warm-up (untimed, not in `seconds`)", "", "| problem | estimator | budget | seconds |",
                      "|---|---|---|---|"]
            parts += [f"| {w['problem']} | {w['estimator']} | {w['budget']} | {float(w['seconds']):.4g}"
                      f"{' (failed: ' + w['error'] + ')' if w.get('error') else ''} |" for w in self.warmups]
            parts.append("")
        if meta.get("skipped"):
            parts += ["## Skipped pairs (estimator does not support the problem)", ""]
            parts += [f"- {e} on {p}" for p, e in meta["skipped"]] + [""]
        if self.failures:
            parts += [f"## Failed runs ({len(self.failures)})", "", "| problem | estimator | budget | replicate | "
                      "seed | error |", "|---|---|---|---|---|---|"]
            parts += [f"| {f['problem']} | {f['estimator']} | {f['budget']} | {f['replicate']} | {f['seed']} | "
                      f"{str(f['error']).replace('|', '/')} |" for f in self.failures]
            parts.append("")
        return "\n".join(parts)

    def plot(self, out_dir: str | Path, *, prefix: str = "", summary: list[dict[str, Any]] | None = None
             ) -> list[Path]:
        """Error-vs-cost plots; see :func:`samplers.harness.report.plot_error_vs_cost`."""
        from .report import plot_error_vs_cost

        return plot_error_vs_cost(self.summary() if summary is None else summary, out_dir, prefix=prefix)

    def save(self, out_dir: str | Path, *, plots: bool = True, title: str = "mcsa study") -> dict[str, Path]:
        """Write results.csv, summary.csv, summary.md, results.json and (optionally) PNG plots.

        Files are written to a temporary folder inside ``out_dir`` and then renamed into place, so
        an interrupted save never leaves a mix of old and new files under the final names.
        """
        from .store import move_into_place

        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".partial-", dir=out))
        try:
            summary = self.summary()
            self.to_csv(tmp / "results.csv")
            self.summary_to_csv(tmp / "summary.csv", summary)
            self.to_json(tmp / "results.json", summary)
            (tmp / "summary.md").write_text(self.report_markdown(title, summary))
            if plots:
                self.plot(tmp, summary=summary)
            names = move_into_place(tmp, out, [])
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        return {name: out / name for name in names}

    def __len__(self) -> int:
        return len(self.rows)

    def __repr__(self) -> str:
        failed = f", {len(self.failures)} failed runs" if self.failures else ""
        return f"Results({len(self.rows)} rows{failed})"


_STAT_FIELDS = ("mean_estimate", "mean_lo", "mean_hi", "bias", "bias_lo", "bias_hi", "variance", "mse", "mse_lo",
                "mse_hi", "rmse", "rmse_lo", "rmse_hi")


def _stderr(references: Mapping[str, Any], problem: str, target: str, truth: Any) -> Any:
    ref = references.get(problem, {}).get(target, {})
    s = ref.get("stderr", 0.0) if isinstance(ref, Mapping) else 0.0
    if isinstance(truth, float):
        return float(s) if np.ndim(s) == 0 else 0.0
    arr = np.asarray(s, dtype=float)
    return np.broadcast_to(arr, np.shape(truth)) if arr.ndim == 0 or arr.shape == np.shape(truth) \
        else np.zeros(np.shape(truth))


def _weights(n: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap resampling weights: multinomial counts, shape (n_boot, n), rows summing to n."""
    return rng.multinomial(n, np.full(n, 1.0 / n), size=n_boot).astype(float)


def _resample_means(values: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    n = len(values)
    return _weights(n, n_boot, rng) @ values / n


@lru_cache(maxsize=256)
def _expansion(n: int, confidence: float) -> float:
    """Factor by which the expanded percentile interval widens a normal interval at n replicates:
    sqrt(n/(n-1)) t_{n-1, 1-a/2} / z_{1-a/2}."""
    from scipy.special import stdtrit

    alpha = 1.0 - confidence
    return math.sqrt(n / (n - 1)) * float(stdtrit(n - 1, 1 - alpha / 2)) / NormalDist().inv_cdf(1 - alpha / 2)


def _bootstrap_bias_mse(est: np.ndarray, truth: Any, stderr: Any, n_boot: int, rng: np.random.Generator,
                        confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap replicates of the bias and the MSE of one cell.

    Each resample draws replicates with replacement and, where the reference has a standard error
    s, a reference value truth + (s / f) z (z standard normal), so the interval carries both sources
    of uncertainty.  f is the expanded-percentile widening (:func:`_expansion`): it corrects the
    replicate part for small n, while the reference's standard error is known, so its draw is
    shrunk by f to leave that part of the width unexpanded (widths add in quadrature).  For arrays
    the bias is the L2 norm of the mean error and the MSE the mean squared L2 error, expanded as
    mean|e_i - x|^2 - 2 (mean e - x).(s z) + |s z|^2 to stay vectorised.
    """
    n = est.shape[0]
    w = _weights(n, n_boot, rng)
    shrink = 1.0 / _expansion(n, confidence)
    if est.ndim == 1:
        z = rng.standard_normal(n_boot) * (float(stderr) * shrink)
        d = est - truth  # errors; working with them (not estimates) avoids cancellation when they are tiny
        mean_d = w @ d / n
        sq_b = w @ (d * d) / n
        # mean (d - z)^2 = mean d^2 - 2 z mean d + z^2 (exactly sq_b when the reference has no stderr)
        return mean_d - z, np.maximum(sq_b - 2 * z * mean_d + z * z, 0.0)
    flat = est.reshape(n, -1)
    x = np.asarray(truth, dtype=float).reshape(-1)
    s = np.asarray(stderr, dtype=float).reshape(-1) * shrink
    z = rng.standard_normal((n_boot, x.size)) * s if np.any(s > 0) else np.zeros((n_boot, x.size))
    d_mean = w @ (flat - x) / n
    sq = np.sum((flat - x) ** 2, axis=1)
    bias_b = np.linalg.norm(d_mean - z, axis=1)
    mse_b = w @ sq / n - 2 * np.sum(d_mean * z, axis=1) + np.sum(z * z, axis=1)
    return bias_b, np.maximum(mse_b, 0.0)


def _expanded_percentile(boot: np.ndarray, n: int, confidence: float) -> tuple[float, float]:
    """Expanded percentile interval (Hesterberg 2015, "What teachers should know about the
    bootstrap", Sec. 4): the percentile interval at levels Phi(-+sqrt(n/(n-1)) t_{n-1, 1-a/2})
    instead of a/2, 1-a/2, correcting the percentile interval's narrowness at small n."""
    tail = _expanded_tail(n, confidence)
    lo, hi = np.quantile(boot, [tail, 1 - tail])
    return float(lo), float(hi)


@lru_cache(maxsize=256)
def _expanded_tail(n: int, confidence: float) -> float:
    from scipy.special import stdtrit

    alpha = 1.0 - confidence
    return NormalDist().cdf(-math.sqrt(n / (n - 1)) * float(stdtrit(n - 1, 1 - alpha / 2)))


def _add_scores(summary: list[dict[str, Any]], baselines: Mapping[str, str]) -> None:
    """Fill ``score`` of each cell with a reference: 100 (1 - RMSE / MaxErr), floored at 0, where
    MaxErr is the baseline's RMSE on the same (problem, target) at the baseline's largest budget."""
    if not baselines:
        return
    max_err: dict[tuple[str, str], float] = {}
    chosen: dict[tuple[str, str], int] = {}
    for cell in summary:
        if baselines.get(cell["problem"]) != cell["estimator"] or cell["rmse"] is None:
            continue
        key = (cell["problem"], cell["target"])
        if key not in chosen or cell["budget"] > chosen[key]:
            chosen[key], max_err[key] = cell["budget"], cell["rmse"]
    for cell in summary:
        ref = max_err.get((cell["problem"], cell["target"]))
        if ref is None or cell["rmse"] is None or not math.isfinite(cell["rmse"]) or not ref > 0:
            continue
        cell["score"] = max(0.0, 100.0 * (1.0 - cell["rmse"] / ref))


def _write_csv(path: str | Path, fields: tuple[str, ...], rows: list[dict[str, Any]]) -> Path:
    path = Path(path)
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(fields), extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: ("" if row.get(k) is None else row.get(k)) for k in fields})
    return path


def _human_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _json_default(obj: Any) -> Any:
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating,)):
        return float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return str(obj)
