"""Error-vs-cost plots for study summaries (matplotlib, Agg backend, PNG files)."""

from __future__ import annotations

import re
from collections import OrderedDict
from pathlib import Path
from typing import Any, Sequence


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "plot"


def plot_error_vs_cost(summary: Sequence[dict[str, Any]], out_dir: str | Path, *, prefix: str = "",
                       dpi: int = 110) -> list[Path]:
    """One PNG per (problem, target): log-log MSE against mean wall seconds and against budget.

    One line per estimator, points ordered by budget.  Cells whose MSE is 0 or not finite are left
    out of the log axes (an exact estimator has MSE 0 and nothing to draw); a figure with nothing to
    draw is not written.

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
        by_est: "OrderedDict[str, list[dict[str, Any]]]" = OrderedDict()
        for r in rows:
            if r["mse"] is not None and r["mse"] == r["mse"] and r["mse"] > 0:
                by_est.setdefault(r["estimator"], []).append(r)
        if not by_est:
            continue
        fig, (ax_t, ax_b) = plt.subplots(1, 2, figsize=(10, 4))
        labels = set()
        for name, pts in by_est.items():
            pts = sorted(pts, key=lambda r: r["budget"])
            mse = [p["mse"] for p in pts]
            ax_t.plot([max(p["mean_seconds"], 1e-7) for p in pts], mse, marker="o", label=name)
            ax_b.plot([p["budget"] for p in pts], mse, marker="o", label=name)
            labels.add(pts[0]["budget_label"])
        for ax in (ax_t, ax_b):
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_ylabel(f"MSE of {target}")
            ax.grid(True, which="both", alpha=0.3)
        ax_t.set_xlabel("mean wall seconds per run")
        ax_b.set_xlabel("budget (" + ", ".join(sorted(labels)) + ")")
        ax_b.legend(fontsize=8)
        fig.suptitle(f"{problem}: {target}")
        fig.tight_layout()
        path = out / f"{prefix}{_slug(problem)}__{_slug(target)}.png"
        fig.savefig(path, dpi=dpi)
        plt.close(fig)
        written.append(path)
    return written
