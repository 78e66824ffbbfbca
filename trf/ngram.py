"""Counting-based n-gram language models: interpolated modified Kneser-Ney and Witten-Bell.

Both models work over integer token sequences (sentences of ids in ``[0, vocab_size)``) and predict
the ``vocab_size + 1`` symbols "words plus end-of-sentence": every sentence ``w_1 .. w_L`` is scored
as ``p(w_1 | <s>) ... p(w_L | ...) p(</s> | ...)``, so a sentence contributes ``L + 1`` predicted
tokens (one end-of-sentence per sentence; the same convention as the TRF language models in
``trf.lm``).  Histories are truncated at the sentence start: a single ``<s>`` is context only and
is never predicted.

Counting is done in NumPy.  Every n-gram "window" of length ``k`` gets an integer id at level
``k``; the key of a window is ``id(prefix) * B + last_token`` with ``B = vocab_size + 2`` (words,
``</s>``, ``<s>``), so keys fit in int64 for any corpus size, and lookups are binary searches
(``np.searchsorted``) over sorted keys.

Models
------
* :class:`KneserNey` -- interpolated modified Kneser-Ney (Chen & Goodman 1999, Eq. 17 and 26 of
  their report): three discounts per order estimated from counts-of-counts, continuation counts
  ``N1+(. g)`` below the highest order (raw counts for n-grams that start with ``<s>``), and a
  uniform distribution over words plus ``</s>`` below the unigram.
* :class:`WittenBell` -- interpolated Witten-Bell: ``p(w|h) = (c(h,w) + T(h) p(w|h')) /
  (c(h) + T(h))`` with ``T(h)`` the number of distinct successors of ``h``.

Both are exactly normalised over the ``vocab_size + 1`` predicted symbols for every history
(seen or not); ``tests/trf_lm/test_trf_lm_ngram.py`` checks it.  A character trigram baseline is
``WittenBell(order=3).fit(words_as_char_ids, n_chars)``.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence, TypeVar

import numpy as np

from samplers.validation import as_int_array, check_int

__all__ = ["NGramModel", "KneserNey", "WittenBell", "DiscountFallbackWarning", "perplexity", "ppl_report"]

NGRAM_ORDERS = (2, 3, 4, 5)
KIND = "ngram"  # the kind field of n-gram model files (trf.io)


Sentences = Iterable[Sequence[int] | np.ndarray]
"""Token-id sentences: any iterable of int sequences or 1-d int arrays (a ``trf.lm.corpus.EncodedCorpus`` too)."""
_Model = TypeVar("_Model", bound="NGramModel")  # fit returns the subclass it is called on


class DiscountFallbackWarning(UserWarning):
    """Kneser-Ney discounts of some order could not be estimated from the corpus and fell back to ``r / 2``."""


@dataclass
class _Level:
    """Counts of all windows of one length ``k`` (``k >= 2``).

    ``keys`` are sorted ``prefix_id * B + last_token``; ``weight`` is the count the model uses
    (raw or continuation count); the per-context arrays are indexed by the level ``k - 1`` id of
    the prefix.
    """

    keys: np.ndarray           # int64 (n_k,)
    weight: np.ndarray         # float64 (n_k,), count used for this level (KN: adjusted)
    ctx_total: np.ndarray      # float64 (n_{k-1},), sum of weights with that prefix
    ctx_backoff: np.ndarray    # float64 (n_{k-1},), mass numerator given to the lower order


@dataclass
class _Fitted:
    """A fitted model: the vocabulary size, the unigram law and the levels ``k = 2 .. order`` (keyed by ``k``)."""

    vocab_size: int
    unigram: np.ndarray        # float64 (V+1,), p_1 over words + </s>
    levels: dict[int, _Level]


def _pad_corpus(sentences: Sentences, vocab_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate ``<s> w_1 .. w_L </s>`` for every sentence; return tokens and in-sentence offsets."""
    eos, bos = vocab_size, vocab_size + 1
    if hasattr(sentences, "tokens") and hasattr(sentences, "offsets"):  # trf.lm.corpus.EncodedCorpus
        return _pad_flat(sentences.tokens, sentences.offsets, vocab_size)
    tokens: list[np.ndarray] = []
    n_sent = 0
    for index, sentence in enumerate(sentences):
        arr = as_int_array(sentence, f"sentences[{index}]", ndim=1, low=0, high=vocab_size)
        tokens.append(np.concatenate(([bos], arr, [eos])))
        n_sent += 1
    if n_sent == 0:
        raise ValueError("sentences must contain at least one sentence, got an empty corpus")
    seq = np.concatenate(tokens).astype(np.int64)
    lengths = np.fromiter((t.size for t in tokens), dtype=np.int64, count=len(tokens))
    starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
    return seq, np.arange(seq.size, dtype=np.int64) - starts


