"""Estimators: a problem, a budget and a seed in; estimates of some targets out."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Callable, Sequence

from .memory import MemoryMeter, TracemallocMeter
from .problem import DIAGNOSTICS, EVALUATIONS


class Estimator(ABC):
    """An estimator of some of a problem's targets with a cost knob (the budget).

    Subclasses set :attr:`name` and implement :meth:`estimate`.  ``budget`` is the estimator's own
    cost knob (number of temperatures, masks, iterations, K ...); ``seed`` is an integer from
    which all randomness of the run must be derived, so a run is reproducible.

    Attributes
    ----------
    name : str
        Unique, human-readable name used in result tables.
    budget_label : str
        What the budget means for this estimator (``"temperatures"``, ``"K"``, ...), for plot axes.
    memory_meter : callable returning a :class:`~samplers.harness.memory.MemoryMeter`
        Measures peak memory of one run; tracemalloc (numpy allocations) by default.  Torch
        estimators use the meter from ``rdp`` (autograd saved bytes plus outputs, or CUDA peak).
    warmup : bool
        Whether the study makes one untimed warm-up call per problem (smallest budget, a seed
        outside the replicate streams) before the timed runs, so that Numba compilation, torch
        dispatch caches and lazy imports do not land in the first run's ``seconds``.  Set False
        for estimators whose first call is as cheap as any other.

    Notes
    -----
    ``estimate`` may add the reserved key ``"evaluations"`` to its result: a machine-independent
    cost of the run (potential/energy evaluations, transitions, chart cells ...), recorded beside
    the wall time and usable as the cost axis of the plots.  It is not a target.
    """

    name: str = "estimator"
    budget_label: str = "budget"
    memory_meter: Callable[[], MemoryMeter] = TracemallocMeter
    warmup: bool = True

    @abstractmethod
    def estimate(self, problem, budget: int, seed: int) -> dict[str, Any]:
        """Estimates keyed by target name (a subset of ``problem.exact()``'s keys)."""

    def supports(self, problem) -> bool:
        """Whether this estimator applies to ``problem`` (the study skips pairs that do not)."""
        return True

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


class FunctionEstimator(Estimator):
    """An estimator from a name and a callable ``fn(problem, budget, seed) -> dict``.

    ``supports(problem) -> bool`` (optional) restricts the problems it runs on; ``warmup=False``
    skips the untimed warm-up call.
    """

    def __init__(self, name: str, fn: Callable[[Any, int, int], dict[str, Any]], *,
                 budget_label: str = "budget", memory_meter: Callable[[], MemoryMeter] | None = None,
                 supports: Callable[[Any], bool] | None = None, warmup: bool = True):
        self.name = name
        self._fn = fn
        self.budget_label = budget_label
        self.warmup = bool(warmup)
        if memory_meter is not None:
            self.memory_meter = memory_meter
        self._supports = supports

    def estimate(self, problem, budget: int, seed: int) -> dict[str, Any]:
        """Call ``fn(problem, budget, seed)`` and return its dict of target -> estimate."""
        return self._fn(problem, budget, seed)

    def supports(self, problem) -> bool:
        """Whether this estimator runs on ``problem``: the ``supports`` callable's answer, True without one."""
        return True if self._supports is None else bool(self._supports(problem))


class KindEstimator(Estimator):
    """An estimator that declares the problem kinds and targets it handles.

    The engine knows kinds only as strings: a problem's ``kind`` attribute and, optionally, its
    ``targets`` (the targets it asks for; see :mod:`samplers.problems`).

    Attributes
    ----------
    kinds : dict
        ``{kind: (target, ...)}``: the targets estimated for problems of each kind.
    family : str
        The package that implements it (``"samplers"``, ``"rdp"``, ``"doeblin"``, ``"trf"``, ``"pruning"``).
    quick_budgets, budgets : sequence of int
        Budgets of the ``cross-quick`` and ``cross`` suites.

    Notes
    -----
    Results carry ``"evaluations"``, a machine-independent cost whose unit each estimator states in
    its docstring (single-site conditional updates for MCMC/AIS/Doeblin, table or chart entries for
    the dynamic programs): comparable within a family, only indicative across families.
    """

    kinds: dict[str, tuple] = {}
    family: str = "samplers"
    quick_budgets: Sequence[int] = (1,)
    budgets: Sequence[int] = (1,)

    def only(self, targets: Sequence[str]) -> "KindEstimator":
        """Restrict this estimator to ``targets`` (in place; returns self), e.g. AIS for log Z only."""
        keep = tuple(targets)
        self.kinds = {k: tuple(t for t in v if t in keep) for k, v in self.kinds.items()}
        self.kinds = {k: v for k, v in self.kinds.items() if v}
        if not self.kinds:
            raise ValueError(f"estimator {self.name!r} estimates none of the targets {keep}")
        return self

    def supports(self, problem) -> bool:
        """Whether ``problem``'s kind is one of :attr:`kinds` and it asks for at least one of its targets."""
        return getattr(problem, "kind", None) in self.kinds and bool(self.targets_for(problem))

    def targets_for(self, problem) -> tuple:
        """The targets this estimator returns for ``problem`` (those of its kind the problem asks for)."""
        kind = getattr(problem, "kind", None)
        wanted = self.kinds.get(kind, ()) if isinstance(kind, str) else ()
        have = getattr(problem, "targets", None)
        if have is None:
            return tuple(wanted)
        have = tuple(have) + tuple(getattr(problem, "measured", ()))
        return tuple(t for t in wanted if t in have)

    def estimate(self, problem, budget: int, seed: int) -> dict[str, Any]:
        """Estimate :meth:`targets_for` ``problem`` at ``budget`` with ``seed``, plus ``"evaluations"`` (and
        ``"diagnostics"`` where the estimator reports them).

        Raises
        ------
        ValueError
            If the estimator does not support ``problem`` (see :meth:`supports`).
        """
        if not self.supports(problem):
            raise ValueError(f"estimator {self.name!r} does not support problems of kind "
                             f"{getattr(problem, 'kind', None)!r}; it handles {sorted(self.kinds)}")
        targets = self.targets_for(problem)
        out = self._estimate(problem, int(budget), int(seed), targets)
        return {k: v for k, v in out.items() if k in targets or k in (EVALUATIONS, DIAGNOSTICS)}

    @abstractmethod
    def _estimate(self, problem, budget: int, seed: int, targets: tuple) -> dict[str, Any]:
        """Estimates of ``targets`` (extra keys are dropped; ``"evaluations"`` and ``"diagnostics"`` are kept)."""
