"""Packaging promises: torch stays optional, the console script and the pytest plugin are installed."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata

import pytest


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)


def test_torch_free_packages_do_not_import_torch():
    code = ("import sys, samplers, samplers.harness, samplers.testing, trf, doeblin, samplers.cli\n"
            "samplers.cli.build_parser()\n"
            "assert 'torch' not in sys.modules, sorted(m for m in sys.modules if m.startswith('torch'))\n")
    proc = _python(code)
    assert proc.returncode == 0, proc.stderr


def test_rdp_without_torch_says_how_to_install_it():
    # a None entry in sys.modules makes `import torch` raise ImportError, as on a machine without torch
    proc = _python("import sys; sys.modules['torch'] = None\nimport rdp\n")
    assert proc.returncode != 0
    assert "ImportError" in proc.stderr and "mcsa[rdp]" in proc.stderr, proc.stderr


def test_console_script_and_pytest_plugin_are_registered():
    eps = metadata.entry_points()
    assert any(ep.name == "mcsa" and ep.value == "samplers.cli:main" for ep in eps.select(group="console_scripts"))
    assert any(ep.name == "mcsa" and ep.value == "samplers.testing.plugin" for ep in eps.select(group="pytest11"))


@pytest.mark.parametrize("package", ["samplers", "rdp", "doeblin", "trf"])
def test_packages_come_from_the_mcsa_distribution(package):
    assert "mcsa" in metadata.packages_distributions().get(package, [])
