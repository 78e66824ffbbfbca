"""Per-run seconds of an estimator inside a Study against the same call timed alone, and timed
under tracemalloc (how the harness measured time before time and memory were separated).

Run: NUMBA_CACHE_DIR=.numba_cache .venv/bin/python benchmarks/harness_overhead.py

For each estimator, in one process: warm it up, then time ``replicates`` calls alone (the seeds the
study will use), the same calls under :class:`samplers.harness.TracemallocMeter`, and a Study with
the same problem, budget and replicates (serial).  Printed: the fastest of the replicates' seconds
(the least disturbed by other load on a shared machine) and the ratios
study / alone and tracemalloc / alone.  The harness's goal: study / alone <= 1.2 for every family
(a Python-heavy estimator was slowed by its memory meter, a Numba one hardly at all).
"""

from __future__ import annotations

import time

from samplers.harness import Study, TracemallocMeter, run_seed


def _cases():
    from doeblin.estimators import DoeblinGibbsEstimator
    from samplers.estimators import AISEstimator
    from samplers.models import ising_grid
    from samplers.problems import PairwiseMRFProblem
    from samplers.pruning.estimators import RandomizedPruningEstimator
    from samplers.pruning.suites import sentence_problems
    from trf.suites import trf_quick_suite

    trf = trf_quick_suite()
    ising = PairwiseMRFProblem("ising-4x4", ising_grid(4, 4, coupling=0.4, field=0.1))
    return [("trf AugSA zeta (Python loop + Numba)", trf.problems[0], trf.estimators[0], 200),
            ("pruning randomized (Python + Numba)", sentence_problems([12])[0], RandomizedPruningEstimator(), 16),
            ("doeblin-gibbs draws (Python loop)", ising, DoeblinGibbsEstimator(0.2), 100),
            ("AIS log Z (Numba)", ising, AISEstimator(schedule="linear").only(("log_partition",)), 80)]


def _alone(est, problem, budget, seeds, meter=None):
    times = []
    for seed in seeds:
        start = time.perf_counter()
        if meter is None:
            est.estimate(problem, budget, seed)
        else:
            with meter():
                est.estimate(problem, budget, seed)
        times.append(time.perf_counter() - start)
    return min(times)


def main(replicates: int = 7) -> None:
    print("| estimator | budget | alone (s) | in Study (s) | study / alone | under tracemalloc (s) | tracemalloc / alone |")
    print("|---|---|---|---|---|---|---|")
    for label, problem, est, budget in _cases():
        seeds = [run_seed(0, problem.name, est.name, budget, r) for r in range(replicates)]
        est.estimate(problem, budget, seeds[0])  # warm-up: compilation stays out of every column
        alone = _alone(est, problem, budget, seeds)
        traced = _alone(est, problem, budget, seeds, TracemallocMeter)
        res = Study([problem], [est], [budget], replicates=replicates, seed=0).run(progress=False)
        per_run = {(r["replicate"]): r["seconds"] for r in res.rows}
        study = min(per_run.values())
        print(f"| {label} | {budget} | {alone:.4g} | {study:.4g} | {study / alone:.2f} | {traced:.4g} | "
              f"{traced / alone:.2f} |")


if __name__ == "__main__":
    main()
