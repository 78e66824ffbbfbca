"""Registers every experiment's harness suites and commands (the ``mcsa.suites`` and ``mcsa.commands``
entry points of mcsa-experiments).

Factories are given as ``"module:function"`` paths so that listing suites imports no experiment code;
commands are modules with a ``register(subparsers)``, imported only when ``mcsa`` builds its parser.
"""

from __future__ import annotations

# (name, "module:function", one-line description); each experiment adds its rows here.
SUITES: list[tuple[str, str, str]] = [
    ("rdp-bias-variance", "experiments.rdp_tables.suite:bias_variance_suite",
     "the RDP paper's Table 3: bias/variance of randomized Forward vs K, N = 2000"),
    ("rdp-proposals", "experiments.rdp_tables.suite:proposals_suite",
     "the RDP paper's Table 4: the four proposals for randomized Forward, N = 2000"),
    ("doeblin-gestures", "experiments.doeblin_gestures.suite:gestures_suite",
     "Steinhardt & Liang Sec. 5: keyboard-gesture accuracy, Gibbs vs strong Doeblin sampler (about 3 h)"),
    ("doeblin-gestures-quick", "experiments.doeblin_gestures.suite:gestures_quick_suite",
     "keyboard gestures reduced: one data set, T = 20, 2 epochs (about 5 min)"),
    ("doeblin-dnf-planted", "experiments.doeblin_dnf.suite:planted_suite",
     "DNF inference on 40 planted formulas: fraction solved within the cap, 0/1/2-stage chains"),
    ("doeblin-dnf-cegar", "experiments.doeblin_dnf.suite:cegar_suite",
     "Table 1 setting: CEGAR verification of five loop programs with 0/1/2-stage chains"),
    ("rdp-vae", "experiments.rdp_vae.suite:vae_suite",
     "the RDP paper's structured VAE (Table 5 analogue): FULL/TOPK/RDP test NLL at N = 100 on fortunes"),
    ("trf-morph", "experiments.trf_morph.suite:morph_suite",
     "TRF paper Sec. 6: exact NLL of AugSA (two length proposals), quasi-Newton and WB3 on wordfreq words"),
    ("trf-morph-quick", "experiments.trf_morph.suite:morph_quick_suite",
     "TRF word morphology reduced: 3000 words, m = 12, 200 AugSA iterations"),
    ("trf-lm-fortunes", "experiments.trf_lm.suite:fortunes_suite",
     "TRF paper Sec. 7 analogue on fortunes: test PPL of KN3/KN5 and a w+c TRF with checked normalisers (hours)"),
    ("trf-lm-quick", "experiments.trf_lm.suite:fortunes_quick_suite",
     "fortunes LM reduced: 2000 sentences, KN3 vs a 200-iteration TRF (checked PPL)"),
]


# "module" paths of the experiments' commands (``mcsa experiments NAME``); each exposes register(subparsers).
COMMANDS: tuple[str, ...] = ("experiments.trf_morph.cli",)


def register_commands(subparsers) -> None:
    """Add the ``mcsa experiments`` command group (called through the ``mcsa.commands`` entry point)."""
    from samplers.cli import register_command_modules

    parser = subparsers.add_parser("experiments", help="paper experiments (the mcsa-experiments distribution)")
    sub = parser.add_subparsers(dest="experiments_command", metavar="EXPERIMENT")
    register_command_modules(sub, COMMANDS)
    parser.set_defaults(func=lambda args: parser.print_help() or 2)


def register() -> None:
    """Register the experiments' suites with the harness (called through the entry point)."""
    from samplers.harness import register_suite

    for name, factory, description in SUITES:
        register_suite(name, factory, description)
