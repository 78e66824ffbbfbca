"""Known sentences: the training sentences that a model holds heavy, weighed exactly in AugSA's SMC draws.

AugSA's gradient needs the model's expectation of every feature (Eq. 6), estimated from SMC draws.  A model
trained on a corpus gives its training sentences high weight, and a training sentence with n-grams seen nowhere else
can come to hold much of ``Z_j``: the SMC runs then find it only now and then, the batch piles onto it when they do,
and the weights of its n-grams swing (docs/trf-lm.md, "Why the guard fires").  But such a sentence need not be
found by chance: it is known, and so is its weight ``exp(lambda . f(x))``.  :class:`KnownSentences` keeps the
distinct training sentences whose share of their length's normaliser is at least ``threshold`` (re-chosen every
``refresh`` draws from all of them, scored at the current lambda against the last ``Z-hat_j``), and
:meth:`trf.lm.smc.SMCSampler.draw` weighs them exactly -- ``Z_j = W(S_j) + Z_j(rest)``, the runs estimating the rest --
so their mass enters every batch at its share.

The choice of the set depends only on earlier draws, so the estimates stay unbiased given it; the set is part of
the trainer's state (:meth:`get_state`), so a resumed run draws what the uninterrupted one would.
"""

from __future__ import annotations

from typing import Iterable, NamedTuple

import numpy as np

from samplers.validation import check_float, check_int
from trf.lm.corpus import EncodedCorpus
from trf.lm.features import SentenceFeatures

__all__ = ["KnownSentences", "KNOWN_REFRESH", "DistinctSentences", "LengthFloor"]

KNOWN_REFRESH = 50
"""Draws between two choices of the known set (a training sentence's weight climbs slowly while the runs miss it:
about 0.01 nats per iteration on fortunes)."""


class KnownSentences:
    """The distinct training sentences of lengths ``1..m`` and the heavy ones among them (:mod:`trf.lm.known`).

    Parameters
    ----------
    corpus : EncodedCorpus
        The training sentences.
    features : SentenceFeatures
        Scores them (``lambda . f(x)``, :meth:`SentenceFeatures.scores`).
    m : int
        Longest length drawn.
    threshold : float
        A sentence is known while its share ``exp(lambda . f(x)) / Z-hat_j`` of its length's normaliser is at least
        this, in ``(0, 1]``.
    refresh : int
        Draws between two choices of the set.
    """

    def __init__(self, corpus: EncodedCorpus, features: SentenceFeatures, m: int, threshold: float = 1e-4,
                 refresh: int = KNOWN_REFRESH) -> None:
        self.features = features
        self.m = check_int(m, "m", low=1)
        self.threshold = check_float(threshold, "threshold", low=0.0, high=1.0, low_open=True)
        self.refresh = check_int(refresh, "refresh", low=1)
        self.distinct = DistinctSentences([corpus], np.arange(1, self.m + 1))
        self.tokens, self.lengths, self.corpus = self.distinct.tokens, self.distinct.lengths, self.distinct.corpus
        self.age = 0
        self.log_z = np.zeros(0)
        self._choose(np.zeros(0, dtype=np.int64))

    def _choose(self, chosen: np.ndarray) -> None:
        """Make ``chosen`` (indices of the distinct sentences) the known set, flattened once for its scoring."""
        self.chosen = chosen
        self._chosen_corpus = _flat(self.tokens[chosen], self.lengths[chosen])

    def __len__(self) -> int:
        """Distinct training sentences that can be known."""
        return int(self.lengths.size)

    def before_draw(self, lam) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """The known set for the next draw, ``(tokens, lengths, lambda . f(x))`` (None while empty), re-chosen
        every ``refresh`` draws once a draw's ``Z-hat_j`` is known (:meth:`after_draw`)."""
        if self.age % self.refresh == 0 and self.log_z.size:
            scores = self.features.scores(self.corpus, lam)
            share = scores - self.log_z[self.lengths - 1]
            self._choose(np.flatnonzero(share >= np.log(self.threshold)))
        self.age += 1
        if self.chosen.size == 0:
            return None
        return self.tokens[self.chosen], self.lengths[self.chosen], self.features.scores(self._chosen_corpus, lam)

    def after_draw(self, log_z: np.ndarray) -> None:
        """Keep the draw's ``log Z-hat_j`` (``j = 1..m``) for the next choice."""
        log_z = np.asarray(log_z, dtype=np.float64)
        if log_z.shape != (self.m,):
            raise ValueError(f"log_z must have {self.m} entries, got shape {log_z.shape}")
        self.log_z = log_z.copy()

    def get_state(self) -> dict[str, np.ndarray]:
        """The set, the draws since the last choice and the last ``log Z-hat_j``, for a checkpoint."""
        return {"known_chosen": self.chosen.copy(), "known_age": np.array(self.age), "known_log_z": self.log_z.copy()}

    def set_state(self, state: dict[str, np.ndarray]) -> None:
        """Restore :meth:`get_state`'s output (a checkpoint without it restarts the set empty)."""
        chosen = np.asarray(state.get("known_chosen", np.zeros(0)), dtype=np.int64).copy()
        if chosen.size and (chosen.min() < 0 or chosen.max() >= len(self)):
            raise ValueError(f"known_chosen must index the {len(self)} distinct training sentences")
        self._choose(chosen)
        self.age = int(state.get("known_age", 0))
        self.log_z = np.asarray(state.get("known_log_z", np.zeros(0)), dtype=np.float64).copy()


