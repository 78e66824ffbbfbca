"""Writers: every file of a study's output folder, written by one function for every path.

:func:`write_outputs` writes ``results.csv`` (tidy rows), ``summary.csv``, ``summary.md``,
``results.json`` and the error-vs-cost plots through a temporary folder and renames them into
place; :meth:`Results.save` and :func:`samplers.harness.run_suite` both call it.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
import tempfile
from collections import OrderedDict
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from .store import move_into_place
from .summary import NO_BETTER, SCORE_FLOOR, SUMMARY_FIELDS, scores

ROW_FIELDS = ("problem", "estimator", "budget", "budget_label", "replicate", "seed", "target", "estimate",
              "exact", "exact_stderr", "error", "sq_error", "seconds", "evaluations", "peak_bytes", "memory_kind",
              "diagnostics")

#: Meaning of each memory meter's number (summary.md legend).
MEMORY_KINDS = {
    "tracemalloc": "peak of Python/NumPy allocations during one untimed call per cell (not Numba-native or torch "
                   "memory)",
    "autograd-saved+outputs": "bytes torch autograd saved for backward plus the outputs (CPU)",
    "torch-autograd": "bytes torch autograd saved for backward plus the outputs (CPU)",
    "cuda-peak": "torch.cuda.max_memory_allocated above the level at entry",
    "none": "not measured",
}


def write_csv(path: str | Path, fields: tuple[str, ...], rows: list[dict[str, Any]]) -> Path:
    """Write ``rows`` to the CSV file ``path`` with columns ``fields`` (None and missing keys as empty cells).

    Returns
    -------
    Path
        ``path``.
    """
    path = Path(path)
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(fields), extrasaction="ignore")
        writer.writeheader()
        for row in rows:  # a dict (a run's diagnostics) as compact JSON
            writer.writerow({k: ("" if (v := row.get(k)) is None else json.dumps(v, separators=(",", ":"))
                                 if isinstance(v, dict) else v) for k in fields})
    return path


def _human_bytes(n: int | None) -> str:
    if n is None:
        return "n/a"
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(size) < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return str(size)


def _json_default(obj: Any) -> Any:
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating,)):
        return float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return str(obj)


def to_markdown(summary: Sequence[Mapping[str, Any]], digits: int = 4) -> str:
    """The summary as a Markdown table: one line per (problem, target, estimator, budget), with the
    budget's unit, 95% bootstrap intervals, score, warm seconds, evaluations and memory (meter)."""
    has_score = any(r["score"] is not None for r in summary)
    has_evals = any(r["mean_evaluations"] is not None for r in summary)
    has_measured = any(r["mean_lo"] is not None or (r["exact"] is None and r["bias"] is None) for r in summary)
    cols = ["problem", "target", "estimator", "budget", "unit", "n"]
    if has_measured:
        cols.append("mean [95% CI]")
    has_array = any(r["exact"] is None and r["bias"] is not None for r in summary)
    cols += ["bias [95% CI]" + (" (L2 norm for array targets)" if has_array else ""), "RMSE [95% CI]"]
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
        bias = ci(r["bias"], r["bias_lo"], r["bias_hi"])
        if r["exact"] is None and r["bias"] is not None:  # an array target: the bias is ||mean - exact||_2
            bias = f"L2 {bias}"
        cells += [bias, ci(r["rmse"], r["rmse_lo"], r["rmse_hi"])]
        if has_score:
            cells.append("" if r["score"] is None else f"{r['score']:.1f}")
        cells.append(num(r["mean_seconds"]))
        if has_evals:
            cells.append(num(r["mean_evaluations"]))
        cells.append(f"{_human_bytes(r['max_peak_bytes'])} ({r['memory_kind']})")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"

