"""Known sentences: the training sentences that a model holds heavy, weighed exactly in AugSA's SMC draws.

AugSA's gradient needs the model's expectation of every feature (Eq. 6), estimated from SMC draws.  A model
trained on a corpus gives its training sentences high weight, and a training sentence with n-grams seen nowhere else
can come to hold much of ``Z_j``: the SMC runs then find it only now and then, the batch piles onto it when they do,
and the weights of its n-grams swing (experiments/trf_lm/methods.md, "Why the guard fires").  But such a sentence need not be
found by chance: it is known, and so is its weight ``exp(lambda . f(x))``.  :class:`KnownSentences` keeps the
distinct training sentences whose share of their length's normaliser is at least ``threshold`` (re-chosen every
``refresh`` draws from all of them, scored at the current lambda against the last ``Z-hat_j``), and
:meth:`trf.lm.smc.SMCSampler.draw` weighs them exactly -- ``Z_j = W(S_j) + Z_j(rest)``, the runs estimating the rest --
so their mass enters every batch at its share.

With ``remember=True`` (``--smc-remember``) the set also holds the *found* sentences: any sentence outside the
training text that an SMC batch drew with a share of at least ``threshold`` of its length's ``Z-hat_j``, kept while
its share at each re-choice stays at least ``threshold``.  A model's class n-grams and skips can lift sentences it
never saw; the runs find such a sentence now and then, and without a memory the next batch has lost it again, so the
features that lift it are pushed back only in the rare batches that hold it.  (On fortunes seed 3's final model, 150
draws of 2 x 400 particles found 189 such sentences, 159 of them of one or two words; experiments/trf_lm/methods.md, "Remembered
sentences".)

With ``cycles=P`` (``--smc-cycles``) the candidates also hold the *loops* of the training text's word cycles of up to
``P`` words (:mod:`trf.lm.cycles`): ``work work work ...`` at every length.  An undirected model can weigh such a
repetition more heavily with every turn, and no draw proposes it; on fortunes, models trained without them gave
some loop of 40 words more weight than AugSA's whole ``Z_40``.  Known, a loop enters the batches at its share as soon
as it holds ``threshold`` of its length's normaliser, and the gradient pushes back the n-grams that lift it.

The choice of the set depends only on earlier draws, so the estimates stay unbiased given it; the set is part of
the trainer's state (:meth:`get_state`), so a resumed run draws what the uninterrupted one would.
"""

from __future__ import annotations

from typing import Iterable, NamedTuple

import numpy as np

from samplers.validation import check_float, check_int
from trf.lm.corpus import EncodedCorpus
from trf.lm.cycles import loops_of
from trf.lm.features import SentenceFeatures

__all__ = ["KnownSentences", "KNOWN_REFRESH", "NEIGHBOUR_SHARE", "NEIGHBOUR_LIMIT", "DistinctSentences", "LengthFloor",
           "Neighbours", "class_neighbours"]

NEIGHBOUR_SHARE = 1e-3
"""A known sentence's class neighbours (:meth:`DistinctSentences.with_neighbours`) join the floor when it holds at
least this share of its length's floor."""

