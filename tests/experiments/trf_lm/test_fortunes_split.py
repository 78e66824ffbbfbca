"""experiments.trf_lm.benchmark: the fortunes split by index, and the held-out copies of training fortunes."""

from __future__ import annotations

import experiments.trf_lm.benchmark as benchmark

NAMES = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa " \
        "quebec romeo sierra tango".split()


def test_the_split_is_by_fortune_index_and_copies_of_training_fortunes_are_marked(tmp_path, monkeypatch):
    """Fortune i goes to test if i % 20 == 0, valid if i % 20 == 1, train otherwise, counted over the files in
    order; a held-out fortune whose sentences are those of a training fortune (the same text in another file) is
    marked sentence by sentence, and one that shares only a sentence with training is not."""
    first, second = tmp_path / "a", tmp_path / "b"
    first.write_text("\n%\n".join(f"Fortune {name}. Told {name}!" for name in NAMES) + "\n")
    # fortune 20 (test) copies training fortune 2; 21 (valid) shares one sentence with training fortune 3
    second.write_text("FORTUNE Charlie.  Told charlie!\n%\nFortune delta. Untold\n%\nNew here.\n")
    monkeypatch.setattr(benchmark, "fortune_files", lambda: [first, second])
    paths = benchmark.prepare_corpus(tmp_path / "out", 40)
    lines = {name: path.read_text().splitlines() for name, path in paths.items()}
    assert lines["test"] == ["fortune alpha", "told alpha", "fortune charlie", "told charlie"]
    assert lines["valid"] == ["fortune bravo", "told bravo", "fortune delta", "untold"]
    assert len(lines["train"]) == 2 * 18 + 1 and lines["train"][-1] == "new here"
    assert benchmark.copies_of_train_fortunes("test").tolist() == [False, False, True, True]
    assert benchmark.copies_of_train_fortunes("valid").tolist() == [False, False, False, False]
