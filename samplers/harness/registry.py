"""A registry of named benchmark suites, imported lazily.

A suite is a zero-argument factory (``module:function``) returning a :class:`Suite`.  Listing suites
imports nothing, so ``mcsa bench list`` never imports torch.  Packages register their suites here
by module path; users can add their own with :func:`register_suite`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

# name -> (module:function, one-line description)
_SUITES: dict[str, tuple[str, str]] = {
    "quick": ("samplers.harness.suites:quick_suite", "every family's quick problems (make demo)"),
    "mrf-quick": ("samplers.harness.suites:mrf_quick_suite", "AIS vs Gibbs on small Ising/Potts MRFs"),
    "rdp-quick": ("rdp.bench:rdp_quick_suite", "randomized forward/inside vs Top-K at small N"),
    "rdp-table2": ("rdp.bench:rdp_table2_suite", "the RDP paper's Table 2 MSE grid at N = 2000"),
    "doeblin-quick": ("doeblin.bench:doeblin_quick_suite", "Doeblin chains vs plain MCMC, small chains"),
    "doeblin-mixing": ("doeblin.bench:doeblin_mixing_suite", "ergodic averages vs exact Doeblin draws on slow chains"),
    "pruning-quick": ("samplers.pruning.bench:pruning_quick_suite", "randomized pruning vs fixed masks, short sentences"),
    "pruning-bias": ("samplers.pruning.bench:pruning_bias_suite", "L2 bias vs time of pruning estimators (PCFG, ITG)"),
    "trf-quick": ("trf.bench:trf_quick_suite", "AugSA zeta vs AIS per length on a tiny TRF"),
    "trf-zeta": ("trf.bench:trf_zeta_suite", "AugSA zeta vs AIS per length on the morphology TRF"),
}


@dataclass
class Suite:
    """What a suite factory returns: problems, estimators, budgets and default replicates.

    ``budgets`` is a list of ints shared by all estimators, or a dict mapping estimator name to its
    own list (estimators whose budgets mean different things).  A composite suite (``quick``) leaves
    problems/estimators empty and lists sub-suites in ``parts``; each part runs as its own study.
    """

    problems: Sequence[Any]
    estimators: Sequence[Any]
    budgets: Sequence[int] | dict[str, Sequence[int]]
    replicates: int = 10
    description: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    parts: list["Suite"] = field(default_factory=list)


def register_suite(name: str, factory: str | Callable[[], Suite], description: str = "") -> None:
    """Register a suite under ``name``: a ``"module:function"`` path (imported lazily) or a callable."""
    if not isinstance(name, str) or not name:
        raise ValueError("name must be a non-empty string")
    if isinstance(factory, str):
        if ":" not in factory:
            raise ValueError(f"factory must look like 'module:function', got {factory!r}")
        _SUITES[name] = (factory, description)
    elif callable(factory):
        _SUITES[name] = (factory, description)  # type: ignore[assignment]
    else:
        raise TypeError("factory must be a 'module:function' string or a callable")


def list_suites() -> dict[str, str]:
    """Suite names and descriptions, without importing any suite module."""
    return {name: desc for name, (_, desc) in sorted(_SUITES.items())}


def load_suite(name: str, **options: Any) -> Suite:
    """Import and build the suite ``name``.

    Raises
    ------
    ValueError
        If ``name`` is not registered (the message lists the known suites).
    ImportError
        If the suite's package needs an extra that is not installed.
    """
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
    return suite
