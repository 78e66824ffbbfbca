"""The Python examples of docs/comparisons.md run as written (blocks share state)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "comparisons.md"


@pytest.mark.slow
def test_comparisons_doc_examples_run(tmp_path, monkeypatch):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert blocks, "docs/comparisons.md has no python examples"
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__main__"}
    for i, block in enumerate(blocks):
        exec(compile(block, f"comparisons.md[python block {i}]", "exec"), namespace)
