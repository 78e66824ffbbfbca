"""Word lists and alphabets for the word-morphology TRF (Sec. 6 of Wang, Ou & Tan 2017).

Words are encoded as integer symbol sequences stored flat: ``tokens`` (int32, all symbols back to
back) and ``offsets`` (int64, ``len(words) + 1`` boundaries), so Numba kernels read them without
Python objects.  Symbols outside the declared alphabet are never dropped silently: by default they
raise; ``on_unknown="skip"`` skips the word and reports it, ``on_unknown="lower"`` maps upper case to
lower case first.  Words longer than the maximum length ``m`` raise unless ``too_long="skip"``
(the pooled "longer than m" sub-model of Sec. 5.4 is not implemented for words).
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import numpy as np

from samplers.rng import as_generator
from samplers.textio import iter_lines
from samplers.validation import check_int

ENGLISH_LOWER = string.ascii_lowercase


@dataclass(frozen=True)
class Alphabet:
    """An ordered set of single-character symbols; symbol ``k`` is ``symbols[k]``."""

    symbols: str

    def __post_init__(self) -> None:
        if not isinstance(self.symbols, str) or not self.symbols:
            raise ValueError(f"alphabet symbols must be a non-empty string, got {self.symbols!r}")
        if len(set(self.symbols)) != len(self.symbols):
            raise ValueError(f"alphabet symbols must be distinct, got {self.symbols!r}")

    @property
    def size(self) -> int:
        """Number of symbols."""
        return len(self.symbols)

    def index(self) -> dict[str, int]:
        """Map from symbol to its integer code."""
        return {c: k for k, c in enumerate(self.symbols)}

    def decode(self, seq: Iterable[int]) -> str:
        """The string of the integer codes ``seq``."""
        return "".join(self.symbols[int(k)] for k in seq)


@dataclass
class WordData:
    """Encoded words: ``tokens[offsets[i]:offsets[i+1]]`` is word ``i``.

    Attributes
    ----------
    tokens : ndarray of int32
    offsets : ndarray of int64, shape (n + 1,)
    alphabet : Alphabet
    m : int
        Maximum length allowed (the number of sub-models).
    skipped : list of str
        Words that were skipped (unknown symbols or too long), for reporting.
    """

    tokens: np.ndarray
    offsets: np.ndarray
    alphabet: Alphabet
    m: int
    skipped: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return int(self.offsets.shape[0] - 1)

    @property
    def lengths(self) -> np.ndarray:
        """Word lengths, shape (n,), int64."""
        return np.diff(self.offsets).astype(np.int64)

    def length_counts(self) -> np.ndarray:
        """``n_j`` for j = 1..m as an array of shape (m,)."""
        return np.bincount(self.lengths - 1, minlength=self.m)[: self.m].astype(np.int64)

    def word(self, i: int) -> str:
        """Word ``i`` as a string."""
        return self.alphabet.decode(self.tokens[self.offsets[i]: self.offsets[i + 1]])

    def subset(self, index: np.ndarray) -> "WordData":
        """The words at positions ``index``, as a new :class:`WordData` (same alphabet and m)."""
        words = [self.tokens[self.offsets[i]: self.offsets[i + 1]] for i in np.asarray(index)]
        return WordData(*_flatten(words), alphabet=self.alphabet, m=self.m)


def _flatten(seqs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.zeros(len(seqs) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(s) for s in seqs])
    tokens = np.concatenate(seqs).astype(np.int32) if seqs else np.zeros(0, dtype=np.int32)
    return tokens, offsets


def encode_words(words: Iterable[str], alphabet: Alphabet, m: int, *, on_unknown: str = "error",
                 too_long: str = "error") -> WordData:
    """Encode words as symbol indices.

    Parameters
    ----------
    words : iterable of str
        One word per item; surrounding whitespace is stripped and empty items are ignored.
    alphabet : Alphabet
        The symbols words are spelled in.
    m : int
        Maximum word length (>= 1).
    on_unknown : {"error", "skip", "lower"}
        What to do with a word holding a symbol outside ``alphabet``: raise, skip it (listed in
        ``WordData.skipped``), or lower-case it first (and raise if still unknown).
    too_long : {"error", "skip"}
        What to do with a word longer than ``m``.

    Raises
    ------
    ValueError
        Empty word list, unknown symbols or too-long words without an option, bad options.
    """
    m = check_int(m, "m", low=1)
    if on_unknown not in ("error", "skip", "lower"):
        raise ValueError(f"on_unknown must be 'error', 'skip' or 'lower', got {on_unknown!r}")
    if too_long not in ("error", "skip"):
        raise ValueError(f"too_long must be 'error' or 'skip', got {too_long!r}")
    index = alphabet.index()
    seqs: list[np.ndarray] = []
    skipped: list[str] = []
    for raw in words:
        if not isinstance(raw, str):
            raise TypeError(f"words must be strings, got {type(raw).__name__}")
        word = raw.strip()
        if not word:
            continue
        if on_unknown == "lower":
            word = word.lower()
        unknown = [c for c in word if c not in index]
        if unknown:
            if on_unknown == "skip":
                skipped.append(word)
                continue
            raise ValueError(f"word {word!r} holds symbols {sorted(set(unknown))!r} outside the alphabet "
                             f"{alphabet.symbols!r}; pass on_unknown='skip' or 'lower' to handle them")
        if len(word) > m:
            if too_long == "skip":
                skipped.append(word)
                continue
            raise ValueError(f"word {word!r} has length {len(word)} > m = {m}; pass too_long='skip' or raise m")
        seqs.append(np.fromiter((index[c] for c in word), dtype=np.int32, count=len(word)))
    if not seqs:
        raise ValueError("the word list is empty (no usable words)")
    return WordData(*_flatten(seqs), alphabet=alphabet, m=m, skipped=skipped)


def read_word_list(path: str | Path, alphabet: Alphabet, m: int, *, encoding: str = "utf-8",
                   what: str = "word list", **options) -> WordData:
    """Read a word list (one word per line) with :func:`samplers.textio.iter_lines` and encode it with
    :func:`encode_words`; ``what`` names the file in messages (e.g. ``"--train"``)."""
    lines = [line for _, line in iter_lines(path, encoding=encoding, what=what)]
    try:
        return encode_words(lines, alphabet, m, **options)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None


def _random_split(words: list[str], n_train: int, n_test: int, seed, source: str) -> tuple[list[str], list[str]]:
    n_train = check_int(n_train, "n_train", low=1)
    n_test = check_int(n_test, "n_test", low=1)
    if n_train + n_test > len(words):
        raise ValueError(f"n_train + n_test = {n_train + n_test} exceeds the {len(words)} {source} words")
    order = as_generator(seed).permutation(len(words))
    return [words[i] for i in order[:n_train]], [words[i] for i in order[n_train:n_train + n_test]]


def web2_split(n_train: int = 139_000, n_test: int = 15_000, m: int = 25, seed: int = 0
               ) -> tuple[list[str], list[str]]:
    """A random disjoint train/test split of the ``english-words`` web2 list (lower-cased, letters only).

    Mirrors the paper's sizes (139K training and 15K test words, m = 25); words longer than ``m`` are
    left out before sampling.  web2 is Webster's 1934 dictionary: many rare technical words, no
    frequencies.  Returns two lists of strings.
    """
    from english_words import get_english_words_set

    words = sorted(w for w in get_english_words_set(["web2"], alpha=True, lower=True) if 1 <= len(w) <= m)
    return _random_split(words, n_train, n_test, seed, "web2")


def wordfreq_split(n_train: int = 139_000, n_test: int = 15_000, m: int = 25, seed: int = 0
                   ) -> tuple[list[str], list[str]]:
    """A random disjoint train/test split of the ``n_train + n_test`` most frequent English words.

    The words come from the ``wordfreq`` package's English "large" list (word frequencies measured on
    news, Wikipedia, books, subtitles and web text; installed data, nothing is downloaded), keeping
    words of letters a-z only and length <= ``m``, in frequency order.  This is the closest offline
    analogue of the paper's word types from a news corpus (English Gigaword).  Needs
    ``pip install "mcsa[data]"``.  Returns two lists of strings.
    """
    try:
        from wordfreq import top_n_list
    except ImportError:  # pragma: no cover - depends on the optional extra
        raise ImportError('wordfreq_split needs the wordfreq package: pip install "mcsa[data]"') from None
    m = check_int(m, "m", low=1)
    words = [w for w in top_n_list("en", 10**7, wordlist="large")
             if 1 <= len(w) <= m and w.isascii() and w.isalpha() and w.islower()]
    n = check_int(n_train, "n_train", low=1) + check_int(n_test, "n_test", low=1)
    return _random_split(words[:n], n_train, n_test, seed, "wordfreq")


WORD_LISTS = {"wordfreq": wordfreq_split, "web2": web2_split}
"""Offline English word lists for the word-morphology benchmark, by name."""
