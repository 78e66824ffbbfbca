"""Annealed importance sampling (AIS) for the log partition function of a pairwise MRF.

The path is geometric between the unary-only model ``f_0(x) = exp(sum_i unary[i, x_i])``, whose
normaliser is exact (``log Z_0 = sum_i logsumexp_k unary[i, k]``), and the full model ``f_1``:

    f_beta(x) = f_0(x)^(1 - beta) f_1(x)^beta = exp(unary(x) + beta * pairwise(x)),   0 = beta_0 < ... < beta_{T-1} = 1.

Each chain (Neal 2001, "Annealed importance sampling", Sec. 2-3) draws ``x ~ f_0`` exactly, then
for ``t = 1 .. T-1`` accumulates ``log w += (beta_t - beta_{t-1}) * pairwise(x)`` and moves ``x``
with Gibbs sweeps that leave ``f_{beta_t}`` invariant.  ``E[w] = Z_1 / Z_0`` (Neal 2001, Eq. 9 up
to notation), so ``log Z_1 ≈ log Z_0 + log mean(w)``.

:func:`run_ais` is the one implementation, for any model given by callbacks vectorised over chains: the
MRF (:func:`ais_log_partition`, Gibbs sweeps in Numba), the word TRF (:func:`trf.ais.ais_log_partition`)
and the sentence TRF (:mod:`trf.lm.check`) all call it.
:func:`run_reverse_ais` runs the reversed chain from samples of the target (Grosse, Ghahramani & Adams
2015, "Sandwiching the marginal likelihood using bidirectional Monte Carlo", Sec. 4; Burda, Grosse &
Salakhutdinov 2015, RAISE): its weights have ``E[w_rev] = Z_0 / Z_1``, so by Jensen's inequality its
estimate of ``log Z_1`` is a stochastic *upper* bound when the starting states are exact target draws,
while forward AIS gives a stochastic *lower* bound.  :func:`run_bidirectional_ais` does both, starting the
reverse chains from the forward chains' final states (after extra sweeps at ``beta = 1``); the pair
brackets ``log Z_1`` up to the sampling error of the two estimates and the bias of approximate starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from numpy.typing import ArrayLike
from scipy import special
from scipy.special import expit, logsumexp

from .models import FactorGraph, PairwiseMRF
from .models._kernels import MRFArrays, gibbs_chains
from .models.factor_gibbs import (
    ZERO_PENALTY,
    gibbs_move,
    has_hard_zeros,
    higher_order_log_weights,
    softened_zero,
    unary_log_partition,
    unary_sample,
)
from .rng import _MAX_KERNEL_SEED, as_generator
from .validation import as_float_array, check_float, check_int

SCHEDULES = ("linear", "geometric", "sigmoid")


@dataclass(frozen=True)
class AISResult:
    """Outcome of :func:`ais_log_partition`.

    Attributes
    ----------
    log_partition : float
        ``log Z_0 + log mean(exp(log_weights))``: the estimate of log Z.
    log_weights : ndarray, shape (n_chains,)
        Per-chain log importance weights ``log w`` (``E[w] = Z / Z_0``).
    log_partition_start : float
        Exact ``log Z_0`` of the unary-only starting model.
    betas : ndarray, shape (n_temperatures,)
        The inverse temperatures used, from 0 to 1.
    ess : float
        Effective sample size of the normalised weights, ``(sum w)^2 / sum w^2``, in [1, n_chains].
    stderr : float
        Delta-method standard error of ``log mean(w)``: ``sd(w) / (sqrt(n_chains) mean(w))``; the
        estimate itself is biased low by about ``stderr**2 / 2`` (Jensen), negligible when stderr is small.
    """

    log_partition: float
    log_weights: np.ndarray
    log_partition_start: float
    betas: np.ndarray
    ess: float
    stderr: float

    @property
    def n_chains(self) -> int:
        """Number of AIS chains (weights)."""
        return int(self.log_weights.shape[0])


def annealing_schedule(n_temperatures: int, schedule: str | Any = "linear", *, beta_min: float = 0.01,
                       sigmoid_scale: float = 4.0) -> np.ndarray:
    """Inverse temperatures ``0 = beta_0 < ... < beta_{T-1} = 1``.

    Parameters
    ----------
    n_temperatures : int
        ``T >= 2`` (``T = 2`` is plain importance sampling from the unary-only model).
    schedule : {"linear", "geometric", "sigmoid"} or array_like
        ``"linear"``: equal steps.  ``"geometric"``: ``beta_0 = 0`` then ``T - 1`` geometrically
        spaced values from ``beta_min`` to 1 (small steps near 0).  ``"sigmoid"``: the sigmoidal
        schedule of Grosse, Maddison & Salakhutdinov (2013, Sec. 6), ``sigma(s (2 t / (T-1) - 1))``
        rescaled to [0, 1] (small steps at both ends).  An array is used as given after checking it
        starts at 0, ends at 1 and increases.
    beta_min : float
        First positive inverse temperature of the geometric schedule, in (0, 1).
    sigmoid_scale : float
        Steepness ``s > 0`` of the sigmoid schedule.
    """
    if not isinstance(schedule, str):
        betas = as_float_array(schedule, "schedule", ndim=1)
        if betas.size < 2 or betas[0] != 0.0 or betas[-1] != 1.0 or np.any(np.diff(betas) <= 0):
            raise ValueError("schedule must be an increasing array from 0 to 1 with at least 2 entries")
        return betas
    n = check_int(n_temperatures, "n_temperatures", low=2)
    if schedule == "linear":
        return np.linspace(0.0, 1.0, n)
    if schedule == "geometric":
        beta_min = check_float(beta_min, "beta_min", low=0.0, high=1.0, low_open=True, high_open=True)
        return np.concatenate([[0.0], np.geomspace(beta_min, 1.0, n - 1)]) if n > 2 else np.array([0.0, 1.0])
    if schedule == "sigmoid":
        s = check_float(sigmoid_scale, "sigmoid_scale", low=0.0, low_open=True)
        raw = expit(s * (2.0 * np.arange(n) / (n - 1) - 1.0))
        return (raw - raw[0]) / (raw[-1] - raw[0])
    raise ValueError(f"schedule must be one of {SCHEDULES} or an array of betas, got {schedule!r}")


def summarize_log_weights(log_weights: np.ndarray) -> tuple[float, float, float]:
    """``(log mean(w), ess, stderr of log mean(w))`` of importance weights given in log space."""
    lw = np.asarray(log_weights, dtype=np.float64)
    n = lw.size
    log_mean = float(logsumexp(lw) - np.log(n))
    w = np.exp(lw - lw.max())
    ess = float(w.sum() ** 2 / np.sum(w * w))
    stderr = float(np.std(w, ddof=1) / (np.sqrt(n) * w.mean())) if n > 1 else float("inf")
    return log_mean, ess, stderr


def t_multiplier(z: float, runs: int) -> float:
    """Standard errors per side for an interval at the level of ``z`` normal standard errors (each side missing with
    probability ``Phi(-z)``) when each standard error is estimated from ``runs`` independent runs or chains:
    Student's t quantile with ``runs - 1`` degrees of freedom at that tail (``z`` itself for fewer than 2 runs).
    For ``z = 3``: 9.22 with 4 runs, 4.53 with 8, 4.09 with 10, 3.17 with 100."""
    return z if runs < 2 else float(special.stdtrit(runs - 1, special.ndtr(z)))


def ais_log_partition(mrf: PairwiseMRF, n_temperatures: int = 100, n_chains: int = 100, seed: Any = None, *,
                      schedule: str | Any = "linear", n_gibbs_per_temp: int = 1) -> AISResult:
    """Estimate log Z of a pairwise MRF by annealed importance sampling from its unary-only model.

    Parameters
    ----------
    mrf : PairwiseMRF
        The target model.
    n_temperatures : int
        Number of inverse temperatures ``T >= 2`` including 0 and 1 (ignored when ``schedule`` is
        an array).
    n_chains : int
        Independent AIS chains (one weight each), >= 1.
    seed : int, Generator or None
        Randomness (SPEC 7); each chain gets its own child seed.
    schedule : {"linear", "geometric", "sigmoid"} or array_like
        See :func:`annealing_schedule`.
    n_gibbs_per_temp : int
        Gibbs sweeps at each intermediate temperature (>= 1).

    Returns
    -------
    AISResult

    Examples
    --------
    >>> from samplers.models import ising_grid
    >>> mrf = ising_grid(3, 3, coupling=0.4, field=0.1)
    >>> res = ais_log_partition(mrf, n_temperatures=50, n_chains=200, seed=0)
    >>> abs(res.log_partition - mrf.log_partition_exact()) < 4 * res.stderr
    True
    """
    if not isinstance(mrf, PairwiseMRF):
        raise TypeError(f"mrf must be a PairwiseMRF, got {type(mrf).__name__}")
    n_chains = check_int(n_chains, "n_chains", low=1)
    n_gibbs = check_int(n_gibbs_per_temp, "n_gibbs_per_temp", low=1)
    betas = annealing_schedule(n_temperatures, schedule)

    arrays = MRFArrays(mrf.log_unary, *mrf.neighbours)

    def transition(x, beta, rng):  # n_gibbs Numba sweeps of every chain at f_beta
        # One integer seed per temperature drawn from the AIS generator, one stream through all chains:
        # reseeding Numba's generator per chain (~2 us each) cost as much as the sweeps of a small model,
        # and spawning SeedSequences (as PairwiseMRF.gibbs_sample does for independent studies) 10x more.
        seeds = rng.integers(0, _MAX_KERNEL_SEED, size=1, dtype=np.int64)
        return gibbs_chains(np.ascontiguousarray(x, dtype=np.int64), arrays, float(beta), n_gibbs, 0, 1, seeds)[:, -1]

    return run_ais(mrf.sample_independent, mrf.pairwise_log_potential, transition, n_temperatures=n_temperatures,
                   n_chains=n_chains, seed=seed, schedule=betas, log_partition_start=mrf.log_partition_unary_only())


def run_ais(sample_initial: Callable[[int, np.random.Generator], Any],
            log_ratio: Callable[[Any], ArrayLike],
            transition: Callable[[Any, float, np.random.Generator], Any],
            n_temperatures: int = 100, n_chains: int = 100, seed: Any = None, *,
            schedule: str | Any = "linear", log_partition_start: float = 0.0,
            zero_weights: bool = False, final_log_ratio: Callable[[Any], ArrayLike] | None = None) -> AISResult:
    """Generic AIS along the geometric path ``log f_beta = log f_0 + beta * log_ratio`` (vectorised over chains).

    The same algorithm as :func:`ais_log_partition` (Neal 2001, Sec. 2-3) for any model, in Python:
    the callbacks work on a batch of ``n_chains`` states at once (any array-like layout).

    Parameters
    ----------
    sample_initial : callable ``(n_chains, rng) -> states``
        Exact independent draws from ``f_0 / Z_0``.
    log_ratio : callable ``states -> ndarray (n_chains,)``
        ``log f_1(x) - log f_0(x)`` for each state (finite).
    transition : callable ``(states, beta, rng) -> states``
        A Markov move leaving ``f_beta`` invariant for each chain.
    n_temperatures, n_chains, schedule
        As in :func:`ais_log_partition`.
    seed : int, Generator or None
        Randomness (SPEC 7), passed to the callbacks as one ``np.random.Generator``.
    log_partition_start : float
        ``log Z_0`` (exact), added to the estimate.
    zero_weights : bool
        Accept ``log_ratio = -inf`` (a state the target gives zero weight, e.g. a hard zero of a factor
        graph): that chain's importance weight is zero, which keeps ``E[w] = Z_1 / Z_0``.  Refused
        (``ValueError``) when every chain's weight is zero.
    final_log_ratio : callable ``states -> ndarray (n_chains,)``, optional
        ``log f_1 - log f_0`` of the target when it differs from the end of the path that ``log_ratio``
        anneals along (constraint annealing: ``log_ratio`` softens the target's zeros, this keeps them).
        Used at the last step only: the path is ``f_0 exp(beta_t log_ratio)`` for ``t < T - 1`` and ends
        at the target ``f_0 exp(final_log_ratio)``.  AIS stays unbiased (Neal 2001, Sec. 2) when
        ``final_log_ratio`` is finite only where ``log_ratio`` is.

    Returns
    -------
    AISResult
    """
    n_chains = check_int(n_chains, "n_chains", low=1)
    log_z0 = check_float(log_partition_start, "log_partition_start")
    betas = annealing_schedule(n_temperatures, schedule)
    gen = as_generator(seed)
    x = sample_initial(n_chains, gen)
    log_w = np.zeros(n_chains)
    for t in range(1, betas.size):
        ratio = _checked_ratio(_step_ratio(log_ratio, final_log_ratio, t, betas.size), x, n_chains, zero_weights)
        log_w += (betas[t] - betas[t - 1]) * ratio
        if t < betas.size - 1:
            x = transition(x, float(betas[t]), gen)
    if not np.any(np.isfinite(log_w)):
        raise ValueError(f"every one of the {n_chains} AIS chains has weight zero (each ended at a zero of the "
                         "target): the target may have Z = 0, or use more chains or temperatures")
    log_mean, ess, stderr = summarize_log_weights(log_w)
    log_w.flags.writeable = False
    return AISResult(log_partition=log_z0 + log_mean, log_weights=log_w, log_partition_start=log_z0, betas=betas,
                     ess=ess, stderr=stderr)


def _step_ratio(log_ratio: Callable, final_log_ratio: Callable | None, t: int, n_temperatures: int) -> Callable:
    """The log-ratio callback of step ``t``: ``final_log_ratio`` at the last step when given."""
    return final_log_ratio if final_log_ratio is not None and t == n_temperatures - 1 else log_ratio


def _checked_ratio(log_ratio: Callable[[Any], ArrayLike], x: Any, n: int, zero_weights: bool) -> np.ndarray:
    """``log_ratio(x)`` as ``n`` floats, finite (or ``-inf`` when ``zero_weights``), else ``ValueError``."""
    ratio = np.asarray(log_ratio(x), dtype=np.float64)
    ok = (np.isfinite(ratio) | (ratio == -np.inf)) if zero_weights else np.isfinite(ratio)
    if ratio.shape != (n,) or not np.all(ok):
        raise ValueError(f"log_ratio must return {n} finite values{' (or -inf)' if zero_weights else ''}, "
                         f"got shape {ratio.shape}")
    return ratio


def run_reverse_ais(target_states: Any,
                    log_ratio: Callable[[Any], ArrayLike],
                    transition: Callable[[Any, float, np.random.Generator], Any],
                    n_temperatures: int = 100, seed: Any = None, *,
                    schedule: str | Any = "linear", log_partition_start: float = 0.0) -> AISResult:
    """Reverse AIS from draws of the target ``f_1 / Z_1``: a stochastic upper bound on ``log Z_1``.

    The reverse of :func:`run_ais` (Grosse et al. 2015, Sec. 4; RAISE): with ``x`` distributed as
    ``f_1 / Z_1``, for ``t = T-1, ..., 1`` accumulate ``log w += (beta_{t-1} - beta_t) * log_ratio(x)`` and
    then move ``x`` with a transition leaving ``f_{beta_{t-1}}`` invariant.  ``E[w] = Z_0 / Z_1``, so
    ``log Z_0 - log mean(w)`` is at least ``log Z_1`` in expectation (Jensen) when the starting states
    are exact draws; with approximate draws (e.g. MCMC output) the bound holds only approximately.

    Parameters
    ----------
    target_states
        A batch of states drawn from ``f_1 / Z_1`` (any layout the callbacks accept); its size is the
        number of chains, taken from ``log_ratio(target_states)``.
    log_ratio, transition, n_temperatures, schedule, seed, log_partition_start
        As in :func:`run_ais`.

    Returns
    -------
    AISResult
        ``log_partition`` is the upper estimate ``log Z_0 - log mean(w)``; ``log_weights`` are the reverse
        log weights (``log w``, estimating ``Z_0 / Z_1``); ``stderr`` is the delta-method standard error.
    """
    log_z0 = check_float(log_partition_start, "log_partition_start")
    betas = annealing_schedule(n_temperatures, schedule)
    gen = as_generator(seed)
    x = target_states
    log_w: np.ndarray | None = None
    for t in range(betas.size - 1, 0, -1):
        ratio = np.asarray(log_ratio(x), dtype=np.float64)
        if log_w is None:
            if ratio.ndim != 1 or ratio.size < 1:
                raise ValueError("log_ratio must return one finite value per target state")
            log_w = np.zeros(ratio.size)
        if ratio.shape != log_w.shape or not np.all(np.isfinite(ratio)):
            raise ValueError(f"log_ratio must return {log_w.size} finite values, got shape {ratio.shape}")
        log_w += (betas[t - 1] - betas[t]) * ratio
        if t > 1:
            x = transition(x, float(betas[t - 1]), gen)
    assert log_w is not None  # annealing_schedule gives at least two temperatures, so the loop ran
    log_mean, ess, stderr = summarize_log_weights(log_w)
    log_w.flags.writeable = False
    return AISResult(log_partition=log_z0 - log_mean, log_weights=log_w, log_partition_start=log_z0, betas=betas,
                     ess=ess, stderr=stderr)


@dataclass(frozen=True)
class BidirectionalResult:
    """Forward (lower) and reverse (upper) AIS estimates of one ``log Z`` (:func:`run_bidirectional_ais`).

    ``interval(z)`` is ``[forward - z se_f, reverse + z se_r]``, each ``z`` read as the t quantile of the chains
    at the same tail (:func:`t_multiplier`: the standard errors are estimated from the chains): with exact reverse
    starts each side misses with probability about ``Phi(-z)`` under the normal approximation of ``log mean(w)``,
    and less because the bias of both estimates points outwards (``z = 3``: at most about 0.27% in all).
    """

    forward: AISResult
    reverse: AISResult

    @property
    def gap(self) -> float:
        """``reverse - forward``: how far apart the two bounds are (0 when AIS has converged)."""
        return float(self.reverse.log_partition - self.forward.log_partition)

    def interval(self, z: float = 3.0) -> tuple[float, float]:
        """``(lower, upper)`` widened on each side by the t quantile of its chains at the tail of ``z`` normal
        standard errors (:func:`t_multiplier`)."""
        z = check_float(z, "z", low=0.0)
        lo = self.forward.log_partition - t_multiplier(z, self.forward.log_weights.size) * self.forward.stderr
        hi = self.reverse.log_partition + t_multiplier(z, self.reverse.log_weights.size) * self.reverse.stderr
        return float(min(lo, hi)), float(max(lo, hi))

    @property
    def midpoint(self) -> float:
        """Mean of the forward and reverse estimates of ``log Z``."""
        return 0.5 * float(self.forward.log_partition + self.reverse.log_partition)


def run_bidirectional_ais(sample_initial: Callable[[int, np.random.Generator], Any],
                          log_ratio: Callable[[Any], ArrayLike],
                          transition: Callable[[Any, float, np.random.Generator], Any],
                          n_temperatures: int = 100, n_chains: int = 100, seed: Any = None, *,
                          schedule: str | Any = "linear", log_partition_start: float = 0.0,
                          target_states: Any = None, burn_in: int = 10) -> BidirectionalResult:
    """Forward AIS (:func:`run_ais`) and reverse AIS (:func:`run_reverse_ais`) for the same ``log Z_1``.

    Bidirectional Monte Carlo (Grosse et al. 2015).  The reverse chains start from ``target_states``
    when given (exact target draws make the upper bound exact in expectation), else from the forward
    chains' final states moved ``burn_in`` more times at ``beta = 1`` (approximate draws of the
    target, as RAISE starts from the model's own samples).

    Parameters
    ----------
    sample_initial, log_ratio, transition, n_temperatures, n_chains, seed, schedule, log_partition_start
        As in :func:`run_ais`.
    target_states : optional
        Exact draws of ``f_1 / Z_1`` to start the reverse chains.
    burn_in : int
        Transitions at ``beta = 1`` applied to the forward end states before reversing (>= 0).

    Returns
    -------
    BidirectionalResult
    """
    burn_in = check_int(burn_in, "burn_in", low=0)
    gen = as_generator(seed)
    final: list = []

    def keep_last(x, beta, rng):
        new = transition(x, beta, rng)
        final[:] = [new]
        return new

    def start(n, rng):
        x = sample_initial(n, rng)
        final[:] = [x]
        return x

    forward = run_ais(start, log_ratio, keep_last, n_temperatures=n_temperatures, n_chains=n_chains, seed=gen,
                      schedule=schedule, log_partition_start=log_partition_start)
    if target_states is None:
        x = final[0]
        for _ in range(burn_in):
            x = transition(x, 1.0, gen)
        target_states = x
    reverse = run_reverse_ais(target_states, log_ratio, transition, n_temperatures=n_temperatures, seed=gen,
                              schedule=schedule, log_partition_start=log_partition_start)
    return BidirectionalResult(forward, reverse)


def _factor_graph_path(fg: FactorGraph, zero_penalty: float) -> dict[str, Any]:
    """The callbacks of the constraint-annealing path of a factor graph (:func:`ais_factor_graph`)."""
    if not isinstance(fg, FactorGraph):
        raise TypeError(f"fg must be a FactorGraph, got {type(fg).__name__}")
    zero_as = softened_zero(fg, zero_penalty)
    if not has_hard_zeros(fg):  # nothing to soften: the plain geometric path, no separate last step
        zero_as = -np.inf
    path = {"log_ratio": lambda x: higher_order_log_weights(fg, x, zero_as),
            "transition": lambda x, beta, gen: gibbs_move(fg, x, beta, gen, zero_as),
            "log_partition_start": unary_log_partition(fg), "zero_weights": True}
    if zero_as > -np.inf:
        path["final_log_ratio"] = lambda x: higher_order_log_weights(fg, x)
    return path


def ais_factor_graph(fg: FactorGraph, n_temperatures: int = 100, n_chains: int = 100, seed: Any = None, *,
                     schedule: str | Any = "linear",
                     zero_penalty: float = ZERO_PENALTY) -> tuple[AISResult, np.ndarray]:
    """AIS for ``log Z`` of a factor graph, from its unary-only model (Neal 2001), by :func:`run_ais`.

    The path is ``log f_t = unary + constants + beta_t * soft(x)``, where ``soft`` sums the factors of
    arity >= 2 with each zero (``-inf``) entry counted as ``zero_as`` = the smallest finite log entry minus
    ``zero_penalty`` nats (:func:`samplers.models.factor_gibbs.softened_zero`): **constraint annealing**,
    whose penalty ``beta_t |zero_as|`` per violated zero rises from 0 at the tractable start to
    ``|zero_as|``, and whose last step goes to the target itself (penalty infinite).  ``f_0`` is sampled
    exactly (:func:`samplers.models.factor_gibbs.unary_sample`), the moves are Numba Gibbs sweeps of
    ``f_t`` over the flat factor bundle (:func:`samplers.models.factor_gibbs.gibbs_move`), and a chain
    that still violates a zero at the end gets weight zero.  Every ``f_t`` is positive wherever the
    target is, so AIS stays unbiased for ``Z`` (Neal 2001, Sec. 2); the softening only keeps the chains
    free to move into the support on tightly constrained models, where the plain path (zeros kept at
    every ``beta > 0``) loses almost every chain drawn from ``f_0``.  Without zeros in factors of arity
    >= 2 the path is the plain geometric one.

    Parameters
    ----------
    fg : FactorGraph
        The model (condition it on evidence first: :meth:`FactorGraph.condition`).
    n_temperatures, n_chains, seed, schedule
        As in :func:`ais_log_partition`.
    zero_penalty : float
        Nats (> 0) a violated zero costs below the smallest finite entry at ``beta = 1`` of the softened path.

    Returns
    -------
    (AISResult, ndarray (n_chains, n_vars))
        The estimate and the chains' final states (properly weighted by ``exp(log_weights)``).

    Raises
    ------
    ValueError
        When every chain ends at a zero of the model (``Z = 0``, or too few chains / temperatures).
    """
    path = _factor_graph_path(fg, zero_penalty)
    last: list = []
    move = path.pop("transition")

    def initial(n, gen):
        last[:] = [unary_sample(fg, n, gen)]
        return last[0]

    def keep_last(x, beta, gen):
        last[:] = [move(x, beta, gen)]
        return last[0]

    res = run_ais(initial, transition=keep_last, n_temperatures=n_temperatures, n_chains=n_chains, seed=seed,
                  schedule=schedule, **path)
    return res, last[0]


@dataclass(frozen=True)
class SMCResult:
    """Outcome of :func:`run_annealed_smc`.

    Attributes
    ----------
    log_partition : float
        ``log`` of the mean of the groups' normaliser estimates (each unbiased for ``Z_1``).
    stderr : float
        Delta-method standard error of ``log_partition`` from the spread of the independent groups'
        estimates, ``sd(Z_g) / (sqrt(G) mean(Z_g))``.
    group_log_partitions : ndarray (n_groups,)
        Each independent particle system's ``log Z`` estimate.
    n_resamples : int
        Resampling steps summed over the groups.
    betas : ndarray
        The inverse temperatures.
    """

    log_partition: float
    stderr: float
    group_log_partitions: np.ndarray
    n_resamples: int
    betas: np.ndarray


def _systematic_resample(log_w: np.ndarray, gen: np.random.Generator) -> np.ndarray:
    w = np.exp(log_w - log_w.max())
    cdf = np.cumsum(w / w.sum())
    u = (gen.random() + np.arange(log_w.size)) / log_w.size
    return np.minimum(np.searchsorted(cdf, u), log_w.size - 1)


def run_annealed_smc(sample_initial: Callable[[int, np.random.Generator], np.ndarray],
                     log_ratio: Callable[[np.ndarray], np.ndarray],
                     transition: Callable[[np.ndarray, float, np.random.Generator], np.ndarray],
                     n_temperatures: int = 100, n_particles: int = 100, seed: Any = None, *,
                     schedule: str | Any = "linear", log_partition_start: float = 0.0, n_groups: int = 4,
                     ess_threshold: float = 0.5, zero_weights: bool = False,
                     final_log_ratio: Callable[[np.ndarray], np.ndarray] | None = None) -> SMCResult:
    """Annealed SMC (Del Moral, Doucet & Jasra 2006): AIS along the same path as :func:`run_ais`, with
    systematic resampling whenever a group's effective sample size falls below ``ess_threshold`` times
    its size.

    Each of ``n_groups`` independent particle systems of ``n_particles`` particles gives the unbiased
    normaliser estimate ``Z_0 prod_k mean_k(w)`` (the product over resampling epochs of the mean
    incremental weight, Del Moral 2004); ``log_partition`` is the log of their mean and ``stderr`` its
    delta-method standard error from their spread.  States are arrays with one row per particle
    (``n_groups * n_particles`` rows, group after group).

    Parameters
    ----------
    sample_initial, log_ratio, transition, n_temperatures, schedule, log_partition_start, zero_weights
        As in :func:`run_ais` (``zero_weights``: ``-inf`` ratios are zero weights; such particles die at
        the next resampling).
    final_log_ratio : callable, optional
        As in :func:`run_ais`: the target's log ratio, used at the last step only.
    n_particles : int
        Particles per group (>= 2).
    seed : int, Generator or None
        Randomness (SPEC 7).
    n_groups : int
        Independent particle systems (>= 2), for the standard error.
    ess_threshold : float
        Resample a group when its ESS is below ``ess_threshold * n_particles`` (0 < ... <= 1).

    Returns
    -------
    SMCResult
    """
    n_particles = check_int(n_particles, "n_particles", low=2)
    n_groups = check_int(n_groups, "n_groups", low=2)
    ess_threshold = check_float(ess_threshold, "ess_threshold", low=0.0, high=1.0, low_open=True)
    log_z0 = check_float(log_partition_start, "log_partition_start")
    betas = annealing_schedule(n_temperatures, schedule)
    gen = as_generator(seed)
    total = n_groups * n_particles
    x = sample_initial(total, gen)
    log_w = np.zeros((n_groups, n_particles))
    log_z = np.zeros(n_groups)
    resamples = 0
    for t in range(1, betas.size):
        ratio = _checked_ratio(_step_ratio(log_ratio, final_log_ratio, t, betas.size), x, total, zero_weights)
        log_w += (betas[t] - betas[t - 1]) * ratio.reshape(n_groups, n_particles)
        if np.any(np.all(log_w == -np.inf, axis=1)):
            raise ValueError("every particle of an SMC group has weight zero (each met a zero of the target): the "
                             "target may have Z = 0, or use more particles or temperatures")
        if t == betas.size - 1:
            break
        index = np.arange(total)
        for g in range(n_groups):
            w = np.exp(log_w[g] - log_w[g].max())
            if w.sum() ** 2 / np.sum(w * w) < ess_threshold * n_particles:
                log_z[g] += float(logsumexp(log_w[g]) - np.log(n_particles))
                index[g * n_particles:(g + 1) * n_particles] = g * n_particles + _systematic_resample(log_w[g], gen)
                log_w[g] = 0.0
                resamples += 1
        x = transition(x[index], float(betas[t]), gen)
    log_z += logsumexp(log_w, axis=1) - np.log(n_particles)
    log_mean, _, stderr = summarize_log_weights(log_z)
    return SMCResult(log_partition=log_z0 + log_mean, stderr=stderr, group_log_partitions=log_z0 + log_z,
                     n_resamples=resamples, betas=betas)


def smc_factor_graph(fg: FactorGraph, n_temperatures: int = 100, n_particles: int = 100, seed: Any = None, *,
                     schedule: str | Any = "linear", n_groups: int = 4,
                     zero_penalty: float = ZERO_PENALTY) -> SMCResult:
    """Annealed SMC (:func:`run_annealed_smc`) for ``log Z`` of a factor graph, along the constraint-annealing
    path and with the Gibbs moves of :func:`ais_factor_graph`; ``n_groups`` independent systems of
    ``n_particles``.  ``ValueError`` when every particle of a group ends at a zero of the model."""
    path = _factor_graph_path(fg, zero_penalty)
    return run_annealed_smc(lambda n, gen: unary_sample(fg, n, gen), n_temperatures=n_temperatures,
                            n_particles=n_particles, seed=seed, schedule=schedule, n_groups=n_groups, **path)
