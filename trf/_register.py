"""trf's registrations (``mcsa.suites``, ``mcsa.estimators`` and ``mcsa.problems`` entry points)."""

from __future__ import annotations

from samplers.harness import register_estimators, register_problems, register_suite


def suites() -> None:
    """``trf-quick`` and ``trf-zeta``."""
    register_suite("trf-quick", "trf.suites:trf_quick_suite", "AugSA zeta vs AIS per length on a tiny TRF")
    register_suite("trf-zeta", "trf.suites:trf_zeta_suite", "AugSA zeta vs AIS per length on the morphology TRF")


def estimators() -> None:
    """AugSA zeta and AIS zeta on TRF problems."""
    register_estimators("trf", "trf.estimators:trf_estimators", "TRF per-length zeta by AugSA and AIS")


def problems() -> None:
    """Small TRFs with exact zeta for the cross suites."""
    register_problems("trf-cross-quick", "trf.suites:cross_quick_problems", "TRF V=4 m=6", tags=("cross-quick",))
    register_problems("trf-cross", "trf.suites:cross_problems", "TRFs V=4 m=6 and V=6 m=8", tags=("cross",))
