"""The installed package holds library code only: the paper experiments live in experiments/."""

import pkgutil
import re
from pathlib import Path

import doeblin


def test_no_experiment_modules_in_the_package():
    names = [m.name for m in pkgutil.iter_modules(doeblin.__path__)]
    assert "core" in names
    assert not [n for n in names if re.search(r"gesture|dnf|cegar", n, re.I)]


def test_no_experiment_code_in_the_package():
    """Only docstring pointers may name the experiments: no import of them from the library."""
    for path in Path(doeblin.__file__).parent.glob("*.py"):
        assert "import experiments" not in path.read_text() and "from experiments" not in path.read_text(), path
