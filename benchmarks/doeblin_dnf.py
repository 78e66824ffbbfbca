"""Experiment 2 (Table 1 style): verifying loop programs with DNF invariants found by 0/1/2-stage chains.

Default: the CEGAR verification of ``doeblin.dnf_verify`` (fig1, cegar2, nested, tacas06, hard), time
and steps per verification over many trials, unfinished trials counted at the cap; the 1- and 2-stage
chains also with the restart rates in ``--extra-eps``; ``--check separating`` asks for separating
rather than inductive invariants.  ``--examples``
instead prints the older table: time and steps to one formula consistent with fixed example sets
(loop invariants on random inputs and planted formulas, ``doeblin.dnf``).

Run: PYTHONPATH=. NUMBA_NUM_THREADS=1 NUMBA_CACHE_DIR=.numba_cache .venv/bin/python benchmarks/doeblin_dnf.py
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import numpy as np

from doeblin.dnf import loop_invariant_tasks, planted_task, search
from doeblin.dnf_verify import loop_programs, state_space, verify, verify_trials


def _se(v: np.ndarray) -> float:
    return float(v.std(ddof=1) / np.sqrt(v.size)) if v.size > 1 else float("nan")


def cegar_table(args: argparse.Namespace) -> None:
    options = dict(beta=args.beta, eps_simplified=args.eps_simplified, n_initial=args.batch, batch=args.batch,
                   check=args.check, max_steps=args.max_steps)
    programs = loop_programs(-args.box, args.box, d=args.d)
    verify(state_space(programs[0]), 2, seed=0, **options)      # compile outside the timings
    print(f"CEGAR verification ({args.check} invariants): n = m = 3, d = {args.d} (program variables + free "
          f"inputs), box [-{args.box}, {args.box}]^d, beta = {args.beta}, eps_simplified = {args.eps_simplified}, "
          f"{args.batch} initial positive + {args.batch} negative examples, up to {args.batch} counterexamples per "
          f"round, {args.trials} trials per row, cap {args.max_steps} steps per verification (unfinished trials "
          f"count as the cap and their time until the cap)\n")
    print("| program | chain | eps_restart | verified | not done at 1e6 steps | median steps | mean steps ± se "
          "| mean s ± se | mean rounds |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    rows = [(n_stages, args.eps_restart) for n_stages in (0, 1, 2)]
    rows += [(n_stages, eps) for eps in args.extra_eps for n_stages in (1, 2)]
    ratios = []
    start = time.perf_counter()
    for program in programs:
        space = state_space(program)
        means = {}
        for n_stages, eps in rows:
            r = verify_trials(space, n_stages, args.trials, eps_restart=eps, seed=args.seed + n_stages, **options)
            steps = r.steps.astype(float)
            means[n_stages, eps] = steps.mean(), r.seconds.mean()
            print(f"| {program.name} | {n_stages}-stage | {eps if n_stages else '-'} | {r.verified.sum()}/{args.trials} | "
                  f"{(r.steps > 1_000_000).sum()} | {np.median(steps):.0f} | {steps.mean():.0f} ± {_se(steps):.0f} | "
                  f"{r.seconds.mean():.3f} ± {_se(r.seconds):.3f} | {r.rounds.mean():.1f} |", flush=True)
        ratios.append((program.name, means))
    print(f"\n| program | eps_restart | 0-stage / 2-stage steps | 0-stage / 2-stage time | 1-stage / 2-stage steps "
          "| 1-stage / 2-stage time |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, m in ratios:
        for eps in [args.eps_restart] + list(args.extra_eps):
            zero, one, two = m[0, args.eps_restart], m[1, eps], m[2, eps]
            print(f"| {name} | {eps} | {zero[0] / two[0]:.1f} | {zero[1] / two[1]:.1f} | {one[0] / two[0]:.2f} | "
                  f"{one[1] / two[1]:.2f} |")
    print(f"\ntotal {time.perf_counter() - start:.1f} s")


def examples_table(args: argparse.Namespace) -> None:
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
            print(f"| {task.name} | {n_stages}-stage | {(r.steps >= 0).sum()}/{args.trials} | {np.median(steps):.0f} | "
                  f"{steps.mean():.0f} ± {_se(steps):.0f} | {ms.mean():.2f} ± {_se(ms):.2f} |")
    print(f"\ntotal {time.perf_counter() - start:.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", action="store_true", help="the fixed-example-set table instead of CEGAR")
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--max-steps", type=int, default=None, help="default 5e6 (CEGAR), 6e5 (--examples)")
    parser.add_argument("--beta", type=float, default=8.0)
    parser.add_argument("--eps-restart", type=float, default=2e-4)
    parser.add_argument("--extra-eps", type=float, nargs="*", default=[2e-5],
                        help="further eps_restart values for the 1- and 2-stage rows (CEGAR)")
    parser.add_argument("--eps-simplified", type=float, default=0.04)
    parser.add_argument("--check", choices=("inductive", "separating"), default="inductive")
    parser.add_argument("--batch", type=int, default=50, help="initial examples per class and counterexamples per round")
    parser.add_argument("--box", type=int, default=3, help="states in [-box, box]^d")
    parser.add_argument("--d", type=int, default=5, help="state dimension (free inputs pad the programs)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.examples:
        args.max_steps = args.max_steps or 600_000
        examples_table(args)
    else:
        args.max_steps = args.max_steps or 5_000_000
        cegar_table(args)


if __name__ == "__main__":
    main()
