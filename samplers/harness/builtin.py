"""mcsa's own suites, registered through the ``mcsa.suites`` entry points of the root pyproject.toml.

Each function registers ``"module:function"`` paths only: this module imports no family package,
so ``mcsa bench list`` stays cheap and never imports torch (``rdp`` imports torch on import, which
is why its registration lives here rather than in ``rdp``).
"""

from __future__ import annotations

from .registry import register_suite


def register_samplers() -> None:
    """``quick`` (make demo), ``mrf-quick``, ``ais-ising``, ``pruning-quick``, ``pruning-bias``."""
    register_suite("quick", "samplers.harness.suites:quick_suite", "every family's quick problems (make demo)")
    register_suite("mrf-quick", "samplers.harness.suites:mrf_quick_suite", "AIS vs Gibbs on small Ising/Potts MRFs")
    register_suite("ais-ising", "samplers.harness.suites:ais_ising_suite",
                   "AIS log Z accuracy vs temperatures per schedule on Ising 4x4/4x5 (reported stderr beside RMSE)")
    register_suite("pruning-quick", "samplers.pruning.bench:pruning_quick_suite",
                   "randomized pruning vs fixed masks, short sentences")
    register_suite("pruning-bias", "samplers.pruning.bench:pruning_bias_suite",
                   "L2 bias vs time of pruning estimators (PCFG, ITG)")
    register_suite("cross-quick", "samplers.harness.cross_suites:cross_quick_suite",
                   "every family's estimators on one small problem of each kind (make demo)")
    register_suite("cross", "samplers.harness.cross_suites:cross_suite",
                   "cross-family leaderboard: every estimator on chain CRFs, MRFs, PCFGs, TRFs (~30 min)")


def register_rdp() -> None:
    """``rdp-quick`` and ``rdp-table2`` (the factories import torch when a suite is loaded)."""
    register_suite("rdp-quick", "rdp.bench:rdp_quick_suite", "randomized forward/inside vs Top-K at small N")
    register_suite("rdp-table2", "rdp.bench:rdp_table2_suite", "the RDP paper's Table 2 MSE grid at N = 2000")


def register_doeblin() -> None:
    """``doeblin-quick`` and ``doeblin-mixing``."""
    register_suite("doeblin-quick", "doeblin.bench:doeblin_quick_suite", "Doeblin chains vs plain MCMC, small chains")
    register_suite("doeblin-mixing", "doeblin.bench:doeblin_mixing_suite",
                   "ergodic averages vs exact Doeblin draws on slow chains")


def register_trf() -> None:
    """``trf-quick`` and ``trf-zeta``."""
    register_suite("trf-quick", "trf.bench:trf_quick_suite", "AugSA zeta vs AIS per length on a tiny TRF")
    register_suite("trf-zeta", "trf.bench:trf_zeta_suite", "AugSA zeta vs AIS per length on the morphology TRF")


def register_all() -> None:
    """Every family's suites (the fallback when mcsa's entry points are not installed)."""
    register_samplers()
    register_rdp()
    register_doeblin()
    register_trf()
