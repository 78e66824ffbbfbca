"""The import contracts of .ci/contracts.py hold on this tree, and the checker catches planted violations."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _contracts():
    spec = importlib.util.spec_from_file_location("mcsa_contracts", ROOT / ".ci" / "contracts.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module                      # dataclasses look their module up while it executes
    spec.loader.exec_module(module)
    return module


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


def test_the_tree_keeps_its_import_contracts():
    assert _contracts().check(ROOT) == []


def test_planted_violations_are_each_caught(tmp_path):
    root = _tree(tmp_path, {
        "samplers/__init__.py": "",
        "samplers/core.py": "import trf.lm\n",                                   # core imports a family
        "samplers/harness/__init__.py": "from .engine import run\n",
        "samplers/harness/engine.py": "def run():\n    from samplers.problems import kinds\n",  # engine -> kind
        "samplers/problems/__init__.py": "",
        "samplers/problems/kinds.py": "",
        "samplers/models/__init__.py": "",
        "samplers/models/cli.py": "def main():\n    from ..problems import kinds\n",   # models -> a layer above
        "samplers/a.py": "from . import b\n",                                    # circle a <-> b
        "samplers/b.py": "def f():\n    from samplers import a\n",
        "trf/__init__.py": "from doeblin import core\n",                        # family -> family
        "trf/lm/__init__.py": "",
        "doeblin/__init__.py": "",
        "doeblin/core.py": "",
        "rdp/__init__.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import trf\n",  # allowed
        "benchmarks/speed.py": "from experiments.trf_lm import benchmark\n",     # benchmark -> experiments
    })
    found = "\n".join(_contracts().check(root))
    assert "samplers.core imports trf.lm (samplers must not import a family" in found
    assert "samplers.harness.engine imports samplers.problems.kinds (the harness engine" in found
    assert "import circle: samplers.a <-> samplers.b" in found
    assert "samplers.models.cli imports samplers.problems.kinds (samplers.models imports only the core's" in found
    assert "trf imports doeblin.core (a family must not import another family" in found
    assert "benchmarks.speed imports experiments.trf_lm.benchmark (benchmarks must not" in found
    assert "rdp imports" not in found                                           # TYPE_CHECKING is no edge
    assert len(found.splitlines()) == 6, found


def test_a_package_importing_its_own_submodules_is_no_circle(tmp_path):
    root = _tree(tmp_path, {"samplers/__init__.py": "from .x import f\n",
                            "samplers/x.py": "from samplers import y\n",
                            "samplers/y.py": ""})
    assert _contracts().check(root) == []


def test_main_exits_nonzero_and_names_the_violation(tmp_path, capsys):
    root = _tree(tmp_path, {"samplers/__init__.py": "import rdp\n"})
    assert _contracts().main([str(root)]) == 1
    assert "samplers imports rdp" in capsys.readouterr().out