def report_markdown(results: Any, summary: Sequence[Mapping[str, Any]], title: str = "mcsa study") -> str:
    """summary.md: the table plus what its numbers mean (units, meters, intervals, references),
    warm-up times, the pooled score ranking, skipped pairs and failed runs."""
    meta = results.meta
    parts = [f"# {title}", ""]
    if "seed" in meta:
        parts.append(f"Study seed {meta['seed']}; {len(results.rows)} rows from {meta.get('runs', '?')} runs "
                     f"({len(results.failures)} failed). Times are warm wall seconds per run (each (problem, "
                     "estimator) pair had one untimed warm-up call first; see below), measured with no memory meter "
                     "running; peak memory comes from one separate untimed call per cell.")
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
    parts += ["", to_markdown(summary)]
    ranking = scores(summary) if any(r["score"] is not None for r in summary) else []
    if ranking:
        base = ", ".join(sorted(set(meta.get("baseline", {}).values())))
        parts += [f"## Score (0-100 on a log scale, baseline `{base}` = 0)", "",
                  "100 ln(E_b / E) / ln(E_b / tol), clipped to [0, 100], per (problem, target): E the RMSE, E_b "
                  "the baseline's RMSE at its largest budget, tol the reference's precision (its standard error, "
                  f"at least {SCORE_FLOOR:g}; `score_tol` in summary.csv); averaged over the cells each estimator "
                  "ran at its largest budget.  The largest RMSE of those cells stands beside it; "
                  f"`{NO_BETTER.strip()}` marks an estimator no better than the baseline anywhere.", "",
                  "| estimator | score | largest RMSE | cells | runs not converged |", "|---|---|---|---|---|"]
        parts += [f"| {r['estimator']} | {r['score']:.1f}{NO_BETTER if r['score'] <= 0.0 else ''} | "
                  f"{r['max_rmse']:.3g} | {r['cells']} | {'' if r['unconverged'] is None else r['unconverged']} |"
                  for r in ranking]
        parts.append("")
    refs = meta.get("provenance", {})
    if any(refs.values()):
        parts += ["## References", ""] + [f"- `{p}`: {v}" for p, v in refs.items() if v] + [""]
    if results.warmups:
        parts += ["## Warm-up (untimed, not in `seconds`)", "", "| problem | estimator | budget | seconds |",
                  "|---|---|---|---|"]
        parts += [f"| {w['problem']} | {w['estimator']} | {w['budget']} | {float(w['seconds']):.4g}"
                  f"{' (failed: ' + w['error'] + ')' if w.get('error') else ''} |" for w in results.warmups]
        parts.append("")
    if meta.get("skipped"):
        parts += ["## Skipped pairs (estimator does not support the problem)", ""]
        parts += [f"- {e} on {p}" for p, e in meta["skipped"]] + [""]
    if results.failures:
        parts += [f"## Failed runs ({len(results.failures)})", "", "| problem | estimator | budget | replicate | "
                  "seed | error |", "|---|---|---|---|---|---|"]
        parts += [f"| {f['problem']} | {f['estimator']} | {f['budget']} | {f['replicate']} | {f['seed']} | "
                  f"{str(f['error']).replace('|', '/')} |" for f in results.failures]
        parts.append("")
    return "\n".join(parts)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "plot"


