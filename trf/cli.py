"""``mcsa trf ...``: a dispatcher over the modules that own each TRF command.

``trf.lm.cli`` owns ``train``, ``eval`` and ``score`` (sentence-level language models) and exposes
``register(subparsers)``.  The word-morphology benchmark is a paper experiment:
``mcsa experiments trf-morph`` (the mcsa-experiments distribution).
"""

from __future__ import annotations

from samplers.cli import register_command_modules

TRF_COMMAND_MODULES = ("trf.lm.cli",)


def register(subparsers) -> None:
    """Add the ``mcsa trf`` command and the sub-commands of its installed command modules to ``subparsers``."""
    parser = subparsers.add_parser("trf", help="trans-dimensional random fields")
    sub = parser.add_subparsers(dest="trf_command", metavar="TRF_COMMAND")
    register_command_modules(sub, TRF_COMMAND_MODULES)
    parser.set_defaults(func=lambda args: parser.print_help() or 2)