def _pad_flat(flat_tokens: np.ndarray, offsets: np.ndarray, vocab_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised :func:`_pad_corpus` for sentences stored as flat tokens plus offsets."""
    flat = as_int_array(flat_tokens, "sentences.tokens", ndim=1, low=0, high=vocab_size)
    offsets = as_int_array(offsets, "sentences.offsets", ndim=1, low=0, high=flat.size + 1)
    n_sent = offsets.size - 1
    if n_sent < 1:
        raise ValueError("sentences must contain at least one sentence, got an empty corpus")
    lengths = np.diff(offsets) + 2
    if np.any(lengths < 2):
        raise ValueError("sentences.offsets must be non-decreasing")
    seq = np.empty(int(lengths.sum()), dtype=np.int64)
    starts = np.cumsum(lengths) - lengths
    pos = np.arange(seq.size, dtype=np.int64) - np.repeat(starts, lengths)
    seq[starts] = vocab_size + 1
    seq[starts + lengths - 1] = vocab_size
    inner = (pos > 0) & (pos < np.repeat(lengths, lengths) - 1)
    seq[inner] = flat[offsets[0]:offsets[-1]]
    return seq, pos


class NGramModel:
    """Base class: window counting, lookups and the interpolation recursion.

    Subclasses choose the count each level uses (:meth:`_level_weights`) and the mass given to the
    lower order (:meth:`_backoff_numerators`).

    Parameters
    ----------
    order : int
        n-gram order, 2 to 5.
    """

    def __init__(self, order: int = 3) -> None:
        self.order = check_int(order, "order", low=NGRAM_ORDERS[0], high=NGRAM_ORDERS[-1])
        self._fitted: _Fitted | None = None

    @property
    def vocab_size(self) -> int | None:
        """Number of word ids of the fitted model (the model predicts ``vocab_size + 1`` symbols); None before
        :meth:`fit`."""
        return None if self._fitted is None else self._fitted.vocab_size

    # ------------------------------------------------------------------ fitting
    def fit(self: _Model, sentences: Sentences, vocab_size: int) -> _Model:
        """Count n-grams of a training corpus.

        Parameters
        ----------
        sentences : iterable of int sequences
            Token ids in ``[0, vocab_size)``; ``</s>`` is added to each sentence.
        vocab_size : int
            Number of word ids (the model predicts ``vocab_size + 1`` symbols).

        Returns
        -------
        self
        """
        vocab_size = check_int(vocab_size, "vocab_size", low=1)
        seq, pos = _pad_corpus(sentences, vocab_size)
        base = vocab_size + 2
        n = self.order
        # per window length k: ids[k][i] is the level-k id of the window ending at i (-1: none), keys[k] the
        # sorted window keys, suffix[k][j] the level-(k-1) id of window j's suffix, raw[k] the window counts and
        # starts_bos[k] whether window j starts with <s>; level 1 is the tokens themselves
        ids = {1: seq}
        keys: dict[int, np.ndarray] = {}
        suffix: dict[int, np.ndarray] = {}
        raw = {1: np.bincount(seq[pos >= 1], minlength=base).astype(np.float64)}
        starts_bos = {1: np.arange(base) == vocab_size + 1}
        for k in range(2, n + 1):
            valid = np.flatnonzero(pos >= k - 1)
            key = ids[k - 1][valid - 1] * base + seq[valid]
            uniq, first, inverse = np.unique(key, return_index=True, return_inverse=True)
            level_ids = np.full(seq.size, -1, dtype=np.int64)
            level_ids[valid] = inverse
            ids[k] = level_ids
            keys[k] = uniq
            suffix[k] = ids[k - 1][valid[first]]
            raw[k] = np.bincount(inverse, minlength=uniq.size).astype(np.float64)
            starts_bos[k] = starts_bos[k - 1][uniq // base]
        # continuation counts N1+(. g) of the windows of length k < n (none at the highest order)
        continuation = {k: np.bincount(suffix[k + 1], minlength=raw[k].size).astype(np.float64) for k in range(1, n)}
        weights = {k: self._level_weights(k, raw[k], continuation.get(k), starts_bos[k]) for k in range(1, n + 1)}
        self._fitted = self._fit_levels(vocab_size, keys, weights)
        return self

    def _fit_levels(self, vocab_size: int, keys: dict[int, np.ndarray], weights: dict[int, np.ndarray]) -> _Fitted:
        """The fitted model from the window keys of levels ``2 .. order`` and the weights of levels ``1 .. order``."""
        V1, base = vocab_size + 1, vocab_size + 2
        w1 = weights[1][:V1]
        total = w1.sum()
        backoff = self._backoff_numerators(1, w1, np.zeros(w1.size, dtype=np.int64), 1)[0]
        unigram = (self._discounted(1, w1) + backoff / V1) / total
        levels = {}
        for k in range(2, self.order + 1):
            prefix = keys[k] // base
            n_ctx = keys[k - 1].size if k > 2 else base
            ctx_total = np.bincount(prefix, weights=weights[k], minlength=n_ctx)
            ctx_backoff = self._backoff_numerators(k, weights[k], prefix, n_ctx)
            levels[k] = _Level(keys[k], self._discounted(k, weights[k]), ctx_total, ctx_backoff)
        return _Fitted(vocab_size, unigram, levels)

    # -------------------------------------------------------------- subclass API
    def _level_weights(self, k: int, raw: np.ndarray, continuation: np.ndarray | None,
                       starts_bos: np.ndarray) -> np.ndarray:  # pragma: no cover
        """The count level ``k`` uses, from its raw counts and continuation counts (None at the highest order)."""
        raise NotImplementedError

    def _discounted(self, k: int, weight: np.ndarray) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def _backoff_numerators(self, k: int, weight: np.ndarray, prefix: np.ndarray,
                            n_ctx: int) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    # ------------------------------------------------------------------ scoring
    def _check_fitted(self) -> _Fitted:
        """The fitted model; a clear error before :meth:`fit`."""
        if self._fitted is None:
            raise ValueError("the n-gram model is not fitted; call fit(sentences, vocab_size) first")
        return self._fitted

    def _lookup(self, k: int, prefix_ids: np.ndarray, tokens: np.ndarray) -> np.ndarray:
        """Level-``k`` ids of windows ``prefix + token`` (``-1`` when unseen or prefix unseen)."""
        fitted = self._check_fitted()
        keys = fitted.levels[k].keys
        key = prefix_ids * (fitted.vocab_size + 2) + tokens
        where = np.searchsorted(keys, key)
        where = np.minimum(where, keys.size - 1)
        found = (prefix_ids >= 0) & (keys[where] == key)
        return np.where(found, where, -1)

    def _interpolate(self, contexts: dict[int, np.ndarray], tokens: np.ndarray) -> np.ndarray:
        """Probabilities of ``tokens`` given per-level context ids: ``contexts[k]`` (``k = 2 .. K``) holds the level
        ``k - 1`` id of each token's last ``k - 1`` history symbols (``-1``: unseen)."""
        fitted = self._check_fitted()
        prob = fitted.unigram[tokens]
        for k in range(2, len(contexts) + 2):
            level = fitted.levels[k]
            ctx = contexts[k]
            window = self._lookup(k, ctx, tokens)
            seen = ctx >= 0
            safe_ctx = np.where(seen, ctx, 0)
            total = level.ctx_total[safe_ctx]
            seen &= total > 0
            discounted = np.where(window >= 0, level.weight[np.maximum(window, 0)], 0.0)
            mixed = (discounted + level.ctx_backoff[safe_ctx] * prob) / np.where(seen, total, 1.0)
            prob = np.where(seen, mixed, prob)
        return prob

    def token_log_probs(self, sentences: Sentences) -> tuple[np.ndarray, np.ndarray]:
        """Natural-log probability of every predicted token (words and one ``</s>`` per sentence).

        Parameters
        ----------
        sentences : iterable of int sequences
            Token ids in ``[0, vocab_size)``.

        Returns
        -------
        log_probs : float64 array (n_tokens,)
        sentence_index : int64 array (n_tokens,)
            Which sentence each token belongs to.
        """
        fitted = self._check_fitted()
        seq, pos = _pad_corpus(sentences, fitted.vocab_size)
        sentence_index = np.cumsum(pos == 0) - 1
        predicted = np.flatnonzero(pos >= 1)
        tokens = seq[predicted]
        # contexts[k][j]: level-(k-1) id of the k-1 tokens before predicted token j.
        history_ids = seq.copy()                   # level-1 ids are the tokens themselves
        contexts = {2: seq[predicted - 1]}
        for k in range(3, self.order + 1):
            nxt = np.full(seq.size, -1, dtype=np.int64)
            ok = np.flatnonzero(pos >= k - 2)
            nxt[ok] = self._lookup(k - 1, history_ids[ok - 1], seq[ok])
            history_ids = nxt
            contexts[k] = history_ids[predicted - 1]
        prob = self._interpolate(contexts, tokens)
        return np.log(prob), sentence_index[predicted]

    def log_prob(self, sentences: Sentences) -> np.ndarray:
        """Natural-log probability of each sentence including its ``</s>``, shape ``(n_sentences,)``."""
        token_lp, sentence_index = self.token_log_probs(sentences)
        return np.bincount(sentence_index, weights=token_lp)

    def next_log_probs(self, history: Sequence[int] | np.ndarray) -> np.ndarray:
        """Log-probabilities of all ``vocab_size + 1`` next symbols (index ``vocab_size`` is ``</s>``).

        ``history`` holds word ids after ``<s>``; only its last ``order - 1`` symbols matter.
        """
        vocab_size = self._check_fitted().vocab_size
        hist = as_int_array(history, "history", ndim=1, low=0, high=vocab_size)
        padded = np.concatenate((np.array([vocab_size + 1], dtype=np.int64), hist))[-(self.order - 1):]
        tokens = np.arange(vocab_size + 1, dtype=np.int64)
        contexts = {}
        prefix = np.int64(-1)
        for k in range(2, self.order + 1):
            if k - 1 > padded.size:
                contexts[k] = np.full(tokens.size, -1, dtype=np.int64)
                continue
            window = padded[padded.size - (k - 1):]
            prefix = np.int64(window[0])
            for j in range(1, window.size):
                prefix = self._lookup(j + 1, np.array([prefix]), np.array([window[j]]))[0]
            contexts[k] = np.full(tokens.size, prefix, dtype=np.int64)
        return np.log(self._interpolate(contexts, tokens))

    def n_ngrams(self) -> dict[int, int]:
        """Number of stored n-grams per order (order 1: words plus ``</s>``)."""
        fitted = self._check_fitted()
        return {1: fitted.vocab_size + 1, **{k: int(level.keys.size) for k, level in fitted.levels.items()}}

    # ------------------------------------------------------------- persistence
    def to_arrays(self) -> tuple[dict[str, np.ndarray], dict[str, object]]:
        """Flat arrays and metadata describing the fitted model (for ``trf.io``-style files)."""
        fitted = self._check_fitted()
        arrays = {"unigram": fitted.unigram}
        for k, level in fitted.levels.items():
            arrays.update({f"keys{k}": level.keys, f"weight{k}": level.weight,
                           f"ctx_total{k}": level.ctx_total, f"ctx_backoff{k}": level.ctx_backoff})
        meta: dict[str, object] = {"model": type(self).__name__, "order": self.order, "vocab_size": fitted.vocab_size}
        return arrays, meta

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> NGramModel:
        """Inverse of :meth:`to_arrays`; ``meta['model']`` picks the subclass."""
        classes: dict[str, type[NGramModel]] = {c.__name__: c for c in (KneserNey, WittenBell)}
        name = meta.get("model")
        if name not in classes:
            raise ValueError(f"meta['model'] must be one of {sorted(classes)}, got {name!r}")
        model = classes[name](order=int(meta["order"]))
        levels = {k: _Level(*(np.asarray(arrays[f"{field}{k}"]) for field in
                              ("keys", "weight", "ctx_total", "ctx_backoff"))) for k in range(2, model.order + 1)}
        model._fitted = _Fitted(int(meta["vocab_size"]), np.asarray(arrays["unigram"], dtype=np.float64), levels)
        return model

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the model to ``path`` (``.npz``) atomically."""
        from trf.io import atomic_write_npz

        arrays, meta = self.to_arrays()
        atomic_write_npz(path, arrays, meta, kind=KIND)

    @staticmethod
    def load(path: str | os.PathLike[str]) -> NGramModel:
        """Read a model written by :meth:`save`; clear errors for missing, truncated or foreign files."""
        from trf.io import read_npz

        arrays, meta = read_npz(path, KIND)
        return NGramModel.from_arrays(arrays, meta)


class KneserNey(NGramModel):
    """Interpolated modified Kneser-Ney smoothing (Chen & Goodman 1999).

    ``p_k(w|h) = (a(hw) - D_k(a(hw)))^+ / S(h) + gamma(h) p_{k-1}(w|h')`` with
    ``gamma(h) = (D_k1 N1(h.) + D_k2 N2(h.) + D_k3+ N3+(h.)) / S(h)``; ``a`` is the raw count at
    the highest order and for n-grams starting with ``<s>``, the continuation count ``N1+(. g)``
    otherwise.  Discounts per order: ``Y = n1/(n1 + 2 n2)``, ``D_r = r - (r+1) Y n_{r+1}/n_r``,
    falling back to ``D_r = r / 2`` where counts-of-counts are degenerate or the estimate leaves ``(0, r]``
    (``D_r <= 0`` would leave some contexts no back-off mass: zero probabilities on small corpora), with a
    :class:`DiscountFallbackWarning` naming the order and the discounts used (never an error).

    Examples
    --------
    >>> lm = KneserNey(order=3).fit([[0, 1, 2], [0, 2]], vocab_size=3)
    >>> float(np.exp(lm.next_log_probs([0])).sum())  # doctest: +ELLIPSIS
    1.0...
    """

    def __init__(self, order: int = 5) -> None:
        super().__init__(order)
        self.discounts: dict[int, np.ndarray] = {}

    def fit(self, sentences: Sentences, vocab_size: int) -> KneserNey:
        """Count n-grams of ``sentences`` (ids below ``vocab_size``) and estimate the modified KN discounts."""
        self.discounts = {}
        return super().fit(sentences, vocab_size)

    fit.__doc__ = NGramModel.fit.__doc__

    def _level_weights(self, k: int, raw: np.ndarray, continuation: np.ndarray | None,
                       starts_bos: np.ndarray) -> np.ndarray:
        if continuation is None:  # the highest order
            return raw
        return np.where(starts_bos, raw, continuation)

    def _estimate_discounts(self, k: int, weight: np.ndarray) -> np.ndarray:
        """Chen & Goodman's discounts ``D_1, D_2, D_3+`` of order ``k`` from its counts-of-counts ``n_1 .. n_4``.

        Where the estimate does not exist (``n_1`` or ``n_2`` zero, ``n_r`` zero for a used ``D_r``: KenLM's
        ``BadDiscountException``) or leaves ``(0, r]``, ``D_r`` falls back to ``r / 2`` with a
        :class:`DiscountFallbackWarning` naming the order, the counts-of-counts and the discounts used.
        """
        counts = np.rint(weight).astype(np.int64)
        n = np.bincount(counts[(counts >= 1) & (counts <= 4)], minlength=5).astype(np.float64)
        default = np.array([0.5, 1.0, 1.5])
        discounts = np.full(3, np.nan)
        if n[1] > 0 and n[2] > 0:
            y = n[1] / (n[1] + 2 * n[2])
            for r in (1, 2, 3):
                if n[r] > 0:
                    discounts[r - 1] = r - (r + 1) * y * n[r + 1] / n[r]
        # On small corpora the estimate can leave (0, r]: D_r <= 0 would give a context whose n-grams all
        # have count r no mass to back off with, so an unseen word there gets probability 0 (an infinite
        # perplexity).  Such an estimate falls back to the default r / 2.
        bad = ~((discounts > 0) & (discounts <= np.array([1.0, 2.0, 3.0])))
        discounts[bad] = default[bad]
        used = np.array([n[1] > 0, n[2] > 0, np.any(counts >= 3)])
        if np.any(bad & used):
            names = ", ".join(f"D{r}{'+' if r == 3 else ''}={discounts[r - 1]:g}" for r in (1, 2, 3) if bad[r - 1])
            warnings.warn(f"KneserNey order {k}: counts-of-counts n1..n4 = {n[1:].astype(int).tolist()} give no valid "
                          f"discount estimate (too few n-grams seen 1-4 times); using the stated fallback {names} "
                          f"(all discounts of order {k}: {np.round(discounts, 6).tolist()})",
                          DiscountFallbackWarning, stacklevel=7)
        return discounts

    def _discount_of(self, k: int, weight: np.ndarray) -> np.ndarray:
        if k not in self.discounts:
            self.discounts[k] = self._estimate_discounts(k, weight)
        d = self.discounts[k]
        return np.where(weight <= 0, 0.0, d[np.clip(np.rint(weight).astype(np.int64), 1, 3) - 1])

    def _discounted(self, k: int, weight: np.ndarray) -> np.ndarray:
        return np.maximum(weight - self._discount_of(k, weight), 0.0)

    def _backoff_numerators(self, k: int, weight: np.ndarray, prefix: np.ndarray, n_ctx: int) -> np.ndarray:
        return np.bincount(prefix, weights=self._discount_of(k, weight), minlength=n_ctx)

    def to_arrays(self) -> tuple[dict[str, np.ndarray], dict[str, object]]:
        """Arrays and metadata for :func:`trf.io` storage, the discounts included."""
        arrays, meta = super().to_arrays()
        meta["discounts"] = {str(k): v.tolist() for k, v in self.discounts.items()}
        return arrays, meta


class WittenBell(NGramModel):
    """Interpolated Witten-Bell smoothing.

    ``p_k(w|h) = (c(hw) + T(h) p_{k-1}(w|h')) / (c(h) + T(h))`` with ``T(h)`` the number of
    distinct symbols seen after ``h``; below the unigram, a uniform law over words plus ``</s>``.
    ``WittenBell(order=3)`` over character ids is the character-trigram baseline of the TRF paper.

    Examples
    --------
    >>> lm = WittenBell(order=2).fit([[0, 1], [1]], vocab_size=2)
    >>> float(np.exp(lm.next_log_probs([1])).sum())  # doctest: +ELLIPSIS
    1.0...
    """

    def __init__(self, order: int = 3) -> None:
        super().__init__(order)

    def _level_weights(self, k: int, raw: np.ndarray, continuation: np.ndarray | None,
                       starts_bos: np.ndarray) -> np.ndarray:
        return raw

    def _discounted(self, k: int, weight: np.ndarray) -> np.ndarray:
        return weight

    def _backoff_numerators(self, k: int, weight: np.ndarray, prefix: np.ndarray, n_ctx: int) -> np.ndarray:
        return np.bincount(prefix, weights=(weight > 0).astype(np.float64), minlength=n_ctx)

    def _fit_levels(self, vocab_size: int, keys: dict[int, np.ndarray], weights: dict[int, np.ndarray]) -> _Fitted:
        # c(h) + T(h) is the normaliser: fold T(h) into the stored context totals.
        fitted = super()._fit_levels(vocab_size, keys, weights)
        V1 = vocab_size + 1
        w1 = weights[1][:V1]
        t1 = float(np.count_nonzero(w1))
        fitted.unigram = (w1 + t1 / V1) / (w1.sum() + t1)
        for level in fitted.levels.values():
            level.ctx_total = level.ctx_total + level.ctx_backoff
        return fitted


def perplexity(log_probs: np.ndarray, n_tokens: int) -> float:
    """Per-token perplexity ``exp(-sum(log p) / n_tokens)``.

    ``n_tokens`` counts words plus one end-of-sentence per sentence (the convention of this package).
    """
    n_tokens = check_int(n_tokens, "n_tokens", low=1)
    return float(np.exp(-np.sum(log_probs) / n_tokens))


def ppl_report(name: str, *, sentences: int, words: int, oovs: int, zeroprobs: int, log10_prob: float,
               unk_words: int | None = None) -> tuple[str, dict]:
    """SRILM's ``ngram -ppl`` summary lines, with the conventions spelled out, and their numbers.

    ``ppl = 10 ** (-logprob / (words - oovs - zeroprobs + sentences))`` counts one ``</s>`` per sentence;
    ``ppl1`` leaves ``</s>`` out.  ``oovs`` are words *skipped* (not in the vocabulary of a model without
    ``<unk>``): neither scored nor counted; ``zeroprobs`` are tokens of probability 0, likewise left out.

    Parameters
    ----------
    name : str
        The scored file, as SRILM prints it (``file NAME: ...``).
    sentences, words, oovs, zeroprobs : int
        Counts; ``words`` excludes ``</s>``.
    log10_prob : float
        Total base-10 log-probability of the scored tokens.
    unk_words : int, optional
        Words outside the vocabulary scored as ``<unk>`` (stated in the conventions line).

    Returns
    -------
    text : str
        Three lines: SRILM's two and a conventions line.
    numbers : dict
        ``ppl``, ``ppl1`` (None without a scored word), ``log10_prob``, ``sentences``, ``words``, ``oovs``, ``zeroprobs``.
    """
    scored_words = words - oovs - zeroprobs
    if scored_words + sentences <= 0:
        raise ValueError(f"{name}: no scored token (sentences {sentences}, words {words}, OOVs {oovs}, "
                         f"zeroprobs {zeroprobs})")
    ppl = float(10.0 ** (-log10_prob / (scored_words + sentences)))
    ppl1 = float(10.0 ** (-log10_prob / scored_words)) if scored_words > 0 else None
    unk = ("" if unk_words is None else
           f"; {unk_words} words outside the vocabulary scored as <unk> (counted in ppl)")
    text = (f"file {name}: {sentences} sentences, {words} words, {oovs} OOVs\n"
            f"{zeroprobs} zeroprobs, logprob= {log10_prob:.6g} ppl= {ppl:.6g} ppl1= {'undefined' if ppl1 is None else f'{ppl1:.6g}'}\n"
            f"conventions: log10 probabilities; perplexity: ppl counts one </s> per sentence, ppl1 none{unk}; OOVs (words without "
            "probability: outside the vocabulary of a model without <unk>) and zeroprobs are skipped, "
            "not counted")
    numbers = {"ppl": ppl, "ppl1": ppl1, "log10_prob": float(log10_prob), "sentences": sentences, "words": words,
               "oovs": oovs, "zeroprobs": zeroprobs}
    return text, numbers