def legible_log_ticks(axis: Any) -> None:
    """Plain tick labels on a log axis: labelled ticks at 1, 2 and 5 per decade (at most about eight,
    written like ``0.002`` or ``3e+04``), unlabelled minor ticks.  Matplotlib's default labels the minor
    ticks of an axis spanning less than a decade, which overlap as ``3x10^4x10^-2``."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis.set_major_locator(LogLocator(base=10.0, subs=(1.0, 2.0, 5.0), numticks=8))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.3g}"))
    axis.set_minor_locator(LogLocator(base=10.0, subs=tuple(range(2, 10)), numticks=12))
    axis.set_minor_formatter(NullFormatter())


def plot_error_vs_cost(summary: Sequence[dict[str, Any]], out_dir: str | Path, *, prefix: str = "",
                       dpi: int = 110) -> list[Path]:
    """One PNG per (problem, target): log-log MSE against cost, with 95% bootstrap error bars.

    Panels: MSE against mean warm wall seconds, against the budget (one panel per budget unit, so that
    masks and threshold levels never share an axis; the unit in the axis label) and, when every estimator of
    the panel reports them, against mean ``evaluations`` (the
    machine-independent cost).  One line per estimator, points ordered by budget; error bars are
    the cells' ``mse_lo``/``mse_hi``.  Cells whose MSE is 0 or not finite are left out of the log
    axes (an exact estimator has MSE 0 and nothing to draw); a figure with nothing to draw is not
    written.  A measured target (no reference) is drawn as its mean with interval against budget
    and seconds, on a linear y axis.

    Returns
    -------
    list of Path
        The files written.
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    panels: "OrderedDict[tuple[str, str], list[dict[str, Any]]]" = OrderedDict()
    for row in summary:
        panels.setdefault((row["problem"], row["target"]), []).append(row)
    written = []
    for (problem, target), rows in panels.items():
        measured = all(r.get("exact") is None and r.get("bias") is None for r in rows)
        key = "mean_estimate" if measured else "mse"
        lo_key, hi_key = ("mean_lo", "mean_hi") if measured else ("mse_lo", "mse_hi")
        by_est: "OrderedDict[str, list[dict[str, Any]]]" = OrderedDict()
        for r in rows:
            v = r.get(key)
            if v is not None and v == v and (measured or v > 0):
                by_est.setdefault(r["estimator"], []).append(r)
        if not by_est:
            continue
        with_evals = all(p.get("mean_evaluations") is not None for pts in by_est.values() for p in pts)
        # one budget panel per budget unit: masks and threshold levels (say) never share an axis
        units: "OrderedDict[str, int]" = OrderedDict()
        for pts in by_est.values():
            units.setdefault(pts[0]["budget_label"], len(units) + 1)
        n_panels = 1 + len(units) + (1 if with_evals else 0)
        fig, axes = plt.subplots(1, n_panels, figsize=(5 * n_panels, 4), squeeze=False)
        axes = axes[0]
        for index, (name, pts) in enumerate(by_est.items()):
            color = f"C{index % 10}"  # one colour per estimator in every panel (each axes restarts its own cycle)
            pts = sorted(pts, key=lambda r: r["budget"])
            y = np.array([p[key] for p in pts], dtype=float)
            lo = np.array([p[lo_key] if p.get(lo_key) is not None else p[key] for p in pts], dtype=float)
            hi = np.array([p[hi_key] if p.get(hi_key) is not None else p[key] for p in pts], dtype=float)
            if not measured:
                lo = np.maximum(lo, y * 1e-3)  # a log axis cannot show an interval reaching 0
            yerr = np.vstack([np.maximum(y - lo, 0), np.maximum(hi - y, 0)])
            drawn = [(axes[0], [max(p["mean_seconds"], 1e-7) for p in pts]),
                     (axes[units[pts[0]["budget_label"]]], [p["budget"] for p in pts])]
            if with_evals:
                drawn.append((axes[-1], [max(p["mean_evaluations"], 1e-7) for p in pts]))
            for ax, x in drawn:
                ax.errorbar(x, y, yerr=yerr, marker="o", capsize=3, label=name, color=color)
        ylabel = f"mean {target} (95% CI)" if measured else f"MSE of {target} (95% CI)"
        for ax in axes:
            ax.set_xscale("log")
            legible_log_ticks(ax.xaxis)
            if not measured:
                ax.set_yscale("log")
                legible_log_ticks(ax.yaxis)
            ax.set_ylabel(ylabel)
            ax.grid(True, which="both", alpha=0.3)
        axes[0].set_xlabel("mean warm wall seconds per run")
        for unit, i in units.items():
            axes[i].set_xlabel(f"budget ({unit})")
        if with_evals:
            axes[-1].set_xlabel("evaluations per run (machine-independent cost)")
        axes[0].legend(fontsize=8)
        fig.suptitle(f"{problem}: {target}")
        fig.tight_layout()
        path = out / f"{prefix}{_slug(problem)}__{_slug(target)}.png"
        fig.savefig(path, dpi=dpi)
        plt.close(fig)
        written.append(path)
    return written


def to_json(results: Any, summary: Sequence[Mapping[str, Any]], path: str | Path) -> Path:
    """Write rows, summary, failures, warm-ups and study metadata as one JSON document."""
    path = Path(path)
    doc = {"meta": results.meta, "summary": list(summary), "rows": results.rows, "failures": results.failures,
           "warmups": results.warmups}
    path.write_text(json.dumps(doc, indent=1, default=_json_default, allow_nan=True))
    return path


def write_outputs(results: Any, folder: str | Path, *, title: str = "mcsa study", plots: bool = True,
                  stale: Sequence[str] = ()) -> list[str]:
    """Write every output file of ``results`` into ``folder`` (created if missing).

    Files are written to a temporary folder inside ``folder`` and then renamed into place, so an
    interrupted write never leaves a mix of old and new files under the final names; ``stale``
    names files of an earlier write to remove if this one does not write them again.  Returns the
    names written.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for leftover in folder.glob(".partial-*"):  # a write interrupted earlier
        shutil.rmtree(leftover, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(prefix=".partial-", dir=folder))
    try:
        summary = results.summary()
        write_csv(tmp / "results.csv", ROW_FIELDS, results.rows)
        write_csv(tmp / "summary.csv", SUMMARY_FIELDS, summary)
        to_json(results, summary, tmp / "results.json")
        (tmp / "summary.md").write_text(report_markdown(results, summary, title))
        if plots:
            plot_error_vs_cost(summary, tmp)
        return move_into_place(tmp, folder, list(stale))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
