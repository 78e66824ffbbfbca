"""Strong Doeblin chains over implicit (structured) state spaces: label sequences.

* :class:`SequenceDoeblinChain` — the structured chain used for learning: sequences y in {0..K-1}^L
  with a tractable restart law ``u_theta(y | x) = prod_i softmax(x_i W_u)[y_i]`` and a random-scan
  Gibbs kernel ``A_theta`` of the richer log-linear model ``s(y) = sum_i x_i . W_A[:, y_i] +
  sum_{i>=1} P[y_{i-1}, y_i]`` (Eq. 5 of Steinhardt & Liang with Gibbs as ``A``).  Hot loops run in
  Numba (:mod:`doeblin._seq_kernels`, run by the generic kernels of :mod:`doeblin.core`); exact stationary draws use the geometric trick (Prop. 3.2).
  :meth:`SequenceDoeblinChain.as_finite` enumerates the K^L states and returns the equivalent
  :class:`~doeblin.chains.StrongDoeblinChain` (tests compare the two).

Any other state space plugs into the same Numba kernels through :func:`doeblin.core.implements` (the
one implementation of the exact draws, Prop. 3.2; the DNF experiment's formulas are such a model).
"""

from __future__ import annotations

import itertools

import numpy as np

from samplers.rng import as_generator, kernel_seed
from samplers.validation import as_float_array, as_int_array, check_int

from ._seq_kernels import GradScratch, gibbs_prob_grad, log_u_grad, seq_doeblin_draws, seq_simulate, sequence_chain
from .chains import MAX_EXPECTED_STEPS, StrongDoeblinChain, check_draw_cost, check_eps

MAX_ENUMERATION_STATES = 4096


class SequenceModel:
    """Parameters of the log-linear sequence model (Eq. 5 with a Gibbs kernel as ``A``).

    Parameters
    ----------
    W_u : array_like, shape (D, K)
        Restart-law weights (unary only, so ``u`` factorises and is sampled exactly).
    W_A : array_like, shape (D, K)
        Unary weights of the Gibbs kernel's model.
    P : array_like, shape (K, K)
        Transition (label-bigram) weights of the Gibbs kernel's model.

    The flat parameter vector is ``theta = [W_u.ravel(), W_A.ravel(), P.ravel()]`` (u and A use
    disjoint coordinates, as Assumption 4.3 asks).
    """

    def __init__(self, W_u, W_A, P):
        self.W_u = np.ascontiguousarray(as_float_array(W_u, "W_u", ndim=2))
        D, K = self.W_u.shape
        self.W_A = np.ascontiguousarray(as_float_array(W_A, "W_A", ndim=2))
        if self.W_A.shape != (D, K):
            raise ValueError(f"W_A must have the shape of W_u {(D, K)}, got {self.W_A.shape}")
        self.P = np.ascontiguousarray(as_float_array(P, "P", ndim=2))
        if self.P.shape != (K, K):
            raise ValueError(f"P must be {K} x {K} (labels x labels), got {self.P.shape}")
        if K < 2:
            raise ValueError(f"W_u must have at least 2 label columns, got {K}")

    @property
    def n_features(self) -> int:
        """Feature dimension ``D`` (rows of ``W_u``)."""
        return self.W_u.shape[0]

    @property
    def n_labels(self) -> int:
        """Number of labels ``K`` (columns of ``W_u``)."""
        return self.W_u.shape[1]

    @property
    def n_params(self) -> int:
        """Length of :meth:`theta`: ``2 D K + K^2``."""
        D, K = self.W_u.shape
        return 2 * D * K + K * K

    def theta(self) -> np.ndarray:
        """Flat parameters ``[W_u, W_A, P]``."""
        return np.concatenate([self.W_u.ravel(), self.W_A.ravel(), self.P.ravel()])

    @classmethod
    def from_theta(cls, theta, n_features: int, n_labels: int) -> "SequenceModel":
        """Inverse of :meth:`theta`."""
        D, K = check_int(n_features, "n_features", low=1), check_int(n_labels, "n_labels", low=2)
        theta = as_float_array(theta, "theta", ndim=1)
        if theta.shape[0] != 2 * D * K + K * K:
            raise ValueError(f"theta must have length {2 * D * K + K * K}, got {theta.shape[0]}")
        return cls(theta[:D * K].reshape(D, K), theta[D * K:2 * D * K].reshape(D, K), theta[2 * D * K:].reshape(K, K))

    def check_x(self, x) -> np.ndarray:
        """Validate per-position features ``x`` of shape (L, D)."""
        x = np.ascontiguousarray(as_float_array(x, "x", ndim=2))
        if x.shape[1] != self.n_features or x.shape[0] < 1:
            raise ValueError(f"x must have shape (L >= 1, {self.n_features}), got {x.shape}")
        return x

    def check_y(self, y, length: int) -> np.ndarray:
        """Validate a label sequence of the given length."""
        y = np.ascontiguousarray(as_int_array(y, "y", ndim=1, low=0, high=self.n_labels))
        if y.shape[0] != length:
            raise ValueError(f"y must have length {length} (the length of x), got {y.shape[0]}")
        return y

    def log_u(self, x, y) -> float:
        """``log u_theta(y | x)``."""
        x = self.check_x(x)
        y = self.check_y(y, x.shape[0])
        K = self.n_labels
        return float(log_u_grad(x, self.W_u, y, np.zeros(0), 0.0, np.empty(K), np.empty(K)))

    def gibbs_prob(self, x, y_prev, y) -> float:
        """``A_theta(y | y_prev, x)`` of the random-scan Gibbs kernel."""
        x = self.check_x(x)
        L, K = x.shape[0], self.n_labels
        return float(gibbs_prob_grad(x, self.W_A, self.P, self.check_y(y_prev, L), self.check_y(y, L),
                                     np.zeros(0), 0.0, GradScratch(np.empty(K), np.empty(K), np.empty(L))))

    def invariant_init(self) -> "SequenceModel":
        """Assumption 4.3: ``W_A = W_u``, ``P = 0``, so the Gibbs kernel leaves ``u`` invariant."""
        return SequenceModel(self.W_u, self.W_u.copy(), np.zeros_like(self.P))


