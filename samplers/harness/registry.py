"""A registry of named benchmark suites, filled through the ``mcsa.suites`` entry point group.

A suite is a zero-argument factory (``module:function``) returning a :class:`Suite`.  Packages —
mcsa's own families and any third-party package — declare an entry point in the group
``mcsa.suites`` whose object is a zero-argument callable that calls :func:`register_suite` with
``"module:function"`` paths::

    # pyproject.toml of a plug-in package
    [project.entry-points."mcsa.suites"]
    mypkg = "mypkg.suites:register"

    # mypkg/suites.py (imports nothing heavy)
    from samplers.harness import register_suite
    def register():
        register_suite("mypkg-quick", "mypkg.bench:quick_suite", "my estimators on small problems")

The entry points are loaded once, on the first call of :func:`list_suites` or :func:`load_suite`;
the registering modules import no suite module, so listing never imports torch.  Users can also
register callables at run time.
"""

from __future__ import annotations

import importlib
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

#: The entry point group for suites.
SUITES_GROUP = "mcsa.suites"

# name -> (module:function or callable, one-line description)
_SUITES: dict[str, tuple[Any, str]] = {}
_LOADED = False


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


def register_suite(name: str, factory: str | Callable[[], Suite], description: str = "", *,
                   replace: bool = False) -> None:
    """Register a suite under ``name``: a ``"module:function"`` path (imported lazily) or a callable.

    Registering a name again with the same factory and description is a no-op (an entry point
    loaded twice); with anything else it raises ``ValueError`` unless ``replace=True``.
    """
    if not isinstance(name, str) or not name:
        raise ValueError("name must be a non-empty string")
    load_plugins()  # so that a name taken by an installed package is seen as taken
    if isinstance(factory, str):
        if ":" not in factory:
            raise ValueError(f"factory must look like 'module:function', got {factory!r}")
    elif not callable(factory):
        raise TypeError("factory must be a 'module:function' string or a callable")
    entry = (factory, str(description))
    old = _SUITES.get(name)
    if old is not None and old != entry and not replace:
        raise ValueError(f"suite {name!r} is already registered (factory {old[0]!r}); pass replace=True to "
                         "replace it")
    _SUITES[name] = entry


def _entry_points(group: str) -> list:
    from importlib import metadata

    return list(metadata.entry_points(group=group))


def load_plugins(force: bool = False) -> None:
    """Call every ``mcsa.suites`` entry point once (mcsa's families and third-party packages).

    A plug-in that fails to load is skipped with a warning naming it.  If the installed mcsa
    metadata declares no ``samplers`` entry point (a source checkout run without installing),
    mcsa's own families are registered directly.
    """
    global _LOADED
    if _LOADED and not force:
        return
    _LOADED = True
    eps = _entry_points(SUITES_GROUP)
    if not any(ep.name == "samplers" for ep in eps):
        from . import builtin

        builtin.register_all()
    for ep in eps:
        try:
            ep.load()()
        except Exception as exc:
            warnings.warn(f"mcsa.suites entry point {ep.name!r} ({ep.value}) failed: {type(exc).__name__}: {exc}",
                          RuntimeWarning, stacklevel=2)


def list_suites() -> dict[str, str]:
    """Suite names and descriptions, without importing any suite module."""
    load_plugins()
    return {name: desc for name, (_, desc) in sorted(_SUITES.items())}


def suite_exists(name: str) -> bool:
    """Whether ``name`` is registered (after loading the entry points)."""
    load_plugins()
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
    load_plugins()
    if name not in _SUITES:
        known = ", ".join(sorted(_SUITES))
        raise ValueError(f"unknown suite {name!r}; known suites: {known}")
    factory, _ = _SUITES[name]
    if isinstance(factory, str):
        module_name, func_name = factory.split(":", 1)
        module = importlib.import_module(module_name)
        factory = getattr(module, func_name)
    suite = factory(**options)
    if not isinstance(suite, Suite):
        raise TypeError(f"suite factory for {name!r} returned {type(suite).__name__}, expected Suite")
    if not suite.name:
        suite.name = name
    return suite
