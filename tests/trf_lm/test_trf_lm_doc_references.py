"""Every reference to a named section of the TRF LM guide, its record or its runs resolves.

The code and the docs cite docs/trf-lm.md (the guide), experiments/trf_lm/methods.md (the record),
experiments/trf_lm/README.md (issue 27's rows) and experiments/trf_lm/runs.md (the earlier runs) by section, as
``docs/trf-lm.md, "Why the guard fires"``.  A section named must be a heading or a bold lead-in of the file named,
so moving text between the files cannot leave a reader looking in the wrong one.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXPERIMENT = ROOT / "experiments" / "trf_lm"
TARGETS = {"docs/trf-lm.md": ROOT / "docs" / "trf-lm.md",
           "experiments/trf_lm/methods.md": EXPERIMENT / "methods.md",
           "experiments/trf_lm/README.md": EXPERIMENT / "README.md",
           "experiments/trf_lm/runs.md": EXPERIMENT / "runs.md"}
SOURCES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "trf").rglob("*.py")),
           *sorted(EXPERIMENT.glob("*.py")), *sorted(EXPERIMENT.glob("*.md")),
           *sorted(path for path in (ROOT / "tests").rglob("*.py") if path != Path(__file__).resolve())]   # not its own examples
FILE = re.compile(r"(docs/trf-lm\.md|experiments/trf_lm/(?:methods|README|runs)\.md|(?<![\w/])(?:methods|runs)\.md)")
NAME = re.compile(r"""^`?,?\s*\(?(?:"([A-Z][^"]{2,100})"|'([A-Z][^']{2,100})')""")


def section_titles(text: str) -> list[str]:
    """The headings and bold lead-ins of a markdown text, whitespace collapsed."""
    found = re.findall(r"^#+ (.*)$", text, re.M) + re.findall(r"\*\*([^*]+?)\*\*", text, re.S)
    return [" ".join(title.split()) for title in found]


def cited_sections(text: str, here: Path) -> list[tuple[int, str, str]]:
    """``(line, file, section)`` for every reference in ``text`` that names a section right after the file."""
    cited = []
    for match in FILE.finditer(text):
        target = match.group(1)
        if target in ("methods.md", "runs.md"):   # a bare name: only the files beside it mean that file
            if here.parent != EXPERIMENT:
                continue
            target = "experiments/trf_lm/" + target
        after = text[match.end():match.end() + 300]
        after = re.sub(r"""(["'])\s*\n\s*\1""", "", after)   # a string literal continued on the next line
        after = re.sub(r"\s*\n\s*(#\s*)?", " ", after)         # a line wrapped in a comment or docstring
        section = NAME.match(after)
        if section:
            cited.append((text.count("\n", 0, match.start()) + 1, target, " ".join((section.group(1) or section.group(2)).split())))
    return cited


def resolves(section: str, titles: list[str]) -> bool:
    """True when ``section`` begins some title (a trailing ``...`` stands for the rest of it)."""
    prefix = section.removesuffix("...").rstrip()
    return any(title.startswith(prefix) for title in titles)


def test_every_cited_section_exists_in_the_file_named():
    titles = {name: section_titles(path.read_text()) for name, path in TARGETS.items()}
    cited = [(source, line, target, section) for source in SOURCES
             for line, target, section in cited_sections(source.read_text(), source)]
    assert len(cited) >= 40, "the references were not found: the pattern no longer matches how they are written"
    missing = [f"{source.relative_to(ROOT)}:{line}: {target}, {section!r}" for source, line, target, section in cited
               if not resolves(section, titles[target])]
    assert not missing, "sections cited but not in the file named:\n" + "\n".join(missing)


def test_a_section_cited_in_the_wrong_file_is_caught():
    guide = section_titles(TARGETS["docs/trf-lm.md"].read_text())
    record = section_titles(TARGETS["experiments/trf_lm/methods.md"].read_text())
    assert resolves("Why the guard fires", record) and not resolves("Why the guard fires", guide)
    text = 'a step (docs/trf-lm.md, "Why the guard fires") and\n    # experiments/trf_lm/methods.md, "Stratified\n    # lengths")'
    cited = cited_sections(text, ROOT / "x.py")
    assert [section for _, _, section in cited] == ["Why the guard fires", "Stratified lengths"]
    assert not resolves(cited[0][2], guide) and resolves(cited[1][2], record)
    wrapped = '"... trained; experiments/trf_lm/methods.md, "\n                "\'Known sentences\')"'
    assert [section for _, _, section in cited_sections(wrapped, ROOT / "x.py")] == ["Known sentences"]
