"""Experiment 2 (Table 1 style): verifying loop programs with DNF invariants found by 0/1/2-stage chains.

Default: the CEGAR verification of ``experiments.doeblin_dnf.verify`` (fig1, cegar2, nested, tacas06, hard), time
and steps per verification over many trials, unfinished trials counted at the cap; the 1- and 2-stage
chains also with the restart rates in ``--extra-eps``; ``--check separating`` asks for separating
rather than inductive invariants.  ``--examples``
instead prints the older table: time and steps to one formula consistent with fixed example sets
(loop invariants on random inputs and planted formulas, ``experiments.doeblin_dnf.search``).  ``--planted N`` runs the
planted-formula survey of ``experiments.doeblin_dnf.survey``: N random planted 3 x 3 formulas over d = 5, ``--trials``
trials per formula and chain, pooled time-to-solution statistics, survival curves P(not solved after s
steps), per-formula trap counts and ratios, and ``--rerun R`` unfinished 0-stage trials rerun with a 10x cap
(``--figure PATH`` also plots the survival curves).

Run: NUMBA_NUM_THREADS=1 NUMBA_CACHE_DIR=.numba_cache .venv/bin/python -m experiments.doeblin_dnf.benchmark
     ... -m experiments.doeblin_dnf.benchmark --planted 40 --trials 8 --max-steps 3000000 --rerun 5 --figure PATH
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import numpy as np

from experiments.doeblin_dnf.search import loop_invariant_tasks, planted_task, search
from experiments.doeblin_dnf.survey import default_chains, planted_survey, survival_curve
from experiments.doeblin_dnf.verify import loop_programs, state_space, verify, verify_trials


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
    print("\n| program | eps_restart | 0-stage / 2-stage steps | 0-stage / 2-stage time | 1-stage / 2-stage steps "
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
            steps = r.capped_steps()
            ms = 1e3 * r.seconds
            print(f"| {task.name} | {n_stages}-stage | {(r.steps >= 0).sum()}/{args.trials} | {np.median(steps):.0f} | "
                  f"{steps.mean():.0f} ± {_se(steps):.0f} | {ms.mean():.2f} ± {_se(ms):.2f} |")
    print(f"\ntotal {time.perf_counter() - start:.1f} s")


def _steps_label(s: float) -> str:
    return f"{s:.0e}".replace("e+0", "e") if s >= 1000 else f"{s:.0f}"


def planted_table(args: argparse.Namespace) -> None:
    cap = args.max_steps
    chains = default_chains(args.planted_eps)
    search(planted_task(seed=0), 2, trials=1, seed=0)       # compile outside the timings
    print(f"Planted-formula survey: {args.planted} random planted 3 x 3 formulas (planted_task, d = 5, "
          f"{args.n_examples} uniform examples in [-3, 3]^5, 25-75 % positive), {args.trials} trials per formula and "
          f"chain, n = m = 3, beta = {args.beta}, eps_simplified = {args.eps_simplified}, cap C = {cap} steps, "
          f"seed {args.seed}\n", flush=True)
    start = time.perf_counter()
    sv = planted_survey(args.planted, args.trials, chains, n_examples=args.n_examples, beta=args.beta,
                        eps_simplified=args.eps_simplified, max_steps=cap, seed=args.seed, progress=True)
    survey_s = time.perf_counter() - start
    n_runs = args.planted * args.trials
    print(f"Pooled over {args.planted} formulas x {args.trials} trials = {n_runs} runs per chain (unfinished runs "
          f"count as C in the mean, so it is a lower bound; se over formulas)\n")
    print("| chain | solved within C/100 | solved within C/10 | solved within C | median steps | mean steps (lower "
          "bound) ± se | total s |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for c, spec in enumerate(chains):
        solved = 1.0 - sv.survival(c, [cap // 100, cap // 10, cap])
        capped = sv.capped_steps(c)
        per_formula = capped.mean(axis=1)
        med = np.median(capped)
        med_text = f"> {cap}" if med >= cap else f"{med:.0f}"
        print(f"| {spec.label} | {solved[0]:.3f} | {solved[1]:.3f} | {solved[2]:.3f} | {med_text} | "
              f"{capped.mean():.0f} ± {_se(per_formula):.0f} | {sv.seconds[c].sum():.0f} |")
    at = sorted({s for s in (1_000, 10_000, 100_000, 1_000_000) if s < cap} | {cap})
    print("\nSurvival P(not solved after s steps), pooled; ± se over formulas\n")
    print("| chain | " + " | ".join(f"s = {_steps_label(s)}" for s in at) + " |")
    print("| --- | " + " | ".join("---" for _ in at) + " |")
    for c, spec in enumerate(chains):
        per_formula = survival_curve(sv.steps[c], cap, at)
        mean = per_formula.mean(axis=0)
        se = per_formula.std(axis=0, ddof=1) / np.sqrt(args.planted) if args.planted > 1 else np.full(len(at), np.nan)
        print(f"| {spec.label} | " + " | ".join(f"{v:.3f} ± {e:.3f}" for v, e in zip(mean, se)) + " |")
    trapped = (sv.steps < 0).sum(axis=2)            # (chain, formula): unfinished trials at C
    print(f"\nPer formula ({args.planted} formulas; 'trapped' = not solved within C; ratio = mean capped steps of "
          f"the 0-stage chain / of the chain, per formula: a lower bound where the 0-stage chain was trapped)\n")
    print("| chain | formulas with >= 1 trapped trial | trapped trials | max trapped trials on one formula | "
          "0-stage / chain ratio: median | min | max | formulas with ratio > 2 |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for c, spec in enumerate(chains):
        ratio = sv.mean_ratio_per_formula(0, c)
        ratio_text = (f"{np.median(ratio):.2f} | {ratio.min():.2f} | {ratio.max():.2f} | {(ratio > 2).sum()}/{args.planted}"
                      if c else "- | - | - | -")
        print(f"| {spec.label} | {(trapped[c] > 0).sum()}/{args.planted} | {trapped[c].sum()}/{n_runs} | "
              f"{trapped[c].max()}/{args.trials} | {ratio_text} |")
    unfinished = np.argwhere(sv.steps[0] < 0)
    if args.rerun and unfinished.size:
        pick = unfinished[np.random.default_rng(args.seed).permutation(len(unfinished))[:args.rerun]]
        big = 10 * cap
        print(f"\nTraps: {len(pick)} of the {len(unfinished)} 0-stage runs unfinished at C rerun with the same kernel "
              f"seed (the same trajectory) and cap 10 C = {big}\n")
        print("| formula | trial | kernel seed | steps to solution with cap 10 C | s |")
        print("| --- | --- | --- | --- | --- |")
        escaped = 0
        zero = sv.capped_steps(0)
        for f, k in pick:
            r = sv.rerun(0, int(f), int(k), big)
            escaped += int(r.steps[0] >= 0)
            zero[f, k] = r.capped_steps()[0]
            print(f"| {f} | {k} | {sv.seeds[0, f, k]} | {r.steps[0] if r.steps[0] >= 0 else f'> {big}'} | "
                  f"{r.seconds[0]:.0f} |", flush=True)
        print(f"\n{escaped}/{len(pick)} escaped before 10 C. With the reruns' steps (unfinished at 10 C counted at "
              f"10 C, the other unfinished runs at C) the 0-stage mean is >= {zero.mean():.0f} steps: "
              + ", ".join(f"{zero.mean() / sv.capped_steps(c).mean():.1f}x the {spec.label} mean"
                          for c, spec in enumerate(chains) if c))
    if args.figure:
        _survival_figure(sv, args.figure)
    print(f"\nsurvey {survey_s:.1f} s, total {time.perf_counter() - start:.1f} s")


def _survival_figure(sv, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    grid = np.unique(np.geomspace(100, sv.max_steps, 200).astype(np.int64))
    fig, ax = plt.subplots(figsize=(6, 4))
    for c, spec in enumerate(sv.chains):
        ax.step(grid, sv.survival(c, grid), where="post", label=spec.label)
    ax.set_xscale("log")
    ax.set_xlabel("MH steps s (restarts included)")
    ax.set_ylabel("fraction of runs not yet solved")
    n_formulas, trials = sv.steps.shape[1:]
    ax.set_title(f"DNF inference, {n_formulas} planted 3x3 formulas x {trials} runs")
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"\nwrote {path}")


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
    parser.add_argument("--planted", type=int, default=0, metavar="N", help="planted-formula survey over N formulas")
    parser.add_argument("--n-examples", type=int, default=150, help="examples per planted formula (--planted)")
    parser.add_argument("--planted-eps", type=float, nargs="+", default=[2e-4],
                        help="eps_restart values of the 1- and 2-stage chains (--planted)")
    parser.add_argument("--rerun", type=int, default=5, help="unfinished 0-stage runs rerun with a 10x cap (--planted)")
    parser.add_argument("--figure", default=None, help="survival-curve figure path (--planted)")
    args = parser.parse_args()
    if args.planted:
        args.max_steps = args.max_steps or 3_000_000
        planted_table(args)
    elif args.examples:
        args.max_steps = args.max_steps or 600_000
        examples_table(args)
    else:
        args.max_steps = args.max_steps or 5_000_000
        cegar_table(args)


if __name__ == "__main__":
    main()
