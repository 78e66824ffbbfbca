"""The KJV corpus preparation (experiments.trf_lm.kjv): parsing, tokenisation, split, errors."""

from __future__ import annotations

import shutil

import pytest

from experiments.trf_lm import kjv

FAKE = "\n".join(f"Ge1:{v} And God said, Let there be light: and there was {v} light." for v in range(1, 41)) + "\n"


def test_verses_are_tokenised_like_the_fortunes_corpus():
    got = kjv.verses("Ge1:3 And God said, Let there be light: and there was light.\n2Ki3:14 Elisha's 12 oxen.\n")
    assert got == [["and", "god", "said", "let", "there", "be", "light", "and", "there", "was", "light"],
                   ["elisha's", "N", "oxen"]]


def test_split_is_deterministic_90_5_5(tmp_path):
    paths = kjv.prepare(tmp_path / "c", text=FAKE)
    lines = {name: p.read_text().splitlines() for name, p in paths.items()}
    assert [len(lines[n]) for n in ("train", "valid", "test")] == [36, 2, 2]
    assert lines["test"][0].endswith("was N light") and lines["valid"][0].split()[-2] == "N"
    stats = kjv.stats(paths)
    assert stats["train"]["sentences"] == 36 and stats["train"]["max_length"] == 12
    assert kjv.prepare(tmp_path / "d", text=FAKE)["train"].read_text() == paths["train"].read_text()


def test_bad_input_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="line 2 of the bible output"):
        kjv.verses("Ge1:1 In the beginning.\nnot a verse\n")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="--out"):
        kjv.prepare(tmp_path / "file", text=FAKE)


@pytest.mark.skipif(shutil.which("bible") is None, reason="Debian package bible-kjv not installed")
def test_the_installed_bible_has_every_verse(tmp_path):
    stats = kjv.stats(kjv.prepare(tmp_path))
    assert sum(s["sentences"] for s in stats.values()) == 31102
    assert stats["train"]["max_length"] == 90 and 700_000 < stats["train"]["words"] < 720_000


def test_missing_program_names_the_packages(monkeypatch):
    monkeypatch.setattr(kjv.shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match="apt-get install bible-kjv bible-kjv-text"):
        kjv.bible_text()
