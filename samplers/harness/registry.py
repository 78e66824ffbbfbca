"""Registries of suites, estimators and problems, filled through entry points.

Three entry point groups, one per registry; each entry loads a zero-argument callable that calls
the matching ``register_*`` function with ``"module:function"`` paths (imported lazily):

=====================  =========================  ==============================================
group                  register with              what a factory returns
=====================  =========================  ==============================================
``mcsa.suites``        :func:`register_suite`     a :class:`Suite`
``mcsa.estimators``    :func:`register_estimators`  a list of estimators (``KindEstimator`` ...)
``mcsa.problems``      :func:`register_problems`  a list of problems (``KindProblem`` ...)
=====================  =========================  ==============================================

mcsa's own families register exactly as a third-party package does::

    # pyproject.toml of a plug-in package
    [project.entry-points."mcsa.suites"]
    mypkg = "mypkg._register:register_suites"
    [project.entry-points."mcsa.estimators"]
    mypkg = "mypkg._register:register_estimators"

    # mypkg/_register.py (imports nothing heavy)
    from samplers.harness import register_estimators, register_suite
    def register_suites():
        register_suite("mypkg-quick", "mypkg.suites:quick_suite", "my estimators on small problems")
    def register_estimators():
        register_estimators("mypkg", "mypkg.estimators:all_estimators", "my estimators")

Each group is loaded once, on first use; the registering modules import no suite, estimator or
problem module, so listing never imports torch.  Users can also register callables at run time.
"""

from __future__ import annotations

import importlib
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

SUITES_GROUP, ESTIMATORS_GROUP, PROBLEMS_GROUP = "mcsa.suites", "mcsa.estimators", "mcsa.problems"

# name -> (module:function or callable, one-line description)
_SUITES: dict[str, tuple[Any, str]] = {}
# name -> (module:function or callable, one-line description, family or tags)
_ESTIMATORS: dict[str, tuple[Any, str, str]] = {}
_PROBLEMS: dict[str, tuple[Any, str, tuple[str, ...]]] = {}
_LOADED: set[str] = set()


@dataclass
class Suite:
    """What a suite factory returns: problems, estimators, budgets and default replicates.

    ``budgets`` is a list of ints shared by all estimators, or a dict mapping estimator name to its
    own list (estimators whose budgets mean different things).  A composite suite (``quick``) leaves
    problems/estimators empty and lists sub-suites in ``parts``; each part runs as its own study.
    ``baseline`` names a trivial estimator of the suite against which the UAI-style 0-100 score is
    computed; ``name`` is filled in by :func:`load_suite`.
    """

    problems: Sequence[Any]
    estimators: Sequence[Any]
    budgets: Sequence[int] | dict[str, Sequence[int]]
    replicates: int = 10
    description: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    parts: list["Suite"] = field(default_factory=list)
    baseline: str | None = None
    name: str = ""


def _check_factory(name: str, factory: Any) -> None:
    if not isinstance(name, str) or not name:
        raise ValueError("name must be a non-empty string")
    if isinstance(factory, str):
        if ":" not in factory:
            raise ValueError(f"factory must look like 'module:function', got {factory!r}")
    elif not callable(factory):
        raise TypeError("factory must be a 'module:function' string or a callable")


def _put(table: dict, what: str, name: str, entry: tuple, replace: bool) -> None:
    old = table.get(name)
    if old is not None and old != entry and not replace:
        raise ValueError(f"{what} {name!r} is already registered (factory {old[0]!r}); pass replace=True to "
                         "replace it")
    table[name] = entry


def register_suite(name: str, factory: str | Callable[[], Suite], description: str = "", *,
                   replace: bool = False) -> None:
    """Register a suite under ``name``: a ``"module:function"`` path (imported lazily) or a callable.

    Registering a name again with the same factory and description is a no-op (an entry point
    loaded twice); with anything else it raises ``ValueError`` unless ``replace=True``.
    """
    _check_factory(name, factory)
    load_plugins(SUITES_GROUP)  # so that a name taken by an installed package is seen as taken
    _put(_SUITES, "suite", name, (factory, str(description)), replace)


def register_estimators(name: str, factory: str | Callable[[], list], description: str = "", *,
                        family: str | None = None, replace: bool = False) -> None:
    """Register a factory of estimators (a list of :class:`~samplers.harness.Estimator`, each with
    ``supports``) under ``name``; ``family`` (default ``name``) is what ``families=`` filters on."""
    _check_factory(name, factory)
    load_plugins(ESTIMATORS_GROUP)
    _put(_ESTIMATORS, "estimator factory", name, (factory, str(description), family or name), replace)


def register_problems(name: str, factory: str | Callable[[], list], description: str = "", *,
                      tags: Sequence[str] = (), replace: bool = False) -> None:
    """Register a factory of problems (a list of problems with unique names) under ``name``;
    ``tags`` (e.g. ``"cross-quick"``, ``"cross"``) say which cross-family suites use them."""
    _check_factory(name, factory)
    if isinstance(tags, str):
        raise TypeError("tags must be a sequence of strings, not a string")
    load_plugins(PROBLEMS_GROUP)
    _put(_PROBLEMS, "problem factory", name, (factory, str(description), tuple(tags)), replace)


