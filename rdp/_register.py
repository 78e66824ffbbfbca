"""rdp's registrations (``mcsa.suites`` and ``mcsa.estimators`` entry points); imports no torch."""

from __future__ import annotations

from samplers.harness import register_estimators, register_suite


def suites() -> None:
    """``rdp-quick`` and ``rdp-table2`` (their factories import torch when a suite is loaded)."""
    register_suite("rdp-quick", "rdp.suites:rdp_quick_suite", "randomized forward/inside vs Top-K at small N")
    register_suite("rdp-table2", "rdp.suites:rdp_table2_suite", "the RDP paper's Table 2 MSE grid at N = 2000")


def estimators() -> None:
    """RDP (K2=1, K1=K2) and Top-K."""
    register_estimators("rdp", "rdp.estimators:rdp_estimators",
                        "RDP (K2=1, K1=K2) and Top-K: chain CRF log Z / marginals / entropy, PCFG log P")
