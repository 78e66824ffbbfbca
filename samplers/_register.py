"""The core's registrations (``mcsa.suites``, ``mcsa.estimators``, ``mcsa.problems`` entry points).

Only ``"module:function"`` paths: nothing is imported until a suite, estimator or problem is built.
"""

from __future__ import annotations

from .harness import register_estimators, register_problems, register_suite


def suites() -> None:
    """``quick`` (make demo), ``mrf-quick``, ``ais-ising``, ``cross-quick``, ``cross``, ``uai``."""
    register_suite("quick", "samplers.suites:quick_suite", "every family's quick problems (make demo)")
    register_suite("mrf-quick", "samplers.suites:mrf_quick_suite", "AIS vs Gibbs on small Ising/Potts MRFs")
    register_suite("ais-ising", "samplers.suites:ais_ising_suite",
                   "AIS log Z accuracy vs temperatures per schedule on Ising 4x4/4x5 (reported stderr beside RMSE)")
    register_suite("cross-quick", "samplers.suites:cross_quick_suite",
                   "every family's estimators on one small problem of each kind (make demo)")
    register_suite("cross", "samplers.suites:cross_suite",
                   "cross-family leaderboard: every estimator on chain CRFs, MRFs, PCFGs, TRFs (~30 min)")
    register_suite("uai", "samplers.suites:uai_suite",
                   "every applicable estimator on a folder of UAI .uai instances (--instances DIR) against their "
                   "published .PR/.MAR answers")


def estimators() -> None:
    """The core's estimators (trivial, exact forward, junction tree, AIS, Gibbs)."""
    register_estimators("samplers", "samplers.estimators:samplers_estimators",
                        "trivial baseline, exact forward / junction tree, AIS (log Z, weighted marginals), Gibbs")


def problems() -> None:
    """The core's cross-suite problems (chain CRFs, MRFs, PCFGs)."""
    register_problems("samplers-cross-quick", "samplers.suites:cross_quick_problems",
                      "chain CRF T=8 N=10, Ising 4x4, PCFG NT=6 T=6", tags=("cross-quick",))
    register_problems("samplers-cross", "samplers.suites:cross_problems",
                      "chain CRFs N=20/50, Ising 10x10, Potts 6x6, random MRF, two PCFGs", tags=("cross",))