class LengthFloor(NamedTuple):
    """``log sum_x exp(lambda . f(x))`` over the distinct known sentences of each length (:meth:`DistinctSentences.floor`).

    Attributes
    ----------
    log_z : ndarray, shape (n,)
        The exact lower bound of ``log Z_j`` at each wanted length (-inf: no sentence of that length).
    sentences : ndarray of int, shape (n,)
        Distinct sentences of each length.
    heaviest : ndarray of int, shape (n,)
        Index (into :attr:`DistinctSentences.tokens`) of the heaviest sentence of each length; -1 where none.
    """

    log_z: np.ndarray
    sentences: np.ndarray
    heaviest: np.ndarray


class DistinctSentences:
    """The distinct sentences of some corpora whose length is wanted, each once in the order of its first occurrence.

    ``Z_j = sum_x exp(lambda . f(x))`` runs over all ``V^j`` sentences of length ``j``, so the same sum over any
    distinct ones of them is an exact lower bound of ``Z_j`` (:meth:`floor`): the training text's sentences bound
    AugSA's normalisers while it trains (:func:`trf.lm.train.train_lm`), and any known text bounds a check's
    (:func:`trf.lm.check.estimates.known_floor`).

    Parameters
    ----------
    corpora : iterable of EncodedCorpus
        Sentences encoded with one vocabulary (duplicates, within and across corpora, count once).
    lengths : array of int
        The lengths kept (others are ignored).

    Attributes
    ----------
    tokens : ndarray of int64, shape (n, max(lengths))
        The sentences, zero-padded.
    lengths : ndarray of int64, shape (n,)
    corpus : EncodedCorpus
        The same sentences, flattened for :meth:`trf.lm.features.SentenceFeatures.scores`.
    """

    def __init__(self, corpora: Iterable[EncodedCorpus], lengths) -> None:
        self.wanted = np.unique(np.asarray(lengths, dtype=np.int64))
        width = int(self.wanted.max()) if self.wanted.size else 0
        rows, sizes = [np.zeros((0, width), dtype=np.int64)], [np.zeros(0, dtype=np.int64)]
        for corpus in corpora:
            at = np.flatnonzero(np.isin(corpus.lengths, self.wanted))
            size = corpus.lengths[at].astype(np.int64)
            inside = np.arange(width)[None, :] < size[:, None]
            block = np.zeros((at.size, width), dtype=np.int64)
            block[inside] = corpus.tokens[(corpus.offsets[at][:, None] + np.arange(width)[None, :])[inside]]
            rows.append(block)
            sizes.append(size)
        tokens, sizes_all = np.concatenate(rows), np.concatenate(sizes)
        keyed = np.concatenate([sizes_all[:, None], tokens], axis=1)
        _, first = np.unique(keyed, axis=0, return_index=True)
        first = np.sort(first)
        self.tokens = tokens[first]
        self.lengths = sizes_all[first]
        self.corpus = _flat(self.tokens, self.lengths)

    def __len__(self) -> int:
        """Distinct sentences kept."""
        return int(self.lengths.size)

    def floor(self, features: SentenceFeatures, lam) -> LengthFloor:
        """The exact lower bound of ``log Z_j`` at each wanted length (in increasing order) that these sentences give
        under ``features`` with weights ``lam``."""
        k = np.searchsorted(self.wanted, self.lengths)
        scores = features.scores(self.corpus, lam) if len(self) else np.zeros(0)
        n = self.wanted.size
        log_z = np.full(n, -np.inf)
        np.logaddexp.at(log_z, k, scores)
        best = np.full(n, -np.inf)
        np.maximum.at(best, k, scores)
        heaviest = np.full(n, -1, dtype=np.int64)
        ties = np.flatnonzero(scores == best[k])
        group, first = np.unique(k[ties], return_index=True)
        heaviest[group] = ties[first]
        return LengthFloor(log_z, np.bincount(k, minlength=n).astype(np.int64), heaviest)

    def text(self, index: int, words: list[str]) -> str:
        """Sentence ``index`` as words joined by spaces."""
        return " ".join(words[t] for t in self.tokens[index, :self.lengths[index]])


def _flat(tokens: np.ndarray, lengths: np.ndarray) -> EncodedCorpus:
    """Zero-padded rows ``tokens`` of sentences of ``lengths`` as an :class:`EncodedCorpus`."""
    offsets = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return EncodedCorpus(tokens[np.arange(tokens.shape[1])[None, :] < lengths[:, None]].astype(np.int32), offsets)
