"""``mcsa bench list`` and ``mcsa bench run``."""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from pathlib import Path

from samplers.argtypes import nonnegative_int, positive_int


def _jobs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer or -1, got {text!r}") from None
    if value == 0 or value < -1:
        raise argparse.ArgumentTypeError(f"expected a positive integer or -1, got {value}")
    return value


def _suite_arg(text: str) -> tuple[str, str]:
    key, eq, value = text.partition("=")
    if not eq or not key.isidentifier():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE with KEY a Python name, got {text!r}")
    return key, value


def suite_options(args) -> dict[str, str]:
    """The suite factory's keyword arguments from ``--suite-arg KEY=VALUE`` and ``--instances DIR``."""
    options = dict(args.suite_args)
    if args.instances is not None:
        if options.get("instances", args.instances) != args.instances:
            raise ValueError("--instances and --suite-arg instances=... disagree")
        options["instances"] = args.instances
    return options


def register(subparsers) -> None:
    """Add ``bench list`` and ``bench run`` to the ``mcsa`` sub-commands."""
    bench = subparsers.add_parser("bench", help="list and run evaluation-harness suites",
                                  description="List and run evaluation-harness suites (registered through the "
                                              "mcsa.suites entry point group).")
    sub = bench.add_subparsers(dest="bench_command", metavar="BENCH_COMMAND")

    p_list = sub.add_parser("list", help="list the registered suites (imports none of them)",
                            description="List the registered suites (or estimator / problem factories); imports "
                                        "no suite, estimator or problem module (and never torch).")
    what = p_list.add_mutually_exclusive_group()
    what.add_argument("--estimators", dest="what", action="store_const", const="estimators",
                      help="list the registered estimator factories instead")
    what.add_argument("--problems", dest="what", action="store_const", const="problems",
                      help="list the registered problem factories instead")
    p_list.set_defaults(func=cmd_list, what="suites")

    p_board = sub.add_parser("leaderboard", help="print the cross-family leaderboard of a finished study folder",
                             description="Print, per problem kind and target, each estimator's pooled score and "
                                         "RMSE at the best budget within each cost cap, from FOLDER/summary.csv "
                                         "and FOLDER/results.json (e.g. after `mcsa bench run --suite cross`).")
    p_board.add_argument("folder", type=Path, help="output folder of a finished `mcsa bench run`")
    p_board.set_defaults(func=cmd_leaderboard)

    p_run = sub.add_parser(
        "run", help="run a suite, streaming runs to --out and writing summaries and plots",
        description="Run a suite. Every finished run is appended to OUT/runs.jsonl at once; at the end "
                    "results.csv, summary.csv, summary.md, results.json and the plots are written and "
                    "OUT/manifest.json is marked complete. Ctrl-C keeps the finished runs; --resume continues.")
    p_run.add_argument("--suite", required=True, help="suite name (see `mcsa bench list`)")
    p_run.add_argument("--out", "-o", required=True, type=Path,
                       help="output folder (new or empty; one holding this study needs --resume or --force)")
    p_run.add_argument("--replicates", type=positive_int, default=None,
                       help="replicates per cell (default: the suite's)")
    p_run.add_argument("--jobs", "-j", type=_jobs, default=1, help="parallel workers (joblib; -1 = all cores)")
    p_run.add_argument("--dask", default=None, metavar="SCHEDULER_ADDRESS",
                       help="send the runs to this Dask scheduler (e.g. tcp://host:8786; needs mcsa[dask]); they "
                            "stream into --out as they finish, and --resume works as without it")
    p_run.add_argument("--seed", "-s", type=nonnegative_int, default=0, help="study seed; every run's seed derives from it")
    p_run.add_argument("--budgets", type=positive_int, nargs="+", default=None,
                       help="override every estimator's budgets (default: the suite's)")
    p_run.add_argument("--suite-arg", dest="suite_args", action="append", default=[], type=_suite_arg,
                       metavar="KEY=VALUE", help="keyword argument of the suite's factory (repeatable), e.g. "
                                                 "--suite-arg instances=DIR for --suite uai")
    p_run.add_argument("--instances", default=None, metavar="DIR",
                       help="folder of problem instances (the same as --suite-arg instances=DIR; --suite uai)")
    p_run.add_argument("--baseline", default=None,
                       help="estimator scored 0 in the UAI-style 0-100 score (default: the suite's baseline)")
    mode = p_run.add_mutually_exclusive_group()
    mode.add_argument("--resume", action="store_true",
                      help="continue the study in --out: runs already stored are not repeated")
    mode.add_argument("--force", action="store_true",
                      help="replace the study in --out (deletes the files the harness wrote there)")
    p_run.add_argument("--fail-fast", action="store_true",
                       help="stop at the first failed run (default: record failures and continue)")
    p_run.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p_run.add_argument("--brief", action="store_true",
                       help="print one line per estimator (budget range, RMSE trend, seconds) instead of the full "
                            "table, which is written to OUT/summary.md either way")
    bar = p_run.add_mutually_exclusive_group()
    bar.add_argument("--progress", dest="progress", action="store_const", const=True, default=None,
                     help="always show the progress bar on stderr (default: only on a terminal)")
    bar.add_argument("--quiet", "-q", dest="progress", action="store_const", const=False,
                     help="never show the progress bar (default: shown only on a terminal)")
    bar.add_argument("--no-progress", dest="progress", action="store_const", const=False,
                     help=argparse.SUPPRESS)  # the old spelling of --quiet
    p_run.set_defaults(func=cmd_run)
    bench.set_defaults(func=lambda args: bench.print_help() or 2)


