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


def test_rdp_without_torch_registers_and_says_how_to_install_it():
    # a None entry in sys.modules makes `import torch` raise ImportError, as on a machine without torch;
    # `import rdp` and its registration import no torch, the first use of a function names the extra
    proc = _python("import sys; sys.modules['torch'] = None\nimport rdp, rdp._register\n"
                   "rdp._register.suites(); rdp._register.estimators()\nprint('registered')\n"
                   "from rdp import chain_log_partition\n")
    assert proc.returncode != 0 and "registered" in proc.stdout
    assert "ImportError" in proc.stderr and "mcsa[rdp]" in proc.stderr, proc.stderr
    proc = _python("import sys; sys.modules['torch'] = None\nimport rdp\nrdp.tree_log_partition\n")
    assert proc.returncode != 0 and "mcsa[rdp]" in proc.stderr, proc.stderr


def test_rdp_functions_load_on_first_access():
    proc = _python("import sys, rdp\nassert 'torch' not in sys.modules\nf = rdp.chain_log_partition\n"
                   "assert 'torch' in sys.modules and f.__module__ == 'rdp.chain'\n"
                   "assert set(rdp.__all__) <= set(dir(rdp))\n")
    assert proc.returncode == 0, proc.stderr


def test_console_script_and_pytest_plugin_are_registered():
    eps = metadata.entry_points()
    assert any(ep.name == "mcsa" and ep.value == "samplers.cli:main" for ep in eps.select(group="console_scripts"))
    assert any(ep.name == "mcsa" and ep.value == "samplers.testing.plugin" for ep in eps.select(group="pytest11"))


@pytest.mark.parametrize("package", ["samplers", "rdp", "doeblin", "trf"])
def test_packages_come_from_the_mcsa_distribution(package):
    assert "mcsa" in metadata.packages_distributions().get(package, [])
