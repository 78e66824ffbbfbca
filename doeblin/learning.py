"""Learning strong Doeblin chains (Sec. 4 of Steinhardt & Liang 2015).

Maximise ``O(theta) = (1/n) sum_i log p_theta(y_i | x_i)`` (Eq. 4), where ``p_theta`` is the
stationary law of ``(1 - eps) A_theta + eps u_theta`` (Eq. 6), with the importance-weighted gradient
of Algorithm 1 (weights ``w_t = eps * A_theta(y | y_{t-1})``, O(T) grouping of Sec. 4.2), AdaGrad,
and the Assumption 4.3 initialisation (fit ``u`` alone, then make ``A`` leave ``u`` invariant).
The model is :class:`~doeblin.implicit.SequenceModel` (restart law ``u`` factorised over
positions, ``A`` random-scan Gibbs of a label-bigram model).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from samplers.rng import as_generator, kernel_seed
from samplers.validation import check_float, check_int

from ._seq_kernels import algorithm1_chains, log_u_grad, sequence_chain
from .chains import MAX_EXPECTED_STEPS, check_draw_cost, check_eps
from .implicit import SequenceDoeblinChain, SequenceModel


@dataclass
class GradientEstimate:
    """Algorithm 1's output: ``grad = sum_c g_c / sum_c Z_c`` over ``n_chains`` chains, with a
    delta-method standard error per coordinate (ratio estimator) and the kernel steps spent."""

    grad: np.ndarray
    se: np.ndarray
    n_chains: int
    kernel_steps: int


def sample_gradient(model: SequenceModel, x, y, eps: float, k: int, *, seed=None,
                    max_steps: int = MAX_EXPECTED_STEPS) -> GradientEstimate:
    """Algorithm 1 (SampleGradient): estimate ``d log p_theta(y | x) / d theta`` from ``k`` chains.

    Parameters
    ----------
    model : SequenceModel
        The parameters ``theta`` at which the gradient is estimated.
    x : array_like, shape (L, D)
        Float features of one sequence (``D = model.n_features``).
    y : array_like of int, shape (L,)
        Its labels, each in ``range(model.n_labels)``.
    eps : float
        Restart probability in (0, 1].
    k : int
        Number of independent chains (samples of T).
    seed : int, Generator or None
        Randomness of the chains (SPEC 7).
    max_steps : int
        Refuse (ValueError) when the expected Gibbs steps of the k paths, ``k (1 - eps) / eps``, exceed it.

    Notes
    -----
    The estimate is a ratio ``g / Z`` and therefore consistent but biased at finite ``k`` (as the
    paper says); the standard error linearises the ratio: ``se^2 = var(g_c - R Z_c) / (k mean(Z)^2)``.
    If no chain put weight on ``y`` (Z = 0) the gradient is returned as zeros with infinite se.
    """
    x = model.check_x(x)
    y = model.check_y(y, x.shape[0])
    eps = check_eps(eps)
    k = check_int(k, "k", low=1)
    check_draw_cost((1.0 - eps) / eps, k, max_steps, f"eps = {eps:g}")  # k paths of Geometric(eps) length
    G, Z, steps = algorithm1_chains(sequence_chain(x, model.W_u, model.W_A, model.P), y, eps, k, kernel_seed(seed))
    total = Z.sum()
    if total <= 0:
        return GradientEstimate(np.zeros(model.n_params), np.full(model.n_params, np.inf), k, int(steps.sum()))
    R = G.sum(axis=0) / total
    resid = G - Z[:, None] * R[None, :]
    se = np.sqrt(resid.var(axis=0, ddof=1) / k) / Z.mean() if k > 1 else np.full(model.n_params, np.inf)
    return GradientEstimate(R, se, k, int(steps.sum()))


def exact_log_likelihood(model: SequenceModel, data: Sequence[tuple], eps: float) -> float:
    """Mean ``log pi~_theta(y | x)`` over ``data`` by the closed form (Prop. 3.2) on the enumerated
    state space (small K^L only)."""
    eps = check_eps(eps)
    total = 0.0
    for x, y in data:
        chain = SequenceDoeblinChain(model, x, eps)
        pi = chain.as_finite().stationary()
        total += float(np.log(pi[chain.state_index(model.check_y(y, chain.length))[0]]))
    return total / len(data)


def exact_gradient(model: SequenceModel, x, y, eps: float, h: float = 1e-5) -> np.ndarray:
    """Central finite differences of the closed-form ``log pi~_theta(y | x)`` (the test oracle)."""
    theta = model.theta()
    D, K = model.n_features, model.n_labels
    grad = np.empty_like(theta)
    for j in range(theta.shape[0]):
        vals = []
        for sign in (1.0, -1.0):
            t = theta.copy()
            t[j] += sign * h
            vals.append(exact_log_likelihood(SequenceModel.from_theta(t, D, K), [(x, y)], eps))
        grad[j] = (vals[0] - vals[1]) / (2 * h)
    return grad


class AdaGrad:
    """AdaGrad ascent (Duchi et al. 2011): ``theta += lr * g / sqrt(eta + sum g^2)``."""

    def __init__(self, n_params: int, lr: float = 0.1, eta: float = 1e-8):
        self.lr = check_float(lr, "lr", low=0.0, low_open=True)
        self.eta = check_float(eta, "eta", low=0.0, low_open=True)
        self.sum_sq = np.zeros(check_int(n_params, "n_params", low=1))

    def step(self, theta: np.ndarray, grad: np.ndarray) -> np.ndarray:
        """Return the updated parameters (ascent direction)."""
        self.sum_sq += grad ** 2
        return theta + self.lr * grad / np.sqrt(self.eta + self.sum_sq)


def _check_data(data, model: SequenceModel) -> list[tuple[np.ndarray, np.ndarray]]:
    if len(data) == 0:
        raise ValueError("data must hold at least one (x, y) example")
    out = []
    for x, y in data:
        x = model.check_x(x)
        out.append((x, model.check_y(y, x.shape[0])))
    return out


def fit_restart_law(model: SequenceModel, data, *, n_epochs: int = 50, lr: float = 0.5) -> SequenceModel:
    """First half of Assumption 4.3: fit ``W_u`` alone by AdaGrad on the exact (convex) gradient of
    ``sum log u(y | x)``; ``W_A`` and ``P`` are left untouched."""
    data = _check_data(data, model)
    n_epochs = check_int(n_epochs, "n_epochs", low=0)
    D, K = model.n_features, model.n_labels
    W = model.W_u.copy()
    opt = AdaGrad(D * K, lr=lr)
    buf, logp = np.empty(K), np.empty(K)
    for _ in range(n_epochs):
        grad = np.zeros(D * K)
        for x, y in data:
            log_u_grad(x, W, y, grad, 1.0, buf, logp)
        W = opt.step(W.ravel(), grad / len(data)).reshape(D, K)
    return SequenceModel(W, model.W_A, model.P)


def invariant_start(model: SequenceModel, data, **fit_options) -> SequenceModel:
    """Assumption 4.3 initialisation: fit ``u`` alone, then set ``W_A = W_u`` and ``P = 0`` so the
    Gibbs kernel leaves ``u`` invariant (``pi~ = u`` at the start)."""
    return fit_restart_law(model, data, **fit_options).invariant_init()


@dataclass
class TrainResult:
    """Trained model and per-epoch diagnostics (exact log-likelihood where it was requested)."""

    model: SequenceModel
    kernel_steps: int
    history: list[dict] = field(default_factory=list)


def train_doeblin(model: SequenceModel, data, eps: float, *, n_epochs: int = 10, chains_per_example: int = 10,
                  lr: float = 0.1, seed=None, init: bool = True, track_exact: bool = False) -> TrainResult:
    """Train ``theta`` by AdaGrad on Algorithm 1's gradient (``chains_per_example`` chains each).

    Parameters
    ----------
    model : SequenceModel
        Starting parameters (with ``init`` true they are first set per Assumption 4.3).
    data : sequence of (x, y)
        Training examples: float features ``x`` of shape (L, D) and int labels ``y`` of shape (L,).
    eps : float
        Restart probability in (0, 1].
    n_epochs, chains_per_example : int
        Passes over the data (examples visited in a random order) and Algorithm 1's ``k``.
    lr : float
        AdaGrad step size.
    seed : int, Generator or None
        Randomness of the example order and of the chains (SPEC 7).
    init : bool
        First set ``theta`` per Assumption 4.3 (:func:`invariant_start`); false keeps ``model`` as given.
    track_exact : bool
        Record the exact mean log-likelihood (enumeration; tiny models only) after every epoch.
    """
    data = _check_data(data, model)
    eps = check_eps(eps)
    n_epochs = check_int(n_epochs, "n_epochs", low=0)
    k = check_int(chains_per_example, "chains_per_example", low=1)
    gen = as_generator(seed)
    if init:
        model = invariant_start(model, data)
    D, K = model.n_features, model.n_labels
    theta = model.theta()
    opt = AdaGrad(theta.shape[0], lr=lr)
    result = TrainResult(model, 0)
    if track_exact:
        result.history.append({"epoch": 0, "log_likelihood": exact_log_likelihood(model, data, eps)})
    for epoch in range(1, n_epochs + 1):
        for i in gen.permutation(len(data)):
            x, y = data[i]
            est = sample_gradient(SequenceModel.from_theta(theta, D, K), x, y, eps, k, seed=gen)
            result.kernel_steps += est.kernel_steps + k
            theta = opt.step(theta, est.grad)
        if track_exact:
            result.history.append({"epoch": epoch, "log_likelihood": exact_log_likelihood(
                SequenceModel.from_theta(theta, D, K), data, eps)})
    result.model = SequenceModel.from_theta(theta, D, K)
    return result
