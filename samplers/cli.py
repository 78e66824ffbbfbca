"""The ``mcsa`` console script.

Sub-commands live in the packages that own them; each module listed in :data:`COMMAND_MODULES`
exposes ``register(subparsers)`` adding its parsers with ``set_defaults(func=handler)``.  A module
whose optional dependencies are missing is skipped, so ``mcsa bench list`` works without torch.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

COMMAND_MODULES = (
    "samplers.harness.cli",  # mcsa bench list | run
    "trf.cli",               # mcsa trf morph | train | eval | score
    "trf.lm.ngram_cli",      # mcsa ngram train | eval
)


def register_command_modules(subparsers, module_names: Sequence[str]) -> None:
    """Call ``register(subparsers)`` of each module; skip modules that are not installed.

    A module is skipped only when it (or its package) is itself missing; a missing dependency *inside*
    an installed module is a real error and propagates.
    """
    for module_name in module_names:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name and module_name.startswith(exc.name):
                continue  # that package or module is not part of this installation
            raise
        module.register(subparsers)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mcsa", description="MCMC and stochastic-approximation companion suite")
    register_command_modules(parser.add_subparsers(dest="command", metavar="COMMAND"), COMMAND_MODULES)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        result = args.func(args)
    except (ValueError, FileNotFoundError, ImportError) as exc:
        print(f"mcsa: error: {exc}", file=sys.stderr)
        return 2
    return int(result or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
