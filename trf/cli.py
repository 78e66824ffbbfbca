"""``mcsa trf ...``: a dispatcher over the modules that own each TRF command.

``trf.morph_cli`` owns ``morph`` (the word-morphology benchmark); ``trf.lm.cli`` owns ``train``,
``eval`` and ``score`` (sentence-level language models).  Each exposes ``register(subparsers)``.
"""

from __future__ import annotations

import importlib

TRF_COMMAND_MODULES = ("trf.morph_cli", "trf.lm.cli")


def register(subparsers) -> None:
    parser = subparsers.add_parser("trf", help="trans-dimensional random fields")
    sub = parser.add_subparsers(dest="trf_command", metavar="TRF_COMMAND")
    for module_name in TRF_COMMAND_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name and module_name.startswith(exc.name):
                continue
            raise
        module.register(sub)
    parser.set_defaults(func=lambda args: parser.print_help() or 2)