class SequenceDoeblinChain:
    """Strong Doeblin chain ``(1 - eps) A_theta + eps u_theta`` over label sequences for input ``x``.

    Parameters
    ----------
    model : SequenceModel
    x : array_like, shape (L, D)
        Per-position input features.
    eps : float
        Restart probability in (0, 1].
    """

    def __init__(self, model: SequenceModel, x, eps: float):
        if not isinstance(model, SequenceModel):
            raise TypeError(f"model must be a SequenceModel, got {type(model).__name__}")
        self.model = model
        self.x = model.check_x(x)
        self.eps = check_eps(eps)

    @property
    def length(self) -> int:
        """Sequence length ``L`` (rows of ``x``)."""
        return self.x.shape[0]

    def sample_stationary(self, size: int, *, seed=None, return_steps: bool = False,
                          max_steps: int = MAX_EXPECTED_STEPS):
        """Exact draws from ``pi~`` (geometric trick, Prop. 3.2); int64 (size, L).

        Refused up front (ValueError) when the expected number of Gibbs steps, ``size (1 - eps) / eps``,
        exceeds ``max_steps`` (:func:`doeblin.chains.check_draw_cost`).
        """
        size = check_int(size, "size", low=0)
        check_draw_cost((1.0 - self.eps) / self.eps, size, max_steps, f"eps = {self.eps:g}")
        m = self.model
        draws, steps = seq_doeblin_draws(sequence_chain(self.x, m.W_u, m.W_A, m.P), self.eps, size, kernel_seed(seed))
        return (draws, steps) if return_steps else draws

    def simulate(self, n_steps: int, *, seed=None, y0=None) -> np.ndarray:
        """Path (n_steps + 1, L) of the chain; ``y0`` defaults to a draw from ``u``."""
        n_steps = check_int(n_steps, "n_steps", low=0)
        gen = as_generator(seed)
        if y0 is None:
            y0 = _draw_u(self, gen)
        y0 = self.model.check_y(y0, self.length)
        m = self.model
        return seq_simulate(sequence_chain(self.x, m.W_u, m.W_A, m.P), self.eps, y0, n_steps, kernel_seed(gen))

    def states(self) -> np.ndarray:
        """All K^L sequences (lexicographic order), shape (K^L, L); refused beyond 4096 states."""
        K, L = self.model.n_labels, self.length
        if K ** L > MAX_ENUMERATION_STATES:
            raise ValueError(f"K^L = {K ** L} states exceed the enumeration limit {MAX_ENUMERATION_STATES}")
        return np.array(list(itertools.product(range(K), repeat=L)), dtype=np.int64).reshape(-1, L)

    def state_index(self, y) -> np.ndarray:
        """Lexicographic index of sequences (rows of ``y``) in :meth:`states`."""
        y = np.atleast_2d(np.asarray(y, dtype=np.int64))
        K = self.model.n_labels
        return (y * (K ** np.arange(self.length - 1, -1, -1))[None, :]).sum(axis=1)

    def as_finite(self) -> StrongDoeblinChain:
        """The same chain with explicit matrices over :meth:`states` (enumeration; small K^L only)."""
        S = self.states()
        n = S.shape[0]
        u = np.exp([self.model.log_u(self.x, s) for s in S])
        A = np.array([[self.model.gibbs_prob(self.x, a, b) for b in S] for a in S]).reshape(n, n)
        return StrongDoeblinChain(A, u, self.eps)


def _draw_u(chain: SequenceDoeblinChain, gen: np.random.Generator) -> np.ndarray:
    """One draw from ``u`` (a Doeblin draw with eps = 1 is a draw from u)."""
    m = chain.model
    draws, _ = seq_doeblin_draws(sequence_chain(chain.x, m.W_u, m.W_A, m.P), 1.0, 1, kernel_seed(gen))
    return draws[0]
