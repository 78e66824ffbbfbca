"""Every Python example in README.md and docs/*.md runs verbatim as a script, in a fresh process, and every output
the page shows for it is what the script prints.

The python blocks of a page form one script, in page order (later blocks use what earlier ones defined), run
with ``python script.py`` in an empty folder.  A block holding ``if __name__ == "__main__":`` is a script of
its own (it starts worker processes that import the main script, as Dask's ``LocalCluster`` does) and runs
alone.  Pytest-style ``test_*`` functions a page defines are then called with a ``np.random.Generator``, as
pytest would with the ``rng`` fixture.  A bare code block after a python block, introduced by a line holding
"prints" and ending in a colon, is the output the page shows: each of its lines must appear in the script's
stdout.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted(["README.md", *(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))])
STANDALONE = 'if __name__ == "__main__":'
CALL_TESTS = """
import numpy as _np
for _name, _obj in list(globals().items()):
    if _name.startswith("test_") and callable(_obj) and getattr(_obj, "__module__", None) == "__main__":
        _obj(_np.random.default_rng(0))
"""
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", flags=re.S | re.M)


def page_parts(text: str) -> tuple[list[str], list[str], list[str]]:
    """The python blocks of a page joined into its scripts (shared, then standalone ones) and the outputs it
    shows (bare blocks introduced by a "prints" line after a python block)."""
    shared, standalone, outputs = [], [], []
    last_end, after_python = 0, False
    for match in FENCE.finditer(text):
        lang, body = match.group(1), match.group(2)
        between = text[last_end:match.start()]
        if lang == "python":
            (standalone if STANDALONE in body else shared).append(body)
            after_python = True
        elif lang == "" and after_python and re.search(r"\bprints\b.*:\s*$", between.strip().split("\n")[-1]):
            outputs.append(body)
            after_python = False
        else:
            after_python = False
        last_end = match.end()
    scripts = ["\n".join(shared) + CALL_TESTS] if shared else []
    return scripts + standalone, outputs, shared + standalone


def test_page_parts_finds_scripts_and_shown_outputs():
    text = ("```python\nx = 1\n```\n\nprints:\n\n```\nx 1\n```\n\n```python\ny = x\n```\n\n```bash\nls\n```\n"
            "```python\nif __name__ == \"__main__\":\n    pass\n```\n\nIt prints numbers, timed by:\n\n```\ncmd\n```\n"
            "```python\nz = 1\n```\nThe prints of it differ\n\n```\nnot output\n```\n")
    scripts, outputs, blocks = page_parts(text)
    assert scripts[0].startswith("x = 1\n\ny = x\n\nz = 1\n") and scripts[1].startswith(STANDALONE)
    assert outputs == ["x 1\n", "cmd\n"] and len(blocks) == 4


def test_every_page_with_python_blocks_is_covered():
    pages = [doc for doc in DOCS if "```python" in (ROOT / doc).read_text()]
    assert "README.md" in pages and "docs/harness.md" in pages and "docs/samplers.md" in pages


@pytest.fixture(scope="session")
def fresh_numba_cache(tmp_path_factory) -> str:
    """A Numba cache of the docs' scripts alone, as a new user has: the test run's shared cache also holds kernels
    compiled for functions defined in test modules, whose index entries name the ``tests`` package, which a script
    run outside the repository cannot import."""
    return str(tmp_path_factory.mktemp("docs-numba-cache"))


@pytest.mark.slow
@pytest.mark.parametrize("doc", DOCS)
def test_doc_examples_run_as_scripts(doc, tmp_path, fresh_numba_cache):
    scripts, outputs, blocks = page_parts((ROOT / doc).read_text())
    if not blocks:
        pytest.skip(f"{doc} has no python examples")
    needs = " ".join(blocks)
    if "dask" in needs:
        pytest.importorskip("distributed")
    if "import torch" in needs or "import rdp" in needs or "from rdp" in needs:
        pytest.importorskip("torch")
    env = {**os.environ, "PYTHONWARNINGS": "ignore::DeprecationWarning", "NUMBA_CACHE_DIR": fresh_numba_cache}
    printed = []
    for i, script in enumerate(scripts):
        path = tmp_path / f"example_{i}.py"
        path.write_text(script)
        done = subprocess.run([sys.executable, path.name], cwd=tmp_path, capture_output=True, text=True, env=env,
                              timeout=900)
        assert done.returncode == 0, f"{doc} script {i} failed:\n{done.stderr[-3000:]}"
        printed.append(done.stdout)
    out = "\n".join(printed)
    for shown in outputs:
        for line in shown.splitlines():
            assert line.strip() in out, f"{doc} shows {line.strip()!r}, but the script printed:\n{out[-3000:]}"
