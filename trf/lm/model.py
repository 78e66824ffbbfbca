"""The sentence TRF language model: ``p(j, x^j) = pi_j exp(lambda . f(x^j)) / Z_j(lambda)`` (Eq. 2).

``Z_j`` comes from the estimated log ratios ``zeta_j = log Z_j / Z_1`` (Sec. 4) and the exact
``log Z_1`` (a sum over the vocabulary), so ``log p(j, x) = log pi_j + lambda . f(x) - zeta_j - log Z_1``.
Perplexity counts every word plus one end-of-sentence per sentence (the same convention as
:mod:`trf.ngram`), so the two are comparable.  Without pooling, sentences longer than ``m`` are
not modelled and raise ``ValueError``; a model trained with the pooled sub-model of Sec. 5.4 (Eq. 27,
``pooled=True``) scores every sentence longer than ``m`` with the one ``pi_{m+}`` and ``zeta_{m+}``
(its normaliser was estimated over the sampled lengths ``m+1, m+2``, as in the paper).

:meth:`SentenceTRF.log_prob` and :meth:`SentenceTRF.perplexity` use AugSA's estimated ``zeta``, unchecked; a
``zeta_j`` below the true ``log Z_j / Z_1`` gives ``log p > 0``, which they refuse (:func:`describe_excess` names
the lengths).  Normalisers checked from both sides: :func:`trf.lm.check.checked_perplexity` (``mcsa trf eval``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from samplers._kernels import logsumexp_1d
from samplers.validation import as_float_array, check_distribution
from trf.io import atomic_write_npz, read_npz
from trf.lm.corpus import EncodedCorpus, Vocabulary
from trf.lm.features import SentenceFeatures

KIND = "trf-lm"
PERPLEXITY_CONVENTION = "per token: words plus one end-of-sentence per sentence; <unk> scored as a word"

__all__ = ["KIND", "SentenceTRF", "smoothed_length_law", "as_corpus", "describe_excess", "unigram_base",
           "unigram_weights"]


def smoothed_length_law(lengths: np.ndarray, m: int, add: float = 0.5) -> np.ndarray:
    """``pi_j = (n_j + add) / (n + add m)`` for ``j = 1..m`` (add-``add`` so unseen lengths keep mass)."""
    n_j = np.bincount(np.asarray(lengths, dtype=np.int64), minlength=m + 1)[1:m + 1].astype(np.float64)
    return (n_j + add) / (n_j.sum() + add * m)


def as_corpus(sentences, vocab: Vocabulary) -> EncodedCorpus:
    """Accept an EncodedCorpus, strings (whitespace tokens) or token lists; map words through ``vocab``."""
    if isinstance(sentences, EncodedCorpus):
        return sentences
    if isinstance(sentences, str):
        raise TypeError("sentences must be a list of sentences, not one string; wrap it in a list")
    encoded = []
    for i, s in enumerate(sentences):
        tokens = s.split() if isinstance(s, str) else list(s)
        if not tokens:
            raise ValueError(f"sentences[{i}] is empty; every sentence needs at least one word")
        if all(isinstance(t, str) for t in tokens):
            encoded.append(vocab.encode(tokens))
        else:
            raise TypeError(f"sentences[{i}] must be a string or a list of word strings")
    if not encoded:
        raise ValueError("sentences is empty")
    return EncodedCorpus.from_sentences(encoded)


def describe_excess(lengths: np.ndarray, log_probs: np.ndarray, shown: int = 8) -> str:
    """The lengths whose sentences get ``log p > 0``, each with the least amount by which its normaliser is too low.

    A discrete sentence has ``p <= 1``, so ``log p(j, x) > 0`` means the ``log Z_j`` behind it is too low by at
    least ``log p(j, x)``: every value at that length is too high by at least the largest one there.

    Parameters
    ----------
    lengths : int array (n,)
        Each sentence's number of words.
    log_probs : float array (n,)
        Each sentence's log-probability (NaN for one left unscored).
    shown : int
        How many lengths to name; the rest are counted.

    Returns
    -------
    str
        E.g. ``"3 (>= 0.52 nats), 5 (>= 3.10 nats)"`` (``" and 2 more"`` beyond ``shown``); empty when no value
        is positive.
    """
    lengths, log_probs = np.asarray(lengths), np.asarray(log_probs, dtype=np.float64)
    positive = np.nan_to_num(log_probs, nan=-np.inf) > 0
    excess = {int(j): float(log_probs[positive & (lengths == j)].max()) for j in np.unique(lengths[positive])}
    named = ", ".join(f"{j} (>= {x:.2f} nats)" for j, x in sorted(excess.items())[:shown])
    return named + (f" and {len(excess) - shown} more" if len(excess) > shown else "")


@dataclass
class SentenceTRF:
    """A trained sentence TRF LM: vocabulary, word classes and features, length law, lambda, zeta."""

    vocab: Vocabulary
    features: SentenceFeatures
    pi: np.ndarray
    lam: np.ndarray
    zeta: np.ndarray
    meta: dict = field(default_factory=dict)
    pooled: bool = False

    def __post_init__(self) -> None:
        self.pi = check_distribution(as_float_array(self.pi, "pi", ndim=1), "pi")
        self.lam = as_float_array(self.lam, "lam", ndim=1)
        self.zeta = as_float_array(self.zeta, "zeta", ndim=1)
        if self.lam.size != self.features.n_features:
            raise ValueError(f"lam must have n_features={self.features.n_features} entries, got {self.lam.size}")
        if self.zeta.size != self.pi.size:
            raise ValueError(f"zeta and pi must both have m entries, got {self.zeta.size} and {self.pi.size}")
        if len(self.vocab) != self.features.n_words:
            raise ValueError("vocab and features disagree on the vocabulary size")
        self._log_z1: float | None = None

    @property
    def m(self) -> int:
        """Longest length with its own sub-model (the pooled ``m+`` comes after it)."""
        return int(self.pi.size) - (1 if self.pooled else 0)

    def dimension(self, lengths: np.ndarray) -> np.ndarray:
        """Sub-model index (1-based) of each length; lengths > m map to the pooled one when pooling."""
        lengths = np.asarray(lengths, dtype=np.int64)
        if self.pooled:
            return np.minimum(lengths, self.m + 1)
        if lengths.max() > self.m:
            raise ValueError(f"sentences longer than m={self.m} words are not modelled (longest here: "
                             f"{lengths.max()}); train with max_length (Sec. 5.4's pooled sub-model) to score them")
        return lengths

    def log_z1(self) -> float:
        """Exact ``log Z_1(lambda)``: log-sum-exp of ``lambda . f`` over all one-word sentences."""
        if self._log_z1 is None:
            V = self.features.n_words
            one_word = EncodedCorpus(np.arange(V, dtype=np.int32), np.arange(V + 1, dtype=np.int64))
            self._log_z1 = float(logsumexp_1d(self.features.scores(one_word, self.lam)))
        return self._log_z1

    def log_prob(self, sentences, *, allow_positive: bool = False) -> np.ndarray:
        """Natural-log ``p(j, x^j)`` of each sentence with AugSA's estimated normalisers, unchecked (Eq. 2).

        ``log p(j, x) = log pi_j + lambda . f(x) - zeta_j - log Z_1``: ``zeta_j`` is AugSA's estimate of
        ``log Z_j / Z_1`` (Sec. 4) and nothing here checks it.  A ``zeta_j`` below the true value makes every
        sentence of length ``j`` too likely; once a sentence gets ``log p > 0`` (``p > 1``, impossible for a
        discrete sentence) this raises instead of returning it.  For normalisers checked from both sides use
        :func:`trf.lm.check.checked_perplexity` (``mcsa trf eval``).

        Parameters
        ----------
        sentences : list of str, list of token lists, or EncodedCorpus
            Whitespace-separated strings or lists of words (mapped through the vocabulary), or encoded sentences.
        allow_positive : bool
            Return positive values as they are instead of raising: for callers that put other normalisers in
            place of AugSA's (:func:`trf.lm.check.log_prob_with_log_z`) or flag such values themselves
            (``mcsa trf score``, :func:`trf.lm.check.report.augsa_perplexity`).

        Returns
        -------
        float array (n,)
            One log-probability per sentence, in input order.

        Raises
        ------
        ValueError
            When a sentence gets ``log p > 0`` (unless ``allow_positive``): the message names the sentences' indices,
            the largest value and, per length, the least amount by which ``zeta_j`` is too low
            (:func:`describe_excess`); also for an empty sentence or one longer than ``m`` without pooling.
        """
        corpus = as_corpus(sentences, self.vocab)
        lengths = corpus.lengths
        if lengths.min() < 1:
            raise ValueError("every sentence needs at least one word")
        dims = self.dimension(lengths)
        scores = self.features.scores(corpus, self.lam)
        log_probs = np.log(self.pi[dims - 1]) + scores - self.zeta[dims - 1] - self.log_z1()
        bad = np.flatnonzero(log_probs > 0)
        if bad.size and not allow_positive:
            first = ", ".join(str(i) for i in bad[:8]) + (f" and {bad.size - 8} more" if bad.size > 8 else "")
            raise ValueError(
                f"{bad.size} of {len(corpus)} sentences get a positive log-probability (p > 1, impossible for a "
                f"discrete sentence), up to {log_probs[bad].max():+.2f} nats: sentences[{first}].  AugSA's zeta lies "
                f"below the true log Z_j / Z_1 at length(s) {describe_excess(lengths, log_probs)}, so every value "
                "at those lengths is too high by at least that much; these values rest on AugSA's estimated zeta, "
                "unchecked.  Use trf.lm.check.checked_perplexity(model, corpus) (or `mcsa trf eval --model FILE --test "
                "FILE`), whose normalisers are checked from both sides; allow_positive=True returns the unchecked "
                "values")
        return log_probs

    def perplexity(self, sentences) -> float:
        """``exp(-sum log p / n_tokens)`` with AugSA's estimated normalisers, unchecked; n_tokens = words + one
        end-of-sentence per sentence.

        The log-probabilities come from :meth:`log_prob`, which raises ``ValueError`` when a sentence gets
        ``log p > 0`` (AugSA's ``zeta_j`` too low), so the value is never below 1; it can still lie below the true
        perplexity wherever ``zeta_j`` is too low.  For a perplexity with checked normalisers and its interval use
        :func:`trf.lm.check.checked_perplexity` (``mcsa trf eval``).

        Parameters
        ----------
        sentences : list of str, list of token lists, or EncodedCorpus
            As for :meth:`log_prob`.

        Returns
        -------
        float
        """
        corpus = as_corpus(sentences, self.vocab)
        return float(np.exp(-self.log_prob(corpus).sum() / corpus.n_predicted))

    # ------------------------------------------------------------- persistence
    def save(self, path) -> None:
        """Write the model atomically (``trf.io`` file of kind ``"trf-lm"``)."""
        feat_arrays, feat_meta = self.features.to_arrays()
        arrays = {**feat_arrays, **self.vocab.to_arrays(), "pi": self.pi, "lam": self.lam, "zeta": self.zeta}
        atomic_write_npz(path, arrays, {"features": feat_meta, **self.meta, "pooled": bool(self.pooled)}, kind=KIND)

    @classmethod
    def load(cls, path) -> "SentenceTRF":
        """Read a model written by :meth:`save` (clear errors for truncated or foreign files)."""
        arrays, meta = read_npz(path, KIND)
        try:
            features = SentenceFeatures.from_arrays(arrays, meta["features"])
            vocab = Vocabulary.from_arrays(arrays)
            extra = {k: v for k, v in meta.items() if k not in ("features", "kind", "format_version", "pooled")}
            return cls(vocab, features, arrays["pi"], arrays["lam"], arrays["zeta"], extra,
                       pooled=bool(meta.get("pooled", False)))
        except KeyError as exc:
            raise ValueError(f"model file {str(path)!r} lacks {exc}; it is not a complete trf-lm model") from None


def unigram_base(model: SentenceTRF) -> tuple[np.ndarray, np.ndarray]:
    """The model's own unigram part, the default AIS base for ``log Z_j``.

    The word- and class-unigram features (templates ``w`` and ``c`` of order 1) fire once per word and
    never at ``</s>``, so ``exp(sum_p u[x_p])`` with ``u[w] = lambda_w(w) + lambda_c(class(w))`` is a product
    of independent categorical laws: exact draws, ``log Z_0 = j logsumexp(u)``.  Annealing from it to the
    model only has to bridge the n-gram features of order >= 2, which is far less than bridging from the
    uniform law over ``V^j`` (on a KJV model, ``H(softmax(u))`` = 8.61 nats per word against ``log V`` = 9.42).

    Returns
    -------
    u : float array (V,)
        Unigram log-weight of every word (0 where no unigram feature was observed).
    is_unigram : bool array (n_features,)
        Which entries of ``lambda`` are unigram features (held at full weight along the path).
    """
    return unigram_weights(model.features, model.lam)


def unigram_weights(feats: SentenceFeatures, lam: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`unigram_base` of the features ``feats`` at the weights ``lam``."""
    row_group, row_len, _, row_type = feats.rows
    group = feats.key_hi >> 48
    symbol = (feats.key_hi >> 24) & ((1 << 24) - 1)
    u = np.zeros(feats.n_words)
    is_unigram = np.zeros(feats.n_features, dtype=bool)
    for r in np.flatnonzero(row_len == 1):
        hit = np.flatnonzero(group == row_group[r])
        is_unigram[hit] = True
        if row_type[r, 0] == 0:  # word unigram
            keep = symbol[hit] < feats.n_words
            np.add.at(u, symbol[hit][keep], lam[hit][keep])
        else:  # class unigram
            per_class = np.zeros(feats.n_classes + 2)
            keep = symbol[hit] < feats.n_classes
            np.add.at(per_class, symbol[hit][keep], lam[hit][keep])
            u += per_class[feats.word_class]
    return u, is_unigram
