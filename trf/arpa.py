"""ARPA n-gram files, the interchange format of SRILM and KenLM: write mcsa's n-gram models, read any ARPA model.

Format and conventions (SRILM's ``ngram-format(5)``, KenLM's ``lmplz`` output)::

    \\data\\
    ngram 1=N1
    ngram 2=N2

    \\1-grams:
    log10 p(w)    w    [log10 bow(w)]
    ...
    \\2-grams:
    log10 p(w2|w1)    w1 w2    [log10 bow(w1 w2)]
    ...
    \\end\\

* Probabilities and back-off weights are base-10 logarithms; a probability must be <= 0.
* ``<s>`` is in the unigram section with log-probability -99: it is context only and never predicted.
  ``</s>`` is predicted once per sentence.  ``<unk>`` (when present) scores every word outside the
  vocabulary; without it such words are skipped (SRILM's "OOVs": not scored, not counted in perplexity).
* Back-off scoring: ``p(w|h) = p*(h w)`` when the n-gram ``h w`` is listed, else
  ``bow(h) p(w|h')`` with ``h'`` the history without its first word and ``bow(h) = 1`` when ``h`` is
  not listed (Katz's form, the form every ARPA reader implements).
* A file whose name ends in ``.gz`` is written gzip-compressed; reading detects gzip by its magic bytes.

Writing an interpolated model exactly (SRILM's ``-write-lm``): both :class:`~trf.ngram.KneserNey` and
:class:`~trf.ngram.WittenBell` have the form ``p(w|h) = (d(h w) + b(h) p(w|h')) / S(h)`` for every ``w``
(``d = 0`` for unseen ``h w``), so a listed n-gram gets its full interpolated probability and a context
``h`` gets ``bow(h) = b(h) / S(h)``: an unseen continuation then scores ``bow(h) p(w|h')``, which *is*
the interpolated value, so the ARPA distribution equals the model's and is normalised for every history
(``tests/trf/test_trf_arpa.py`` checks both).  Values are written with Python's shortest round-trip
representation, so the file is exact in float64.
"""

from __future__ import annotations

import gzip
import math
import os
import re
import tempfile
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, NoReturn, Sequence, TextIO

import numpy as np

from trf.ngram import NGramModel, Sentences, _pad_corpus

__all__ = ["ArpaModel", "ArpaFormatError", "read_arpa", "write_arpa", "BOS", "EOS", "UNK", "BOS_LOG10"]

BOS, EOS, UNK = "<s>", "</s>", "<unk>"
BOS_LOG10 = -99.0  # SRILM / KenLM: the log10 "probability" written for <s>, which is never predicted
_LN10 = math.log(10.0)
_GZIP_MAGIC = b"\x1f\x8b"


class ArpaFormatError(ValueError):
    """A malformed ARPA file; the message names the file and the line."""


