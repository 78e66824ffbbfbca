"""Results of a study: tidy rows, summaries (bias, variance, MSE, time, memory) and writers."""

from __future__ import annotations

import csv
import json
import math
import warnings
from collections import OrderedDict
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

from .problem import as_target_value

ROW_FIELDS = ("problem", "estimator", "budget", "budget_label", "replicate", "seed", "target", "estimate",
              "exact", "error", "sq_error", "seconds", "peak_bytes", "memory_kind")
SUMMARY_FIELDS = ("problem", "estimator", "budget", "budget_label", "target", "n", "exact", "mean_estimate", "bias",
                  "variance", "mse", "rmse", "mean_seconds", "max_peak_bytes", "memory_kind")


class Results:
    """Tidy per-run rows of a :class:`~samplers.harness.Study`.

    Each row holds one (run, target): ``problem, estimator, budget, budget_label, replicate, seed,
    target, estimate, exact, error, sq_error, seconds, peak_bytes, memory_kind``.  For a scalar
    target ``error = estimate - exact``; for an array target (marginals, expected counts) the row's
    ``estimate`` and ``exact`` are None, the arrays are kept in :attr:`arrays` (same index as the
    row), ``error`` is the L2 norm of the difference and ``sq_error`` its square.
    ``seconds`` is the wall time of the ``estimate`` call; ``peak_bytes`` is what the estimator's
    memory meter measured (``memory_kind`` says which meter: ``tracemalloc`` = peak of Python/NumPy
    allocations during the call; ``torch-autograd`` = bytes saved for backward plus outputs;
    ``cuda-peak`` = the CUDA caching allocator's peak).
    """

    def __init__(self, rows: Iterable[Mapping[str, Any]] | None = None):
        self.rows: list[dict[str, Any]] = [dict(r) for r in (rows or [])]
        self.arrays: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self.meta: dict[str, Any] = {}

    # -- building ------------------------------------------------------------------------------
    def add_run(self, *, problem: str, estimator: str, budget: int, replicate: int, seed: int,
                estimates: Mapping[str, Any], exact: Mapping[str, Any], seconds: float, peak_bytes: int,
                memory_kind: str, budget_label: str = "budget") -> None:
        """Record one run's estimates; raises if a target is unknown or a shape is wrong."""
        who = f"estimator {estimator!r} on problem {problem!r} (budget={budget}, replicate={replicate})"
        if not isinstance(estimates, Mapping):
            raise TypeError(f"{who} returned {type(estimates).__name__}, expected a dict of target -> value")
        if not estimates:
            raise ValueError(f"{who} returned no estimates")
        for target, raw in estimates.items():
            if target not in exact:
                raise ValueError(f"{who} returned unknown target {target!r}; the problem's targets are "
                                 f"{sorted(exact)}")
            value = as_target_value(raw, target, who)
            truth = exact[target]
            row = {"problem": problem, "estimator": estimator, "budget": int(budget), "budget_label": budget_label,
                   "replicate": int(replicate), "seed": int(seed), "target": target, "seconds": float(seconds),
                   "peak_bytes": int(peak_bytes), "memory_kind": memory_kind}
            if isinstance(truth, float):
                if not isinstance(value, float):
                    raise ValueError(f"{who} returned an array for scalar target {target!r}")
                err = value - truth
                row.update(estimate=value, exact=truth, error=err, sq_error=err * err)
            else:
                if isinstance(value, float) or value.shape != truth.shape:
                    shape = "a scalar" if isinstance(value, float) else f"shape {value.shape}"
                    raise ValueError(f"{who} returned {shape} for target {target!r}, expected shape {truth.shape}")
                sq = float(np.sum((value - truth) ** 2))
                row.update(estimate=None, exact=None, error=math.sqrt(sq) if math.isfinite(sq) else float("nan"),
                           sq_error=sq)
                self.arrays[len(self.rows)] = (value, truth)
            if not math.isfinite(row["sq_error"]):
                warnings.warn(f"{who} gave a non-finite estimate for target {target!r} (seed {seed}); "
                              f"it will appear as NaN in the summary", RuntimeWarning, stacklevel=3)
            self.rows.append(row)

    @classmethod
    def concat(cls, parts: Iterable["Results"]) -> "Results":
        """Concatenate results of several studies (e.g. the sub-suites of ``quick``)."""
        out = cls()
        for part in parts:
            offset = len(out.rows)
            out.rows.extend(part.rows)
            out.arrays.update({offset + i: v for i, v in part.arrays.items()})
            for key, value in part.meta.items():
                if isinstance(value, list):
                    out.meta.setdefault(key, []).extend(value)
                elif isinstance(value, dict):
                    out.meta.setdefault(key, {}).update(value)
                else:
                    out.meta.setdefault(key, value)
        return out

    # -- summaries -----------------------------------------------------------------------------
    def summary(self) -> list[dict[str, Any]]:
        """One row per (problem, estimator, budget, target).

        ``bias`` = mean error (scalar target) or the L2 norm of (mean estimate - exact) (array
        target); ``variance`` = sample variance over replicates (ddof=1; 0 for one replicate),
        summed over components for arrays; ``mse`` = mean squared error; ``rmse`` = sqrt(mse);
        ``mean_seconds`` and ``max_peak_bytes`` over replicates.  A group with a non-finite
        estimate gets NaN statistics and a RuntimeWarning naming the group.
        """
        groups: "OrderedDict[tuple, list[int]]" = OrderedDict()
        for i, row in enumerate(self.rows):
            groups.setdefault((row["problem"], row["estimator"], row["budget"], row["target"]), []).append(i)
        out = []
        for (problem, estimator, budget, target), idx in groups.items():
            rows = [self.rows[i] for i in idx]
            n = len(rows)
            sq = np.array([r["sq_error"] for r in rows], dtype=float)
            if idx[0] in self.arrays:
                est = np.stack([self.arrays[i][0] for i in idx])
                truth = self.arrays[idx[0]][1]
                mean_est = est.mean(axis=0)
                bias = float(np.linalg.norm(mean_est - truth))
                var = float(np.sum(est.var(axis=0, ddof=1))) if n > 1 else 0.0
                exact_v, mean_v = None, None
            else:
                est = np.array([r["estimate"] for r in rows], dtype=float)
                exact_v = rows[0]["exact"]
                mean_v = float(est.mean())
                bias = mean_v - exact_v
                var = float(est.var(ddof=1)) if n > 1 else 0.0
            mse = float(sq.mean())
            if not np.all(np.isfinite(sq)):
                bad = [self.rows[i]["replicate"] for i, s in zip(idx, sq) if not np.isfinite(s)]
                warnings.warn(f"summary of estimator {estimator!r} on problem {problem!r} (budget={budget}, "
                              f"target {target!r}) includes non-finite estimates (replicates {bad}): NaN",
                              RuntimeWarning, stacklevel=2)
                bias = var = mse = float("nan")
            out.append({"problem": problem, "estimator": estimator, "budget": budget,
                        "budget_label": rows[0]["budget_label"], "target": target, "n": n, "exact": exact_v,
                        "mean_estimate": mean_v, "bias": bias, "variance": var, "mse": mse,
                        "rmse": math.sqrt(mse) if math.isfinite(mse) else float("nan"),
                        "mean_seconds": float(np.mean([r["seconds"] for r in rows])),
                        "max_peak_bytes": int(max(r["peak_bytes"] for r in rows)),
                        "memory_kind": rows[0]["memory_kind"]})
        return out

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

    def summary_to_csv(self, path: str | Path) -> Path:
        """Write :meth:`summary` as CSV."""
        return _write_csv(path, SUMMARY_FIELDS, self.summary())

    def to_json(self, path: str | Path) -> Path:
        """Write rows, summary and study metadata as one JSON document."""
        path = Path(path)
        doc = {"meta": self.meta, "summary": self.summary(), "rows": self.rows}
        path.write_text(json.dumps(doc, indent=1, default=_json_default, allow_nan=True))
        return path

    def to_markdown(self, digits: int = 4) -> str:
        """The summary as a Markdown table (one line per problem, estimator, budget, target)."""
        cols = ("problem", "target", "estimator", "budget", "n", "bias", "variance", "mse", "mean_seconds",
                "max_peak_bytes")
        lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        for row in sorted(self.summary(), key=lambda r: (r["problem"], r["target"], r["estimator"], r["budget"])):
            cells = []
            for c in cols:
                v = row[c]
                if isinstance(v, float):
                    cells.append(f"{v:.{digits}g}")
                elif c == "max_peak_bytes":
                    cells.append(_human_bytes(v))
                else:
                    cells.append(str(v))
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join(lines) + "\n"

    def plot(self, out_dir: str | Path, *, prefix: str = "") -> list[Path]:
        """Error-vs-cost plots; see :func:`samplers.harness.report.plot_error_vs_cost`."""
        from .report import plot_error_vs_cost

        return plot_error_vs_cost(self.summary(), out_dir, prefix=prefix)

    def save(self, out_dir: str | Path, *, plots: bool = True) -> dict[str, Path]:
        """Write results.csv, summary.csv, summary.md, results.json and (optionally) PNG plots."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        written = {"results.csv": self.to_csv(out / "results.csv"),
                   "summary.csv": self.summary_to_csv(out / "summary.csv"),
                   "results.json": self.to_json(out / "results.json")}
        (out / "summary.md").write_text(self.to_markdown())
        written["summary.md"] = out / "summary.md"
        if plots:
            for p in self.plot(out):
                written[p.name] = p
        return written

    def __len__(self) -> int:
        return len(self.rows)

    def __repr__(self) -> str:
        return f"Results({len(self.rows)} rows)"


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
