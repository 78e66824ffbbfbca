"""The evaluation harness engine: problems own exact answers, estimators spend a budget, studies compare.

The engine holds no content: it imports no family and no problem kind.  mcsa's own estimators,
problems and suites live beside the code they evaluate (:mod:`samplers.estimators`,
:mod:`samplers.suites`, ``<family>/estimators.py``, ``<family>/suites.py``) and register through
entry points (:mod:`samplers.harness.registry`).

>>> from samplers.harness import Study, FunctionProblem, FunctionEstimator
"""

from .estimator import Estimator, FunctionEstimator, KindEstimator
from .memory import MemoryMeter, TracemallocMeter
from .problem import DIAGNOSTICS, EVALUATIONS, Exact, FunctionProblem, Problem
from .registry import (
    Suite,
    estimators_for,
    list_estimators,
    list_problems,
    list_suites,
    load_estimators,
    load_problems,
    load_suite,
    register_estimators,
    register_problems,
    register_suite,
    run_all,
)
from .results import Results, read_results
from .runner import run_suite
from .store import OutputDirError, OutputLock, RunStore
from .study import RunFailedWarning, RunSpec, Study, run_seed, warmup_seed

__all__ = ["DIAGNOSTICS", "EVALUATIONS", "Estimator", "Exact", "FunctionEstimator", "FunctionProblem", "KindEstimator",
           "MemoryMeter", "OutputDirError", "OutputLock", "Problem", "Results", "RunFailedWarning", "RunSpec", "RunStore", "Study",
           "Suite", "TracemallocMeter", "estimators_for", "list_estimators", "list_problems", "list_suites",
           "load_estimators", "load_problems", "load_suite", "register_estimators", "register_problems",
           "read_results", "register_suite", "run_all", "run_seed", "run_suite", "warmup_seed"]
