"""The Python examples in README.md and the core docs run as written (blocks of a file share state)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ["README.md", "docs/harness.md", "docs/samplers.md", "docs/uai.md"]


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)


@pytest.mark.slow
@pytest.mark.parametrize("doc", DOCS)
def test_doc_examples_run(doc, tmp_path, monkeypatch):
    blocks = python_blocks(ROOT / doc)
    assert blocks, f"{doc} has no python examples"
    if any("distributed" in b for b in blocks):
        pytest.importorskip("distributed")
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__main__"}
    for i, block in enumerate(blocks):
        code = compile(block, f"{doc}[python block {i}]", "exec")
        exec(code, namespace)
        for name, obj in list(namespace.items()):   # pytest-style functions defined by the docs run too
            if name.startswith("test_") and callable(obj) and getattr(obj, "__module__", None) == "__main__":
                obj(np.random.default_rng(0))
                del namespace[name]
