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

import numpy as np

from samplers.validation import check_float, check_int
from trf.lm.corpus import EncodedCorpus
from trf.lm.features import SentenceFeatures

__all__ = ["KnownSentences", "KNOWN_REFRESH"]

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
        lengths = corpus.lengths
        short = np.flatnonzero((lengths >= 1) & (lengths <= self.m))
        rows = np.zeros((short.size, self.m), dtype=np.int64)
        for r, i in enumerate(short.tolist()):
            rows[r, :lengths[i]] = corpus[i]
        keyed = np.concatenate([lengths[short, None].astype(np.int64), rows], axis=1)
        _, first = np.unique(keyed, axis=0, return_index=True)
        first = np.sort(first)
        self.tokens = rows[first]
        self.lengths = lengths[short][first].astype(np.int64)
        self.corpus = _flat(self.tokens, self.lengths)
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


def _flat(tokens: np.ndarray, lengths: np.ndarray) -> EncodedCorpus:
    """Zero-padded rows ``tokens`` of sentences of ``lengths`` as an :class:`EncodedCorpus`."""
    offsets = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return EncodedCorpus(tokens[np.arange(tokens.shape[1])[None, :] < lengths[:, None]].astype(np.int32), offsets)
