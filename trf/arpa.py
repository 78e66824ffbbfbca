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
(``tests/trf/test_arpa.py`` checks both).  Values are written with Python's shortest round-trip
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
from typing import Iterable, Sequence

import numpy as np

from trf.ngram import NGramModel, _pad_corpus

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

    Parameters
    ----------
    words : sequence of str
        The vocabulary, ``words[0] == "<unk>"``, without ``<s>`` / ``</s>``.
    ngrams : list of dict
        ``ngrams[k - 1]`` maps the id tuple of every listed k-gram to ``(log10 p, log10 bow or None)``.
    """

    def __init__(self, words: Sequence[str], ngrams: list[dict[tuple[int, ...], tuple[float, float | None]]]) -> None:
        words = list(words)
        if not words or words[0] != UNK:
            raise ValueError(f"words must start with {UNK!r}")
        if BOS in words or EOS in words:
            raise ValueError(f"words must not contain {BOS!r} or {EOS!r} (they are ids len(words) and len(words) + 1)")
        if not ngrams:
            raise ValueError("ngrams must hold at least the unigrams")
        self.words = words
        self.vocab_size = len(words)
        self.order = len(ngrams)
        self._ngrams = ngrams
        self.index = {w: i for i, w in enumerate(words)}
        self.index[EOS] = self.vocab_size
        self.index[BOS] = self.vocab_size + 1
        self.has_unk = (0,) in ngrams[0]

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
        ngrams = []
        for tokens, log10p, log10bow in _backoff_tables(model):
            bows = [None if math.isnan(b) else b for b in log10bow.tolist()]
            ngrams.append(dict(zip(map(tuple, tokens.tolist()), zip(log10p.tolist(), bows))))
        return cls(words, ngrams)

    @cached_property
    def vocab(self):
        """The vocabulary as a :class:`trf.lm.corpus.Vocabulary` (for ``encode_file``)."""
        from trf.lm.corpus import Vocabulary

        return Vocabulary(self.words)

    def n_ngrams(self) -> dict[int, int]:
        """Number of listed n-grams per order (order 1 includes ``<s>``, ``</s>`` and ``<unk>`` when present)."""
        return {k + 1: len(table) for k, table in enumerate(self._ngrams)}

    # ------------------------------------------------------------------ scoring
    def _log10(self, history: tuple[int, ...], token: int) -> float:
        """Back-off ``log10 p(token | history)``; ``-inf`` when ``token`` has no unigram (an OOV without <unk>)."""
        backoff = 0.0
        for k in range(len(history) + 1, 0, -1):
            context = history[len(history) - (k - 1):]
            entry = self._ngrams[k - 1].get(context + (token,))
            if entry is not None:
                return backoff + entry[0]
            if k > 1:
                ctx_entry = self._ngrams[k - 2].get(context)
                if ctx_entry is not None and ctx_entry[1] is not None:
                    backoff += ctx_entry[1]
        return -math.inf

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
        ids = [self.index.get(w, 0) for w in context]
        return self._log10(tuple(ids[len(ids) - min(len(ids), self.order - 1):]), self.index.get(word, 0))

    def score(self, sentence: str) -> float:
        """``log10`` probability of a whitespace-separated sentence with ``<s>`` before and ``</s>`` after it
        (KenLM's ``Model.score(sentence, bos=True, eos=True)``)."""
        if not isinstance(sentence, str):
            raise TypeError(f"sentence must be a str, got {type(sentence).__name__}")
        lp, _ = self.token_log_probs([self.vocab.encode(sentence.split())])
        return float(lp.sum() / _LN10)

    def token_log_probs(self, sentences: Iterable[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
        """Natural-log probability of every predicted token (words and one ``</s>`` per sentence).

        Same API as :meth:`trf.ngram.NGramModel.token_log_probs`; a word without probability (id 0 in a model
        without ``<unk>``) gets ``-inf``.
        """
        seq, pos = _pad_corpus(sentences, self.vocab_size)
        seq_list, pos_list = seq.tolist(), pos.tolist()
        keep = self.order - 1
        out = np.empty(seq.size, dtype=np.float64)
        for i, p in enumerate(pos_list):
            if p == 0:
                continue
            out[i] = self._log10(tuple(seq_list[i - min(p, keep):i]), seq_list[i])
        predicted = pos >= 1
        sentence_index = np.cumsum(pos == 0) - 1
        return out[predicted] * _LN10, sentence_index[predicted]

    def log_prob(self, sentences: Iterable[Sequence[int]]) -> np.ndarray:
        """Natural-log probability of each sentence including its ``</s>``, shape ``(n_sentences,)``."""
        token_lp, sentence_index = self.token_log_probs(sentences)
        return np.bincount(sentence_index, weights=token_lp)

    def next_log_probs(self, history: Sequence[int]) -> np.ndarray:
        """Natural-log probabilities of all ``vocab_size + 1`` next symbols (index ``vocab_size`` is ``</s>``)."""
        from samplers.validation import as_int_array

        hist = as_int_array(history, "history", ndim=1, low=0, high=self.vocab_size)
        full = [self.vocab_size + 1, *hist.tolist()]
        padded = tuple(full[len(full) - min(len(full), self.order - 1):])
        return np.array([self._log10(padded, w) for w in range(self.vocab_size + 1)]) * _LN10

    def contexts(self) -> list[tuple[str, ...]]:
        """Every listed n-gram that carries a back-off weight (the histories the file states), as words."""
        names = self.words + [EOS, BOS]
        return [tuple(names[i] for i in gram) for table in self._ngrams[:-1] for gram, (_, bow) in table.items()
                if bow is not None]

    # ------------------------------------------------------------------ writing
    def tables(self) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Per order: id tuples ``(n_k, k)``, log10 probabilities, log10 back-off weights (NaN: none)."""
        out = []
        for k, table in enumerate(self._ngrams, start=1):
            grams = np.array(list(table), dtype=np.int64).reshape(len(table), k)
            values = list(table.values())
            out.append((grams, np.array([v[0] for v in values], dtype=np.float64),
                        np.array([np.nan if v[1] is None else v[1] for v in values], dtype=np.float64)))
        return out


# ---------------------------------------------------------------------- interpolated -> back-off
def _window_ids(model: NGramModel, tokens: np.ndarray) -> np.ndarray:
    """Level-``m`` ids of the windows in the rows of ``tokens`` ``(n, m)`` (``-1`` where unseen)."""
    ids = tokens[:, 0].astype(np.int64)
    for j in range(1, tokens.shape[1]):
        ids = model._lookup(j + 1, ids, tokens[:, j])
    return ids


def _backoff_tables(model: NGramModel):
    """Per order k: the listed k-grams as token rows, their interpolated log10 probabilities and the log10
    back-off weights ``log10(b(h) / S(h))`` of the k-grams that are contexts (NaN for the others)."""
    V = model.vocab_size
    base = V + 2
    tokens = {1: np.arange(V + 2, dtype=np.int64)[:, None]}        # words, </s>, <s>
    with np.errstate(divide="ignore"):
        log10p = {1: np.concatenate((np.log10(model._unigram), [BOS_LOG10]))}
    for k in range(2, model.order + 1):
        keys = model._levels[k].keys
        prefix, last = keys // base, keys % base
        previous = prefix[:, None] if k == 2 else tokens[k - 1][prefix]
        window = np.column_stack((previous, last)).astype(np.int64)
        tokens[k] = window
        contexts = [None, None] + [_window_ids(model, window[:, k - m:k - 1]) for m in range(2, k + 1)]
        log10p[k] = np.log10(model._interpolate(contexts, window[:, -1]))
    for k in range(1, model.order + 1):
        if k < model.order:
            level = model._levels[k + 1]
            ids = tokens[1][:, 0] if k == 1 else np.arange(tokens[k].shape[0])
            total, backoff = level.ctx_total[ids], level.ctx_backoff[ids]
            with np.errstate(divide="ignore", invalid="ignore"):
                log10bow = np.where(total > 0, np.log10(backoff / np.where(total > 0, total, 1.0)), np.nan)
        else:
            log10bow = np.full(tokens[k].shape[0], np.nan)
        yield tokens[k], log10p[k], log10bow


# ---------------------------------------------------------------------- writing
def _fmt(value: float) -> str:
    return repr(float(value))


def write_arpa(path, model: ArpaModel | NGramModel, words: Sequence[str] | None = None) -> dict[int, int]:
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
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or ".")
    os.close(fd)
    try:
        opener = gzip.open if target.name.endswith(".gz") else open
        with opener(tmp, "wt", encoding="utf-8", newline="\n") as out:
            out.write("\\data\\\n")
            for k, (grams, _, _) in enumerate(tables, start=1):
                out.write(f"ngram {k}={grams.shape[0]}\n")
            for k, (grams, log10p, log10bow) in enumerate(tables, start=1):
                out.write(f"\n\\{k}-grams:\n")
                text = [" ".join(row) for row in names[grams].tolist()]
                for gram, p, b in zip(text, log10p.tolist(), log10bow.tolist()):
                    out.write(f"{_fmt(p)}\t{gram}\n" if math.isnan(b) else f"{_fmt(p)}\t{gram}\t{_fmt(b)}\n")
            out.write("\n\\end\\\n")
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return {k: grams.shape[0] for k, (grams, _, _) in enumerate(tables, start=1)}


# ---------------------------------------------------------------------- reading
_COUNT = re.compile(r"ngram\s+(\d+)\s*=\s*(\d+)")
_SECTION = re.compile(r"\\(\d+)-grams:")


def _open_text(path: Path, encoding: str):
    with open(path, "rb") as probe:
        magic = probe.read(2)
    if magic == _GZIP_MAGIC:
        return gzip.open(path, "rt", encoding=encoding)
    return open(path, encoding=encoding)


def read_arpa(path, *, encoding: str = "utf-8") -> ArpaModel:
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
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"ARPA file {str(path)!r} does not exist or is not a file")

    def fail(lineno: int, what: str):
        raise ArpaFormatError(f"{path}: line {lineno}: {what}")

    counts: list[int] = []
    ngrams: list[dict] = []
    unigram_words: list[str] = []
    unigram_values: list[tuple[float, float | None]] = []
    unigram_seen: set[str] = set()
    index: dict[str, int] | None = None
    state, order, lineno = "preamble", 0, 0
    try:
        with _open_text(path, encoding) as text:
            for lineno, raw in enumerate(text, start=1):
                line = raw.strip()
                if state == "preamble":
                    if line == "\\data\\":
                        state = "counts"
                    continue
                if not line:
                    continue
                if line.startswith("\\"):
                    if state == "counts" and not counts:
                        fail(lineno, "\\data\\ has no 'ngram N=count' lines")
                    if order:
                        got = len(unigram_words) if order == 1 else len(ngrams[order - 1])
                        if got != counts[order - 1]:
                            fail(lineno, f"\\{order}-grams: holds {got} entries but \\data\\ says ngram "
                                         f"{order}={counts[order - 1]}")
                        if order == 1:
                            index = _unigram_index(unigram_words, unigram_values, ngrams, fail, lineno)
                    if line == "\\end\\":
                        if order < len(counts):
                            fail(lineno, f"\\end\\ before \\{order + 1}-grams: (\\data\\ declares orders 1 to "
                                         f"{len(counts)})")
                        state = "end"
                        break
                    match = _SECTION.fullmatch(line)
                    if match is None:
                        fail(lineno, f"unknown section header {line!r} (expected \\{order + 1}-grams: or \\end\\)")
                    k = int(match.group(1))
                    if k != order + 1:
                        fail(lineno, f"section \\{k}-grams: out of order (expected \\{order + 1}-grams:)")
                    if k > len(counts):
                        fail(lineno, f"section \\{k}-grams: is not declared in \\data\\ (orders 1 to {len(counts)})")
                    order, state = k, "section"
                    ngrams.append({})
                    continue
                if state == "counts":
                    match = _COUNT.fullmatch(line)
                    if match is None:
                        fail(lineno, f"expected 'ngram N=count' in \\data\\, got {line!r}")
                    k, n = int(match.group(1)), int(match.group(2))
                    if k != len(counts) + 1:
                        fail(lineno, f"ngram {k}= out of order (expected ngram {len(counts) + 1}=)")
                    counts.append(n)
                    continue
                fields = line.split()
                top = order == len(counts)
                if len(fields) not in ((order + 1,) if top else (order + 1, order + 2)):
                    want = f"{order + 1}" if top else f"{order + 1} or {order + 2}"
                    fail(lineno, f"an entry of \\{order}-grams: needs {want} fields (log10 probability, {order} "
                                 f"word{'s' if order > 1 else ''}{'' if top else ', optional log10 back-off weight'}),"
                                 f" got {len(fields)}")
                log10p = _number(fields[0], "log10 probability", lineno, fail)
                if log10p > 0:
                    fail(lineno, f"positive log10 probability {fields[0]} (a probability above 1)")
                bow = None
                if len(fields) == order + 2:
                    bow = _number(fields[-1], "log10 back-off weight", lineno, fail)
                    if not math.isfinite(bow):
                        fail(lineno, f"back-off weight {fields[-1]} is not finite")
                gram = fields[1:order + 1]
                if order == 1:
                    if gram[0] in unigram_seen:
                        fail(lineno, f"duplicate 1-gram {gram[0]!r}")
                    unigram_seen.add(gram[0])
                    unigram_words.append(gram[0])
                    unigram_values.append((log10p, bow))
                    continue
                ids = tuple(index.get(w, -1) for w in gram)
                if -1 in ids:
                    fail(lineno, f"word {gram[ids.index(-1)]!r} is not in \\1-grams:")
                if ids in ngrams[order - 1]:
                    fail(lineno, f"duplicate {order}-gram {' '.join(gram)!r}")
                ngrams[order - 1][ids] = (log10p, bow)
    except (UnicodeDecodeError, OSError, EOFError) as exc:
        raise ArpaFormatError(f"{path}: line {lineno + 1}: cannot read the file ({exc})") from None
    if lineno == 0:
        raise ArpaFormatError(f"{path}: the file is empty")
    if state == "preamble":
        fail(lineno, "no \\data\\ line: not an ARPA file")
    if state != "end":
        fail(lineno, "missing \\end\\ (truncated file?)" if order else "no \\1-grams: section")
    return ArpaModel(["<unk>"] + [w for w in index if w not in (UNK, BOS, EOS)], ngrams)


def _number(text: str, what: str, lineno: int, fail) -> float:
    try:
        value = float(text)
    except ValueError:
        fail(lineno, f"{what} {text!r} is not a number")
    if math.isnan(value):
        fail(lineno, f"{what} is NaN")
    return value


def _unigram_index(words: list[str], values: list, ngrams: list[dict], fail, lineno: int) -> dict[str, int]:
    """Assign mcsa ids to the unigram words (``<unk>`` 0, the others in file order, then ``</s>``, ``<s>``)
    and fill ``ngrams[0]``; return word -> id."""
    for needed in (BOS, EOS):
        if needed not in words:
            fail(lineno, f"\\1-grams: has no {needed!r}")
    ordinary = [w for w in words if w not in (UNK, BOS, EOS)]
    index = {UNK: 0, **{w: i + 1 for i, w in enumerate(ordinary)}}
    index[EOS], index[BOS] = len(ordinary) + 1, len(ordinary) + 2
    table = ngrams[0]
    for word, value in zip(words, values):
        table[(index[word],)] = value
    return index
