"""AIS log Z accuracy vs number of temperatures and vs wall time on Ising grids with exact answers.

For each grid (4x4: 2^16 states, 4x5: 2^20 states; coupling 0.4, field 0.1) and each schedule,
runs R independent AIS estimates with C chains at several temperature counts T, and prints
RMSE, bias, the mean reported stderr, mean wall seconds per estimate, and the time ratio against
exact enumeration (which is what AIS replaces on larger grids).  One run, one machine:

    NUMBA_CACHE_DIR=.numba_cache .venv/bin/python benchmarks/ais_ising.py [--replicates 30] [--chains 100]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from samplers.ais import SCHEDULES, ais_log_partition
from samplers.models import ising_grid


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=30)
    parser.add_argument("--chains", type=int, default=100)
    parser.add_argument("--temperatures", type=int, nargs="+", default=[3, 10, 30, 100, 300])
    parser.add_argument("--grids", nargs="+", default=["4x4", "4x5"])
    args = parser.parse_args(argv)

    ising_grid(1, 2).gibbs_sample(2)  # compile (or load) the kernels outside the timings
    ais_log_partition(ising_grid(1, 2), 3, 1, seed=0)
    print(f"AIS on Ising grids (coupling 0.4, field 0.1), {args.chains} chains, {args.replicates} replicates\n")
    for grid in args.grids:
        rows, cols = map(int, grid.split("x"))
        mrf = ising_grid(rows, cols, coupling=0.4, field=0.1)
        start = time.perf_counter()
        exact = mrf.log_partition_exact()
        t_exact = time.perf_counter() - start
        print(f"## {grid} grid: exact log Z = {exact:.6f} by enumerating {mrf.n_configurations} states "
              f"in {t_exact:.3f} s")
        print("| schedule | T | rmse | bias | mean stderr | mean ess | seconds/estimate | time vs exact |")
        print("|---|---|---|---|---|---|---|---|")
        for schedule in SCHEDULES:
            slope_x, slope_y = [], []
            for n_temp in args.temperatures:
                err, se, ess, secs = [], [], [], []
                for r in range(args.replicates):
                    t0 = time.perf_counter()
                    res = ais_log_partition(mrf, n_temp, args.chains, seed=10_000 * n_temp + r, schedule=schedule)
                    secs.append(time.perf_counter() - t0)
                    err.append(res.log_partition - exact)
                    se.append(res.stderr)
                    ess.append(res.ess)
                rmse = float(np.sqrt(np.mean(np.square(err))))
                slope_x.append(np.log(n_temp))
                slope_y.append(np.log(rmse))
                print(f"| {schedule} | {n_temp} | {rmse:.4f} | {np.mean(err):+.4f} | {np.mean(se):.4f} | "
                      f"{np.mean(ess):.1f} | {np.mean(secs):.4f} | {np.mean(secs) / t_exact:.3f} |")
            slope = np.polyfit(slope_x, slope_y, 1)[0]
            print(f"| {schedule} | log-log slope of rmse vs T | {slope:.2f} | | | | | |")
        print()


if __name__ == "__main__":
    main()
