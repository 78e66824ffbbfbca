"""The evaluation harness: problems own exact answers, estimators spend a budget, studies compare.

>>> from samplers.harness import Study, FunctionProblem, FunctionEstimator
"""

from .estimator import Estimator, FunctionEstimator
from .memory import MemoryMeter, TracemallocMeter
from .problem import EVALUATIONS, Exact, FunctionProblem, Problem
from .registry import Suite, list_suites, load_suite, register_suite
from .results import Results
from .runner import run_suite
from .store import OutputDirError, RunStore
from .study import RunFailedWarning, RunSpec, Study, run_seed, warmup_seed

__all__ = ["EVALUATIONS", "Estimator", "Exact", "FunctionEstimator", "FunctionProblem", "MemoryMeter",
           "OutputDirError", "Problem", "Results", "RunFailedWarning", "RunSpec", "RunStore", "Study", "Suite",
           "TracemallocMeter", "list_suites", "load_suite", "register_suite", "run_seed", "run_suite", "warmup_seed"]
