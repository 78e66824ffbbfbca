"""The King James Bible as a 0.79M-word English corpus with long sentences (issue 17's corpus shape).

One verse per sentence, read from the Debian packages ``bible-kjv`` and ``bible-kjv-text``
(``apt-get install bible-kjv bible-kjv-text``; installed offline, never fetched): the ``bible`` program
prints every verse of Genesis 1:1 - Revelation 22:21 with its reference, one per line. Verses are
tokenised as the fortunes corpus (:func:`experiments.trf_lm.benchmark.tokens_of`: lower case, words with
inner apostrophes, numbers -> ``N``) and split deterministically by verse index: every 20th verse (index
0 mod 20) to test, the next one to valid, the rest to train (90 / 5 / 5).

    python -m experiments.trf_lm.kjv --out /tmp/kjv        # writes train.txt valid.txt test.txt, prints stats
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

from experiments.trf_lm.benchmark import tokens_of

KJV_PACKAGES = ("bible-kjv", "bible-kjv-text")
ALL_VERSES = "Gen1:1-Rev22:21"
_REFERENCE = re.compile(r"^\s*(\d?[A-Za-z]+)(\d+):(\d+)\s+(.*)$")


def bible_text() -> str:
    """Every verse with its reference, one per line, from the ``bible`` program (``RuntimeError`` if absent)."""
    program = shutil.which("bible")
    if program is None:
        raise RuntimeError("the 'bible' program is not installed; run apt-get install " + " ".join(KJV_PACKAGES))
    done = subprocess.run([program, "-f", ALL_VERSES], capture_output=True, text=True)
    if done.returncode != 0 or not done.stdout.strip():
        raise RuntimeError(f"'bible -f {ALL_VERSES}' failed (exit {done.returncode}): {done.stderr.strip()[:200]}; "
                           "is bible-kjv-text installed?")
    return done.stdout


def verses(text: str) -> list[list[str]]:
    """Tokenised verses of ``bible -f`` output (lines ``<Book><chapter>:<verse> <text>``; others are errors)."""
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        match = _REFERENCE.match(line)
        if match is None:
            raise ValueError(f"line {number} of the bible output is not '<Book><chapter>:<verse> <text>': {line[:60]!r}")
        out.append(tokens_of(match.group(4)))
    return out


def split_verses(tokenised: list[list[str]]) -> dict[str, list[str]]:
    """Deterministic 90 / 5 / 5 split by verse index (empty verses dropped)."""
    splits: dict[str, list[str]] = {"train": [], "valid": [], "test": []}
    for index, words in enumerate(tokenised):
        if not words:
            continue
        name = "test" if index % 20 == 0 else "valid" if index % 20 == 1 else "train"
        splits[name].append(" ".join(words))
    return splits


def prepare(out_dir: "str | Path", text: str | None = None) -> dict[str, Path]:
    """Write ``train.txt``, ``valid.txt``, ``test.txt`` (one verse per line) under ``out_dir``."""
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise ValueError(f"--out {out_dir} exists and is not a directory")
    splits = split_verses(verses(bible_text() if text is None else text))
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, lines in splits.items():
        paths[name] = out_dir / f"{name}.txt"
        paths[name].write_text("\n".join(lines) + "\n", encoding="utf-8")
    return paths


def stats(paths: dict[str, Path]) -> dict[str, dict[str, float]]:
    """Sentences, words, mean / max length and vocabulary size of each split."""
    out = {}
    for name, path in paths.items():
        lengths, vocab = [], set()
        for line in path.read_text(encoding="utf-8").splitlines():
            words = line.split()
            lengths.append(len(words))
            vocab.update(words)
        out[name] = {"sentences": len(lengths), "words": sum(lengths), "mean_length": sum(lengths) / len(lengths),
                     "max_length": max(lengths), "vocabulary": len(vocab)}
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="folder for train.txt, valid.txt, test.txt")
    args = parser.parse_args(argv)
    try:
        paths = prepare(args.out)
    except (RuntimeError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for name, s in stats(paths).items():
        print(f"{name}: {s['sentences']} sentences, {s['words']} words, mean length {s['mean_length']:.1f}, "
              f"max {s['max_length']}, vocabulary {s['vocabulary']} -> {paths[name]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
