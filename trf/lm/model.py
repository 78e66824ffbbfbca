"""The sentence TRF language model: ``p(j, x^j) = pi_j exp(lambda . f(x^j)) / Z_j(lambda)`` (Eq. 2).

``Z_j`` comes from the estimated log ratios ``zeta_j = log Z_j / Z_1`` (Sec. 4) and the exact
``log Z_1`` (a sum over the vocabulary), so ``log p(j, x) = log pi_j + lambda . f(x) - zeta_j - log Z_1``.
Perplexity counts every word plus one end-of-sentence per sentence (the same convention as
:mod:`trf.ngram`), so the two are comparable.  Without pooling, sentences longer than ``m`` are
not modelled and raise ``ValueError``; a model trained with the pooled sub-model of Sec. 5.4 (Eq. 27,
``pooled=True``) scores every sentence longer than ``m`` with the one ``pi_{m+}`` and ``zeta_{m+}``
(its normaliser was estimated over the sampled lengths ``m+1, m+2``, as in the paper).
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

__all__ = ["KIND", "SentenceTRF", "smoothed_length_law", "as_corpus", "unigram_base", "unigram_weights"]


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

    def log_prob(self, sentences) -> np.ndarray:
        """Natural-log ``p(j, x^j)`` of each sentence (strings, token lists or an EncodedCorpus)."""
        corpus = as_corpus(sentences, self.vocab)
        lengths = corpus.lengths
        if lengths.min() < 1:
            raise ValueError("every sentence needs at least one word")
        dims = self.dimension(lengths)
        scores = self.features.scores(corpus, self.lam)
        return np.log(self.pi[dims - 1]) + scores - self.zeta[dims - 1] - self.log_z1()

    def perplexity(self, sentences) -> float:
        """``exp(-sum log p / n_tokens)`` with n_tokens = words + one end-of-sentence per sentence."""
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