class ArpaModel:
    """A back-off n-gram model as an ARPA file states it, with the scoring API of :class:`trf.ngram.NGramModel`.

    Word ids follow mcsa's convention: ``words[0]`` is ``<unk>`` (a placeholder without probability when the
    file has no ``<unk>``), ``vocab_size = len(words)``, id ``vocab_size`` is ``</s>`` and ``vocab_size + 1``
    is ``<s>``.  :meth:`log_prob`, :meth:`token_log_probs` and :meth:`next_log_probs` return natural logs, as
    the n-gram models do; :meth:`log10_prob` and :meth:`score` return base-10 logs, as ARPA tools do.

    Storage mirrors :class:`~trf.ngram.NGramModel`: the k-grams of each order get level ids (sorted int64 keys
    ``id(first k-1 words) * (vocab_size + 2) + last word``, looked up by binary search), and scoring is
    vectorised over all tokens.  A k-gram whose first k-1 words are not listed themselves (allowed by the
    format) gets an unlisted placeholder entry at order k-1 (no probability, back-off weight 1).

    Parameters
    ----------
    words : sequence of str
        The vocabulary, ``words[0] == "<unk>"``, without ``<s>`` / ``</s>``.
    tables : list of (int array (n_k, k), float array (n_k,), float array (n_k,))
        Per order k = 1, 2, ...: the ids of the listed k-grams, their log10 probabilities and log10 back-off
        weights (NaN: none), as :meth:`tables` returns them.
    """

    def __init__(self, words: Sequence[str], tables: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> None:
        words = list(words)
        if not words or words[0] != UNK:
            raise ValueError(f"words must start with {UNK!r}")
        if BOS in words or EOS in words:
            raise ValueError(f"words must not contain {BOS!r} or {EOS!r} (they are ids len(words) and len(words) + 1)")
        if not tables:
            raise ValueError("tables must hold at least the unigrams")
        self.words = words
        self.vocab_size = len(words)
        self.order = len(tables)
        self.index = {w: i for i, w in enumerate(words)}
        self.index[EOS] = self.vocab_size
        self.index[BOS] = self.vocab_size + 1
        base = self.vocab_size + 2
        grams = []
        for k, (rows, log10p, log10bow) in enumerate(tables, start=1):
            rows = np.asarray(rows, dtype=np.int64).reshape(-1, k)
            if rows.size and (rows.min() < 0 or rows.max() >= base):
                raise ValueError(f"tables[{k - 1}] holds ids outside [0, {base})")
            if np.shape(log10p) != (rows.shape[0],) or np.shape(log10bow) != (rows.shape[0],):
                raise ValueError(f"tables[{k - 1}]: log10p and log10bow must have shape ({rows.shape[0]},)")
            grams.append(rows)
        # every prefix of a listed k-gram must exist at order k-1 (as an unlisted placeholder if need be): full[k]
        # holds the stored k-grams, k = 2 .. order (order 1 stores every id)
        full = {self.order: grams[-1]}
        for k in range(self.order - 1, 1, -1):
            full[k] = _unique_rows(np.concatenate((grams[k - 1], full[k + 1][:, :k])))[0]
        # per order k (keys: k >= 2): sorted level keys, id rows, log10 p and log10 bow (NaN: not listed / none)
        self._keys: dict[int, np.ndarray] = {}
        self._rows = {1: np.arange(base, dtype=np.int64)[:, None]}
        self._log10p = {1: np.full(base, np.nan)}
        self._log10bow = {1: np.full(base, np.nan)}
        self._log10p[1][grams[0][:, 0]] = tables[0][1]
        self._log10bow[1][grams[0][:, 0]] = tables[0][2]
        for k in range(2, self.order + 1):
            parent = self._window_ids(full[k][:, :-1])
            keys = parent * base + full[k][:, -1]
            order = np.argsort(keys)
            self._keys[k], self._rows[k] = keys[order], full[k][order]
            listed = self._lookup(k, self._window_ids(grams[k - 1][:, :-1]), grams[k - 1][:, -1])
            self._log10p[k], self._log10bow[k] = np.full(keys.size, np.nan), np.full(keys.size, np.nan)
            self._log10p[k][listed] = tables[k - 1][1]
            self._log10bow[k][listed] = tables[k - 1][2]
        self.has_unk = not np.isnan(self._log10p[1][0])

    # ------------------------------------------------------------------ building
    @classmethod
    def from_ngram(cls, model: NGramModel, words: Sequence[str]) -> "ArpaModel":
        """The exact back-off form of a fitted :class:`~trf.ngram.KneserNey` / :class:`~trf.ngram.WittenBell`.

        Parameters
        ----------
        model : NGramModel
            A fitted model over ids ``0 .. len(words) - 1``.
        words : sequence of str
            The word of every id (``words[0] == "<unk>"``, e.g. ``Vocabulary.words``).
        """
        if not isinstance(model, NGramModel):
            raise TypeError(f"model must be a fitted KneserNey or WittenBell, got {type(model).__name__}")
        model._check_fitted()
        if len(words) != model.vocab_size:
            raise ValueError(f"words must hold the model's {model.vocab_size} words, got {len(words)}")
        return cls(words, list(_backoff_tables(model)))

    @cached_property
    def vocab(self):
        """The vocabulary as a :class:`trf.lm.corpus.Vocabulary` (for ``encode_file``)."""
        from trf.lm.corpus import Vocabulary

        return Vocabulary(self.words)

    def n_ngrams(self) -> dict[int, int]:
        """Number of listed n-grams per order (order 1 includes ``<s>``, ``</s>`` and ``<unk>`` when present)."""
        return {k: int(np.count_nonzero(~np.isnan(self._log10p[k]))) for k in range(1, self.order + 1)}

    # ------------------------------------------------------------------ scoring
    def _lookup(self, k: int, prefix_ids: np.ndarray, tokens: np.ndarray) -> np.ndarray:
        """Level-``k`` ids of ``prefix + token`` (``-1`` when not even a placeholder, or the prefix is ``-1``)."""
        keys = self._keys[k]
        key = prefix_ids * (self.vocab_size + 2) + tokens
        if keys.size == 0:
            return np.full(key.shape, -1, dtype=np.int64)
        where = np.minimum(np.searchsorted(keys, key), keys.size - 1)
        return np.where((prefix_ids >= 0) & (keys[where] == key), where, -1)

    def _window_ids(self, rows: np.ndarray) -> np.ndarray:
        """Level ids of the id rows ``(n, m)`` (level 1: the token; ``-1`` where not stored); ``m = 0``: zeros."""
        if rows.shape[1] == 0:
            return np.zeros(rows.shape[0], dtype=np.int64)
        ids = rows[:, 0].astype(np.int64)
        for j in range(1, rows.shape[1]):
            ids = self._lookup(j + 1, ids, rows[:, j])
        return ids

    def _backoff_log10(self, contexts: dict[int, np.ndarray], tokens: np.ndarray) -> np.ndarray:
        """``log10 p(token | context)`` by the back-off rule, vectorised: ``contexts[j]`` (``j = 1 .. order-1``)
        holds the level-j id of each token's last j history words (``-1``: shorter history or not stored).
        The longest listed n-gram ending in the token gives its probability, plus the back-off weights of the
        listed contexts passed over; ``-inf`` when the token has no unigram."""
        out = np.full(tokens.size, -np.inf)
        backoff = np.zeros(tokens.size)
        found = np.zeros(tokens.size, dtype=bool)
        for k in range(self.order, 0, -1):
            ids = tokens if k == 1 else self._lookup(k, contexts[k - 1], tokens)
            value = np.where(ids >= 0, self._log10p[k][np.maximum(ids, 0)], np.nan)
            take = ~np.isnan(value) & ~found
            out[take] = value[take] + backoff[take]
            found |= take
            if k >= 2:
                ctx = contexts[k - 1]
                bow = np.where(ctx >= 0, self._log10bow[k - 1][np.maximum(ctx, 0)], np.nan)
                backoff += np.where(~found & ~np.isnan(bow), bow, 0.0)
        return out

    def _history_contexts(self, history: Sequence[int], n: int) -> dict[int, np.ndarray]:
        """``contexts`` for :meth:`_backoff_log10` from one history (ids, oldest first), repeated ``n`` times."""
        history = list(history)[max(0, len(history) - (self.order - 1)):]
        contexts = {}
        for j in range(1, self.order):
            row = np.array([history[len(history) - j:]], dtype=np.int64) if j <= len(history) else None
            contexts[j] = np.full(n, -1 if row is None else int(self._window_ids(row)[0]), dtype=np.int64)
        return contexts

    def log10_prob(self, word: str, context: Sequence[str] = ()) -> float:
        """``log10 p(word | context)``; ``context`` lists the preceding words, oldest first (``<s>`` may start it).

        Words outside the vocabulary are ``<unk>``; without ``<unk>`` in the model their probability is 0
        (``-inf``).  Only the last ``order - 1`` words of ``context`` matter; a context that does not start
        with ``<s>`` is a history inside a sentence.
        """
        context = list(context)
        if not isinstance(word, str) or not all(isinstance(w, str) for w in context):
            raise TypeError("word and context must be str words")
        if word == BOS:
            raise ValueError(f"word {BOS!r} is never predicted (context only)")
        if BOS in context[1:]:
            raise ValueError(f"context may hold {BOS!r} only as its first word")
        history = [self.index.get(w, 0) for w in context]
        token = np.array([self.index.get(word, 0)], dtype=np.int64)
        return float(self._backoff_log10(self._history_contexts(history, 1), token)[0])

    def score(self, sentence: str) -> float:
        """``log10`` probability of a whitespace-separated sentence with ``<s>`` before and ``</s>`` after it
        (KenLM's ``Model.score(sentence, bos=True, eos=True)``)."""
        if not isinstance(sentence, str):
            raise TypeError(f"sentence must be a str, got {type(sentence).__name__}")
        lp, _ = self.token_log_probs([self.vocab.encode(sentence.split())])
        return float(lp.sum() / _LN10)

    def token_log_probs(self, sentences: Sentences) -> tuple[np.ndarray, np.ndarray]:
        """Natural-log probability of every predicted token (words and one ``</s>`` per sentence).

        Same API as :meth:`trf.ngram.NGramModel.token_log_probs`; a word without probability (id 0 in a model
        without ``<unk>``) gets ``-inf``.
        """
        seq, pos = _pad_corpus(sentences, self.vocab_size)
        predicted = np.flatnonzero(pos >= 1)
        # window_ids: level-j ids of the j-token windows ending at each position (-1: none or not stored)
        window_ids = seq.copy()
        contexts = {}
        for j in range(1, self.order):
            if j > 1:
                nxt = np.full(seq.size, -1, dtype=np.int64)
                ok = np.flatnonzero(pos >= j - 1)
                nxt[ok] = self._lookup(j, window_ids[ok - 1], seq[ok])
                window_ids = nxt
            contexts[j] = np.where(pos[predicted] >= j, window_ids[predicted - 1], -1)
        sentence_index = np.cumsum(pos == 0) - 1
        return self._backoff_log10(contexts, seq[predicted]) * _LN10, sentence_index[predicted]

    def log_prob(self, sentences: Sentences) -> np.ndarray:
        """Natural-log probability of each sentence including its ``</s>``, shape ``(n_sentences,)``."""
        token_lp, sentence_index = self.token_log_probs(sentences)
        return np.bincount(sentence_index, weights=token_lp)

    def next_log_probs(self, history: Sequence[int]) -> np.ndarray:
        """Natural-log probabilities of all ``vocab_size + 1`` next symbols (index ``vocab_size`` is ``</s>``);
        ``history`` holds word ids after ``<s>``."""
        from samplers.validation import as_int_array

        hist = as_int_array(history, "history", ndim=1, low=0, high=self.vocab_size)
        tokens = np.arange(self.vocab_size + 1, dtype=np.int64)
        contexts = self._history_contexts([self.vocab_size + 1, *hist.tolist()], tokens.size)
        return self._backoff_log10(contexts, tokens) * _LN10

    def contexts(self) -> list[tuple[str, ...]]:
        """Every listed n-gram that carries a back-off weight (the histories the file states), as words."""
        names = self.words + [EOS, BOS]
        return [tuple(names[i] for i in row) for k in range(1, self.order)
                for row in self._rows[k][~np.isnan(self._log10bow[k])].tolist()]

    # ------------------------------------------------------------------ writing
    def tables(self) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Per order: id rows ``(n_k, k)`` of the listed n-grams, log10 probabilities, log10 back-off weights
        (NaN: none)."""
        out = []
        for k in range(1, self.order + 1):
            listed = ~np.isnan(self._log10p[k])
            out.append((self._rows[k][listed], self._log10p[k][listed], self._log10bow[k][listed]))
        return out


# ---------------------------------------------------------------------- interpolated -> back-off
def _window_ids(model: NGramModel, tokens: np.ndarray) -> np.ndarray:
    """Level-``m`` ids of the windows in the rows of ``tokens`` ``(n, m)`` (``-1`` where unseen)."""
    ids = tokens[:, 0].astype(np.int64)
    for j in range(1, tokens.shape[1]):
        ids = model._lookup(j + 1, ids, tokens[:, j])
    return ids


def _backoff_tables(model: NGramModel) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per order k: the listed k-grams as token rows, their interpolated log10 probabilities and the log10
    back-off weights ``log10(b(h) / S(h))`` of the k-grams that are contexts (NaN for the others)."""
    fitted = model._check_fitted()
    base = fitted.vocab_size + 2
    tokens = {1: np.arange(base, dtype=np.int64)[:, None]}        # words, </s>, <s>
    with np.errstate(divide="ignore"):
        log10p = {1: np.concatenate((np.log10(fitted.unigram), [BOS_LOG10]))}
    for k in range(2, model.order + 1):
        keys = fitted.levels[k].keys
        prefix, last = keys // base, keys % base
        previous = prefix[:, None] if k == 2 else tokens[k - 1][prefix]
        window = np.column_stack((previous, last)).astype(np.int64)
        tokens[k] = window
        contexts = {m: _window_ids(model, window[:, k - m:k - 1]) for m in range(2, k + 1)}
        log10p[k] = np.log10(model._interpolate(contexts, window[:, -1]))
    for k in range(1, model.order + 1):
        if k < model.order:
            level = fitted.levels[k + 1]
            ids = tokens[1][:, 0] if k == 1 else np.arange(tokens[k].shape[0])
            total, backoff = level.ctx_total[ids], level.ctx_backoff[ids]
            with np.errstate(divide="ignore", invalid="ignore"):
                log10bow = np.where(total > 0, np.log10(backoff / np.where(total > 0, total, 1.0)), np.nan)
        else:
            log10bow = np.full(tokens[k].shape[0], np.nan)
        yield tokens[k], log10p[k], log10bow


# ---------------------------------------------------------------------- writing
def write_arpa(path: str | os.PathLike[str], model: ArpaModel | NGramModel,
               words: Sequence[str] | None = None) -> dict[int, int]:
    """Write ``model`` to ``path`` as an ARPA file (gzip when the name ends in ``.gz``), atomically.

    Parameters
    ----------
    path : str or PathLike
        Output file.
    model : ArpaModel or NGramModel
        An ARPA model, or a fitted Kneser-Ney / Witten-Bell model, written in its exact back-off form.
    words : sequence of str, optional
        The word of every id, required for an :class:`~trf.ngram.NGramModel` (``words[0] == "<unk>"``).

    Returns
    -------
    dict
        The ``\\data\\`` counts written: order -> number of n-grams (order 1 includes ``<s>``).
    """
    if isinstance(model, NGramModel):
        if words is None:
            raise ValueError("words is required to write an NGramModel (the word of every id, e.g. Vocabulary.words)")
        model._check_fitted()
        words = list(words)
        if len(words) != model.vocab_size:
            raise ValueError(f"words must hold the model's {model.vocab_size} words, got {len(words)}")
        if BOS in words or EOS in words:
            raise ValueError(f"words must not contain {BOS!r} or {EOS!r}: ARPA reserves them")
        tables = list(_backoff_tables(model))
    elif isinstance(model, ArpaModel):
        words, tables = model.words, model.tables()
    else:
        raise TypeError(f"model must be an ArpaModel or a fitted NGramModel, got {type(model).__name__}")
    names = np.array(list(words) + [EOS, BOS], dtype=object)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    os.close(fd)
    try:
        # gzip level 6 (the gzip tool's default): level 9 took 1.7x as long for a file 1% smaller (arpa_speed.py)
        out_file = gzip.open(tmp, "wt", encoding="utf-8", newline="\n", compresslevel=6) if \
            target.name.endswith(".gz") else open(tmp, "w", encoding="utf-8", newline="\n")
        with out_file as out:
            out.write("\\data\\\n")
            for k, (grams, _, _) in enumerate(tables, start=1):
                out.write(f"ngram {k}={grams.shape[0]}\n")
            for k, (grams, log10p, log10bow) in enumerate(tables, start=1):
                out.write(f"\n\\{k}-grams:\n")
                text = map(" ".join, names[grams].tolist())
                bows = ["" if math.isnan(b) else f"\t{b!r}" for b in log10bow.tolist()]
                out.write("".join(f"{p!r}\t{g}{b}\n" for p, g, b in zip(log10p.tolist(), text, bows)))
            out.write("\n\\end\\\n")
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return {k: grams.shape[0] for k, (grams, _, _) in enumerate(tables, start=1)}


# ---------------------------------------------------------------------- reading
_COUNT = re.compile(r"ngram\s+(\d+)\s*=\s*(\d+)")
_SECTION = re.compile(r"\\(\d+)-grams:")


def _open_text(path: Path, encoding: str) -> TextIO:
    with open(path, "rb") as probe:
        magic = probe.read(2)
    if magic == _GZIP_MAGIC:
        return gzip.open(path, "rt", encoding=encoding)
    return open(path, encoding=encoding)


def read_arpa(path: str | os.PathLike[str], *, encoding: str = "utf-8") -> ArpaModel:
    """Read an ARPA file (plain or gzip) into an :class:`ArpaModel`.

    Malformed files raise :class:`ArpaFormatError` (a ``ValueError``) naming the file and the line: no
    ``\\data\\``, count lines that are not ``ngram k=N`` or skip an order, sections out of order or missing,
    a section whose number of entries differs from its count, entries with the wrong number of fields,
    values that are not numbers, positive log-probabilities, non-finite back-off weights, duplicate n-grams,
    words missing from the unigrams, no ``<s>`` or ``</s>``, no ``\\end\\``.

    Parameters
    ----------
    path : str or PathLike
        The ARPA file.
    encoding : str
        Its text encoding.

    Returns
    -------
    ArpaModel
        The model the file states.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"ARPA file {str(path)!r} does not exist or is not a file")
    reader = _ArpaReader(path)
    try:
        with _open_text(path, encoding) as text:
            return reader.read(text)
    except (UnicodeDecodeError, OSError, EOFError) as exc:
        raise ArpaFormatError(f"{path}: line {reader.lineno + 1}: cannot read the file ({exc})") from None


_Section = tuple[list[Any], list[float], list[float], list[int]]
"""One n-gram section as read: its entries (the words at order 1, lists of word ids above), log10 probabilities,
log10 back-off weights (NaN: none) and line numbers."""


class _ArpaReader:
    """One pass over the lines of an ARPA file, in named steps: the ``\\data\\`` counts (:meth:`_counts`), then per
    order its section header (:meth:`_section_order`) and entries (:meth:`_section`), each section checked against
    its count when the next header closes it (:meth:`read`).  Every error names the file, the line and the token."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lineno = 0  # the last line read: a file that cannot be decoded fails at the line after it

    def fail(self, lineno: int, what: str) -> NoReturn:
        """Raise the :class:`ArpaFormatError` of line ``lineno``."""
        raise ArpaFormatError(f"{self.path}: line {lineno}: {what}")

    def read(self, text: Iterable[str]) -> ArpaModel:
        """The model stated by the lines of ``text``, up to its ``\\end\\``."""
        numbered = enumerate(text, start=1)
        counts, line, lineno = self._counts(numbered)
        tables: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        index: dict[str, int] = {}
        order = 0
        while line != "\\end\\":
            order = self._section_order(line, lineno, order, len(counts))
            section, line, lineno = self._section(numbered, order, order == len(counts), index)
            got = len(section[0])
            if got != counts[order - 1]:
                self.fail(lineno, f"\\{order}-grams: holds {got} entries but \\data\\ says ngram "
                                  f"{order}={counts[order - 1]}")
            if order == 1:
                index = _unigram_index(section[0], self.fail, lineno)
            tables.append(_section_table(section, order, index, self.fail))
        if order < len(counts):
            self.fail(lineno, f"\\end\\ before \\{order + 1}-grams: (\\data\\ declares orders 1 to {len(counts)})")
        return ArpaModel([UNK] + [w for w in index if w not in (UNK, BOS, EOS)], tables)

    def _counts(self, numbered: Iterator[tuple[int, str]]) -> tuple[list[int], str, int]:
        """Skip to ``\\data\\`` and read its ``ngram k=N`` lines; the counts, and the header line that ends them and
        its number."""
        counts: list[int] = []
        in_data, lineno = False, self.lineno
        try:
            for lineno, raw in numbered:
                line = raw.strip()
                if not in_data:
                    in_data = line == "\\data\\"
                    continue
                if not line:
                    continue
                if line.startswith("\\"):
                    if not counts:
                        self.fail(lineno, "\\data\\ has no 'ngram N=count' lines")
                    return counts, line, lineno
                match = _COUNT.fullmatch(line)
                if match is None:
                    self.fail(lineno, f"expected 'ngram N=count' in \\data\\, got {line!r}")
                k, n = int(match.group(1)), int(match.group(2))
                if k != len(counts) + 1:
                    self.fail(lineno, f"ngram {k}= out of order (expected ngram {len(counts) + 1}=)")
                counts.append(n)
        finally:
            self.lineno = lineno
        if lineno == 0:
            raise ArpaFormatError(f"{self.path}: the file is empty")
        self.fail(lineno, "no \\1-grams: section" if in_data else "no \\data\\ line: not an ARPA file")

    def _section_order(self, line: str, lineno: int, order: int, n_orders: int) -> int:
        """The order ``k`` of the section header ``\\k-grams:``, which must follow order ``order`` and be declared."""
        match = _SECTION.fullmatch(line)
        if match is None:
            self.fail(lineno, f"unknown section header {line!r} (expected \\{order + 1}-grams: or \\end\\)")
        k = int(match.group(1))
        if k != order + 1:
            self.fail(lineno, f"section \\{k}-grams: out of order (expected \\{order + 1}-grams:)")
        if k > n_orders:
            self.fail(lineno, f"section \\{k}-grams: is not declared in \\data\\ (orders 1 to {n_orders})")
        return k

    def _section(self, numbered: Iterator[tuple[int, str]], order: int, top: bool,
                 index: dict[str, int]) -> tuple[_Section, str, int]:
        """The entries of one ``\\order-grams:`` section (the hot path), up to the next header line: the section,
        that line and its number.  ``top``: the highest order (no back-off weights); ``index``: the word ids (from
        the unigrams; unused at order 1)."""
        rows: list[Any] = []
        probs: list[float] = []
        bows: list[float] = []
        lines: list[int] = []
        unigrams: set[str] = set()
        get_id = index.get
        fail, lineno = self.fail, self.lineno
        try:
            for lineno, raw in numbered:
                fields = raw.split()
                if not fields:
                    continue
                if fields[0][0] == "\\":
                    return (rows, probs, bows, lines), raw.strip(), lineno
                n_fields = len(fields)
                if n_fields != order + 1 and (top or n_fields != order + 2):
                    want = f"{order + 1}" if top else f"{order + 1} or {order + 2}"
                    fail(lineno, f"an entry of \\{order}-grams: needs {want} fields (log10 probability, "
                                 f"{order} word{'s' if order > 1 else ''}"
                                 f"{'' if top else ', optional log10 back-off weight'}), got {n_fields}")
                try:
                    log10p = float(fields[0])
                except ValueError:
                    log10p = _number(fields[0], "log10 probability", lineno, fail)
                if not log10p <= 0:                     # positive, or NaN
                    _number(fields[0], "log10 probability", lineno, fail)
                    fail(lineno, f"positive log10 probability {fields[0]} (a probability above 1)")
                bow = math.nan
                if n_fields == order + 2:
                    try:
                        bow = float(fields[-1])
                    except ValueError:
                        bow = _number(fields[-1], "log10 back-off weight", lineno, fail)
                    if not -math.inf < bow < math.inf:
                        _number(fields[-1], "log10 back-off weight", lineno, fail)
                        fail(lineno, f"back-off weight {fields[-1]} is not finite")
                if order == 1:
                    if fields[1] in unigrams:
                        fail(lineno, f"duplicate 1-gram {fields[1]!r}")
                    unigrams.add(fields[1])
                    rows.append(fields[1])
                else:
                    ids = list(map(get_id, fields[1:order + 1]))
                    if None in ids:
                        fail(lineno, f"word {fields[1 + ids.index(None)]!r} is not in \\1-grams:")
                    rows.append(ids)
                probs.append(log10p)
                bows.append(bow)
                lines.append(lineno)
        finally:
            self.lineno = lineno
        fail(lineno, "missing \\end\\ (truncated file?)")


def _number(text: str, what: str, lineno: int, fail: Callable[[int, str], NoReturn]) -> float:
    try:
        value = float(text)
    except ValueError:
        fail(lineno, f"{what} {text!r} is not a number")
    if value != value:
        fail(lineno, f"{what} is NaN")
    return value


def _unique_rows(rows: np.ndarray) -> tuple[np.ndarray, int]:
    """The distinct rows of an int array ``(n, k)`` in sorted order, and the index of the first row (in input
    order) that repeats an earlier one (``-1``: none).  ``np.lexsort`` on the columns: several times faster than
    ``np.unique(axis=0)``."""
    if rows.shape[0] == 0:
        return rows, -1
    order = np.lexsort(rows.T[::-1])                       # stable: a group's first member comes first
    ordered = rows[order]
    new = np.ones(rows.shape[0], dtype=bool)
    new[1:] = np.any(ordered[1:] != ordered[:-1], axis=1)
    return ordered[new], (int(order[~new].min()) if not new.all() else -1)


def _unigram_index(words: list[str], fail: Callable[[int, str], NoReturn], lineno: int) -> dict[str, int]:
    """mcsa ids of the unigram words: ``<unk>`` 0, the others in file order, then ``</s>``, ``<s>``."""
    for needed in (BOS, EOS):
        if needed not in words:
            fail(lineno, f"\\1-grams: has no {needed!r}")
    ordinary = [w for w in words if w not in (UNK, BOS, EOS)]
    index = {UNK: 0, **{w: i + 1 for i, w in enumerate(ordinary)}}
    index[EOS], index[BOS] = len(ordinary) + 1, len(ordinary) + 2
    return index


def _section_table(section: _Section, order: int, index: dict[str, int],
                   fail: Callable[[int, str], NoReturn]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One order's ``(ids, log10 p, log10 bow)``; a duplicate n-gram fails at its second line."""
    rows, probs, bows, lines = section
    ids = np.array([[index[w]] for w in rows] if order == 1 else rows, dtype=np.int64).reshape(len(rows), order)
    if order > 1:
        at = _unique_rows(ids)[1]
        if at >= 0:
            names = list(index)
            fail(lines[at], f"duplicate {order}-gram {' '.join(names[i] for i in ids[at])!r}")
    return ids, np.array(probs, dtype=np.float64), np.array(bows, dtype=np.float64)
