"""The Python example of docs/trf-lm.md runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "trf-lm.md"


@pytest.mark.filterwarnings("ignore:KneserNey order:trf.ngram.DiscountFallbackWarning")  # the example's KN3 on 9 words
def test_trf_lm_doc_example_runs(tmp_path, monkeypatch):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert blocks
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__main__"}
    for i, block in enumerate(blocks):
        exec(compile(block, f"docs/trf-lm.md[python block {i}]", "exec"), namespace)
