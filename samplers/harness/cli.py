"""``mcsa bench list`` and ``mcsa bench run``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def register(subparsers) -> None:
    bench = subparsers.add_parser("bench", help="list and run evaluation-harness suites")
    sub = bench.add_subparsers(dest="bench_command", metavar="BENCH_COMMAND")

    p_list = sub.add_parser("list", help="list the registered suites (imports none of them)")
    p_list.set_defaults(func=cmd_list)

    p_run = sub.add_parser("run", help="run a suite and write results.csv, summary.csv, summary.md, plots")
    p_run.add_argument("--suite", required=True, help="suite name (see `mcsa bench list`)")
    p_run.add_argument("--out", required=True, type=Path, help="output directory")
    p_run.add_argument("--replicates", type=_positive_int, default=None, help="replicates per cell (suite default)")
    p_run.add_argument("--jobs", type=int, default=1, help="parallel workers (joblib; -1 = all cores)")
    p_run.add_argument("--seed", type=int, default=0, help="study seed (default 0)")
    p_run.add_argument("--budgets", type=_positive_int, nargs="+", default=None,
                       help="override every estimator's budgets")
    p_run.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p_run.add_argument("--no-progress", action="store_true", help="no progress bar")
    p_run.set_defaults(func=cmd_run)
    bench.set_defaults(func=lambda args: bench.print_help() or 2)


def cmd_list(args) -> int:
    from .registry import list_suites

    suites = list_suites()
    width = max(len(n) for n in suites)
    for name, desc in suites.items():
        print(f"{name:<{width}}  {desc}")
    return 0


def cmd_run(args) -> int:
    from .registry import load_suite
    from .runner import run_suite

    if args.replicates is not None and args.replicates < 1:
        raise ValueError(f"--replicates must be >= 1, got {args.replicates}")
    if args.seed < 0:
        raise ValueError(f"--seed must be >= 0, got {args.seed}")
    suite = load_suite(args.suite)
    results = run_suite(suite, replicates=args.replicates, seed=args.seed, n_jobs=args.jobs, budgets=args.budgets,
                        progress=False if args.no_progress else None)
    written = results.save(args.out, plots=not args.no_plots)
    print(results.to_markdown())
    print(f"wrote {len(written)} files to {args.out}: " + ", ".join(sorted(written)), file=sys.stderr)
    return 0
