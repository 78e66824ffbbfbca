"""L2 error vs time of randomized pruning and fixed masks on PCFG sentences (the paper's Fig. 4 c, d).

Run: NUMBA_CACHE_DIR=.numba_cache .venv/bin/python benchmarks/pruning_bias.py [--replicates R] [--out DIR]

Runs the harness suite ``pruning-bias`` and prints, per problem and estimator/budget, the mean time
per sentence and the root-mean-square L2 distance to the exact expectations (span posteriors and
expected binary-rule counts); writes the plot docs/figures/pruning_bias.png.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from samplers.harness import run_suite  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=5)
    parser.add_argument("--out", default="docs/figures/pruning_bias.png")
    args = parser.parse_args()
    results = run_suite("pruning-bias", replicates=args.replicates, seed=0, progress=False)
    summary = results.summary()
    problems = sorted({r["problem"] for r in summary}, key=lambda p: int(p.rsplit("len", 1)[1]))
    fig, axes = plt.subplots(1, len(problems), figsize=(5 * len(problems), 4), squeeze=False)
    print("| problem | estimator | budget | mean s | L2 error (rmse) |")
    print("|---|---|---|---|---|")
    for ax, problem in zip(axes[0], problems):
        rows = [r for r in summary if r["problem"] == problem]
        for est in sorted({r["estimator"] for r in rows}):
            pts = sorted(((r["mean_seconds"], r["rmse"], r["budget"]) for r in rows if r["estimator"] == est))
            for sec, err, b in pts:
                print(f"| {problem} | {est} | {b} | {sec:.4f} | {err:.4f} |")
            ax.plot([p[0] for p in pts], [max(p[1], 1e-6) for p in pts], "o-" if est != "exact" else "k*",
                    label=est)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("seconds per sentence")
        ax.set_ylabel("L2 error vs exact (rmse)")
        ax.set_title(problem)
        ax.legend(fontsize=7)
    fig.tight_layout()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
