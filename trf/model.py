"""The word TRF ``p(j, x^j) = pi_j exp(lambda . f(x^j)) / Z_j(lambda)`` (Eq. 1-2 of Wang, Ou & Tan 2017).

``zeta_j = log Z_j / Z_1`` are the log ratios estimated by AugSA (zeta_1 = 0).  ``log Z_1`` is a sum
over the alphabet and always computed exactly, so log-probabilities can be evaluated either with the
estimated ``zeta`` (``log Z_j = log Z_1 + zeta_j``) or with exact log normalisers supplied by the
caller (for example :func:`trf.exact.log_partition`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from samplers.validation import as_float_array, check_distribution, check_int

from . import exact
from .data import Alphabet, WordData
from .features import FeatureSet
from .io import atomic_write_npz, read_npz

KIND = "trf-word"


class TRF:
    """A trans-dimensional random field over words of length 1..m.

    Parameters
    ----------
    features : FeatureSet
    pi : array-like, shape (m,)
        Length law (the empirical ``n_j / n``, Prop. 1).
    lam : array-like, shape (d,), optional
        Feature weights (zeros by default).
    zeta : array-like, shape (m,), optional
        Log ratios ``log Z_j / Z_1``; by default the exact values at ``lam``.
    """

    def __init__(self, features: FeatureSet, pi, lam=None, zeta=None) -> None:
        self.features = features
        self.pi = check_distribution(as_float_array(pi, "pi", ndim=1), "pi")
        self.m = check_int(int(self.pi.shape[0]), "m", low=1)
        self.lam = np.zeros(features.d) if lam is None else features.check_lambda(lam).copy()
        if zeta is None:
            self.zeta = exact.exact_zeta(features, self.lam, self.m)
        else:
            self.zeta = as_float_array(zeta, "zeta", ndim=1).copy()
            if self.zeta.shape[0] != self.m:
                raise ValueError(f"zeta must have length m = {self.m}, got {self.zeta.shape[0]}")

    @classmethod
    def from_data(cls, data: WordData) -> "TRF":
        """A TRF with the features seen in ``data``, ``pi = n_j / n`` and lambda = 0."""
        n_j = data.length_counts()
        return cls(FeatureSet.from_words(data), n_j / n_j.sum())

    @property
    def alphabet(self) -> Alphabet:
        """The model's alphabet (``features.alphabet``)."""
        return self.features.alphabet

    def log_z1(self) -> float:
        """Exact ``log Z_1(lambda)`` (a sum over the alphabet)."""
        return float(exact.log_partition(self.features, self.lam, 1)[0])

    def exact_log_z(self) -> np.ndarray:
        """Exact ``log Z_j(lambda)`` for j = 1..m (forward pass, :mod:`trf.exact`)."""
        return exact.log_partition(self.features, self.lam, self.m)

    def log_prob(self, data: WordData, log_z: np.ndarray | None = None) -> np.ndarray:
        """``log p(j, x^j)`` for every word.

        Parameters
        ----------
        data : WordData
            The words, each of length at most ``m``.
        log_z : array-like, shape (m,), optional
            Log normalisers ``log Z_j``; by default ``log Z_1 + zeta_j`` from the estimated zeta.
        """
        if data.m > self.m and np.any(data.lengths > self.m):
            raise ValueError(f"data holds words longer than the model's m = {self.m}")
        if log_z is None:
            log_z = self.log_z1() + self.zeta
        log_z = as_float_array(log_z, "log_z", ndim=1)
        if log_z.shape[0] != self.m:
            raise ValueError(f"log_z must have length m = {self.m}, got {log_z.shape[0]}")
        j = data.lengths - 1
        with np.errstate(divide="ignore"):
            log_pi = np.log(self.pi)
        return log_pi[j] + self.features.scores(self.lam, data) - log_z[j]

    def nll(self, data: WordData, exact_z: bool = True) -> float:
        """Mean negative log-likelihood per word (nats), with exact or estimated normalisers."""
        return float(-np.mean(self.log_prob(data, self.exact_log_z() if exact_z else None)))

    def save(self, path: str | Path) -> Path:
        """Write the model atomically to one ``.npz`` file (kind ``"trf-word"``, format version)."""
        arrays = {"position": self.features.position, "pi": self.pi, "lam": self.lam, "zeta": self.zeta}
        return atomic_write_npz(path, arrays, {"alphabet": self.alphabet.symbols, "m": self.m}, kind=KIND)

    @classmethod
    def load(cls, path: str | Path) -> "TRF":
        """Read a model written by :meth:`save`; non-finite or inconsistent parameters raise ValueError."""
        arrays, meta = read_npz(path, KIND)
        try:
            features = FeatureSet(Alphabet(meta["alphabet"]), arrays["position"])
            return cls(features, arrays["pi"], lam=arrays["lam"], zeta=arrays["zeta"])
        except KeyError as exc:
            raise ValueError(f"model file {str(path)!r} lacks entry {exc}") from None
        except (ValueError, TypeError) as exc:
            raise ValueError(f"model file {str(path)!r} holds invalid parameters: {exc}") from None
