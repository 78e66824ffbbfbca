"""The Python examples in docs/rdp.md run as written."""

import re
from pathlib import Path

import pytest

pytest.importorskip("torch")

pytestmark = pytest.mark.torch
DOC = Path(__file__).resolve().parents[2] / "docs" / "rdp.md"


def test_rdp_doc_examples_run(capsys):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert blocks, "docs/rdp.md has no python examples"
    namespace = {"__name__": "__main__"}
    for i, block in enumerate(blocks):
        exec(compile(block, f"docs/rdp.md[python block {i}]", "exec"), namespace)
    assert "log Z" in capsys.readouterr().out
