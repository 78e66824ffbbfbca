"""The Python examples in docs/doeblin.md run."""

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "doeblin.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


@pytest.mark.slow   # compiles the Algorithm 1 kernel on a cold cache (~12 s)
@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_doc_example_runs(index, capsys):
    exec(compile(BLOCKS[index], f"{DOC.name}[block {index}]", "exec"), {})
    assert capsys.readouterr().out.strip()