def cmd_list(args) -> int:
    """``mcsa bench list {suites,estimators,problems}``: print the registered names and descriptions.

    Returns
    -------
    int
        Exit status: 0, or 1 when nothing of that sort is registered.
    """
    from .registry import list_estimators, list_problems, list_suites

    entries = {"suites": list_suites, "estimators": list_estimators, "problems": list_problems}[args.what]()
    if not entries:
        print(f"mcsa: no {args.what} are registered", file=sys.stderr)
        return 1
    width = max(len(n) for n in entries)
    for name, desc in entries.items():
        print(f"{name:<{width}}  {desc}")
    return 0


def cmd_leaderboard(args) -> int:
    """``mcsa bench leaderboard FOLDER``: print the Markdown leaderboard of a finished run.

    Returns
    -------
    int
        Exit status: 0, or 2 (with the error on stderr) when the folder has no usable summary.
    """
    from .summary import leaderboard_from_dir

    try:
        print(leaderboard_from_dir(args.folder))
    except ValueError as exc:
        print(f"mcsa: error: {exc}", file=sys.stderr)
        return 2
    return 0


def resume_command(args) -> str:
    """The ``mcsa bench run ... --resume`` line that continues this run with every flag that shapes the
    study or its outputs (the manifest stores replicates, budgets and baseline too)."""
    import shlex

    again = ["mcsa", "bench", "run", "--suite", args.suite, "--out", str(args.out), "--seed", str(args.seed)]
    if args.replicates is not None:
        again += ["--replicates", str(args.replicates)]
    if args.budgets is not None:
        again += ["--budgets", *map(str, args.budgets)]
    if args.baseline is not None:
        again += ["--baseline", args.baseline]
    if args.jobs != 1:
        again += ["--jobs", str(args.jobs)]
    again += [flag for flag, on in (("--fail-fast", args.fail_fast), ("--no-plots", args.no_plots)) if on]
    for key, value in suite_options(args).items():
        again += ["--suite-arg", f"{key}={value}"]
    if args.dask is not None:
        again += ["--dask", args.dask]
    return " ".join(shlex.quote(a) for a in again) + " --resume"


