"""Run records: validating an estimator's output against a problem's targets, and the helpers the
engine's modules share (warning stack levels, error text)."""

from __future__ import annotations

import math
import sys
import warnings
from types import FrameType
from typing import Any, Iterator, Mapping

import numpy as np

from .problem import DIAGNOSTICS, EVALUATIONS, as_target_value


def user_stacklevel() -> int:
    """``stacklevel`` for :func:`warnings.warn` (called by the caller of this function) that points
    at the first frame outside ``samplers.harness``: the user's code."""
    frame: FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_globals.get("__name__", "").startswith("samplers.harness"):
        frame, level = frame.f_back, level + 1
    return level


def exception_chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and the exceptions of its ``__cause__`` / ``__context__`` chain, each once."""
    seen = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        yield link
        seen.add(id(link))
        link = link.__cause__ or link.__context__


def is_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` is, or was caused by, a Ctrl-C: ``KeyboardInterrupt`` itself, or an exception
    whose ``__cause__`` / ``__context__`` chain holds one (a Ctrl-C landing inside a Numba kernel comes
    back as ``SystemError: CPUDispatcher(...) returned a result with an exception set``)."""
    return any(isinstance(link, KeyboardInterrupt) for link in exception_chain(exc))


def error_text(exc: BaseException) -> str:
    """A failure's one-line text, ``"ExceptionType: message"``, as stored in a failed run's record."""
    return f"{type(exc).__name__}: {exc}"


def diagnostics_of(raw: Any, who: str) -> dict[str, Any]:
    """A run's ``diagnostics`` validated: a dict of name -> JSON scalar (bool, int, float, str or None)."""
    if not isinstance(raw, Mapping):
        raise TypeError(f"{who} reported diagnostics of type {type(raw).__name__}; expected a dict of name -> value")
    out: dict[str, Any] = {}
    for name, value in raw.items():
        if not isinstance(name, str):
            raise TypeError(f"{who} reported a diagnostic named {name!r}; names must be strings")
        if isinstance(value, (bool, np.bool_)):
            out[name] = bool(value)
        elif isinstance(value, (int, np.integer)):
            out[name] = int(value)
        elif isinstance(value, (float, np.floating)):
            out[name] = float(value)
        elif value is None or isinstance(value, str):
            out[name] = value
        else:
            raise TypeError(f"{who} reported diagnostic {name!r} = {value!r}; expected a bool, number, string or None")
    return out


def normalise(estimates: Any, exact: Mapping[str, tuple], who: str
              ) -> tuple[dict[str, Any], float | None, dict[str, Any] | None]:
    """Validate an estimator's output against the problem's targets: (estimates, evaluations, diagnostics)."""
    if not isinstance(estimates, Mapping):
        raise TypeError(f"{who} returned {type(estimates).__name__}, expected a dict of target -> value")
    estimates = dict(estimates)
    evaluations = None
    if EVALUATIONS in estimates:
        raw = estimates.pop(EVALUATIONS)
        if isinstance(raw, bool) or not isinstance(raw, (int, float, np.integer, np.floating)) \
                or not math.isfinite(raw) or raw < 0:
            raise ValueError(f"{who} reported evaluations={raw!r}; expected a finite number >= 0")
        evaluations = float(raw)
    diagnostics = diagnostics_of(estimates.pop(DIAGNOSTICS), who) if DIAGNOSTICS in estimates else None
    if not estimates:
        raise ValueError(f"{who} returned no estimates")
    out = {}
    for target, raw in estimates.items():
        if target not in exact:
            raise ValueError(f"{who} returned unknown target {target!r}; the problem's targets are {sorted(exact)}")
        value = as_target_value(raw, target, who)
        truth = exact[target][0]
        if truth is not None:
            if isinstance(truth, float) and not isinstance(value, float):
                raise ValueError(f"{who} returned an array for scalar target {target!r}")
            if not isinstance(truth, float) and (isinstance(value, float) or value.shape != truth.shape):
                shape = "a scalar" if isinstance(value, float) else f"shape {value.shape}"
                raise ValueError(f"{who} returned {shape} for target {target!r}, expected shape {truth.shape}")
        if not np.all(np.isfinite(value)):
            warnings.warn(f"{who} gave a non-finite estimate for target {target!r}; it will appear as NaN in "
                          f"the summary", RuntimeWarning, stacklevel=user_stacklevel())
        out[target] = value
    return out, evaluations, diagnostics
