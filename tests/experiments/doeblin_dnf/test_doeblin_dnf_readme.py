"""The Python examples in experiments/doeblin_dnf/README.md run and print."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[3] / "experiments" / "doeblin_dnf" / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def test_readme_has_examples():
    assert BLOCKS


@pytest.mark.slow   # compiles the experiment's kernels on a cold cache
@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_example_runs(index, capsys):
    exec(compile(BLOCKS[index], f"{README.name}[block {index}]", "exec"), {})
    assert capsys.readouterr().out.strip()
