"""Statistics of a study's tidy rows: bias, variance, MSE with bootstrap intervals, UAI-style scores,
and the cross-family leaderboard at matched cost."""

from __future__ import annotations

import json
import math
import warnings
import zlib
from collections import OrderedDict
from functools import lru_cache
from pathlib import Path
from statistics import NormalDist
from typing import Any, Mapping, Sequence

import numpy as np

from .records import user_stacklevel
from .store import check_study_folder

#: Mark of a leaderboard cell whose estimator is no better than the baseline (score 0).
NO_BETTER = " (<= baseline)"
#: Errors within this multiple of float64's eps (relative to the reference's scale) count as zero.
ROUNDOFF = 64 * float(np.finfo(np.float64).eps)
#: Mark of a leaderboard cell some of whose runs report that they did not converge (``diagnostics``).
NOT_CONVERGED = " (not converged in {k}/{n} runs)"
#: The score's error floor: an error at or below max(the reference's standard error, this) scores 100;
#: in the target's own units (nats for log Z, probability for marginals).
SCORE_FLOOR = 1e-6
#: Cost caps (seconds per run, warm) of the leaderboard's matched-cost columns.
COST_CAPS = (0.003, 0.03, 0.3, 3.0, 30.0)
SUMMARY_FIELDS = ("problem", "estimator", "budget", "budget_label", "target", "n", "exact", "exact_stderr",
                  "mean_estimate", "mean_lo", "mean_hi", "bias", "bias_lo", "bias_hi", "variance", "mse", "mse_lo",
                  "mse_hi", "rmse", "rmse_lo", "rmse_hi", "score", "score_tol", "unconverged", "mean_seconds",
                  "mean_evaluations", "warmup_seconds", "max_peak_bytes", "memory_kind")


def summarise(rows: Sequence[Mapping[str, Any]], arrays: Mapping[int, tuple], warmups: Sequence[Mapping[str, Any]],
              meta: Mapping[str, Any], confidence: float = 0.95, n_boot: int = 2000) -> list[dict[str, Any]]:
    """Statistics of tidy rows: one cell per (problem, estimator, budget, target); see :meth:`Results.summary`."""
    references = meta.get("references", {})
    warm: dict[tuple, float] = {}
    for w in warmups:
        key = (w["problem"], w["estimator"])
        warm[key] = max(warm.get(key, 0.0), float(w["seconds"]))
    groups: "OrderedDict[tuple, list[int]]" = OrderedDict()
    for i, row in enumerate(rows):
        groups.setdefault((row["problem"], row["estimator"], row["budget"], row["target"]), []).append(i)
    out = []
    for (problem, estimator, budget, target), idx in groups.items():
        cell_rows = [rows[i] for i in idx]
        n = len(cell_rows)
        rng = np.random.default_rng(zlib.crc32(repr((problem, estimator, budget, target)).encode()))
        cell = {"problem": problem, "estimator": estimator, "budget": budget,
                "budget_label": cell_rows[0]["budget_label"], "target": target, "n": n, "exact": None,
                "exact_stderr": None, **{f: None for f in _STAT_FIELDS}, "score": None, "score_tol": None,
                "unconverged": _unconverged(cell_rows),
                "mean_seconds": float(np.mean([r["seconds"] for r in cell_rows])),
                "mean_evaluations": (None if any(r.get("evaluations") is None for r in cell_rows)
                                     else float(np.mean([r["evaluations"] for r in cell_rows]))),
                "warmup_seconds": warm.get((problem, estimator)),
                "max_peak_bytes": _max_or_none(r["peak_bytes"] for r in cell_rows),
                "memory_kind": cell_rows[0]["memory_kind"]}
        is_array = idx[0] in arrays
        est = (np.stack([arrays[i][0] for i in idx]) if is_array
               else np.array([r["estimate"] for r in cell_rows], dtype=float))
        truth = arrays[idx[0]][1] if is_array else cell_rows[0]["exact"]
        finite = bool(np.all(np.isfinite(est)))
        if not finite:
            bad = [rows[i]["replicate"] for i in idx
                   if not np.all(np.isfinite(arrays[i][0] if is_array else rows[i]["estimate"]))]
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
        cell["score_tol"] = max(float(np.linalg.norm(stderr)), SCORE_FLOOR)
        if not finite:
            cell.update(bias=float("nan"), variance=float("nan"), mse=float("nan"), rmse=float("nan"))
            if not is_array:
                cell["mean_estimate"] = float("nan")
            out.append(cell)
            continue
        # errors at float roundoff (an exact method recomputed) are zero, not 1e-16 with an interval [0, 0]
        roundoff = bool(np.max(np.abs(est - truth)) <= ROUNDOFF * max(1.0, float(np.max(np.abs(truth)))))
        if roundoff:
            est = np.broadcast_to(np.asarray(truth, dtype=float), est.shape).copy()
        if is_array:
            mean_est = est.mean(axis=0)
            cell["bias"] = float(np.linalg.norm(mean_est - truth))
            cell["variance"] = float(np.sum(est.var(axis=0, ddof=1))) if n > 1 else 0.0
        else:
            cell["mean_estimate"] = float(est.mean())
            cell["bias"] = cell["mean_estimate"] - truth
            cell["variance"] = float(est.var(ddof=1)) if n > 1 else 0.0
        mse = 0.0 if roundoff else float(np.mean([r["sq_error"] for r in cell_rows]))
        cell.update(mse=mse, rmse=math.sqrt(mse))
        if n > 1:
            bias_b, mse_b = _bootstrap_bias_mse(est, truth, stderr, n_boot, rng, confidence)
            lo, hi = _expanded_percentile(bias_b, n, confidence)
            # an L2 norm's bootstrap distribution lies above the norm of the mean when the bias is near 0:
            # the interval is widened to contain its own point estimate
            cell["bias_lo"], cell["bias_hi"] = min(lo, cell["bias"]), max(hi, cell["bias"])
            cell["mse_lo"], cell["mse_hi"] = _expanded_percentile(mse_b, n, confidence)
            cell["rmse_lo"] = math.sqrt(max(cell["mse_lo"], 0.0))
            cell["rmse_hi"] = math.sqrt(max(cell["mse_hi"], 0.0))
        out.append(cell)
    _add_scores(out, meta.get("baseline", {}))
    return out



