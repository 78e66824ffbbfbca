"""argparse ``type=`` converters that reject out-of-range numbers at parse time.

argparse names the flag in its message (``argument --samples: expected an integer >= 1, got 0``), so a bad
value never reaches the library, whose errors name Python parameters (``n_samples``) rather than flags.
"""

from __future__ import annotations

import argparse
import math
from contextlib import contextmanager
from typing import Callable, Iterator


def number(kind: type, low: float | None = None, *, low_open: bool = False, high: float | None = None
           ) -> Callable[[str], float | int]:
    """A converter to ``kind`` (int or float) accepting finite values ``>= low`` (``> low`` when ``low_open``)
    and ``<= high``."""
    what = "an integer" if kind is int else "a number"
    bounds = []
    if low is not None:
        bounds.append(f"{'>' if low_open else '>='} {low:g}")
    if high is not None:
        bounds.append(f"<= {high:g}")
    expected = f"expected {what}{' ' + ' and '.join(bounds) if bounds else ''}"

    def convert(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{expected}, got {text!r}") from None
        if not math.isfinite(value) or (low is not None and (value <= low if low_open else value < low)) or (
                high is not None and value > high):
            raise argparse.ArgumentTypeError(f"{expected}, got {text!r}")
        return value

    convert.__name__ = f"{kind.__name__}_{'gt' if low_open else 'ge'}_{low}"
    return convert


positive_int = number(int, 1)
nonnegative_int = number(int, 0)
positive_float = number(float, 0.0, low_open=True)
nonnegative_float = number(float, 0.0)


def text_encoding(text: str) -> str:
    """``type=`` of every ``--encoding`` flag: a codec name Python knows as a text encoding
    (:func:`samplers.textio.check_encoding`), refused at parse time otherwise."""
    from .textio import check_encoding

    try:
        return check_encoding(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


@contextmanager
def flags_for(names: dict[str, str]) -> Iterator[None]:
    """Re-raise a ``ValueError`` whose message starts with a Python argument name of ``names`` (``"classes must
    be <= ..."``) with the command-line flag instead (``"--classes must be <= ..."``), for checks that only the
    library can make (a bound that depends on the data, such as the vocabulary size)."""
    try:
        yield
    except ValueError as exc:
        message = str(exc)
        for name, flag in names.items():
            if message.startswith(f"{name} "):
                raise ValueError(flag + message[len(name):]) from None
        raise


@contextmanager
def input_flag(flag: str) -> Iterator[None]:
    """Put ``flag`` in front of the message of a ``ValueError`` or ``FileNotFoundError`` raised inside (``--model:
    file 'x.npz' is damaged, ...``), for a block that reads the one input file the flag names and nothing else, so
    every refusal of that file names the flag the user typed."""
    try:
        yield
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"{flag}: {exc}") from None
    except ValueError as exc:
        raise ValueError(f"{flag}: {exc}") from None
