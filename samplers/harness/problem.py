"""Problems: objects that own their exact answers (optionally with a standard error and provenance)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Reserved estimate key: an estimator may return ``{"evaluations": n, ...}`` to report a
#: machine-independent cost (potential evaluations, transitions, chart cells); it is not a target.
EVALUATIONS = "evaluations"
#: Reserved estimate key: ``{"diagnostics": {"converged": False, "iterations": 3, ...}, ...}`` reports how a
#: run went (JSON scalars by name); it is stored with the run, not a target.  ``converged`` is read by the
#: summaries (``unconverged``) and marked in the leaderboards.
DIAGNOSTICS = "diagnostics"


@dataclass(frozen=True)
class Exact:
    """A reference value with its own uncertainty and where it came from.

    ``Problem.exact()`` may return an ``Exact`` instead of a plain float/array for any target (in
    the spirit of TFP's Inference Gym, whose ground truths carry standard errors, and posteriordb's
    reference posteriors, which record how they were computed).  The standard error enters the
    bootstrap intervals of bias, MSE and RMSE; the provenance is written to the manifest and the
    summary.  ``value=None`` declares a *measured* target: one with no reference (test accuracy,
    steps to solve), summarised by its mean and interval only.

    Parameters
    ----------
    value : float, ndarray or None
        The reference value (None: no reference, the target is only measured).
    stderr : float or ndarray
        Standard error of ``value`` (0 for exact answers); an array must have ``value``'s shape.
    provenance : str
        How the value was obtained (e.g. ``"enumeration of 2^16 states"`` or ``"AIS, 10^4 chains"``).

    Examples
    --------
    >>> Exact(1.25, stderr=0.01, provenance="long AIS run, seed 0").stderr
    0.01
    """

    value: Any
    stderr: Any = 0.0
    provenance: str = ""


class Problem(ABC):
    """A problem with exact answers for a set of named targets.

    Subclasses set :attr:`name` and implement :meth:`exact`, returning a mapping from target name
    (``"log_partition"``, ``"entropy"``, ``"marginals"``, ``"log_partition_per_length"`` ...) to the
    exact value: a float, an ndarray, an :class:`Exact` (value with standard error and provenance),
    or ``None`` for a target that is measured but has no reference.  The study calls :meth:`exact`
    once per problem and caches it; if it raises, the problem's runs are recorded as failed.

    Attributes
    ----------
    name : str
        Unique, human-readable name used in result tables.
    provenance : str
        How the exact answers are computed (e.g. ``"enumeration of 2^16 states"``); shown in reports.
    """

    name: str = "problem"
    provenance: str = ""

    @abstractmethod
    def exact(self) -> dict[str, Any]:
        """Exact target values, keyed by target name."""

    def size(self) -> dict[str, int]:
        """Size descriptors (number of states, length, ...) recorded with every run."""
        return {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


class FunctionProblem(Problem):
    """A problem built from a name and a callable returning the exact targets (plus any payload).

    ``payload`` is whatever the estimators need (a model, potentials, ...), reachable as
    ``problem.payload``.  ``kind`` (optional) lets estimators decide what they support.
    """

    def __init__(self, name: str, exact_fn, payload: Any = None, *, provenance: str = "",
                 size: dict[str, int] | None = None, kind: str | None = None):
        self.name = name
        self._exact_fn = exact_fn
        self.payload = payload
        self.provenance = provenance
        self._size = dict(size or {})
        if kind is not None:
            self.kind = kind

    def exact(self) -> dict[str, Any]:
        """The exact answers: the result of ``exact_fn()``."""
        return self._exact_fn()

    def size(self) -> dict[str, int]:
        """The size dictionary given at construction (a copy)."""
        return dict(self._size)


def as_target_value(value: Any, target: str, who: str) -> float | np.ndarray:
    """Normalise a target value to a float or a float ndarray; raise naming ``who`` if impossible.

    Only real numbers are accepted: Python/NumPy ints and floats and arrays of a numeric dtype (or
    nested lists of numbers).  Strings, bytes, booleans, complex numbers and object arrays are a
    ``TypeError`` — they are never converted silently.
    """
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{who} returned a boolean for target {target!r}; expected a number or an array")
    if isinstance(value, (int, float, np.floating, np.integer)):
        return float(value)
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{who} returned a non-numeric value for target {target!r}: {type(value).__name__} "
                        f"{value!r}")
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):
        raise TypeError(f"{who} returned a non-numeric value for target {target!r}: {type(value).__name__}") from None
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"{who} returned a non-numeric value for target {target!r}: {type(value).__name__} of "
                        f"dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    if arr.ndim == 0:
        return float(arr)
    return arr


def split_exact(raw: Any, target: str, who: str) -> tuple[float | np.ndarray | None, float | np.ndarray, str]:
    """``(value, stderr, provenance)`` of one exact entry (plain value, :class:`Exact` or None)."""
    if isinstance(raw, Exact):
        if raw.value is None:
            return None, 0.0, raw.provenance
        value = as_target_value(raw.value, target, who)
        stderr = as_target_value(raw.stderr, target, f"{who} (stderr)")
        if not isinstance(value, float) and isinstance(stderr, float):
            stderr = np.full(value.shape, stderr)
        elif isinstance(value, float) != isinstance(stderr, float) or (
                not isinstance(value, float) and np.shape(stderr) != value.shape):
            raise ValueError(f"{who}: stderr of target {target!r} must be a scalar or match the value's shape")
        if not np.all(np.isfinite(stderr)) or np.any(np.asarray(stderr) < 0):
            raise ValueError(f"{who}: stderr of target {target!r} must be finite and >= 0")
        return value, stderr, raw.provenance
    if raw is None:
        return None, 0.0, ""
    value = as_target_value(raw, target, who)
    return value, (0.0 if isinstance(value, float) else np.zeros(value.shape)), ""