def _unconverged(rows: Sequence[Mapping[str, Any]]) -> int | None:
    """How many of a cell's runs report ``diagnostics["converged"]`` False; None when none reports it."""
    flags = [d["converged"] for r in rows if isinstance(d := r.get("diagnostics"), Mapping) and "converged" in d]
    return sum(1 for f in flags if not f) if flags else None


def _max_or_none(values: Any) -> int | None:
    """The largest of the values that are not None (a cell whose memory call failed has none)."""
    present = [int(v) for v in values if v is not None]
    return max(present) if present else None


def scores(summary: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Pooled UAI-style ranking: per estimator, the mean 0-100 score (:func:`score`) over the (problem,
    target) cells it ran, each at its largest budget; empty without a baseline.

    Returns
    -------
    list of dict
        ``{estimator, score, cells, max_rmse, unconverged}`` sorted by score: ``max_rmse`` is the largest
        RMSE of the pooled cells (the absolute error printed beside the score), ``unconverged`` the runs of
        those cells that report they did not converge (None when none reports convergence).
    """
    best: dict[tuple, Mapping[str, Any]] = {}
    for cell in summary:
        if cell["score"] is None:
            continue
        key = (cell["estimator"], cell["problem"], cell["target"])
        if key not in best or cell["budget"] > best[key]["budget"]:
            best[key] = cell
    by_est: "OrderedDict[str, list[Mapping[str, Any]]]" = OrderedDict()
    for (est, _, _), cell in best.items():
        by_est.setdefault(est, []).append(cell)
    table = []
    for est, cells in by_est.items():
        flags = [int(c["unconverged"]) for c in cells if c.get("unconverged") is not None]
        table.append({"estimator": est, "score": float(np.mean([c["score"] for c in cells])), "cells": len(cells),
                      "max_rmse": float(max(c["rmse"] for c in cells)),
                      "unconverged": int(sum(flags)) if flags else None})
    return sorted(table, key=lambda r: -r["score"])


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


def score(error: float, baseline_error: float, tol: float) -> float | None:
    """The 0-100 score of an error on the log scale between the baseline's error and the reference's precision.

    ``100 clip(ln(E_b / E) / ln(E_b / tol), 0, 1)`` with ``E`` the error (RMSE), ``E_b`` the baseline's and
    ``tol`` the error the reference can resolve (its standard error, at least :data:`SCORE_FLOOR`): the
    share of the orders of magnitude between the baseline and the reference's precision that the
    estimator closes.  An error at or below ``tol`` scores 100, the baseline's (or a larger one) 0, and
    each halving of the error adds the same amount: 17.6 nats against a 307-nat baseline, on a reference
    good to 1e-6 nats, scores 14.6 (the linear ``100 (1 - E / E_b)`` of the UAI competitions gave 94).

    Parameters
    ----------
    error, baseline_error : float
        The estimator's and the baseline's RMSE (finite, >= 0).
    tol : float
        The reference's precision (> 0).

    Returns
    -------
    float or None
        None when ``baseline_error <= tol``: the baseline is already as close as the reference can tell,
        and the scale is empty.

    Examples
    --------
    >>> round(score(17.6, 307.0, 1e-6), 1), score(1e-9, 307.0, 1e-6), score(400.0, 307.0, 1e-6)
    (14.6, 100.0, 0.0)
    """
    if not baseline_error > tol:
        return None
    if error <= tol:
        return 100.0
    return 100.0 * min(1.0, max(0.0, math.log(baseline_error / error) / math.log(baseline_error / tol)))


def _add_scores(summary: list[dict[str, Any]], baselines: Mapping[str, str]) -> None:
    """Fill ``score`` of each cell with a reference: :func:`score` of its RMSE against the baseline's RMSE
    on the same (problem, target) at the baseline's largest budget, on the cell's ``score_tol``."""
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
        if ref is None or cell["rmse"] is None or not math.isfinite(cell["rmse"]) or not math.isfinite(ref):
            continue
        cell["score"] = score(cell["rmse"], ref, cell["score_tol"])


def _float(x: Any) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _convergence_mark(cells: Sequence[Mapping[str, Any]]) -> str:
    """:data:`NOT_CONVERGED` for summary cells (rows of summary.csv or :meth:`Results.summary`) some of whose
    runs report that they did not converge; empty otherwise."""
    stopped = [(int(k), int(float(c["n"]))) for c in cells if (k := _float(c.get("unconverged"))) is not None]
    k = sum(a for a, _ in stopped)
    return NOT_CONVERGED.format(k=k, n=sum(b for _, b in stopped)) if k else ""


def leaderboard(summary: Sequence[dict[str, Any]], kinds: dict[str, str], caps: Sequence[float] = COST_CAPS) -> str:
    """Markdown leaderboard: per problem kind and target, each estimator's pooled score (mean over
    the kind's problems of the UAI-style 0-100 score) and RMSE with its bootstrap interval at the
    best budget whose warm mean time is within each cost cap.

    Parameters
    ----------
    summary : list of dict
        Rows of ``summary.csv`` (or :meth:`Results.summary`).
    kinds : dict
        ``{problem name: kind}`` (the suite's ``extra["kinds"]``).
    caps : sequence of float
        Cost caps in warm mean seconds per run (default :data:`COST_CAPS`); one leaderboard column each.
    """
    cells: dict[tuple, list] = {}
    for row in summary:
        kind = kinds.get(row["problem"])
        if kind is None:
            continue
        cells.setdefault((kind, row["target"]), []).append(row)
    out = []
    for (kind, target) in sorted(cells):
        rows = cells[(kind, target)]
        problems = sorted({r["problem"] for r in rows})
        estimators = sorted({r["estimator"] for r in rows})
        out += [f"### {kind}: {target}", "",
                f"Problems: {', '.join(problems)}.  Cell: pooled score (mean over problems) and, in "
                "brackets, the absolute error: RMSE [95% interval] when there is one problem, else the "
                "largest RMSE over the problems, of the best budget whose mean warm time is within the cap; "
                f"'-' = no budget that cheap; '{NO_BETTER}' = no better than the baseline on any problem "
                f"(score 0 everywhere); '{NOT_CONVERGED.format(k='k', n='n')}' = k of the cell's n runs report "
                "that they stopped before converging.  Score: 100 ln(E_b / E) / ln(E_b / tol), clipped to "
                "[0, 100], E the RMSE, E_b the baseline's, tol the reference's precision.", "",
                "| estimator | " + " | ".join(f"<= {c:g} s" for c in caps) + " |",
                "| --- | " + " | ".join("---" for _ in caps) + " |"]
        for est in estimators:
            line = []
            for cap in caps:
                per_problem = []
                for prob in problems:
                    within = []  # (rmse, row) of the problem's cells within the cap
                    for r in rows:
                        seconds, rmse = _float(r["mean_seconds"]), _float(r["rmse"])
                        if (r["problem"] == prob and r["estimator"] == est and seconds is not None and seconds <= cap
                                and rmse is not None):
                            within.append((rmse, r))
                    if within:
                        per_problem.append(min(within, key=lambda pair: pair[0])[1])
                if len(per_problem) < len(problems):
                    line.append("-")
                    continue
                scores = [_float(r.get("score")) for r in per_problem]
                known = [s for s in scores if s is not None]
                score = "n/a" if len(known) < len(scores) else f"{np.mean(known):.0f}"
                if scores and all(s is not None and s <= 0.0 for s in scores):
                    score += NO_BETTER
                score += _convergence_mark(per_problem)
                if len(problems) == 1:
                    r = per_problem[0]
                    lo, hi = _float(r.get("rmse_lo")), _float(r.get("rmse_hi"))
                    interval = f" [{lo:.3g}, {hi:.3g}]" if lo is not None and hi is not None else ""
                    line.append(f"{score} ({_float(r['rmse']):.3g}{interval})")
                else:
                    rmses = [rmse for r in per_problem if (rmse := _float(r["rmse"])) is not None]  # all are
                    line.append(f"{score} (max {max(rmses):.3g})")
            out.append(f"| {est} | " + " | ".join(line) + " |")
        out.append("")
        if len(problems) > 1:
            out += ["Per problem, each estimator's smallest RMSE over its budgets: RMSE [95% interval] "
                    "(budget; mean warm seconds; evaluations).", "",
                    "| estimator | " + " | ".join(problems) + " |", "| --- | " + " | ".join("---" for _ in problems) + " |"]
            for est in estimators:
                line = []
                for prob in problems:
                    ok = [r for r in rows if r["problem"] == prob and r["estimator"] == est
                          and _float(r["rmse"]) is not None]
                    if not ok:
                        line.append("-")
                        continue
                    r = min(ok, key=lambda r: (_float(r["rmse"]), _float(r["mean_seconds"]) or 0.0))
                    lo, hi = _float(r.get("rmse_lo")), _float(r.get("rmse_hi"))
                    interval = f" [{lo:.3g}, {hi:.3g}]" if lo is not None and hi is not None else ""
                    evals = _float(r.get("mean_evaluations"))
                    cost = f"; {evals:.3g}" if evals is not None else ""
                    worse = (NO_BETTER if _float(r.get("score")) == 0.0 else "") + _convergence_mark([r])
                    line.append(f"{_float(r['rmse']):.3g}{interval}{worse} ({r['budget']}; "
                                f"{_float(r['mean_seconds']):.3g} s{cost})")
                out.append(f"| {est} | " + " | ".join(line) + " |")
            out.append("")
    return "\n".join(out)


def leaderboard_from_dir(folder: str | Path) -> str:
    """The :func:`leaderboard` of a study folder written by ``mcsa bench run --out folder``: the summary
    from ``summary.csv`` and the problems' kinds from ``results.json`` (the study's metadata)."""
    import csv

    folder = Path(folder)
    path, doc_path = folder / "summary.csv", folder / "results.json"
    check_study_folder(folder, "`mcsa bench run --out`")
    if not path.is_file() or not doc_path.is_file():
        raise ValueError(f"{folder} holds no finished study (summary.csv and results.json); run "
                         f"`mcsa bench run --suite cross --out {folder}` first")
    with open(path, newline="", encoding="utf-8") as fh:
        summary = list(csv.DictReader(fh))
    kinds = {p: k for p, k in json.loads(doc_path.read_text(encoding="utf-8"))["meta"].get("kinds", {}).items()
             if k}
    if not kinds:
        raise ValueError(f"the study in {folder} has no problems of a registered kind: nothing to rank")
    return leaderboard(summary, kinds)
