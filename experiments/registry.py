"""Registers every experiment's harness suites (the ``mcsa.suites`` entry point of mcsa-experiments).

Factories are given as ``"module:function"`` paths so that listing suites imports no experiment code.
"""

from __future__ import annotations

# (name, "module:function", one-line description); each experiment adds its rows here.
SUITES: list[tuple[str, str, str]] = [
    ("rdp-bias-variance", "experiments.rdp_tables.suite:bias_variance_suite",
     "the RDP paper's Table 3: bias/variance of randomized Forward vs K, N = 2000"),
    ("rdp-proposals", "experiments.rdp_tables.suite:proposals_suite",
     "the RDP paper's Table 4: the four proposals for randomized Forward, N = 2000"),
]


def register() -> None:
    """Register the experiments' suites with the harness (called through the entry point)."""
    from samplers.harness import register_suite

    for name, factory, description in SUITES:
        register_suite(name, factory, description)
