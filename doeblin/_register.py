"""Doeblin's registrations (``mcsa.suites`` and ``mcsa.estimators`` entry points)."""

from __future__ import annotations

from samplers.harness import register_estimators, register_suite


def suites() -> None:
    """``doeblin-quick`` and ``doeblin-mixing``."""
    register_suite("doeblin-quick", "doeblin.suites:doeblin_quick_suite", "Doeblin chains vs plain MCMC, small chains")
    register_suite("doeblin-mixing", "doeblin.suites:doeblin_mixing_suite",
                   "ergodic averages vs exact Doeblin draws on slow chains")


def estimators() -> None:
    """Doeblin-Gibbs marginals on MRFs and chain CRFs."""
    register_estimators("doeblin", "doeblin.estimators:doeblin_estimators",
                        "exact draws of a strong Doeblin chain over Gibbs sweeps: marginals (biased, eps-dependent)")
