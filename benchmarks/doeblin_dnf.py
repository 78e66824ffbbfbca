"""Experiment 2 (Table 1 style): steps and time to a consistent DNF formula, 0/1/2-stage chains.

Run: PYTHONPATH=. NUMBA_CACHE_DIR=.numba_cache .venv/bin/python benchmarks/doeblin_dnf.py [--trials 40]
Unfinished trials count as ``max_steps`` (so means are lower bounds when found < trials).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import numpy as np

from doeblin.dnf import loop_invariant_tasks, planted_task, search


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--max-steps", type=int, default=600_000)
    parser.add_argument("--beta", type=float, default=8.0)
    parser.add_argument("--eps-restart", type=float, default=2e-4)
    parser.add_argument("--eps-simplified", type=float, default=0.04)
    args = parser.parse_args()
    planted = [replace(planted_task(d=5, n=3, m=3, n_examples=150, seed=s), name=f"planted-3x3-seed{s}")
               for s in (1, 2, 3)]
    tasks = loop_invariant_tasks(n_examples=150) + planted
    search(tasks[0], 2, trials=1, seed=0)       # compile outside the timings
    print(f"n = m = 3, d = 5, 150 examples, beta = {args.beta}, eps_restart = {args.eps_restart}, "
          f"eps_simplified = {args.eps_simplified}, {args.trials} trials, cap {args.max_steps} steps\n")
    print("| task | chain | found | median steps | mean steps ± se | mean ms ± se |")
    print("| --- | --- | --- | --- | --- | --- |")
    start = time.perf_counter()
    for task in tasks:
        for n_stages in (0, 1, 2):
            r = search(task, n_stages, trials=args.trials, seed=1000 + n_stages, max_steps=args.max_steps,
                       beta=args.beta, eps_restart=args.eps_restart, eps_simplified=args.eps_simplified)
            steps = np.where(r.steps >= 0, r.steps, r.max_steps).astype(float)
            ms = 1e3 * r.seconds
            se = lambda v: v.std(ddof=1) / np.sqrt(v.size)  # noqa: E731
            print(f"| {task.name} | {n_stages}-stage | {(r.steps >= 0).sum()}/{args.trials} | {np.median(steps):.0f} | "
                  f"{steps.mean():.0f} ± {se(steps):.0f} | {ms.mean():.2f} ± {se(ms):.2f} |")
    print(f"\ntotal {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
