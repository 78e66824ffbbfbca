"""Linear-chain CRFs: exact forward-backward in log space, and the converter to a PairwiseMRF.

The distribution over label sequences ``y = (y_0, ..., y_{T-1})``, ``y_t in {0, ..., N-1}``, is

    log p(y) = sum_t emissions[t, y_t] + sum_{t>0} transitions[y_{t-1}, y_t] - log Z,

the linear chain of the RDP paper (Sec. 3.1, Eq. 17 with all states).  Transitions are a matrix
``(N, N)`` or factorised by state embeddings ``E (N, D)`` as ``transitions = E E^T`` (Sec. 4).
The torch side of the same model (for :mod:`rdp`) is :func:`rdp.convert.chain_crf_tensors`.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np
from scipy.special import logsumexp

from ..models import PairwiseMRF
from ..rng import as_generator
from ..validation import as_float_array, check_float, check_int


class ChainCRF:
    """A linear-chain CRF with exact log Z, node marginals and entropy (forward-backward).

    Parameters
    ----------
    emissions : array_like, shape (T, N)
        Emission log potentials (the initial scores folded into t = 0), finite.
    transitions : array_like, shape (N, N), optional
        ``transitions[i, j]``: log potential of state i followed by state j.
    state_embeddings : array_like, shape (N, D), optional
        Give these instead of ``transitions`` for ``transitions = E E^T``.

    Examples
    --------
    >>> import numpy as np
    >>> crf = ChainCRF(np.zeros((3, 2)), np.zeros((2, 2)))
    >>> bool(abs(crf.log_partition() - 3 * np.log(2)) < 1e-12)   # 2^3 label sequences
    True
    """

    def __init__(self, emissions: Any, transitions: Any = None, *, state_embeddings: Any = None):
        self.emissions = as_float_array(emissions, "emissions", ndim=2)
        length, n = self.emissions.shape
        if length < 1 or n < 1:
            raise ValueError(f"emissions must have shape (T, N) with T, N >= 1, got {self.emissions.shape}")
        if (transitions is None) == (state_embeddings is None):
            raise ValueError("give exactly one of transitions (N, N) and state_embeddings (N, D)")
        self.state_embeddings: np.ndarray | None
        if state_embeddings is not None:
            self.state_embeddings = as_float_array(state_embeddings, "state_embeddings", ndim=2)
            if self.state_embeddings.shape[0] != n:
                raise ValueError(f"state_embeddings must have shape (N, D) with N = {n}, "
                                 f"got {self.state_embeddings.shape}")
            self.transitions = self.state_embeddings @ self.state_embeddings.T
        else:
            self.state_embeddings = None
            self.transitions = as_float_array(transitions, "transitions", ndim=2)
            if self.transitions.shape != (n, n):
                raise ValueError(f"transitions must have shape (N, N) = {(n, n)}, got {self.transitions.shape}")
        for arr in (self.emissions, self.transitions):
            arr.flags.writeable = False

    @classmethod
    def random(cls, length: int, n_states: int, *, scale: float = 1.0, transition_scale: float | None = None,
               embedding_dim: int | None = None, seed: Any = None) -> "ChainCRF":
        """A random CRF: ``N(0, scale^2)`` emissions and ``N(0, transition_scale^2)`` transitions (or
        Gaussian state embeddings of dimension ``embedding_dim`` scaled so that ``E E^T`` has entries of
        standard deviation about ``transition_scale``)."""
        length = check_int(length, "length", low=1)
        n_states = check_int(n_states, "n_states", low=1)
        scale = check_float(scale, "scale", low=0.0)
        tscale = scale if transition_scale is None else check_float(transition_scale, "transition_scale", low=0.0)
        gen = as_generator(seed)
        emissions = scale * gen.standard_normal((length, n_states))
        if embedding_dim is not None:
            dim = check_int(embedding_dim, "embedding_dim", low=1)
            emb = gen.standard_normal((n_states, dim)) * np.sqrt(tscale / np.sqrt(dim))
            return cls(emissions, state_embeddings=emb)
        return cls(emissions, tscale * gen.standard_normal((n_states, n_states)))

    @property
    def length(self) -> int:
        """Number of positions T."""
        return self.emissions.shape[0]

    @property
    def n_states(self) -> int:
        """Number of labels N."""
        return self.emissions.shape[1]

    def __repr__(self) -> str:
        return f"ChainCRF(length={self.length}, n_states={self.n_states})"

    def score(self, y: Any) -> np.ndarray | float:
        """Unnormalised log potential of label sequences ``y`` (..., T)."""
        y = np.asarray(y, dtype=np.int64)
        if y.shape[-1:] != (self.length,) or y.min() < 0 or y.max() >= self.n_states:
            raise ValueError(f"y must have shape (..., {self.length}) with labels in [0, {self.n_states})")
        out = self.emissions[np.arange(self.length), y].sum(-1) + self.transitions[y[..., :-1], y[..., 1:]].sum(-1)
        return float(out) if y.ndim == 1 else out

    @cached_property
    def _forward_backward(self) -> tuple[np.ndarray, np.ndarray, float]:
        em, tr = self.emissions, self.transitions
        alpha = np.empty_like(em)
        beta = np.zeros_like(em)
        alpha[0] = em[0]
        for t in range(1, self.length):
            alpha[t] = em[t] + logsumexp(alpha[t - 1][:, None] + tr, axis=0)
        for t in range(self.length - 2, -1, -1):
            beta[t] = logsumexp(tr + (em[t + 1] + beta[t + 1])[None, :], axis=1)
        return alpha, beta, float(logsumexp(alpha[-1]))

    def log_partition(self) -> float:
        """Exact log Z by the forward algorithm (Eq. 17 of the RDP paper with all states)."""
        return self._forward_backward[2]

    def marginals(self) -> np.ndarray:
        """Exact node marginals ``p(y_t = i)``, shape (T, N), by forward-backward."""
        alpha, beta, log_z = self._forward_backward
        return np.exp(alpha + beta - log_z)

    def pair_marginals(self) -> np.ndarray:
        """Exact ``p(y_{t-1} = i, y_t = j)``, shape (T - 1, N, N)."""
        alpha, beta, log_z = self._forward_backward
        em, tr = self.emissions, self.transitions
        return np.exp(alpha[:-1, :, None] + tr[None] + (em[1:] + beta[1:])[:, None, :] - log_z)

    def entropy(self) -> float:
        """Exact entropy ``H(p) = log Z - E_p[score(y)]`` in nats (expected score from the marginals)."""
        expected = float(np.sum(self.marginals() * self.emissions))
        if self.length > 1:
            expected += float(np.sum(self.pair_marginals() * self.transitions[None]))
        return self.log_partition() - expected

    def to_mrf(self) -> PairwiseMRF:
        """The same distribution as a :class:`~samplers.models.PairwiseMRF` on a chain: ``unary =
        emissions``, edges ``(t - 1, t)`` with ``pairwise = transitions`` (so every MRF method applies)."""
        edges = np.stack([np.arange(self.length - 1), np.arange(1, self.length)], axis=1)
        pairwise = np.broadcast_to(self.transitions, (self.length - 1, self.n_states, self.n_states))
        return PairwiseMRF(self.emissions, edges.reshape(-1, 2), pairwise)
