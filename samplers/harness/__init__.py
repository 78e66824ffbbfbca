"""The evaluation harness: problems own exact answers, estimators spend a budget, studies compare.

>>> from samplers.harness import Study, FunctionProblem, FunctionEstimator
"""

from .estimator import Estimator, FunctionEstimator
from .memory import MemoryMeter, TracemallocMeter
from .problem import FunctionProblem, Problem
from .registry import Suite, list_suites, load_suite, register_suite
from .results import Results
from .runner import run_suite
from .study import RunSpec, Study, run_seed

__all__ = ["Estimator", "FunctionEstimator", "FunctionProblem", "MemoryMeter", "Problem", "Results", "RunSpec",
           "Study", "Suite", "TracemallocMeter", "list_suites", "load_suite", "register_suite", "run_seed",
           "run_suite"]
