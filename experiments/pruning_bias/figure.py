"""L2 error vs time of randomized pruning and fixed masks on PCFG sentences (the paper's Fig. 4 c, d).

Run: NUMBA_CACHE_DIR=.numba_cache .venv/bin/python -m experiments.pruning_bias.figure [--replicates R] [--out PNG]
or, from an earlier (resumable) ``mcsa bench run --suite pruning-bias --out DIR``:
     .venv/bin/python -m experiments.pruning_bias.figure --summary DIR/summary.csv

Runs the harness suite ``pruning-bias`` (or reads its summary) and prints, per problem and estimator/budget, the mean time
per sentence and the root-mean-square L2 distance to the exact expectations (span posteriors and
expected binary-rule counts); writes the plot docs/figures/pruning_bias.png.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from samplers.harness import run_suite  # noqa: E402


def dominance(rows: list[dict]) -> list[str]:
    """Randomized budgets whose error is below that of every fixed mask that ran no slower."""
    fixed = [r for r in rows if "fixed" in r["estimator"] or "tic-tac-toe" in r["estimator"]]
    out = []
    for r in rows:
        if "randomized" not in r["estimator"]:
            continue
        rivals = [f["rmse"] for f in fixed if f["mean_seconds"] <= r["mean_seconds"]]
        if rivals and r["rmse"] < min(rivals):
            out.append(f"{r['estimator']} {r['budget']} masks at {r['mean_seconds']:.3f} s: error "
                       f"{r['rmse']:.3g} < best fixed {min(rivals):.3g}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=5)
    parser.add_argument("--out", default="docs/figures/pruning_bias.png")
    parser.add_argument("--results", default=None, help="also save the harness results (CSV/JSON/Markdown) here")
    parser.add_argument("--summary", default=None, help="summary.csv of an earlier `mcsa bench run --suite pruning-bias`")
    args = parser.parse_args()
    if args.summary:
        with open(args.summary, newline="") as fh:
            summary = [{**r, "mean_seconds": float(r["mean_seconds"]), "rmse": float(r["rmse"])}
                       for r in csv.DictReader(fh)]
    else:
        results = run_suite("pruning-bias", replicates=args.replicates, seed=0, progress=False)
        summary = results.summary()
        if args.results:
            results.save(args.results, plots=False)
    problems = list(dict.fromkeys(r["problem"] for r in summary))
    cols = 3
    rows_n = -(-len(problems) // cols)
    fig, axes = plt.subplots(rows_n, cols, figsize=(5 * cols, 4 * rows_n), squeeze=False)
    print("| problem | estimator | budget | mean s | L2 error (rmse) |")
    print("|---|---|---|---|---|")
    wins = []
    for ax, problem in zip(axes.ravel(), problems):
        rows = [r for r in summary if r["problem"] == problem]
        for est in sorted({r["estimator"] for r in rows}):
            pts = sorted(((r["mean_seconds"], r["rmse"], r["budget"]) for r in rows if r["estimator"] == est))
            for sec, err, b in pts:
                print(f"| {problem} | {est} | {b} | {sec:.4f} | {err:.4f} |")
            ax.plot([p[0] for p in pts], [max(p[1], 1e-6) for p in pts], "o-" if est != "exact" else "k*",
                    label=est)
        wins.append((problem, dominance(rows)))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("seconds per sentence")
        ax.set_ylabel("L2 error vs exact (rmse)")
        ax.set_title(problem)
        ax.legend(fontsize=7)
    for ax in axes.ravel()[len(problems):]:
        ax.axis("off")
    print()
    print("Randomized pruning vs every fixed mask (a fixed mask counts if it ran no slower):")
    for problem, lines in wins:
        print(f"- {problem}: " + ("; ".join(lines) if lines else "no budget where randomized pruning wins"))
    fig.tight_layout()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
