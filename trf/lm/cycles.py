"""Word cycles of a text and their loops: the sentences an undirected LM can weigh ever more heavily with length.

A TRF scores a sentence by ``lambda . f(x)`` with no normalisation per word (Eq. 2), so a cycle of words whose
n-grams all carry weight -- ``work work work ...`` or ``tie me kangaroo down sport tie me kangaroo down sport ...``
-- adds the same score with every turn.  Where that gain per word exceeds the growth of ``log Z_j`` per word, ever
longer repetitions take more of ``Z_j``, and neither AugSA's draws nor a check's SMC runs propose them: each of the
five fortunes models trained before the loops were known gave some loop of 40 words more weight than AugSA's whole
``Z_40`` (experiments/trf_lm/README.md, "Loops of word cycles").

The cycles come from a text: each stretch that repeats itself with a period of ``p <= max_period`` words (``x[t] =
x[t + p]`` for at least ``min_repeat`` consecutive ``t``) gives the cycle ``x[i:i + p]``, once up to rotation and in
its shortest period.  Its *loop* of length ``j`` is the cycle repeated and cut to ``j`` words.  The loops of a
training text's cycles are known sentences like its own (:mod:`trf.lm.known`): AugSA's SMC draws weigh the heavy
ones exactly, so the gradient sees their mass (``--smc-cycles``), and a check counts them in its exact lower bound.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np

from samplers.validation import check_int
from trf.lm.corpus import EncodedCorpus

__all__ = ["MAX_PERIOD", "MIN_REPEAT", "text_cycles", "cycle_loops", "loops_of"]

MAX_PERIOD = 8
"""Longest cycle taken from a text (words); fortunes' heaviest loops have periods 1, 2 and 5."""

MIN_REPEAT = 2
"""Words a stretch must repeat of its cycle (``x[t] = x[t + p]`` over this many consecutive ``t``)."""


def _canonical(cycle: np.ndarray) -> tuple[int, ...] | None:
    """The least rotation of ``cycle`` as a tuple, or None when ``cycle`` is a shorter cycle repeated."""
    p = cycle.size
    for q in range(1, p):
        if p % q == 0 and np.array_equal(cycle, np.roll(cycle, q)):
            return None
    return min(tuple(int(t) for t in np.roll(cycle, -k)) for k in range(p))


def text_cycles(corpora: Iterable[EncodedCorpus], max_period: int = MAX_PERIOD,
                min_repeat: int = MIN_REPEAT) -> list[np.ndarray]:
    """The word cycles of some texts: every ``x[i:i + p]`` of a sentence with ``x[t] = x[t + p]`` for ``t = i ..
    i + min_repeat - 1`` at least (``1 <= p <= max_period``), once up to rotation, in its shortest period.

    Parameters
    ----------
    corpora : iterable of EncodedCorpus
        Texts encoded with one vocabulary; token 0 (``<unk>``) is never part of a cycle.
    max_period : int
        Longest cycle, in words (0: none).
    min_repeat : int
        Words of the cycle a stretch must repeat (>= 1).

    Returns
    -------
    list of int32 arrays
        The cycles, each its least rotation, by period and then by first occurrence.
    """
    max_period = check_int(max_period, "max_period", low=0)
    min_repeat = check_int(min_repeat, "min_repeat", low=1)
    seen: set[tuple[int, ...]] = set()
    out: list[np.ndarray] = []
    texts = [(c.tokens.astype(np.int64), np.repeat(np.arange(len(c)), np.diff(c.offsets))) for c in corpora]
    for p in range(1, max_period + 1):
        for tokens, sentence in texts:
            if tokens.size <= p:
                continue
            same = (tokens[:-p] == tokens[p:]) & (sentence[:-p] == sentence[p:])
            edges = np.diff(np.concatenate([[0], same.astype(np.int8), [0]]))
            for start, end in zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)):
                if end - start < min_repeat:
                    continue
                cycle = tokens[start:start + p]
                key = None if (cycle == 0).any() else _canonical(cycle)
                if key is not None and key not in seen:
                    seen.add(key)
                    out.append(np.array(key, dtype=np.int32))
    return out


def cycle_loops(cycles: list[np.ndarray], lengths) -> EncodedCorpus:
    """Each cycle's loop at each of ``lengths`` of at least its period: the cycle repeated and cut to that many
    words, cycle by cycle, lengths in the given order (a loop two cycles share appears twice;
    :class:`trf.lm.known.DistinctSentences` counts it once)."""
    lengths = [check_int(j, "length", low=1) for j in np.asarray(lengths, dtype=np.int64).ravel()]
    return EncodedCorpus.from_sentences([np.resize(c, j).astype(np.int32) for c in cycles for j in lengths
                                         if j >= c.size])


def loops_of(corpora: Iterable[EncodedCorpus], m: int, max_period: int = MAX_PERIOD) -> EncodedCorpus:
    """The loops of lengths ``1..m`` of the texts' cycles (:func:`text_cycles`, :func:`cycle_loops`): known
    sentences for AugSA's draws and for a check's lower bound."""
    return cycle_loops(text_cycles(corpora, max_period), np.arange(1, check_int(m, "m", low=1) + 1))
