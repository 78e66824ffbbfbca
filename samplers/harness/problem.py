"""Problems: objects that own their exact answers."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np

Target = "float | np.ndarray"


class Problem(ABC):
    """A problem with exact answers for a set of named targets.

    Subclasses set :attr:`name` and implement :meth:`exact`, returning a mapping from target name
    (``"log_partition"``, ``"entropy"``, ``"marginals"``, ``"log_partition_per_length"`` ...) to the
    exact value (float or ndarray).  The study calls :meth:`exact` once per problem and caches it.

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
    ``problem.payload``.
    """

    def __init__(self, name: str, exact_fn, payload: Any = None, *, provenance: str = "",
                 size: dict[str, int] | None = None):
        self.name = name
        self._exact_fn = exact_fn
        self.payload = payload
        self.provenance = provenance
        self._size = dict(size or {})

    def exact(self) -> dict[str, Any]:
        return self._exact_fn()

    def size(self) -> dict[str, int]:
        return dict(self._size)


def as_target_value(value: Any, target: str, who: str) -> float | np.ndarray:
    """Normalise a target value to a float or a float ndarray; raise naming ``who`` if impossible."""
    if isinstance(value, (int, float, np.floating, np.integer)) and not isinstance(value, bool):
        return float(value)
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{who} returned a non-numeric value for target {target!r}: {type(value).__name__}") from None
    if arr.ndim == 0:
        return float(arr)
    return arr