def _entry_points(group: str) -> list:
    from importlib import metadata

    return sorted(metadata.entry_points(group=group), key=lambda ep: ep.name)


def load_plugins(group: str = SUITES_GROUP, force: bool = False) -> None:
    """Call every entry point of ``group`` once (mcsa's families and third-party packages), in
    name order.  A plug-in that fails to load is skipped with a warning naming it."""
    if group in _LOADED and not force:
        return
    _LOADED.add(group)
    for ep in _entry_points(group):
        try:
            ep.load()()
        except Exception as exc:
            warnings.warn(f"{group} entry point {ep.name!r} ({ep.value}) failed: {type(exc).__name__}: {exc}",
                          RuntimeWarning, stacklevel=2)


def _resolve(factory: Any) -> Callable:
    if isinstance(factory, str):
        module_name, func_name = factory.split(":", 1)
        return getattr(importlib.import_module(module_name), func_name)
    return factory


def list_suites() -> dict[str, str]:
    """Suite names and descriptions, without importing any suite module."""
    load_plugins(SUITES_GROUP)
    return {name: desc for name, (_, desc) in sorted(_SUITES.items())}


def suite_exists(name: str) -> bool:
    """Whether ``name`` is registered (after loading the entry points)."""
    load_plugins(SUITES_GROUP)
    return name in _SUITES


def load_suite(name: str, **options: Any) -> Suite:
    """Import and build the suite ``name``.

    Raises
    ------
    ValueError
        If ``name`` is not registered (the message lists the known suites).
    ImportError
        If the suite's package needs an extra that is not installed.
    """
    load_plugins(SUITES_GROUP)
    if name not in _SUITES:
        known = ", ".join(sorted(_SUITES))
        raise ValueError(f"unknown suite {name!r}; known suites: {known}")
    suite = _resolve(_SUITES[name][0])(**options)
    if not isinstance(suite, Suite):
        raise TypeError(f"suite factory for {name!r} returned {type(suite).__name__}, expected Suite")
    if not suite.name:
        suite.name = name
    return suite


def list_estimators() -> dict[str, str]:
    """Registered estimator factories and their descriptions (imports nothing)."""
    load_plugins(ESTIMATORS_GROUP)
    return {name: f"[{fam}] {desc}" for name, (_, desc, fam) in sorted(_ESTIMATORS.items())}


def _build(table: dict, what: str, names: Sequence[str] | None, keep: Callable[[tuple], bool]) -> list:
    """Call the chosen factories of ``table`` (all, or ``names``; those whose entry ``keep`` accepts)
    and concatenate their lists; a factory whose package cannot be imported is skipped with a warning."""
    chosen = list(table) if names is None else list(names)
    out = []
    for name in chosen:
        if name not in table:
            raise ValueError(f"unknown {what} factory {name!r}; known: {sorted(table)}")
        if not keep(table[name]):
            continue
        try:
            factory = _resolve(table[name][0])
        except ImportError as exc:
            warnings.warn(f"{what}s {name!r} skipped: {type(exc).__name__}: {exc}", stacklevel=3)
            continue
        out.extend(factory())
    return out


def load_estimators(names: Sequence[str] | None = None, *, families: Sequence[str] | None = None) -> list:
    """Build the estimators of the registered factories (all, or ``names``, or those of ``families``).

    A factory whose package cannot be imported (e.g. torch missing for rdp) is skipped with a warning.
    """
    load_plugins(ESTIMATORS_GROUP)
    return _build(_ESTIMATORS, "estimator", names, lambda entry: families is None or entry[2] in families)


def list_problems() -> dict[str, str]:
    """Registered problem factories, their tags and descriptions (imports nothing)."""
    load_plugins(PROBLEMS_GROUP)
    return {name: f"[{', '.join(tags)}] {desc}" for name, (_, desc, tags) in sorted(_PROBLEMS.items())}


def load_problems(tag: str | None = None, names: Sequence[str] | None = None) -> list:
    """Build the problems of the registered factories (all, or ``names``, or those tagged ``tag``).

    A factory whose package cannot be imported is skipped with a warning.
    """
    load_plugins(PROBLEMS_GROUP)
    return _build(_PROBLEMS, "problem", names, lambda entry: tag is None or tag in entry[2])


def estimators_for(problem, names: Sequence[str] | None = None, *, families: Sequence[str] | None = None) -> list:
    """Every registered estimator (optionally restricted) whose ``supports(problem)`` is true."""
    return [e for e in load_estimators(names, families=families) if e.supports(problem)]


def run_all(problem, seed: int = 0, *, budgets: dict[str, int] | None = None, names: Sequence[str] | None = None,
            families: Sequence[str] | None = None) -> dict[str, dict[str, Any]]:
    """Hand ``problem`` to every registered estimator that supports it: ``{estimator name: estimates}``.

    Each estimator runs once at ``budgets[name]`` (default: the last of its ``quick_budgets``, or 1)
    with the same ``seed``.
    """
    from ..validation import check_int

    seed = check_int(seed, "seed", low=0)
    out = {}
    for est in estimators_for(problem, names, families=families):
        budget = (budgets or {}).get(est.name, (list(getattr(est, "quick_budgets", [1])) or [1])[-1])
        out[est.name] = est.estimate(problem, budget, seed)
    return out
