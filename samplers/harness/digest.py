"""A few lines that say what a study found (``mcsa bench run --brief``, what ``make demo`` prints).

The full summary (every problem x target x estimator x budget with intervals) goes to the files; the digest
gives one line per estimator: its budget range, and how its RMSE changed from its smallest to its largest budget
over the (problem, target) cells it ran -- the median ratio and in how many cells the error fell -- beside the
median warm seconds at both ends, so a reader sees at once which estimators converge with their cost knob.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

__all__ = ["digest"]


def _median(values: list[float]) -> float | None:
    return float(np.median(values)) if values else None


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3g}"


def digest(summary: list[dict[str, Any]], out: str, *, failures: int = 0) -> str:
    """One line per estimator of a study's ``summary`` rows (:meth:`Results.summary`), then where the tables are.

    Parameters
    ----------
    summary : list of dict
        Summary rows with ``estimator``, ``problem``, ``target``, ``budget``, ``budget_label``, ``rmse`` and
        ``mean_seconds``.
    out : str
        The study's output folder (named in the last lines).
    failures : int
        Failed runs, reported if any.

    Returns
    -------
    str
        The digest, lines joined by newlines.
    """
    cells: dict[str, dict[tuple, dict[int, dict]]] = defaultdict(lambda: defaultdict(dict))
    for row in summary:
        cells[row["estimator"]][(row["problem"], row["target"])][row["budget"]] = row
    width = max((len(name) for name in cells), default=9)
    lines = [f"{'estimator':<{width}}  budgets                    cells  RMSE last/first (median; falls in)  "
             "seconds first -> last"]
    for name in sorted(cells):
        by_cell = cells[name]
        budgets = sorted({b for per in by_cell.values() for b in per})
        label = next(iter(next(iter(by_cell.values())).values()))["budget_label"]
        ratios, first_s, last_s = [], [], []
        for per in by_cell.values():
            lo, hi = per[min(per)], per[max(per)]
            first_s.append(lo["mean_seconds"])
            last_s.append(hi["mean_seconds"])
            if len(per) > 1 and lo["rmse"] and hi["rmse"] is not None:
                ratios.append(hi["rmse"] / lo["rmse"])
        span = f"{label} {budgets[0]}" + (f"..{budgets[-1]}" if len(budgets) > 1 else "")
        if ratios:
            trend = f"{_fmt(_median(ratios))} ({sum(r < 1 for r in ratios)} of {len(ratios)})"
        else:
            trend = "one budget" if len(budgets) == 1 else "no exact answer"
        lines.append(f"{name:<{width}}  {span:<26} {len(by_cell):>5}  {trend:<34}  "
                     f"{_fmt(_median(first_s))} -> {_fmt(_median(last_s))}")
    if failures:
        lines.append(f"{failures} runs failed: listed in {out}/summary.md")
    lines.append(f"full table with 95% intervals: {out}/summary.md (and summary.csv); every run: {out}/results.csv; "
                 f"plots: {out}/*.png")
    return "\n".join(lines)
