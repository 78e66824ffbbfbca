"""Error-vs-cost plots for study summaries (matplotlib, Agg backend, PNG files)."""

from __future__ import annotations

import re
from collections import OrderedDict
from pathlib import Path
from typing import Any, Sequence

import numpy as np


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "plot"


def plot_error_vs_cost(summary: Sequence[dict[str, Any]], out_dir: str | Path, *, prefix: str = "",
                       dpi: int = 110) -> list[Path]:
    """One PNG per (problem, target): log-log MSE against cost, with 95% bootstrap error bars.

    Panels: MSE against mean warm wall seconds, against the budget (its unit in the axis label)
    and, when every estimator of the panel reports them, against mean ``evaluations`` (the
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
        n_panels = 3 if with_evals else 2
        fig, axes = plt.subplots(1, n_panels, figsize=(5 * n_panels, 4))
        labels = set()
        for name, pts in by_est.items():
            pts = sorted(pts, key=lambda r: r["budget"])
            y = np.array([p[key] for p in pts], dtype=float)
            lo = np.array([p[lo_key] if p.get(lo_key) is not None else p[key] for p in pts], dtype=float)
            hi = np.array([p[hi_key] if p.get(hi_key) is not None else p[key] for p in pts], dtype=float)
            if not measured:
                lo = np.maximum(lo, y * 1e-3)  # a log axis cannot show an interval reaching 0
            yerr = np.vstack([np.maximum(y - lo, 0), np.maximum(hi - y, 0)])
            xs = [[max(p["mean_seconds"], 1e-7) for p in pts], [p["budget"] for p in pts]]
            if with_evals:
                xs.append([max(p["mean_evaluations"], 1e-7) for p in pts])
            for ax, x in zip(axes, xs):
                ax.errorbar(x, y, yerr=yerr, marker="o", capsize=3, label=name)
            labels.add(pts[0]["budget_label"])
        ylabel = f"mean {target} (95% CI)" if measured else f"MSE of {target} (95% CI)"
        for ax in axes:
            ax.set_xscale("log")
            if not measured:
                ax.set_yscale("log")
            ax.set_ylabel(ylabel)
            ax.grid(True, which="both", alpha=0.3)
        axes[0].set_xlabel("mean warm wall seconds per run")
        axes[1].set_xlabel("budget (" + ", ".join(sorted(labels)) + ")")
        if with_evals:
            axes[2].set_xlabel("evaluations per run (machine-independent cost)")
        axes[1].legend(fontsize=8)
        fig.suptitle(f"{problem}: {target}")
        fig.tight_layout()
        path = out / f"{prefix}{_slug(problem)}__{_slug(target)}.png"
        fig.savefig(path, dpi=dpi)
        plt.close(fig)
        written.append(path)
    return written
