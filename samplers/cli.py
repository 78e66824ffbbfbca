"""The ``mcsa`` console script.

Command groups register through the entry point group ``mcsa.commands``: each entry point loads a
callable ``register(subparsers)`` that adds its parsers with ``set_defaults(func=handler)`` (and
imports nothing heavy: handlers import torch or Numba code only when they run).  mcsa's own groups
(``bench``, ``trf``, ``ngram``, ``uai``) are declared the same way in its pyproject.toml; a third-party
package adds a group by declaring one more entry point.  A group whose module is missing from this
installation is skipped, so ``mcsa bench list`` works without torch.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import re
import signal
import sys
import warnings
from typing import Any, Iterator, Sequence

#: The entry point group for CLI command groups.
COMMANDS_GROUP = "mcsa.commands"

#: mcsa's own command modules, used when the installed metadata declares no ``mcsa.commands``
#: entry points of mcsa (a source checkout run without installing).
COMMAND_MODULES = (
    "samplers.harness.cli",  # mcsa bench list | run
    "trf.cli",               # mcsa trf train | eval | score
    "trf.lm.ngram_cli",      # mcsa ngram train | eval
    "samplers.uai_cli",  # mcsa uai solve
)


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows every option's default (``(default: ...)``) after its help text, except for required
    options and options whose help already states their default."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if action.required or "default" in text.lower() or action.default is argparse.SUPPRESS:
            return text
        return super()._get_help_string(action)


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose sub-parsers (at any depth) show defaults in their help, and whose errors name
    an option by its long spelling only (``argument --seed: ...``, not ``argument --seed/-s: ...``)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        """Report a usage error naming the option by its long spelling only, then exit with status 2."""
        super().error(re.sub(r"^argument (--[\w-]+)(?:/-\w)+:", r"argument \1:", message))


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


def register_command_plugins(subparsers) -> None:
    """Add the command groups of every ``mcsa.commands`` entry point (mcsa's own and third-party)."""
    from importlib import metadata

    eps = list(metadata.entry_points(group=COMMANDS_GROUP))
    if not any(ep.value.startswith("samplers.harness.cli") for ep in eps):
        register_command_modules(subparsers, COMMAND_MODULES)
        eps = [ep for ep in eps if ep.value.split(":")[0] not in COMMAND_MODULES]
    for ep in eps:
        module_name = ep.value.split(":")[0].strip()
        try:
            register = ep.load()
        except ModuleNotFoundError as exc:
            if exc.name and module_name.startswith(exc.name):
                continue  # the providing module is not part of this installation
            warnings.warn(f"mcsa.commands entry point {ep.name!r} ({ep.value}) failed: {exc}", RuntimeWarning,
                          stacklevel=2)
            continue
        except Exception as exc:
            warnings.warn(f"mcsa.commands entry point {ep.name!r} ({ep.value}) failed: {type(exc).__name__}: {exc}",
                          RuntimeWarning, stacklevel=2)
            continue
        register(subparsers)


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("mcsa")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from an uninstalled checkout
        from samplers import __version__

        return __version__


def build_parser() -> argparse.ArgumentParser:
    """The ``mcsa`` argument parser, with the sub-commands of every installed command module."""
    parser = Parser(prog="mcsa", description="MCMC and stochastic-approximation companion suite")
    parser.add_argument("--version", action="version", version=f"mcsa {_version()}",
                        help="print the version and exit")
    register_command_plugins(parser.add_subparsers(dest="command", metavar="COMMAND"))
    return parser


def _quiet_broken_pipe() -> int:
    """The reader of our stdout went away (``mcsa bench list | head``): exit quietly, as Unix tools do."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout without a file descriptor (captured in tests)
        pass
    return 141  # 128 + SIGPIPE, what a shell reports for a tool killed by the broken pipe


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill PID``, a scheduler's stop) raised where Python runs next, so that it leaves the way Ctrl-C
    does: the command's ``finally`` blocks run, one message names the checkpoint, status 143 (128 + 15)."""


_RECEIVED: list[int] = []
"""The signals (SIGINT, SIGTERM) received while :func:`main` runs a command, in order."""


def _raise_terminated(signum, frame) -> None:
    _RECEIVED.append(signum)
    raise Terminated


def _raise_interrupted(signum, frame) -> None:
    _RECEIVED.append(signum)
    raise KeyboardInterrupt


def interruption(exc: BaseException) -> tuple[str, int] | None:
    """How a Ctrl-C or SIGTERM ended a command, for its last line: ``("terminated (SIGTERM)", 143)`` when
    :class:`Terminated` is ``exc`` or in its ``__cause__`` / ``__context__`` chain, ``("interrupted", 130)`` for
    another ``KeyboardInterrupt`` there (a handler may re-raise; one landing in a Numba kernel comes back as a
    ``SystemError`` chained to it), None when neither is."""
    from samplers.harness.records import exception_chain

    links = list(exception_chain(exc))
    if any(isinstance(link, Terminated) for link in links):
        return "terminated (SIGTERM)", 143
    return ("interrupted", 130) if any(isinstance(link, KeyboardInterrupt) for link in links) else None


def _received() -> tuple[str, int] | None:
    """:func:`interruption`'s answer from the signals received while the command ran, for an error whose chain lost
    them: a signal landing in a ctypes callback (LLVM's object cache, while Numba compiles) is printed and swallowed
    there, and the compilation then fails with an unrelated ``RuntimeError``."""
    if signal.SIGTERM in _RECEIVED:
        return "terminated (SIGTERM)", 143
    return ("interrupted", 130) if signal.SIGINT in _RECEIVED else None


def _catch_signals() -> list[tuple[int, Any]]:
    """Route SIGTERM to :class:`Terminated`, and Ctrl-C (where Python's default handler has it) to the same
    ``KeyboardInterrupt``, both noted in :data:`_RECEIVED`, for the run of :func:`main`; the previous handlers to put
    back (none where no handler can be set: not the main thread, or no such signal on this platform)."""
    previous: list[tuple[int, Any]] = []
    for name, handler in (("SIGTERM", _raise_terminated), ("SIGINT", _raise_interrupted)):
        try:
            number = getattr(signal, name)
            if name == "SIGINT" and signal.getsignal(number) is not signal.default_int_handler:
                continue
            previous.append((number, signal.signal(number, handler)))
        except (ValueError, OSError, AttributeError):
            continue
    return previous


@contextlib.contextmanager
def signals_as_interrupts() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated` and Ctrl-C (where Python's default handler has it)
    ``KeyboardInterrupt``, where Python runs next; the previous handlers are put back on leaving.

    For a script that runs ``mcsa`` commands (``experiments/trf_lm/seeds.py``): ``kill PID`` of the script then
    reaches its ``except KeyboardInterrupt``, which can stop the command it is waiting for, instead of ending the
    script and leaving the command running; :func:`interruption` says which signal it was.
    """
    _RECEIVED.clear()
    previous = _catch_signals()
    try:
        yield
    finally:
        for number, handler in previous:
            if handler is not None:  # None: not installed from Python, nothing to put back
                signal.signal(number, handler)


def main(argv: list[str] | None = None) -> int:
    """The ``mcsa`` entry point: parse ``argv`` and run the chosen sub-command.

    Parameters
    ----------
    argv : list of str, optional
        The arguments after ``mcsa`` (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        Exit status: the command's own, 2 on a usage error or a ``ValueError`` / missing file /
        missing extra (one ``mcsa: error:`` line, no traceback), 130 on Ctrl-C, 143 on SIGTERM.
    """
    with signals_as_interrupts():
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    """:func:`main` with the signals routed."""
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help()
            return 2
        try:
            result = args.func(args)
        except BaseException as exc:  # Ctrl-C or SIGTERM: a message and 130 / 143, no traceback, whatever it raised
            ended = interruption(exc) or (None if isinstance(exc, BrokenPipeError) else _received())
            if ended is None:
                if isinstance(exc, (ValueError, FileNotFoundError, ImportError)):
                    print(f"mcsa: error: {exc}", file=sys.stderr)
                    return 2
                raise
            checkpoint = getattr(args, "checkpoint", None)
            kept = (f"; the last checkpoint is kept in {checkpoint} (run the same command with --resume)"
                    if checkpoint and os.path.exists(checkpoint) else "")
            how, status = ended
            print(f"mcsa: {how}{kept}", file=sys.stderr)
            return status
        sys.stdout.flush()
        return int(result or 0)
    except BrokenPipeError:
        return _quiet_broken_pipe()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
