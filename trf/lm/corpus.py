"""Corpora for the LM toolkit: streaming sentence readers, a vocabulary, and compact encoded corpora.

A corpus file holds one sentence per line with whitespace-separated tokens (Penn Treebank style).
Reading streams line by line; an encoded corpus is two flat arrays (token ids and sentence
offsets, CSR style), so a 30M-word corpus costs about 120 MB instead of 30M Python objects.
Files are read by :func:`samplers.textio.iter_lines` (lines end at ``\\n`` only; undecodable bytes, NUL
characters and empty files raise a ``ValueError`` naming the file and line).  Empty lines are skipped and
counted; a file with no sentence raises ``ValueError``.
"""

from __future__ import annotations

from array import array
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Sequence

import numpy as np

from samplers.textio import iter_lines
from samplers.validation import check_int

UNK = "<unk>"

__all__ = ["UNK", "ReadStats", "iter_sentences", "Vocabulary", "EncodedCorpus", "encode_file"]


@dataclass
class ReadStats:
    """What a pass over a corpus file saw: sentences and tokens kept, empty lines skipped."""

    sentences: int = 0
    tokens: int = 0
    empty_lines: int = 0
    path: str = ""

    def summary(self) -> str:
        """One line: sentences, tokens (plus end-of-sentence symbols) and empty lines skipped."""
        return (f"{self.path}: {self.sentences} sentences, {self.tokens} tokens "
                f"(+{self.sentences} end-of-sentence), {self.empty_lines} empty lines skipped")


def iter_sentences(path, *, encoding: str = "utf-8", stats: ReadStats | None = None) -> Iterator[list[str]]:
    """Yield the token list of each non-empty line of ``path``, streaming.

    Parameters
    ----------
    path : str or Path
        Text file, one sentence per line, whitespace-separated tokens.
    encoding : str
        Text encoding (:func:`samplers.textio.check_encoding`); undecodable bytes raise ``ValueError`` with
        the line number.
    stats : ReadStats, optional
        Filled in while reading (sentences, tokens, skipped empty lines).

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist.
    ValueError
        A folder, an empty file, wrong or unknown encoding, a NUL character (binary data), or no sentence
        at all (raised at the end of the pass).
    """
    stats = stats if stats is not None else ReadStats()
    stats.path = str(path)
    for _, line in iter_lines(path, encoding=encoding, what="corpus file"):
        tokens = line.split()
        if not tokens:
            stats.empty_lines += 1
            continue
        stats.sentences += 1
        stats.tokens += len(tokens)
        yield tokens
    if stats.sentences == 0:
        raise ValueError(f"corpus file {str(path)!r} holds no sentence ({stats.empty_lines} lines, all empty)")


