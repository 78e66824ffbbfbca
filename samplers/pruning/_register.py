"""The pruning family's registrations (``mcsa.suites`` and ``mcsa.estimators`` entry points)."""

from __future__ import annotations

from ..harness import register_estimators, register_suite


def suites() -> None:
    """``pruning-quick`` and ``pruning-bias``."""
    register_suite("pruning-quick", "samplers.pruning.suites:pruning_quick_suite",
                   "randomized pruning vs fixed masks, short sentences")
    register_suite("pruning-bias", "samplers.pruning.suites:pruning_bias_suite",
                   "L2 bias vs time of pruning estimators (PCFG, ITG)")


def estimators() -> None:
    """Exact inside-outside, randomized pruning and a fixed mask on PCFG problems."""
    register_estimators("pruning", "samplers.pruning.estimators:pruning_estimators",
                        "PCFG exact inside-outside, randomized pruning, fixed coarse-posterior masks")
