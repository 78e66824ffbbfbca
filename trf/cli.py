"""``mcsa trf ...``: a dispatcher over the modules that own each TRF command.

``trf.morph_cli`` owns ``morph`` (the word-morphology benchmark); ``trf.lm.cli`` owns ``train``,
``eval`` and ``score`` (sentence-level language models).  Each exposes ``register(subparsers)``.
"""

from __future__ import annotations

from samplers.cli import register_command_modules

TRF_COMMAND_MODULES = ("trf.morph_cli", "trf.lm.cli")


def register(subparsers) -> None:
    parser = subparsers.add_parser("trf", help="trans-dimensional random fields")
    sub = parser.add_subparsers(dest="trf_command", metavar="TRF_COMMAND")
    register_command_modules(sub, TRF_COMMAND_MODULES)
    parser.set_defaults(func=lambda args: parser.print_help() or 2)