NEIGHBOUR_LIMIT = 500_000
"""At most this many class-neighbour rows (before duplicates are removed) join the known sentences: the heaviest
sentences' neighbours first (:meth:`DistinctSentences.with_neighbours`).  Fortunes' test and training texts need
269,703 for session 32's seed-3 full-set model; a small model of 2,000 fortunes lines, whose 20 classes hold up to
448 words each, would need 4,081,394 (building that set peaked at 10 GB; at the limit, 1.06 GB and 13 s)."""

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
        Scores them (``lambda . f(x)``, :meth:`SentenceFeatures.scores`; the chosen set at each draw from its firings,
        found once per choice in the order the scorer adds them, so the same scores bit for bit).
    m : int
        Longest length drawn.
    threshold : float
        A sentence is known while its share ``exp(lambda . f(x)) / Z-hat_j`` of its length's normaliser is at least
        this, in ``(0, 1]``.
    refresh : int
        Draws between two choices of the set.
    remember : bool
        Also keep the heavy sentences outside the training text that the draws found (:meth:`after_draw`).
    threads : int or None
        Score the training sentences (at each choice) and the draws on up to this many threads
        (:meth:`SentenceFeatures.scores`; None: Numba's thread count; the same scores either way).  Default 1.
    cycles : int
        Also hold the loops of lengths ``1..m`` of the training text's word cycles of up to this many words
        (:func:`trf.lm.cycles.loops_of`): a model can weigh a repeated cycle more heavily with every turn, and the
        draws never propose it (0: the training sentences only, the default).
    """

    def __init__(self, corpus: EncodedCorpus, features: SentenceFeatures, m: int, threshold: float = 1e-4,
                 refresh: int = KNOWN_REFRESH, remember: bool = False, threads: int | None = 1,
                 cycles: int = 0) -> None:
        self.features = features
        self.threads = threads
        self.m = check_int(m, "m", low=1)
        self.threshold = check_float(threshold, "threshold", low=0.0, high=1.0, low_open=True)
        self.refresh = check_int(refresh, "refresh", low=1)
        self.remember = bool(remember)
        self.cycles = check_int(cycles, "cycles", low=0)
        loops = [loops_of([corpus], self.m, self.cycles)] if self.cycles else []
        self.distinct = DistinctSentences([corpus, *loops], np.arange(1, self.m + 1))
        self.tokens, self.lengths, self.corpus = self.distinct.tokens, self.distinct.lengths, self.distinct.corpus
        self._training_keys = set(_keys(self.tokens, self.lengths))
        self.age = 0
        self.log_z = np.zeros(0)
        self.found_tokens = np.zeros((0, self.m), dtype=np.int64)
        self.found_lengths = np.zeros(0, dtype=np.int64)
        self._choose(np.zeros(0, dtype=np.int64))

    def _choose(self, chosen: np.ndarray) -> None:
        """Make ``chosen`` (indices of the distinct training sentences) and the found sentences the known set,
        flattened once for its scoring."""
        self.chosen = chosen
        self._set_tokens = np.concatenate([self.tokens[chosen], self.found_tokens])
        self._set_lengths = np.concatenate([self.lengths[chosen], self.found_lengths])
        self._chosen_corpus = _flat(self._set_tokens, self._set_lengths)
        self._found_keys = set(_keys(self.found_tokens, self.found_lengths))
        self._hits: tuple[np.ndarray, np.ndarray] | None = None  # found on demand (hits), kept until the set changes
        self._summed = self.features.feature_hits(self._chosen_corpus, sum_order=True)  # the set's scores, at each draw

    def __len__(self) -> int:
        """Distinct training sentences that can be known."""
        return int(self.lengths.size)

    def _heavy(self, corpus: EncodedCorpus, lengths: np.ndarray, lam) -> np.ndarray:
        """Which sentences of ``corpus`` (of ``lengths``) hold at least ``threshold`` of the last ``Z-hat_j``."""
        if lengths.size == 0:
            return np.zeros(0, dtype=bool)
        return self.features.scores(corpus, lam, self.threads) - self.log_z[lengths - 1] >= np.log(self.threshold)

    def before_draw(self, lam) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """The known set for the next draw, ``(tokens, lengths, lambda . f(x))`` (None while empty), re-chosen
        every ``refresh`` draws once a draw's ``Z-hat_j`` is known (:meth:`after_draw`); found sentences that have
        fallen below ``threshold`` are forgotten then."""
        if self.age % self.refresh == 0 and self.log_z.size:
            keep = self._heavy(_flat(self.found_tokens, self.found_lengths), self.found_lengths, lam)
            self.found_tokens, self.found_lengths = self.found_tokens[keep], self.found_lengths[keep]
            self._choose(np.flatnonzero(self._heavy(self.corpus, self.lengths, lam)))
        self.age += 1
        if self._set_lengths.size == 0:
            return None
        # the scorer's sums bit for bit from the kept firings, without its look-ups
        return self._set_tokens, self._set_lengths, self.features.hit_scores(self._summed, lam, self._set_lengths.size)

    def hits(self) -> tuple[np.ndarray, np.ndarray]:
        """``(sentence, feature)`` of every firing of a feature in the known set that :meth:`before_draw` returned
        (:meth:`SentenceFeatures.feature_hits`; sentence indices into its ``tokens``).  Found once per choice of the
        set (every ``refresh`` draws) and kept, a found sentence's added when it joins: the batch's feature sum and
        its sentence-move bound read them at every draw, and finding them there, twice, took a third of a
        full-set training iteration on fortunes (experiments/trf_lm/methods.md, "Where a full-set iteration's time
        goes")."""
        if self._hits is None:
            self._hits = self.features.feature_hits(self._chosen_corpus)
        return self._hits

    def after_draw(self, log_z: np.ndarray, lam=None, draws: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        """Keep the draw's ``log Z-hat_j`` (``j = 1..m``) for the next choice; with ``remember``, the drawn
        sentences ``draws = (tokens (K, >= length), lengths (K,))`` outside the training text whose share of that
        ``Z-hat_j`` under ``lam`` is at least ``threshold`` join the set at once (each once)."""
        log_z = np.asarray(log_z, dtype=np.float64)
        if log_z.shape != (self.m,):
            raise ValueError(f"log_z must have {self.m} entries, got shape {log_z.shape}")
        self.log_z = log_z.copy()
        if not self.remember or draws is None:
            return
        tokens, lengths = np.asarray(draws[0], dtype=np.int64), np.asarray(draws[1], dtype=np.int64)
        inside = (lengths >= 1) & (lengths <= self.m)
        tokens, lengths = tokens[inside, :self.m], lengths[inside]
        tokens = np.where(np.arange(tokens.shape[1])[None, :] < lengths[:, None], tokens, 0)
        heavy = np.flatnonzero(self._heavy(_flat(tokens, lengths), lengths, lam))
        new = []
        for i, key in zip(heavy.tolist(), _keys(tokens[heavy], lengths[heavy])):
            if key not in self._training_keys and key not in self._found_keys:
                self._found_keys.add(key)
                new.append(i)
        if new:
            padded = np.zeros((len(new), self.m), dtype=np.int64)
            padded[:, :tokens.shape[1]] = tokens[new]
            self.found_tokens = np.concatenate([self.found_tokens, padded])
            self.found_lengths = np.concatenate([self.found_lengths, lengths[new]])
            self._join(padded, lengths[new])

    def _join(self, tokens: np.ndarray, lengths: np.ndarray) -> None:
        """Append found sentences (already in ``found_tokens`` and the found keys) to the set, and their firings to
        the kept ones (a trained model's draws find one every few draws; the set's order, chosen then found, is the
        one :meth:`_choose` gives)."""
        size = self._set_lengths.size
        self._set_tokens = np.concatenate([self._set_tokens, tokens])
        self._set_lengths = np.concatenate([self._set_lengths, lengths])
        self._chosen_corpus = _flat(self._set_tokens, self._set_lengths)
        joined = _flat(tokens, lengths)
        if self._hits is not None:
            self._hits = _append_hits(self._hits, self.features.feature_hits(joined), size)
        self._summed = _append_hits(self._summed, self.features.feature_hits(joined, sum_order=True), size)

    def get_state(self) -> dict[str, np.ndarray]:
        """The set, the draws since the last choice and the last ``log Z-hat_j``, for a checkpoint."""
        return {"known_chosen": self.chosen.copy(), "known_age": np.array(self.age), "known_log_z": self.log_z.copy(),
                "known_found_tokens": self.found_tokens.copy(), "known_found_lengths": self.found_lengths.copy(),
                "known_cycles": np.array(self.cycles)}

    def set_state(self, state: dict[str, np.ndarray]) -> None:
        """Restore :meth:`get_state`'s output (a checkpoint without it restarts the set empty; one from before the
        loops were known counts as ``cycles=0``).  The set indexes the candidates, so ``cycles`` must be the same."""
        saved = int(state.get("known_cycles", 0)) if "known_chosen" in state else self.cycles
        if saved != self.cycles:
            raise ValueError(f"the checkpoint's known sentences hold the loops of cycles of up to {saved} words, this "
                             f"run's of up to {self.cycles} (--smc-cycles): resume with --smc-cycles {saved}")
        chosen = np.asarray(state.get("known_chosen", np.zeros(0)), dtype=np.int64).copy()
        if chosen.size and (chosen.min() < 0 or chosen.max() >= len(self)):
            raise ValueError(f"known_chosen must index the {len(self)} distinct training sentences")
        found = np.asarray(state.get("known_found_tokens", np.zeros((0, self.m))), dtype=np.int64)
        found_lengths = np.asarray(state.get("known_found_lengths", np.zeros(0)), dtype=np.int64)
        if found.ndim != 2 or found.shape[1] != self.m or found_lengths.shape != (found.shape[0],):
            raise ValueError(f"known_found_tokens must be (n, {self.m}) with n known_found_lengths")
        self.found_tokens, self.found_lengths = found.copy(), found_lengths.copy()
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
    neighbours : Neighbours or None
        Whose class neighbours joined (:meth:`with_neighbours`; None: none were looked for).
    """

    def __init__(self, corpora: Iterable[EncodedCorpus], lengths) -> None:
        self.wanted = np.unique(np.asarray(lengths, dtype=np.int64))
        width = int(self.wanted.max()) if self.wanted.size else 0
        # one int32 row per sentence, its length and then its words (int32: half the memory of the duplicates' sort)
        rows = [np.zeros((0, width + 1), dtype=np.int32)]
        for corpus in corpora:
            at = np.flatnonzero(np.isin(corpus.lengths, self.wanted))
            size = corpus.lengths[at].astype(np.int64)
            within = np.arange(int(size.sum())) - np.repeat(np.cumsum(size) - size, size)  # position in its sentence
            block = np.zeros((at.size, width + 1), dtype=np.int32)
            block[:, 0] = size
            words = corpus.tokens[np.repeat(corpus.offsets[at], size) + within]
            block[np.repeat(np.arange(at.size), size), 1 + within] = words
            rows.append(block)
        keyed = rows[-1] if len(rows) == 2 else np.concatenate(rows)
        del rows
        _, first = np.unique(keyed, axis=0, return_index=True)
        first = np.sort(first)
        self.tokens = keyed[first, 1:].astype(np.int64)
        self.lengths = keyed[first, 0].astype(np.int64)
        self.corpus = _flat(self.tokens, self.lengths)
        self.neighbours: Neighbours | None = None

    def __len__(self) -> int:
        """Distinct sentences kept."""
        return int(self.lengths.size)

    def floor(self, features: SentenceFeatures, lam) -> LengthFloor:
        """The exact lower bound of ``log Z_j`` at each wanted length (in increasing order) that these sentences give
        under ``features`` with weights ``lam``."""
        return self.floor_of(features.scores(self.corpus, lam) if len(self) else np.zeros(0))

    def floor_of(self, scores: np.ndarray) -> LengthFloor:
        """:meth:`floor` from the sentences' ``scores`` (``lambda . f(x)`` of each, in order)."""
        k = np.searchsorted(self.wanted, self.lengths)
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

    def with_neighbours(self, features: SentenceFeatures, lam, share: float = NEIGHBOUR_SHARE,
                        limit: int = NEIGHBOUR_LIMIT) -> "DistinctSentences":
        """These sentences and the class neighbours of the heavy ones: every sentence that differs from one holding
        at least ``share`` of its length's floor (:meth:`floor`) in one word, replaced by a word of the same class
        (``features.word_class``).  The heavy sentences are taken heaviest share first while their neighbours number
        at most ``limit`` rows in all (duplicates counted); the result's :attr:`neighbours` says how many were.

        A model's class n-grams and skips lift a pattern, not one sentence: on fortunes seed 3's full-set model the
        neighbours of the test text's 1,694 distinct sentences raise its floor by up to 3.08 nats (length 10; 61,073
        sentences in all, about a second).  Each is scored exactly, so the floor stays exact; its sentences are no
        longer all in the texts given.
        """
        share = check_float(share, "share", low=0.0, high=1.0, low_open=True)
        scores = features.scores(self.corpus, lam) if len(self) else np.zeros(0)
        floor = self.floor_of(scores)
        k = np.searchsorted(self.wanted, self.lengths)
        limit = check_int(limit, "limit", low=0)
        gap = scores - floor.log_z[k]
        heavy = np.flatnonzero(gap >= np.log(share))
        heavy = heavy[np.argsort(-gap[heavy], kind="stable")]
        _, start = features.class_members()
        size = (start[1:] - start[:-1])[features.word_class[self.tokens[heavy]]]
        rows = np.where(np.arange(self.tokens.shape[1])[None, :] < self.lengths[heavy][:, None], size, 0).sum(axis=1)
        taken = heavy[np.cumsum(rows) <= limit]  # a prefix: the running count only grows
        wider = DistinctSentences([self.corpus, _flat(*class_neighbours(self.tokens[taken], self.lengths[taken],
                                                                          features))], self.wanted)
        wider.neighbours = Neighbours(int(heavy.size), int(taken.size), int(rows.sum()), limit)
        return wider

    def text(self, index: int, words: list[str]) -> str:
        """Sentence ``index`` as words joined by spaces."""
        return " ".join(words[t] for t in self.tokens[index, :self.lengths[index]])


class Neighbours(NamedTuple):
    """Whose class neighbours joined some known sentences (:meth:`DistinctSentences.with_neighbours`).

    Attributes
    ----------
    heavy : int
        Known sentences holding at least the share asked for of their length's floor.
    taken : int
        The heaviest of them whose neighbours joined (all ``heavy`` unless their rows would pass ``limit``).
    rows : int
        The neighbour rows all ``heavy`` sentences have (duplicates counted).
    limit : int
        The most rows allowed.
    """

    heavy: int
    taken: int
    rows: int
    limit: int

    @property
    def cut(self) -> bool:
        """Whether some heavy sentences' neighbours were left out for the limit."""
        return self.taken < self.heavy


def class_neighbours(tokens: np.ndarray, lengths: np.ndarray, features: SentenceFeatures) -> tuple[np.ndarray, np.ndarray]:
    """Every sentence that differs from a row of ``tokens`` (zero-padded, of ``lengths``) in one position, whose
    word is replaced by a word of its class (each sentence itself is among them; duplicates are not removed).

    Returns
    -------
    (tokens, lengths) : ndarray of int64, shapes (n, tokens.shape[1]) and (n,)
    """
    tokens, lengths = np.asarray(tokens, dtype=np.int64), np.asarray(lengths, dtype=np.int64)
    members, start = features.class_members()
    width = tokens.shape[1] if tokens.ndim == 2 else 0
    row, position = np.nonzero(np.arange(width)[None, :] < lengths[:, None])
    klass = features.word_class[tokens[row, position]]
    size = start[klass + 1] - start[klass]
    pick = np.repeat(np.arange(row.size), size)
    within = np.arange(pick.size) - np.repeat(np.cumsum(size) - size, size)
    out = tokens[row[pick]].copy()
    out[np.arange(pick.size), position[pick]] = members[start[klass[pick]] + within]
    return out, lengths[row[pick]]


def _keys(tokens: np.ndarray, lengths: np.ndarray) -> list[bytes]:
    """One hashable key per sentence ``tokens[i, :lengths[i]]``."""
    return [np.asarray(row[:j], dtype=np.int64).tobytes() for row, j in zip(tokens, lengths.tolist())]


def _flat(tokens: np.ndarray, lengths: np.ndarray) -> EncodedCorpus:
    """Zero-padded rows ``tokens`` of sentences of ``lengths`` as an :class:`EncodedCorpus`."""
    offsets = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return EncodedCorpus(tokens[np.arange(tokens.shape[1])[None, :] < lengths[:, None]].astype(np.int32), offsets)


def _append_hits(hits: tuple[np.ndarray, np.ndarray], more: tuple[np.ndarray, np.ndarray],
                 size: int) -> tuple[np.ndarray, np.ndarray]:
    """The firings ``hits`` of a set of ``size`` sentences followed by those of sentences appended to it."""
    return np.concatenate([hits[0], more[0] + size]), np.concatenate([hits[1], more[1]])
