"""The Python examples in every experiments/*/README.md run and print."""

import re
from pathlib import Path

import pytest

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"
BLOCKS = [(readme.parent.name, index, block) for readme in sorted(EXPERIMENTS.glob("*/README.md"))
          for index, block in enumerate(re.findall(r"```python\n(.*?)```", readme.read_text(), re.S))]


def test_readmes_with_examples_are_found():
    assert {"doeblin_dnf", "doeblin_gestures"} <= {experiment for experiment, _, _ in BLOCKS}


@pytest.mark.slow   # compiles the experiments' kernels on a cold cache
@pytest.mark.parametrize(("experiment", "index", "block"), BLOCKS, ids=[f"{e}-{i}" for e, i, _ in BLOCKS])
def test_readme_example_runs(experiment, index, block, capsys):
    exec(compile(block, f"{experiment}/README.md[block {index}]", "exec"), {})
    assert capsys.readouterr().out.strip()
