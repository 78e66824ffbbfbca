"""The command line every RDP paper-table script shares (:mod:`experiments.rdp_tables.table`,
:mod:`experiments.rdp_table2.table`): the suite's size arguments, or the summary.csv of an earlier run."""

from __future__ import annotations

import argparse
import csv
from typing import Any


def table_parser(description: str, summary_help: str) -> argparse.ArgumentParser:
    """The arguments of every table script: ``--summary`` (an earlier run's summary.csv), ``--n-states``,
    ``--chain-length``, ``--replicates`` (the suite's size), ``--out`` and ``--seed`` (the run's)."""
    p = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--summary", help=summary_help)
    p.add_argument("--n-states", type=int, default=2000)
    p.add_argument("--chain-length", type=int, default=50)
    p.add_argument("--replicates", type=int, default=100)
    p.add_argument("--out", help="also save the harness results here")
    p.add_argument("--seed", type=int, default=0)
    return p


def summary_rows(path: str) -> list[dict[str, str]]:
    """The rows of a harness summary.csv."""
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def run_summary(suite: Any, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Run ``suite`` at ``args.seed``, save the results to ``args.out`` when given, return the summary rows."""
    from samplers.harness import run_suite

    results = run_suite(suite, seed=args.seed, progress=False)
    if args.out:
        results.save(args.out, plots=False)
    return results.summary()