@dataclass
class Vocabulary:
    """Word list with ``<unk>`` at id 0; ids are in order of decreasing training count.

    Use :meth:`build` to make one from a corpus file with a size limit and/or count cut-off.
    """

    words: list[str]
    counts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def __post_init__(self) -> None:
        if not self.words or self.words[0] != UNK:
            raise ValueError(f"words must start with {UNK!r}")
        if len(set(self.words)) != len(self.words):
            raise ValueError("words must be unique")
        if any((not w) or any(c.isspace() for c in w) for w in self.words):
            raise ValueError("words must be non-empty and contain no whitespace")
        self.index = {w: i for i, w in enumerate(self.words)}

    def __len__(self) -> int:
        return len(self.words)

    @classmethod
    def build(cls, path, *, max_size: int | None = None, min_count: int = 1, encoding: str = "utf-8",
              stats: ReadStats | None = None) -> "Vocabulary":
        """Count the words of ``path`` and keep the ``max_size - 1`` most frequent with count >= ``min_count``.

        Ties are broken alphabetically, so the result is deterministic.
        """
        min_count = check_int(min_count, "min_count", low=1)
        if max_size is not None:
            max_size = check_int(max_size, "max_size", low=2)
        counter: Counter = Counter()
        for tokens in iter_sentences(path, encoding=encoding, stats=stats):
            counter.update(tokens)
        unk_count = counter.pop(UNK, 0)
        kept = sorted((w for w, c in counter.items() if c >= min_count), key=lambda w: (-counter[w], w))
        if max_size is not None:
            kept = kept[: max_size - 1]
        kept_set = set(kept)
        unk_count += sum(c for w, c in counter.items() if w not in kept_set)
        counts = np.array([unk_count] + [counter[w] for w in kept], dtype=np.int64)
        return cls([UNK, *kept], counts)

    def encode(self, tokens: Sequence[str]) -> np.ndarray:
        """Map tokens to ids (unknown words to ``<unk>`` = 0)."""
        get = self.index.get
        return np.fromiter((get(t, 0) for t in tokens), dtype=np.int32, count=len(tokens))

    def decode(self, ids: Iterable[int]) -> list[str]:
        """Map ids back to words."""
        return [self.words[int(i)] for i in ids]

    def to_arrays(self, prefix: str = "vocab_") -> dict[str, np.ndarray]:
        """Flat arrays (words joined by newlines as UTF-8 bytes, counts) for model files."""
        blob = "\n".join(self.words).encode("utf-8")
        return {prefix + "words": np.frombuffer(blob, dtype=np.uint8), prefix + "counts": self.counts}

    @classmethod
    def from_arrays(cls, arrays: dict, prefix: str = "vocab_") -> "Vocabulary":
        """Inverse of :meth:`to_arrays`."""
        words = arrays[prefix + "words"].tobytes().decode("utf-8").split("\n")
        return cls(words, np.asarray(arrays[prefix + "counts"], dtype=np.int64))


@dataclass
class EncodedCorpus:
    """Sentences as token ids: ``tokens[offsets[i]:offsets[i+1]]`` is sentence ``i``.

    Iterating yields the sentences as array views; ``len`` is the number of sentences.
    """

    tokens: np.ndarray   # int32 (n_tokens,)
    offsets: np.ndarray  # int64 (n_sentences + 1,)

    def __len__(self) -> int:
        return self.offsets.size - 1

    def __iter__(self) -> Iterator[np.ndarray]:
        for i in range(len(self)):
            yield self.tokens[self.offsets[i]:self.offsets[i + 1]]

    def __getitem__(self, i: int) -> np.ndarray:
        return self.tokens[self.offsets[i]:self.offsets[i + 1]]

    @property
    def lengths(self) -> np.ndarray:
        """Sentence lengths, shape (n,)."""
        return np.diff(self.offsets)

    @property
    def n_predicted(self) -> int:
        """Words plus one end-of-sentence per sentence (the perplexity denominator)."""
        return int(self.tokens.size + len(self))

    @classmethod
    def from_sentences(cls, sentences: Iterable[Sequence[int] | np.ndarray]) -> "EncodedCorpus":
        """Flatten sentences of word ids into one token array with offsets."""
        tokens, offsets = array("i"), array("q", [0])
        for s in sentences:
            tokens.extend(int(t) for t in s)
            offsets.append(len(tokens))
        return cls(np.frombuffer(tokens, dtype=np.int32).copy(), np.frombuffer(offsets, dtype=np.int64).copy())


def encode_file(path, vocab: Vocabulary, *, encoding: str = "utf-8", stats: ReadStats | None = None,
                max_sentences: int | None = None) -> EncodedCorpus:
    """Stream ``path`` into an :class:`EncodedCorpus` over ``vocab`` (unknown words become ``<unk>``)."""
    tokens, offsets = array("i"), array("q", [0])
    for n, words in enumerate(iter_sentences(path, encoding=encoding, stats=stats)):
        if max_sentences is not None and n >= max_sentences:
            break
        tokens.frombytes(vocab.encode(words).tobytes())
        offsets.append(len(tokens))
    return EncodedCorpus(np.frombuffer(tokens, dtype=np.int32).copy(), np.frombuffer(offsets, dtype=np.int64).copy())