def cmd_run(args) -> int:
    """``mcsa bench run``: validate the flags, run the suite, print its summary and where the results went.

    Returns
    -------
    int
        Exit status: 0 on success, 1 when runs failed, 2 on a flag or output-folder error, 130 on Ctrl-C
        (with the ``--resume`` command on stderr).
    """
    from .registry import load_suite, suite_exists
    from .runner import run_suite
    from .store import OutputDirError

    if not suite_exists(args.suite):
        load_suite(args.suite)  # the unknown-suite error, listing the known ones
    suite = args.suite
    try:
        options = suite_options(args)
        if options:
            suite = load_suite(args.suite, **options)
    except (TypeError, ValueError) as exc:
        print(f"mcsa: error: --suite-arg: suite {args.suite!r}: {exc}", file=sys.stderr)
        return 2
    from .study import RunFailedWarning

    if args.jobs != 1:
        # A Ctrl-C ends joblib's loky workers abruptly; loky's resource tracker (a separate process that
        # inherits PYTHONWARNINGS) then warns about semaphores it can no longer find.  That is expected
        # on an interrupt and would bury the one-line resume message, so the tracker is told to be quiet.
        quiet = "ignore:resource_tracker:UserWarning"
        previous = os.environ.get("PYTHONWARNINGS")
        os.environ["PYTHONWARNINGS"] = f"{previous},{quiet}" if previous else quiet
    client = None
    if args.dask is not None:
        try:
            from distributed import Client
        except ImportError:
            print("mcsa: error: --dask needs dask.distributed: pip install 'mcsa[dask]'", file=sys.stderr)
            return 2
        try:
            client = Client(args.dask, timeout=10)
        except (OSError, TimeoutError, ValueError) as exc:
            print(f"mcsa: error: --dask {args.dask}: cannot reach the scheduler ({type(exc).__name__}: {exc})",
                  file=sys.stderr)
            return 2
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RunFailedWarning)  # failures are reported below
            results = run_suite(suite, backend=None if client is None else "dask",
                                n_jobs=-1 if client is not None and args.jobs == 1 else args.jobs,
                                replicates=args.replicates, seed=args.seed,
                                budgets=args.budgets, progress=args.progress, out=args.out, resume=args.resume,
                                force=args.force, fail_fast=args.fail_fast, plots=not args.no_plots,
                                baseline=args.baseline)
    except OutputDirError as exc:
        print(f"mcsa: error: --out: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        from_dask = False
        if client is not None:
            from distributed import KilledWorker

            from_dask = isinstance(exc, KilledWorker)
        if from_dask:
            print(f"mcsa: error: --dask {args.dask}: workers died running a task more often than the scheduler "
                  f"allows ({exc}); finished runs are kept in {args.out}/runs.jsonl. Resume with: "
                  f"{resume_command(args)}", file=sys.stderr)
            return 1
        if not args.fail_fast:
            raise
        print(f"mcsa: error: stopped at the first failed run (--fail-fast): {type(exc).__name__}: {exc}",
              file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (samplers.cli.Terminated)
        from samplers.cli import interruption

        how, status = interruption(exc) or ("interrupted", 130)
        print(f"mcsa: {how}; finished runs are kept in {args.out}/runs.jsonl. Resume with: "
              f"{resume_command(args)}", file=sys.stderr)
        return status
    finally:
        if client is not None:
            client.close()
    if args.brief:
        from .digest import digest

        print(digest(results.summary(), str(args.out), failures=len(results.failures)))
    else:
        print(results.to_markdown())
    if results.failures:
        print(f"mcsa: {len(results.failures)} runs failed (listed in {args.out}/summary.md); the first: "
              f"{results.failures[0]['error']}", file=sys.stderr)
    written = results.meta.get("written", [])
    print(f"wrote {len(written)} files to {args.out}" + ("" if args.brief else ": " + ", ".join(written)),
          file=sys.stderr)
    return 1 if results.failures else 0
