"""Character n-gram feature templates for words (Sec. 6 of Wang, Ou & Tan 2017).

The paper's set: unigrams ``f_v``, bigrams ``f_vw`` and trigrams ``f_vwy`` counted at every
position, plus begin/end unigrams ``f_{i=0,v}``, ``f_{i=end,v}`` and begin/end bigrams
``f_{i=0,vw}``, ``f_{i=end,vw}``.  Features are position- and length-independent, and only n-grams
seen in the training words become features (d = 11929 on the paper's data).

Internally every possible n-gram has a *dense position* (tables of size ``3V + 3V^2 + V^3``);
:class:`FeatureSet` maps dense positions to feature indices (``-1`` for n-grams never seen), and
:meth:`FeatureSet.dense_weights` scatters lambda into a dense weight vector that the Numba kernels
(scoring, Gibbs and jump moves, exact forward pass) read without hashing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from samplers.validation import as_float_array

from . import _word_kernels as K
from .data import Alphabet, WordData

TEMPLATES = ("uni", "bi", "tri", "begin_uni", "end_uni", "begin_bi", "end_bi")


def n_dense(V: int) -> int:
    """Size of the dense n-gram table for an alphabet of ``V`` symbols."""
    return 3 * V + 3 * V * V + V ** 3


@dataclass
class FeatureSet:
    """The features of a word TRF.

    Attributes
    ----------
    alphabet : Alphabet
    position : ndarray of int64, shape (d,)
        Dense position of every feature.
    """

    alphabet: Alphabet
    position: np.ndarray

    def __post_init__(self) -> None:
        V = self.alphabet.size
        self.position = np.asarray(self.position, dtype=np.int64)
        if self.position.ndim != 1 or self.position.size == 0:
            raise ValueError("position must be a non-empty 1-D array of dense positions")
        if self.position.min() < 0 or self.position.max() >= n_dense(V) or np.any(np.diff(self.position) <= 0):
            raise ValueError("position must be strictly increasing dense positions inside the table")
        self.index = np.full(n_dense(V), -1, dtype=np.int64)
        self.index[self.position] = np.arange(self.position.size)

    @classmethod
    def from_words(cls, data: WordData) -> "FeatureSet":
        """All n-grams of the seven templates that occur in ``data``."""
        V = data.alphabet.size
        seen = np.zeros(n_dense(V), dtype=np.float64)
        K.weighted_counts(np.arange(n_dense(V), dtype=np.int64), V, data.tokens, data.offsets,
                          np.ones(len(data)), seen)
        return cls(data.alphabet, np.flatnonzero(seen))

    @property
    def d(self) -> int:
        """Number of features ``d``."""
        return int(self.position.size)

    @property
    def V(self) -> int:
        """Vocabulary size ``V``."""
        return self.alphabet.size

    def template_sizes(self) -> dict[str, int]:
        """Number of features per template."""
        bases = K.table_bases(self.V)
        block = np.searchsorted(bases, self.position, side="right") - 1
        return {name: int(np.sum(block == k)) for k, name in enumerate(TEMPLATES)}

    def check_lambda(self, lam, name: str = "lam") -> np.ndarray:
        """``lam`` as a finite float array of shape (d,), or a ValueError naming ``name``."""
        lam = as_float_array(lam, name, ndim=1)
        if lam.shape[0] != self.d:
            raise ValueError(f"{name} must have length d = {self.d}, got {lam.shape[0]}")
        return lam

    def dense_weights(self, lam: np.ndarray) -> np.ndarray:
        """Dense weight vector with ``lam`` at the features' positions and 0 elsewhere."""
        w = np.zeros(n_dense(self.V), dtype=np.float64)
        w[self.position] = lam
        return w

    def counts(self, data: WordData, weights: np.ndarray | None = None) -> np.ndarray:
        """Sum over words of ``weights[i] * f(x_i)``, shape (d,) (weights default to 1)."""
        self._check_data(data)
        w = np.ones(len(data)) if weights is None else as_float_array(weights, "weights", ndim=1)
        if w.shape[0] != len(data):
            raise ValueError(f"weights must have one entry per word ({len(data)}), got {w.shape[0]}")
        out = np.zeros(self.d)
        K.weighted_counts(self.index, self.V, data.tokens, data.offsets, w, out)
        return out

    def scores(self, lam: np.ndarray, data: WordData) -> np.ndarray:
        """lambda . f(x_i) for every word, shape (n,)."""
        self._check_data(data)
        out = np.empty(len(data))
        K.score_batch(self.dense_weights(lam), self.V, data.tokens, data.offsets, out)
        return out

    def per_length_moments(self, data: WordData) -> tuple[np.ndarray, np.ndarray]:
        """Per-length sums and sums of squares of feature counts, each of shape (m, d)."""
        self._check_data(data)
        sums = np.zeros((data.m, self.d))
        sumsq = np.zeros((data.m, self.d))
        K.per_length_moments(self.index, self.V, data.tokens, data.offsets, self.d, data.m, sums, sumsq)
        return sums, sumsq

    def stratified_variance(self, data: WordData) -> np.ndarray:
        """Stratified empirical variances sigma_i = sum_j (n_j/n) p~_j[(f_i - p~_j[f_i])^2] (Sec. 4.2/5.2)."""
        sums, sumsq = self.per_length_moments(data)
        n_j = data.length_counts().astype(np.float64)
        safe = np.maximum(n_j, 1.0)[:, None]
        var_j = sumsq / safe - (sums / safe) ** 2
        return np.maximum((n_j[:, None] / n_j.sum() * var_j).sum(axis=0), 0.0)

    def _check_data(self, data: WordData) -> None:
        if data.alphabet != self.alphabet:
            raise ValueError(f"data uses alphabet {data.alphabet.symbols!r}, features use {self.alphabet.symbols!r}")
