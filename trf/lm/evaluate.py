"""Evaluation of sentence TRF LMs: AIS checks of the normalisers, interpolation, rescoring speed.

* :func:`ais_log_z` -- AIS estimate of ``log Z_j`` at a fixed length (Sec. 7, "separate" AIS): the
  base is the model's own unigram part (:func:`unigram_base`: independent words, exact draws and
  normaliser; only the n-gram features of order >= 2 are annealed) or, as in the paper, the uniform law
  over ``V^j`` sentences (``log Z_0 = j log V``); the transitions are class-based Markov moves without
  jumps at the intermediate parameters (via :func:`samplers.ais.run_ais`).
* :func:`smooth_log_z` -- linear regression of the separate estimates over lengths ("Sep Sm AIS").
* :func:`ais_global` -- AIS over the trans-dimensional space for the single normaliser of model (3)
  given the AugSA zeta ("Global AIS"): base ``pi_j V^-j`` (normaliser 1), target
  ``pi_j exp(lambda . f - zeta_j - log Z_1)``; its log is 0 when the AugSA zeta are self-consistent.
* :func:`check_normalisers` -- every ``log Z_j`` checked from both sides: forward AIS (a stochastic lower
  bound) and reverse AIS started from the model's own samples (an approximate stochastic upper bound,
  Grosse et al. 2015 / RAISE) give an interval per length; the exact sum over ``V^j`` sentences replaces
  both when it is small; sequential Monte Carlo (:mod:`trf.lm.smc`) estimates every length as well and finds the
  high-weight sentences that AIS chains miss, and conditional SMC from its draws gives the matching upper side.
  :class:`NormaliserCheck` turns it into a perplexity interval and
  flags lengths where AugSA's ``zeta_j + log Z_1`` is outside the interval by more than a margin.
* :func:`interpolate_linear` / :func:`interpolate_loglinear` -- combine sentence log-probabilities
  with another model's (the linear mixture stays normalised; the log-linear one does not and is for
  rescoring only).
* :func:`scoring_speed` -- sentences per second of ``log_prob`` on one core (n-best rescoring).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from scipy.special import logsumexp

from samplers.ais import run_ais, run_bidirectional_ais
from samplers.rng import kernel_seed
from samplers.validation import as_float_array, check_float, check_int
from trf.lm.corpus import EncodedCorpus
from trf.lm.model import SentenceTRF, unigram_base
from trf.lm.smc import conditional_smc_log_z, smc_log_z
from trf.lm.transms import ChainState, SentenceSampler
from trf.ngram import perplexity

__all__ = ["check_normalisers", "NormaliserCheck", "headline_perplexity", "interval_is_inconclusive", "exact_log_z", "ais_log_z", "unigram_base", "smooth_log_z", "ais_global", "ais_check", "interpolate_linear", "interpolate_loglinear",
           "log_prob_with_log_z", "tune_linear_weight", "scoring_speed"]


def _states_corpus(state: ChainState) -> EncodedCorpus:
    lengths = state.lengths
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    mask = np.arange(state.tokens.shape[1])[None, :] < lengths[:, None]
    return EncodedCorpus(state.tokens[mask].astype(np.int32), offsets.astype(np.int64))


AIS_BASES = ("unigram", "uniform")


def _fixed_length_ais(model: SentenceTRF, sampler: SentenceSampler, j: int, sweeps: int, parallel: bool,
                      base: str = "unigram"):
    """The AIS pieces for ``log Z_j``: the base law, the log ratio ``lambda . f - log f_0`` and ``sweeps``
    TransMS sweeps at fixed length under the intermediate parameters; also ``log Z_0``.

    ``base="uniform"``: uniform sentences of length ``j`` (``log Z_0 = j log V``), intermediate parameters
    ``beta lambda``.  ``base="unigram"`` (:func:`unigram_base`): independent words from ``softmax(u)``,
    intermediate parameters ``lambda`` on the unigram features and ``beta lambda`` elsewhere (the geometric
    path between the two, since ``log f_0 = u . f``)."""
    if base not in AIS_BASES:
        raise ValueError(f"base must be one of {AIS_BASES}, got {base!r}")
    feats = model.features
    V = feats.n_words
    flat = np.zeros(sampler.m)
    if base == "uniform":
        u, is_unigram = np.zeros(V), np.zeros(feats.n_features, dtype=bool)
    else:
        u, is_unigram = unigram_base(model)
    log_z_word = float(logsumexp(u))
    cdf = np.cumsum(np.exp(u - log_z_word))
    cdf /= cdf[-1]
    held = np.where(is_unigram, model.lam, 0.0)
    annealed = np.where(is_unigram, 0.0, model.lam)

    def initial(n, rng):
        tokens = np.zeros((n, sampler.m), dtype=np.int64)
        tokens[:, :j] = np.minimum(np.searchsorted(cdf, rng.random((n, j)), side="right"), V - 1)
        return ChainState(tokens, np.full(n, j, dtype=np.int64))

    def log_ratio(state):
        return feats.scores(_states_corpus(state), model.lam) - u[state.tokens[:, :j]].sum(axis=1)

    def transition(state, beta, rng):
        new, _, _, _ = sampler.run(held + beta * annealed, flat, state, sweeps, kernel_seed(rng),
                                   parallel=parallel, jump=False)
        return new

    return initial, log_ratio, transition, j * log_z_word


def ais_log_z(model: SentenceTRF, j: int, *, n_temperatures: int = 1000, n_chains: int = 10, seed=None,
              sweeps: int = 1, parallel: bool = False, base: str = "unigram"):
    """AIS estimate of ``log Z_j(lambda)`` (an :class:`samplers.ais.AISResult`) from ``base`` ("unigram":
    :func:`unigram_base`, or "uniform")."""
    j = check_int(j, "j", low=1, high=model.m)
    sweeps = check_int(sweeps, "sweeps", low=1)
    sampler = SentenceSampler(model.features, max(model.m, j))
    return _forward_log_z(model, sampler, j, n_temperatures, n_chains, seed, parallel, base, sweeps)


EXACT_LIMIT = 200_000  # enumerate V^j sentences for the exact log Z_j up to this many


def exact_log_z(model: SentenceTRF, j: int, limit: int = EXACT_LIMIT) -> float:
    """Exact ``log Z_j(lambda)`` by summing ``exp(lambda . f)`` over all ``V^j`` sentences (ValueError when
    ``V^j > limit``)."""
    j = check_int(j, "j", low=1)
    V = model.features.n_words
    if V ** j > limit:
        raise ValueError(f"V^j = {V}^{j} sentences exceed the enumeration limit {limit}")
    total = V ** j
    tokens = np.stack(np.unravel_index(np.arange(total), (V,) * j), axis=1).astype(np.int32).ravel()
    corpus = EncodedCorpus(tokens, np.arange(0, total * j + 1, j, dtype=np.int64))
    return float(logsumexp(model.features.scores(corpus, model.lam)))


def _forward_log_z(model: SentenceTRF, sampler: SentenceSampler, j: int, n_temperatures: int, n_chains: int,
                   seed, parallel: bool, base: str = "unigram", sweeps: int = 1):
    """Forward AIS alone for ``log Z_j`` with a given sampler (:func:`ais_log_z`; the check's half run)."""
    initial, log_ratio, transition, log_z0 = _fixed_length_ais(model, sampler, j, sweeps, parallel, base)
    return run_ais(initial, log_ratio, transition, n_temperatures=n_temperatures, n_chains=n_chains, seed=seed,
                   log_partition_start=log_z0)


def _bdmc_log_z(model: SentenceTRF, sampler: SentenceSampler, j: int, n_temperatures: int, n_chains: int, seed,
                burn_in: int, parallel: bool, base: str = "unigram", reverse_starts: np.ndarray | None = None):
    """Forward and reverse AIS for ``log Z_j`` (:func:`samplers.ais.run_bidirectional_ais`); the reverse chains
    start from ``reverse_starts`` (``(n_chains, j)`` sentences) when given, else from the forward end states."""
    initial, log_ratio, transition, log_z0 = _fixed_length_ais(model, sampler, j, 1, parallel, base)
    target = None
    if reverse_starts is not None:
        tokens = np.zeros((reverse_starts.shape[0], sampler.m), dtype=np.int64)
        tokens[:, :j] = reverse_starts
        target = ChainState(tokens, np.full(reverse_starts.shape[0], j, dtype=np.int64))
    return run_bidirectional_ais(initial, log_ratio, transition, n_temperatures=n_temperatures, n_chains=n_chains,
                                 seed=seed, log_partition_start=log_z0, burn_in=burn_in, target_states=target)


@dataclass
class NormaliserCheck:
    """``log Z_j`` checked from both sides for the lengths ``lengths`` (:func:`check_normalisers`).

    Attributes
    ----------
    lengths : ndarray of int
    method : list of str
        ``"exact"`` (enumeration) or ``"bdmc"`` (forward + reverse AIS) per length.
    forward, reverse : ndarray
        Forward (lower) and reverse (upper) AIS estimates of ``log Z_j`` (both the exact value when exact).
    lower, upper : ndarray
        The interval ``[forward - z se_f, reverse + z se_r]`` per length.
    augsa : ndarray
        AugSA's ``zeta_j + log Z_1`` at the same lengths.
    margin : float
        Nats by which AugSA may leave the interval before it is flagged.
    temperatures : ndarray of int
        AIS temperatures used at each length (0 where exact).
    n_chains : int
    seconds : float
    base : str
        The AIS base law (:func:`unigram_base` or uniform).
    forward_se, reverse_se : ndarray, optional
        Standard errors of the forward and reverse estimates (0 where exact).
    forward_half, forward_half_se : ndarray, optional
        A second, independent forward AIS run with half the temperatures (``ceil(T_j / 2)``) and its standard
        error (the exact value and 0 where exact); see :attr:`still_rising`.
    forward_ess : ndarray, optional
        Effective sample size of the forward AIS weights, in ``[1, n_chains]`` (``n_chains`` where exact); see
        :attr:`degenerate`.
    smc, smc_se, smc_spread : ndarray, optional
        Sequential Monte Carlo estimate of ``log Z_j`` (:func:`trf.lm.smc.smc_log_z`: the model's own local law as
        proposal, unbiased for ``Z_j`` like forward AIS), its delta-method standard error and the standard
        deviation of ``log Z-hat_j`` over the independent replicates (the exact value, 0 and 0 where exact).
        See :attr:`ais_missed` and :attr:`unsettled`.
    smc_particles, smc_replicates : int
        Particles per SMC run and runs (0 when no SMC was run).
    csmc, csmc_se, csmc_spread : ndarray, optional
        Conditional SMC estimate of ``log Z_j`` (:func:`trf.lm.smc.conditional_smc_log_z`, runs pinned to SMC draws:
        an upper bound in expectation as far as those are exact draws), its delta-method standard error and the
        spread of its runs; NaN at lengths where it was not run (SMC unsettled), the exact value where exact.
        See :attr:`csmc_failed`.
    csmc_particles : ndarray of int, optional
        Particles per conditional run at each length (0 where none was run).
    csmc_runs : int
        Conditional runs per length (0 when none was run).
    """

    lengths: np.ndarray
    method: list
    forward: np.ndarray
    reverse: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    augsa: np.ndarray
    margin: float
    z: float
    temperatures: np.ndarray
    n_chains: int
    seconds: float
    m_total: int = 0
    notes: list = field(default_factory=list)
    base: str = "unigram"
    forward_se: np.ndarray | None = None
    reverse_se: np.ndarray | None = None
    forward_half: np.ndarray | None = None
    forward_half_se: np.ndarray | None = None
    forward_ess: np.ndarray | None = None
    smc: np.ndarray | None = None
    smc_se: np.ndarray | None = None
    smc_spread: np.ndarray | None = None
    smc_particles: int = 0
    smc_replicates: int = 0
    csmc: np.ndarray | None = None
    csmc_se: np.ndarray | None = None
    csmc_spread: np.ndarray | None = None
    csmc_particles: np.ndarray | None = None
    csmc_runs: int = 0

    MIN_ESS_FRACTION = 0.2
    MAX_SMC_SPREAD = 1.0
    """Nats of spread of the SMC replicates' ``log Z-hat_j`` above which a length is :attr:`unsettled`."""

    @property
    def ais_missed(self) -> np.ndarray:
        """Lengths where the SMC estimate lies above forward AIS by more than ``z`` standard errors each.

        Both are unbiased for ``Z_j``, so the lower of the two errs low: AIS has missed probability mass there --
        sentences of high weight that its fixed-length Gibbs chains never reach (fortunes: two-word sentences
        like "errico malatesta", 68% of the exact ``Z_2``, that 900 s of AIS put 5.7 nats below the exact
        ``log Z_2``).  The checked value takes the SMC estimate there."""
        if self.smc is None:
            return self.lengths[:0]
        fse = np.zeros_like(self.forward) if self.forward_se is None else self.forward_se
        return self.lengths[self.smc - self.z * self.smc_se > self.forward + self.z * fse]

    def missed_warning(self) -> str | None:
        """A one-line warning naming the lengths where AIS missed probability mass (:attr:`ais_missed`)."""
        missed = self.ais_missed
        if missed.size == 0:
            return None
        worst = self._worst(missed, self.smc - self.forward)
        return (f"forward AIS missed probability mass at {self._which(missed)}: the SMC estimate of log Z_j (also "
                f"unbiased for Z_j) lies above it by more than {self.z:g} standard errors each; worst at length "
                f"{self.lengths[worst]}: SMC {self.smc[worst]:.2f} +- {self.smc_se[worst]:.2f}, AIS "
                f"{self.forward[worst]:.2f}.  The model gives high weight to sentences that the AIS chains "
                "never reach; the checked normalisers take the SMC estimate there")

    @property
    def unsettled(self) -> np.ndarray:
        """Lengths where the SMC replicates' ``log Z-hat_j`` spread more than :attr:`MAX_SMC_SPREAD` nats: the
        particles have not settled, rare high-weight sentences decide the estimate, and ``log Z_j`` is likely
        higher still (for log-normal estimates each run falls short by about ``spread^2 / 2``)."""
        if self.smc_spread is None:
            return self.lengths[:0]
        return self.lengths[self.smc_spread > self.MAX_SMC_SPREAD]

    @property
    def smc_covered(self) -> np.ndarray:
        """Lengths whose checked value is a settled SMC estimate (spread at most :attr:`MAX_SMC_SPREAD`, at or
        above the AIS midpoint): degenerate AIS weights there do not make the check inconclusive, since the
        checked value does not rest on AIS."""
        if self.smc is None:
            return self.lengths[:0]
        covered = (self.smc_spread <= self.MAX_SMC_SPREAD) & (
            self._bracketed_mask | (self.smc >= self._ais_checked))
        return self.lengths[covered & np.array([m != "exact" for m in self.method])]

    def unsettled_warning(self) -> str | None:
        """A one-line warning naming the lengths where SMC has not settled (:attr:`unsettled`)."""
        bad = self.unsettled
        if bad.size == 0:
            return None
        worst = self._worst(bad, self.smc_spread)
        return (f"the SMC estimates have not settled at {self._which(bad)}: its {self.smc_replicates} runs of "
                f"{self.smc_particles} particles spread by more than {self.MAX_SMC_SPREAD:g} nats (worst: length "
                f"{self.lengths[worst]}, {self.smc_spread[worst]:.2f} nats).  log Z_j is likely higher than the "
                "interval there and the perplexity above its high end; raise --check-particles")

    def _which(self, subset: np.ndarray) -> str:
        """``"K of N lengths (j1, j2, ...)"`` for a warning, at most ten lengths named."""
        named = ", ".join(map(str, subset[:10])) + (", ..." if subset.size > 10 else "")
        return f"{subset.size} of {self.lengths.size} lengths ({named})"

    def _worst(self, subset: np.ndarray, score: np.ndarray) -> int:
        """Index (into :attr:`lengths`) of the length of ``subset`` with the largest ``score``, for a warning."""
        return int(np.argmax(np.where(np.isin(self.lengths, subset), score, -np.inf)))

    @property
    def degenerate(self) -> np.ndarray:
        """Lengths where the forward weights' effective sample size is below ``MIN_ESS_FRACTION`` (20%) of the
        chains: a few chains carry the estimate, and its delta-method standard error is no measure of its
        error (with one dominant chain out of ``n`` it saturates near ``sqrt((n - 1) / n)``, about 1 nat,
        whatever the true spread: fortunes at the default budget, every long length).  For log-normal
        weights ``ESS / n ~ exp(-var log w)``, so 20% means a log-weight variance above 1.6."""
        if self.forward_ess is None:
            return self.lengths[:0]
        return self.lengths[self.forward_ess < self.MIN_ESS_FRACTION * self.n_chains]

    def degenerate_warning(self) -> str | None:
        """A one-line warning naming the lengths with degenerate forward weights (:attr:`degenerate`)."""
        bad = self.degenerate
        if bad.size == 0:
            return None
        worst = int(np.argmin(self.forward_ess))
        return (f"the forward AIS weights are degenerate at {self._which(bad)}: effective sample size "
                f"below {100 * self.MIN_ESS_FRACTION:g}% of the {self.n_chains} chains (worst: length "
                f"{self.lengths[worst]}, ESS {self.forward_ess[worst]:.2f}).  A few chains carry those estimates and "
                "their standard errors do not measure their error, so the interval and the rise test are not "
                "reliable there; raise --check-seconds (temperatures) or --check-chains" + self._covered_note(bad))

    def _covered_note(self, bad: np.ndarray) -> str:
        covered = np.intersect1d(bad, self.smc_covered)
        if covered.size == 0:
            return ""
        return (f".  At {covered.size} of them the checked value is a settled SMC estimate, which does not rest on "
                "AIS")

    @property
    def rise(self) -> np.ndarray:
        """``forward - forward_half`` per length: what doubling the temperatures added to forward AIS (0 when
        no half run was made)."""
        if self.forward_half is None:
            return np.zeros_like(self.forward)
        return self.forward - self.forward_half

    @property
    def still_rising(self) -> np.ndarray:
        """Lengths where forward AIS rose from ``T_j / 2`` to ``T_j`` temperatures by more than ``z`` standard
        errors of the difference: AIS has not converged there.

        Forward AIS underestimates ``log Z_j`` (Jensen) by a bias that shrinks as temperatures are added --
        asymptotically like ``1/T`` (the log-weight variance does), so the bias left at ``T`` is then about as
        large as the rise from ``T/2`` -- and a significant rise means that the check's interval is likely
        too low, the perplexity likely above its high end.  Reverse AIS from approximate samples cannot
        show this (:attr:`reverse_failed`); this test needs only forward runs, unbiased for ``Z_j``."""
        if self.forward_half is None or self.forward_se is None or self.forward_half_se is None:
            return self.lengths[:0]
        se = np.hypot(self.forward_se, self.forward_half_se)
        return self.lengths[self.rise > self.z * se]

    @property
    def extrapolated(self) -> np.ndarray:
        """``log Z_j`` with the rise added where AIS is still rising (``2 forward - forward_half``), else the
        checked value: a first-order (``1/T``-bias) extrapolation -- an estimate under that assumption, not
        a bound.  Lengths whose checked value is the SMC bracket (:attr:`csmc_bracketed`) keep it: it does not rest
        on AIS, and a few-temperature AIS rise is noise next to it."""
        rising = np.isin(self.lengths, self.still_rising) & ~self._bracketed_mask
        return np.where(rising, np.maximum(self.checked, self.forward + self.rise), self.checked)

    def rising_warning(self) -> str | None:
        """A one-line warning naming the lengths where forward AIS is still rising (:attr:`still_rising`)."""
        rising = self.still_rising
        if rising.size == 0:
            return None
        worst = self._worst(rising, self.rise)
        half = (self.temperatures[worst] + 1) // 2
        return (f"forward AIS is still rising with temperatures at {self._which(rising)}: doubling the "
                f"temperatures added more than {self.z:g} standard errors; worst at length {self.lengths[worst]}: "
                f"{self.forward_half[worst]:.2f} with {half} temperatures, {self.forward[worst]:.2f} with "
                f"{self.temperatures[worst]} (+{self.rise[worst]:.2f} nats).  AIS has not converged there: "
                "log Z_j is likely underestimated by about as much again, and the perplexity likely lies above "
                "the interval's high end; raise --check-seconds" + self._covered_note(rising))

    @property
    def reverse_failed(self) -> np.ndarray:
        """Lengths where the forward estimate lies above the reverse one beyond ``z`` standard errors each.

        Forward AIS from an exactly drawn base is unbiased for ``Z_j`` (an estimate exceeds ``log Z_j`` by
        ``a`` nats with probability at most ``e^-a``); reverse AIS bounds ``log Z_j`` from above only when its
        chains start from exact draws of the model.  Started from TransMS samples that have not reached the
        model (long sentences, large models), the reverse estimate can come out far below; there the
        interval's upper end is no upper bound."""
        if self.forward_se is None or self.reverse_se is None:
            return self.lengths[:0]
        crossed = self.forward - self.z * self.forward_se > self.reverse + self.z * self.reverse_se
        return self.lengths[crossed]

    def bracket_warning(self) -> str | None:
        """A one-line warning naming the lengths where the reverse estimate failed (:attr:`reverse_failed`)."""
        failed = self.reverse_failed
        if failed.size == 0:
            return None
        worst = self._worst(failed, self.forward - self.reverse)
        return (f"at {self._which(failed)} the forward AIS estimate of log Z_j (unbiased for Z_j) "
                f"lies above the reverse one by more than {self.z:g} standard errors each; worst at length "
                f"{self.lengths[worst]}: forward {self.forward[worst]:.2f} +- {self.forward_se[worst]:.2f}, reverse "
                f"{self.reverse[worst]:.2f} +- {self.reverse_se[worst]:.2f}.  The reverse chains started from "
                "approximate samples (TransMS end states, or SMC draws) that had not reached the model, so the interval's high end is no upper bound there and "
                "the perplexity may be above it; more temperatures (--check-seconds) raise the forward estimates")

    @property
    def checked(self) -> np.ndarray:
        """The checked ``log Z_j``: the exact value; where conditional SMC bracketed it (:attr:`csmc_bracketed`),
        the midpoint of the SMC and conditional SMC estimates (within ``[lower, upper]``; forward AIS, noisier at
        the check's effort, is not consulted unless it refutes the bracket, :attr:`csmc_failed`); else the
        midpoint of the forward and reverse AIS estimates, or the forward estimate alone where the reverse one
        came out below it (its chains started from approximate samples, so only the forward estimate keeps its
        guarantee there), and where the SMC estimate is higher still, the SMC estimate (both it and forward AIS
        err low, so the higher one is the better)."""
        if self.smc is None:
            return self._ais_checked
        return np.where(self._bracketed_mask, np.clip(self._smc_checked, self.lower, self.upper),
                        np.maximum(self._ais_checked, self.smc))

    @property
    def _smc_checked(self) -> np.ndarray:
        """The SMC part of :attr:`checked`: the midpoint of SMC and conditional SMC where they bracket, else SMC."""
        return np.where(self._bracketed_mask, 0.5 * (self.smc + np.nan_to_num(self.csmc)), self.smc)

    @property
    def _bracketed_mask(self) -> np.ndarray:
        if self.csmc is None or self.smc is None:
            return np.zeros(self.lengths.size, dtype=bool)
        ran = np.isfinite(self.csmc) & np.array([m != "exact" for m in self.method])
        return ran & ~np.isin(self.lengths, self.csmc_failed)

    @property
    def csmc_bracketed(self) -> np.ndarray:
        """Lengths where conditional SMC gives the upper side: it ran (SMC settled there) and did not fail
        (:attr:`csmc_failed`).  There the interval is ``[max(forward - z se_f, smc - z se_s), max(csmc + z se_c,
        smc + z se_s)]`` and the checked value the midpoint of SMC and conditional SMC."""
        return self.lengths[self._bracketed_mask]

    @property
    def csmc_failed(self) -> np.ndarray:
        """Lengths where the conditional SMC estimate (an upper bound in expectation from exact references) lies
        below SMC or forward AIS (both lower bounds in expectation) by more than ``z`` standard errors each: its
        reference sentences, SMC draws, were not draws of the model, so it bounds nothing there; the interval's
        upper end falls back to reverse AIS."""
        if self.csmc is None or self.smc is None:
            return self.lengths[:0]
        fse = np.zeros_like(self.forward) if self.forward_se is None else self.forward_se
        top = self.csmc + self.z * np.nan_to_num(self.csmc_se)
        below = (top < self.smc - self.z * self.smc_se) | (top < self.forward - self.z * fse)
        return self.lengths[np.isfinite(self.csmc) & below]

    def csmc_warning(self) -> str | None:
        """A one-line warning naming the lengths where conditional SMC failed (:attr:`csmc_failed`)."""
        failed = self.csmc_failed
        if failed.size == 0:
            return None
        low = np.maximum(self.smc, self.forward)
        worst = self._worst(failed, low - self.csmc)
        return (f"at {self._which(failed)} the conditional SMC estimate of log Z_j (an upper bound in expectation "
                f"when its reference sentences are draws of the model) lies below the SMC or forward AIS estimate by "
                f"more than {self.z:g} standard errors each; worst at length {self.lengths[worst]}: conditional "
                f"{self.csmc[worst]:.2f} +- {self.csmc_se[worst]:.2f}, SMC {self.smc[worst]:.2f}, forward AIS "
                f"{self.forward[worst]:.2f}.  Its references (SMC draws) were not draws of the model there, so the "
                "interval's high end is reverse AIS's; raise --check-particles")

    @property
    def _ais_checked(self) -> np.ndarray:
        """The AIS part of :attr:`checked`: the midpoint, or the forward estimate where the reverse one is lower."""
        return np.maximum(self.forward, 0.5 * (self.forward + self.reverse))

    def describe(self) -> str:
        """How the checked normalisers were obtained, in words (for the CLI's headline)."""
        methods = sorted(set(self.method))
        if methods == ["exact"]:
            return "exact log Z_j"
        used = self.temperatures[self.temperatures > 0]
        temps = (f"{used.min()} temperatures" if used.min() == used.max()
                 else f"{used.min()}-{used.max()} temperatures, growing with length")
        exact = ", exact where V^j is small" if "exact" in methods else ""
        ais = f"forward and reverse AIS from the {self.base} base ({temps}, {self.n_chains} chains{exact})"
        if self.smc is None:
            return f"midpoint of {ais}"
        smc = f"SMC ({self.smc_replicates} x {self.smc_particles} particles)"
        bracketed = self.csmc_bracketed.size
        if bracketed == 0:
            return f"midpoint of {ais}, or {smc} where higher"
        used = self.csmc_particles[self.csmc_particles > 0]
        particles = f"{used.min()}" if used.min() == used.max() else f"{used.min()}-{used.max()}"
        return (f"midpoint of {smc} and conditional SMC ({self.csmc_runs} x {particles} particles per length) at "
                f"{bracketed} of {self.lengths.size} lengths, elsewhere the midpoint of {ais} or SMC where higher")

    @property
    def flagged(self) -> np.ndarray:
        """Lengths where AugSA's ``log Z_j`` is outside ``[lower - margin, upper + margin]``."""
        bad = (self.augsa < self.lower - self.margin) | (self.augsa > self.upper + self.margin)
        return self.lengths[bad]

    def warning(self) -> str | None:
        """A one-line warning naming the flagged lengths and the largest excursion, or None."""
        flagged = self.flagged
        if flagged.size == 0:
            return None
        excess = np.maximum(self.lower - self.augsa, self.augsa - self.upper)
        worst = int(np.argmax(excess))
        return (f"AugSA's zeta is outside the checked interval by more than {self.margin:g} nats at "
                f"{self._which(flagged)}; worst at length {self.lengths[worst]}: AugSA log Z "
                f"{self.augsa[worst]:.2f}, interval [{self.lower[worst]:.2f}, {self.upper[worst]:.2f}]. "
                "The perplexity with AugSA's zeta is not trustworthy")

    def log_z_table(self, which: str) -> np.ndarray:
        """``log Z`` per sub-model (shape ``(m_total,)``): ``which`` in {"checked", "lower", "upper",
        "extrapolated"} at the checked lengths, NaN elsewhere."""
        values = {"checked": self.checked, "lower": self.lower, "upper": self.upper,
                  "extrapolated": self.extrapolated}
        if which not in values:
            raise ValueError(f"which must be one of {sorted(values)}, got {which!r}")
        table = np.full(self.m_total, np.nan)
        table[self.lengths - 1] = values[which]
        return table

    def rows(self) -> list[dict]:
        """Per-length records for JSON output."""
        failed, rising = set(self.reverse_failed.tolist()), set(self.still_rising.tolist())
        missed, unsettled = set(self.ais_missed.tolist()), set(self.unsettled.tolist())
        csmc_failed = set(self.csmc_failed.tolist())

        def opt(values, i):
            return None if values is None else float(values[i])
        return [{"j": int(j), "method": meth, "temperatures": int(t), "forward": float(f), "reverse": float(r),
                 "checked": float(c), "lower": float(lo), "upper": float(hi), "augsa": float(a),
                 "flagged": bool(a < lo - self.margin or a > hi + self.margin), "reverse_failed": bool(j in failed),
                 "forward_se": None if self.forward_se is None else float(self.forward_se[i]),
                 "reverse_se": None if self.reverse_se is None else float(self.reverse_se[i]),
                 "forward_half": None if self.forward_half is None else float(self.forward_half[i]),
                 "forward_half_se": None if self.forward_half_se is None else float(self.forward_half_se[i]),
                 "still_rising": bool(j in rising),
                 "forward_ess": None if self.forward_ess is None else float(self.forward_ess[i]),
                 "smc": opt(self.smc, i), "smc_se": opt(self.smc_se, i), "smc_spread": opt(self.smc_spread, i),
                 "ais_missed": bool(j in missed), "smc_unsettled": bool(j in unsettled),
                 "csmc": None if self.csmc is None or not np.isfinite(self.csmc[i]) else float(self.csmc[i]),
                 "csmc_se": None if self.csmc is None or not np.isfinite(self.csmc[i]) else float(self.csmc_se[i]),
                 "csmc_failed": bool(j in csmc_failed)}
                for i, (j, meth, t, f, r, c, lo, hi, a) in enumerate(zip(
                    self.lengths, self.method, self.temperatures, self.forward, self.reverse, self.checked,
                    self.lower, self.upper, self.augsa))]

    def perplexities(self, model: SentenceTRF, corpus: EncodedCorpus) -> dict:
        """Perplexity of ``corpus`` with AugSA's zeta, the checked ``log Z_j`` and the interval ends.

        Sentences whose sub-model was not checked (e.g. the pooled ``m+``) keep AugSA's normaliser; their
        number is ``unchecked_sentences``.  A higher ``log Z`` lowers every log-probability, so the
        interval ``[lower, upper]`` of ``log Z`` maps to ``[ppl_low, ppl_high]``; ``extrapolated`` uses
        :attr:`extrapolated` (equal to ``checked`` when AIS is not still rising anywhere);
        ``degenerate_lengths`` counts the lengths of ``corpus`` with degenerate weights (:attr:`degenerate`) that
        a settled SMC estimate does not cover (:attr:`smc_covered`),
        ``unsettled_lengths`` those where SMC has not settled (:attr:`unsettled`), ``csmc_failed_lengths`` those where
        conditional SMC came out below the lower side (:attr:`csmc_failed`).

        An unchecked sentence that AugSA's normaliser gives a positive log-probability has no valid probability
        (the pooled ``m+`` normaliser covers the sampled lengths ``m+1, m+2`` only, Sec. 5.4, and a much longer
        sentence can outscore it): such sentences are left out of every checked perplexity and counted in
        ``excluded_sentences``; ``impossible_checked`` counts checked sentences whose log-probability with the
        checked normalisers is positive (that ``log Z_j`` is too low)."""
        dims = model.dimension(corpus.lengths)
        base = model.log_prob(corpus)
        augsa = (model.zeta + model.log_z1())[dims - 1]
        out = {"augsa": float(np.exp(-base.sum() / corpus.n_predicted))}
        unchecked = np.isnan(self.log_z_table("checked")[dims - 1])
        keep = ~(unchecked & (base > 0))
        tokens = float(np.sum(corpus.lengths[keep] + 1))
        for which, key in (("checked", "checked"), ("lower", "low"), ("upper", "high"),
                           ("extrapolated", "extrapolated")):
            table = self.log_z_table(which)[dims - 1]
            log_z = np.where(np.isnan(table), augsa, table)
            log_p = base + augsa - log_z
            out[key] = float(np.exp(-log_p[keep].sum() / tokens))
            if key == "checked":
                out["impossible_checked"] = int(np.count_nonzero((log_p > 0) & ~unchecked))
        out["excluded_sentences"] = int(np.count_nonzero(~keep))
        out["unchecked_sentences"] = int(np.count_nonzero(unchecked))
        degenerate = np.setdiff1d(self.degenerate, self.smc_covered)
        out["degenerate_lengths"] = int(np.count_nonzero(np.isin(degenerate, dims)))
        out["unsettled_lengths"] = int(np.count_nonzero(np.isin(self.unsettled, dims)))
        out["csmc_failed_lengths"] = int(np.count_nonzero(np.isin(self.csmc_failed, dims)))
        return out


CONCLUSIVE = 0.05
"""Relative half-width of the perplexity interval above which a check is *inconclusive*."""


def interval_is_inconclusive(low: float, high: float, tolerance: float = CONCLUSIVE) -> bool:
    """True when the interval ``[low, high]`` of perplexities is wider than ``+-tolerance`` around its centre
    (or not finite): the checked perplexity is then not established to that precision. (On the KJV corpus the
    default budget gave 20-47 AIS temperatures and [42.1, 75.9] on the sentences of at most 40 words, while
    forward AIS with 300 temperatures alone put the perplexity at 74.9.)"""
    if not (np.isfinite(low) and np.isfinite(high)):
        return True
    centre = 0.5 * (low + high)
    return bool(high - low > 2.0 * tolerance * centre)


def headline_perplexity(ppl: dict, tolerance: float = CONCLUSIVE) -> tuple[float, str, bool]:
    """The perplexity to report from :meth:`NormaliserCheck.perplexities`: ``(value, which, inconclusive)``.

    When the interval is within ``+-tolerance`` of its centre and no length of the corpus has degenerate AIS
    weights (``degenerate_lengths``), unsettled SMC estimates (``unsettled_lengths``) or a conditional SMC estimate
    below the lower side (``csmc_failed_lengths``: the SMC draws were no draws of the model there, so SMC itself
    is suspect) the checked value (midpoint normalisers) is reported; otherwise the
    check is inconclusive and the interval's **high end** is reported -- the
    conservative value: an under-converged AIS errs towards too small a ``log Z`` and so too good a
    perplexity (forward AIS is a lower bound in expectation, and reverse AIS from approximate samples fell
    below 300-temperature forward AIS at some KJV lengths), and a headline must not claim a gain it
    cannot defend."""
    inconclusive = (interval_is_inconclusive(ppl["low"], ppl["high"], tolerance)
                    or ppl.get("degenerate_lengths", 0) > 0 or ppl.get("unsettled_lengths", 0) > 0
                    or ppl.get("csmc_failed_lengths", 0) > 0)
    if inconclusive:
        return float(ppl["high"]), "high end of the checked interval (inconclusive check)", True
    return float(ppl["checked"]), "checked normalisers", False


@dataclass
class _BudgetPlan:
    """Cost model of the check's AIS runs: seconds per temperature ``per_temperature[k]`` at ``lengths[k]``
    (forward plus reverse), ``extra`` more temperatures per temperature (the half run: ``0.25``) and ``burn_in``
    sweeps (half a temperature each) per length; temperatures ``clip(round(c j), low, high)``."""

    lengths: np.ndarray
    per_temperature: np.ndarray
    extra: float
    burn_in: int
    low: int = 20
    high: int = 5000

    def temperatures(self, c: float, first: int = 0) -> np.ndarray:
        return np.clip(np.round(c * self.lengths[first:]), self.low, self.high).astype(np.int64)

    def cost(self, temperatures: np.ndarray, first: int = 0) -> float:
        """Predicted seconds for ``lengths[first:first + len(temperatures)]`` at ``temperatures``."""
        per_temperature = self.per_temperature[first:first + len(temperatures)]
        return float(np.sum(((1.0 + self.extra) * temperatures + 0.5 * self.burn_in) * per_temperature))

    def solve(self, budget: float, first: int = 0, factor: float = 1.0) -> np.ndarray:
        """The largest ``c`` whose predicted cost of ``lengths[first:]`` (times ``factor``, the measured over the
        predicted cost so far) fits ``budget`` (bisection: the clip makes the cost piecewise linear in ``c``);
        the temperatures of ``lengths[first:]``."""
        lo, hi = 0.0, float(self.high)
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if factor * self.cost(self.temperatures(mid, first), first) <= budget else (lo, mid)
        return self.temperatures(lo, first)


def _pilot_plan(model: SentenceTRF, sampler: SentenceSampler, lengths: np.ndarray, n_chains: int, rng,
                burn_in: int, parallel: bool, base: str, extra: float) -> _BudgetPlan:
    """Time the bidirectional run at the shortest and the longest AIS length and fit the cost of one
    temperature as ``a + b j``: a per-temperature overhead (Python, thread start) that does not shrink with
    ``j`` plus a per-word sweep cost (with the per-word cost alone short lengths were underestimated)."""
    pilot_t = 6
    # warm-up first: the first call compiles the samplers (seconds on a cold Numba cache), which the pilot must
    # not count as sampling time
    _bdmc_log_z(model, sampler, int(lengths.min()), 2, n_chains, rng, 1, parallel, base)
    _forward_log_z(model, sampler, int(lengths.min()), 2, n_chains, rng, parallel, base)
    points = []
    for j in sorted({int(lengths.min()), int(lengths.max())}):
        start = time.perf_counter()
        _bdmc_log_z(model, sampler, j, pilot_t, n_chains, rng, 0, parallel, base)
        points.append((j, (time.perf_counter() - start) / pilot_t))
    if len(points) == 2 and points[1][1] > points[0][1]:
        (j0, c0), (j1, c1) = points
        per_temperature = c0 + (c1 - c0) / (j1 - j0) * (lengths - j0)
    else:  # one length, or the short one timed slower (noise): no overhead term, cost in proportion to j
        j1, c1 = points[-1]
        per_temperature = c1 * lengths / j1
    return _BudgetPlan(lengths, per_temperature.astype(float), extra, burn_in)


def check_normalisers(model: SentenceTRF, lengths, *, n_temperatures: int | None = None, n_chains: int = 10,
                      time_budget: float | None = None, z: float = 3.0, margin: float = 0.5, burn_in: int = 10,
                      seed=0, exact_limit: int = EXACT_LIMIT, parallel: bool = True,
                      base: str = "unigram", half_run: bool = True, smc_particles: int | None = None,
                      smc_replicates: int = 4, smc_fraction: float = 0.25, csmc_particles: int | None = None,
                      csmc_fraction: float = 0.25) -> NormaliserCheck:
    """Check ``log Z_j`` for each of ``lengths`` from both sides (bidirectional AIS, or exactly), and by SMC.

    For each length ``j`` (at most ``m``): when ``V^j <= exact_limit`` the exact sum over all sentences is
    used; otherwise forward AIS from ``base`` (a stochastic lower bound of ``log Z_j``, Neal 2001) and
    reverse AIS from the forward chains' end states after ``burn_in`` sweeps at the model (the model's own
    samples; an upper bound in expectation when those are exact draws, Grosse et al. 2015, Sec. 4) give
    ``[forward - z se_f, reverse + z se_r]``.  With exact starts each side misses with probability at most
    about ``Phi(-z)`` (0.13% for ``z = 3``); approximate starts can pull the reverse estimate down, so a gap
    ``reverse - forward`` near 0 is the sign that both have converged.

    Before the AIS runs, ``smc_replicates`` independent sequential Monte Carlo runs (:func:`trf.lm.smc.smc_log_z`)
    estimate every non-exact ``log Z_j`` at once; like forward AIS they are unbiased for ``Z_j``, but their
    proposal -- the model's own local law, word by word -- reaches high-weight sentences that fixed-length
    Gibbs chains miss.  The interval becomes ``[max(forward - z se_f, smc - z se_s), max(reverse + z se_r,
    smc + z se_s)]`` and the checked value the higher of the AIS midpoint and the SMC estimate
    (:attr:`NormaliserCheck.ais_missed`, :attr:`NormaliserCheck.unsettled`).  Where SMC has settled (spread at
    most :attr:`NormaliserCheck.MAX_SMC_SPREAD`), the reverse AIS chains start from ``n_chains`` of its resampled
    sentences instead of the forward end states: approximate draws of the model that reach its high-weight
    sentences, closer to the exact draws the reverse bound needs.

    Where SMC has settled, ``smc_replicates`` conditional SMC runs per length, each pinned to one of its draws
    (:func:`trf.lm.smc.conditional_smc_log_z`), give the upper side of the same estimator: ``E[1 / Z-hat] = 1 /
    Z_j`` for exact references, so it errs high as SMC errs low, and the gap between the two shrinks with the
    particles.  There (:attr:`NormaliserCheck.csmc_bracketed`) the interval's upper end is ``max(csmc + z se_c,
    smc + z se_s)`` and the checked value the midpoint of SMC and conditional SMC, unless conditional SMC came out
    below a lower-side estimate (:attr:`NormaliserCheck.csmc_failed`).

    Parameters
    ----------
    model : SentenceTRF
    lengths : iterable of int
        Lengths to check (each in 1..m).
    n_temperatures : int, optional
        Temperatures per AIS run at every length.  Default: chosen from ``time_budget`` in proportion to the
        length (the AIS gap to bridge grows with it): ``T_j = c j`` with ``c`` set by a pilot run so that
        the whole check fits the budget, each ``T_j`` between 20 and 5000.
    n_chains : int
        AIS chains per length and direction.
    time_budget : float, optional
        Seconds for the whole check when ``n_temperatures`` is not given; default 15% of the model's
        recorded training time (``meta["train_seconds"]``), at least 10 s.
    z, margin : float
        Interval width in standard errors, and the nats by which AugSA may leave it before it is flagged.
    burn_in : int
        Sweeps at ``beta = 1`` before the reverse run.
    seed : int, Generator or None
    exact_limit : int
        Largest ``V^j`` summed exactly (0: never; every length by AIS).
    base : {"unigram", "uniform"}
        AIS base law (:func:`unigram_base`, the default, or uniform over ``V^j``).
    half_run : bool
        Also run forward AIS with half the temperatures at every AIS length (about 25% more time, counted in
        the budget) for the convergence test :attr:`NormaliserCheck.still_rising`.
    smc_particles : int, optional
        Particles per SMC run (0: no SMC, and no conditional SMC).  Default: as many as ``smc_fraction`` of
        ``time_budget`` buys (timed by a pilot run; 100 to 200,000), or 2000 when ``n_temperatures`` is given.
    smc_replicates : int
        Independent SMC runs, and conditional SMC runs per length (>= 2; their spread is the convergence
        measure); they run on all cores.
    smc_fraction : float
        Share of ``time_budget`` given to SMC when ``smc_particles`` is not given.
    csmc_particles : int, optional
        Particles per conditional SMC run (0: none).  Default: as many as ``csmc_fraction`` of ``time_budget``
        buys at the SMC runs' measured speed (100 to 200,000), or ``min(smc_particles, 1000)`` when
        ``n_temperatures`` is given.
    csmc_fraction : float
        Share of ``time_budget`` given to conditional SMC when ``csmc_particles`` is not given (the rest of the
        budget, after SMC, goes to AIS).

    Returns
    -------
    NormaliserCheck
    """
    lengths = np.unique([check_int(j, "lengths[]", low=1, high=model.m) for j in lengths]).astype(np.int64)
    if lengths.size == 0:
        raise ValueError("lengths is empty")
    n_chains = check_int(n_chains, "n_chains", low=2)
    z = check_float(z, "z", low=0.0)
    margin = check_float(margin, "margin", low=0.0)
    exact_limit = check_int(exact_limit, "exact_limit", low=0)
    if base not in AIS_BASES:
        raise ValueError(f"base must be one of {AIS_BASES}, got {base!r}")
    smc_replicates = check_int(smc_replicates, "smc_replicates", low=2)
    smc_fraction = check_float(smc_fraction, "smc_fraction", low=0.0, high=1.0, high_open=True)
    csmc_fraction = check_float(csmc_fraction, "csmc_fraction", low=0.0, high=1.0 - smc_fraction, high_open=True)
    if smc_particles is not None:
        smc_particles = check_int(smc_particles, "smc_particles", low=0)
    if csmc_particles is not None:
        csmc_particles = check_int(csmc_particles, "csmc_particles", low=0)
    started = time.perf_counter()
    rng = np.random.default_rng(seed)
    V = model.features.n_words
    exact_mask = np.array([float(V) ** j <= exact_limit for j in lengths])
    sampler = SentenceSampler(model.features, model.m) if not exact_mask.all() else None
    notes, plan = [], None
    ais_lengths = lengths[~exact_mask]
    if n_temperatures is not None:
        temperatures = np.full(lengths.size, check_int(n_temperatures, "n_temperatures", low=2), dtype=np.int64)
        smc = _smc_stage(model, ais_lengths, 2000 if smc_particles is None else smc_particles, smc_replicates,
                         None, rng, n_chains)
        csmc = _csmc_stage(model, ais_lengths, smc, min(smc.n_particles, 1000) if smc is not None and
                           csmc_particles is None else csmc_particles, None, rng)
    else:
        if time_budget is None:
            time_budget = max(10.0, 0.15 * float(model.meta.get("train_seconds", 60.0)))
        time_budget = check_float(time_budget, "time_budget", low=0.0, low_open=True)
        smc = _smc_stage(model, ais_lengths, smc_particles, smc_replicates,
                         smc_fraction * time_budget, rng, n_chains)
        csmc = _csmc_stage(model, ais_lengths, smc, csmc_particles, csmc_fraction * time_budget, rng)
        temperatures = np.full(lengths.size, 20, dtype=np.int64)
        if ais_lengths.size:
            plan = _pilot_plan(model, sampler, ais_lengths, n_chains, rng, burn_in, parallel, base,
                               extra=0.25 if half_run else 0.0)
            temperatures[~exact_mask] = plan.solve(time_budget - (time.perf_counter() - started))
            first_plan = temperatures[~exact_mask].copy()
    temperatures[exact_mask] = 0
    forward, reverse, lower, upper, method, forward_se, reverse_se = [], [], [], [], [], [], []
    half, half_se, ess = [], [], []
    done, spent, predicted = 0, 0.0, 0.0  # AIS lengths run so far, their measured and predicted seconds
    for k, j in enumerate(lengths):
        is_exact = exact_mask[k]
        if plan is not None and not is_exact:
            # re-plan the remaining lengths from the remaining budget and the measured/predicted cost so far (the
            # short pilot misjudged the cost by 1.2-1.45x on fortunes)
            factor = spent / predicted if predicted > 0 else 1.0
            rest = plan.solve(time_budget - (time.perf_counter() - started), done, factor)
            temperatures[np.flatnonzero(~exact_mask)[done:]] = rest
            tick = time.perf_counter()
        n_temp = temperatures[k]
        if is_exact:
            value = exact_log_z(model, int(j), exact_limit)
            forward.append(value), reverse.append(value), lower.append(value), upper.append(value)
            forward_se.append(0.0), reverse_se.append(0.0), half.append(value), half_se.append(0.0)
            ess.append(float(n_chains))
            method.append("exact")
            continue
        starts = (smc.draws(int(j), n_chains, rng) if smc is not None and smc.kept is not None
                  and smc.spread[j - 1] <= NormaliserCheck.MAX_SMC_SPREAD else None)
        res = _bdmc_log_z(model, sampler, int(j), int(n_temp), n_chains, rng, burn_in, parallel, base, starts)
        lo, hi = res.interval(z)
        forward.append(res.forward.log_partition), reverse.append(res.reverse.log_partition)
        forward_se.append(res.forward.stderr), reverse_se.append(res.reverse.stderr)
        lower.append(lo), upper.append(hi), ess.append(res.forward.ess)
        method.append("bdmc")
        if half_run:
            res_half = _forward_log_z(model, sampler, int(j), max(2, (int(n_temp) + 1) // 2), n_chains, rng,
                                      parallel, base)
            half.append(res_half.log_partition), half_se.append(res_half.stderr)
        if plan is not None:
            spent += time.perf_counter() - tick
            predicted += plan.cost(np.array([n_temp]), done)
            done += 1
    augsa = model.zeta[lengths - 1] + model.log_z1()
    forward, reverse, lower, upper = map(np.array, (forward, reverse, lower, upper))
    smc_est = smc_se = smc_spread = csmc_est = csmc_se = csmc_spread = None
    csmc_particles = np.zeros(lengths.size, dtype=np.int64)
    if smc is not None:  # exact lengths keep their value (SMC 0 spread), the others gain the SMC side
        smc_est, smc_se, smc_spread = forward.copy(), np.zeros(lengths.size), np.zeros(lengths.size)
        at = ~exact_mask
        smc_est[at], smc_se[at], smc_spread[at] = (v[ais_lengths - 1] for v in (smc.log_z, smc.stderr, smc.spread))
        lower = np.maximum(lower, smc_est - z * smc_se)
        upper = np.maximum(upper, smc_est + z * smc_se)
        # exact lengths: the exact value with 0 error; lengths without a conditional run (SMC unsettled): NaN
        csmc_est, csmc_se, csmc_spread = (np.where(exact_mask, v, np.nan) for v in (forward, 0 * forward, 0 * forward))
        if csmc is not None:
            at = np.isin(lengths, csmc.lengths)
            csmc_est[at], csmc_se[at], csmc_spread[at] = csmc.log_z, csmc.stderr, csmc.spread
            csmc_particles[at] = csmc.n_particles
    seconds = time.perf_counter() - started
    if plan is not None:
        used = temperatures[~exact_mask]
        notes.append(f"{used.min()}-{used.max()} temperatures (in proportion to length) for a {time_budget:.0f} s "
                     f"budget: first plan {first_plan.min()}-{first_plan.max()} from a pilot "
                     f"({1e3 * plan.per_temperature.min():.3g}-{1e3 * plan.per_temperature.max():.3g} ms per "
                     f"temperature at lengths {ais_lengths.min()}-{ais_lengths.max()}), re-planned before each length "
                     f"from the measured cost (measured / pilot-predicted: {spent / max(predicted, 1e-12):.2f})")
        if plan.cost(np.full(ais_lengths.size, plan.low)) > time_budget:
            notes.append(f"the budget is too small even for {plan.low} temperatures per length")
    if smc is not None:
        notes.append(f"SMC: {smc.replicates.shape[0]} runs of {smc.n_particles} particles over lengths "
                     f"1-{smc.lengths.max()} in {smc.seconds:.1f} s")
    if csmc is not None:
        per = csmc.n_particles
        notes.append(f"conditional SMC: {csmc.runs.shape[0]} runs of "
                     f"{per.max() if per.min() == per.max() else f'{per.min()}-{per.max()}'} particles at each of "
                     f"{csmc.lengths.size} lengths where SMC settled (about the same time per length), in "
                     f"{csmc.seconds:.1f} s")
    if n_temperatures is None and ais_lengths.size and seconds > 1.25 * time_budget:
        notes.append(f"the check took {seconds:.0f} s, {seconds / time_budget:.2f} x its {time_budget:.0f} s budget")
    check = NormaliserCheck(lengths, method, forward, reverse, lower, upper,
                            augsa, margin, z, temperatures, n_chains, seconds,
                            m_total=int(model.pi.size), notes=notes, base=base, forward_se=np.array(forward_se),
                            reverse_se=np.array(reverse_se), forward_half=np.array(half) if half_run else None,
                            forward_half_se=np.array(half_se) if half_run else None, forward_ess=np.array(ess),
                            smc=smc_est, smc_se=smc_se, smc_spread=smc_spread,
                            smc_particles=0 if smc is None else smc.n_particles,
                            smc_replicates=0 if smc is None else int(smc.replicates.shape[0]),
                            csmc=csmc_est, csmc_se=csmc_se, csmc_spread=csmc_spread,
                            csmc_particles=csmc_particles,
                            csmc_runs=0 if csmc is None else int(csmc.runs.shape[0]))
    if csmc is not None:  # the upper side from conditional SMC where it brackets
        check.upper = np.where(check._bracketed_mask, np.maximum(check.csmc + z * check.csmc_se,
                                                                 check.smc + z * check.smc_se), check.upper)
    return check


SMC_PARTICLE_RANGE = (100, 200_000)


def _smc_stage(model: SentenceTRF, lengths: np.ndarray, n_particles: int | None, n_replicates: int,
               budget: float | None, rng, n_keep: int = 0):
    """The check's SMC runs over ``1..max(lengths)`` (None when there is nothing to run): ``n_particles`` per
    run, or as many as ``budget`` seconds buy by a 200-particle pilot (whose compilation is not timed)."""
    if lengths.size == 0 or n_particles == 0 or (n_particles is None and budget is not None and budget <= 0):
        return None
    longest = int(lengths.max())
    if n_particles is None:
        pilot = 200
        res = smc_log_z(model, longest, n_particles=pilot, n_replicates=n_replicates, seed=rng)
        per_particle = max(res.seconds, 1e-6) / pilot
        low, high = SMC_PARTICLE_RANGE
        n_particles = int(np.clip(budget / per_particle, low, high))
    return smc_log_z(model, longest, n_particles=n_particles, n_replicates=n_replicates, seed=rng, n_keep=n_keep)


def _csmc_stage(model: SentenceTRF, lengths: np.ndarray, smc, n_particles: int | None, budget: float | None, rng):
    """The check's conditional SMC runs (None when there is nothing to run): at each of ``lengths`` where SMC settled,
    one run per SMC replicate pinned to an SMC draw; ``n_particles`` per run, or as many as ``budget`` seconds buy
    at the SMC runs' measured speed (particle-positions per second), the same time for every length (so
    ``N_j ∝ 1 / j``: short lengths, where test sentences are many and the estimates spread most, get the most)."""
    if smc is None or smc.kept is None or n_particles == 0:
        return None
    settled = lengths[smc.spread[lengths - 1] <= NormaliserCheck.MAX_SMC_SPREAD]
    if settled.size == 0:
        return None
    n_runs = smc.replicates.shape[0]
    if n_particles is None:
        if budget is None or budget <= 0:
            return None
        speed = n_runs * smc.n_particles * smc.lengths.size / max(smc.seconds, 1e-6)
        low, high = SMC_PARTICLE_RANGE
        per_length = np.clip(budget * speed / (n_runs * settled.size * settled), low, high).astype(np.int64)
    else:
        per_length = np.full(settled.size, max(2, n_particles), dtype=np.int64)
    references = {int(j): smc.draws(int(j), n_runs, rng) for j in settled}
    return conditional_smc_log_z(model, references, n_particles=dict(zip(settled.tolist(), per_length.tolist())),
                                 seed=rng)


def smooth_log_z(lengths, log_z, stderr=None) -> np.ndarray:
    """Least-squares line through ``log Z_j`` over ``j`` ("Sep Sm AIS" of Sec. 7), weighted by 1/stderr^2."""
    j = as_float_array(lengths, "lengths", ndim=1)
    y = as_float_array(log_z, "log_z", ndim=1)
    if j.size != y.size or j.size < 2:
        raise ValueError("lengths and log_z need the same size, at least 2")
    weights = None if stderr is None else 1.0 / np.maximum(as_float_array(stderr, "stderr", ndim=1), 1e-3)
    slope, intercept = np.polyfit(j, y, 1, w=weights)
    return intercept + slope * j


def ais_global(model: SentenceTRF, *, n_temperatures: int = 1000, n_chains: int = 10, seed=None,
               parallel: bool = False):
    """AIS over lengths 1..m for the global normaliser of the TRF with the AugSA zeta (model (3)).

    Not defined here for models with the pooled sub-model of Sec. 5.4 (ValueError)."""
    if model.pooled:
        raise ValueError("global AIS is implemented for models without the pooled sub-model (max_length)")
    feats = model.features
    sampler = SentenceSampler(feats, model.m)
    V = feats.n_words
    log_pi = np.log(model.pi)
    j_idx = np.arange(1, model.m + 1)
    offset = model.zeta + model.log_z1() - j_idx * np.log(V)  # target minus base, apart from lambda . f

    def initial(n, rng):
        lengths = rng.choice(j_idx, size=n, p=model.pi)
        tokens = rng.integers(0, V, size=(n, model.m)).astype(np.int64)
        return ChainState(tokens, lengths.astype(np.int64))

    def log_ratio(state):
        return feats.scores(_states_corpus(state), model.lam) - offset[state.lengths - 1]

    def transition(state, beta, rng):
        lw = log_pi - j_idx * np.log(V) - beta * offset
        new, _, _, _ = sampler.run(beta * model.lam, lw, state, 1, kernel_seed(rng), parallel=parallel)
        return new

    return run_ais(initial, log_ratio, transition, n_temperatures=n_temperatures, n_chains=n_chains, seed=seed)


def ais_check(model: SentenceTRF, lengths=range(1, 11), *, n_temperatures: int = 1000, n_chains: int = 10,
              seed=None, base: str = "unigram") -> dict:
    """Separate, smoothed and global AIS next to the AugSA normalisers (``zeta_j + log Z_1``).

    Returns a dict with ``per_length`` rows, ``global`` (log normaliser; None for a pooled model) and
    ``log_prob(corpus, which)`` giving sentence log-probabilities with ``which`` in {"augsa",
    "separate", "smoothed"}.  ``base`` is the AIS base law (:func:`ais_log_z`).
    """
    lengths = [check_int(j, "lengths[]", low=1, high=model.m) for j in lengths]
    rng = np.random.default_rng(seed)
    results = [ais_log_z(model, j, n_temperatures=n_temperatures, n_chains=n_chains, seed=rng, base=base,
                         parallel=True) for j in lengths]
    separate = np.array([r.log_partition for r in results])
    stderr = np.array([r.stderr for r in results])
    smoothed = smooth_log_z(lengths, separate, stderr) if len(lengths) > 1 else separate
    augsa = np.array([model.zeta[j - 1] + model.log_z1() for j in lengths])
    glob = None if model.pooled else ais_global(model, n_temperatures=n_temperatures, n_chains=n_chains, seed=rng)
    table = {"augsa": augsa, "separate": separate, "smoothed": smoothed}

    def log_prob(corpus: EncodedCorpus, which: str) -> np.ndarray:
        if corpus.lengths.max() > max(lengths):
            raise ValueError(f"AIS covers lengths up to {max(lengths)}; corpus has longer sentences")
        log_z = np.full(model.m, np.nan)
        log_z[np.asarray(lengths) - 1] = table[which]
        return log_prob_with_log_z(model, corpus, log_z)

    rows = [{"j": j, "augsa": float(a), "separate": float(s), "smoothed": float(m), "stderr": float(e)}
            for j, a, s, m, e in zip(lengths, augsa, separate, smoothed, stderr)]
    return {"per_length": rows, "global": None if glob is None else float(glob.log_partition),
            "global_stderr": None if glob is None else float(glob.stderr), "log_prob": log_prob}


def log_prob_with_log_z(model: SentenceTRF, corpus: EncodedCorpus, log_z) -> np.ndarray:
    """Sentence log-probabilities with ``log Z_j = log_z[j - 1]`` in place of the AugSA ``zeta_j + log Z_1``
    (e.g. AIS estimates); ``log_z`` has shape (m,)."""
    log_z = as_float_array(log_z, "log_z", ndim=1, finite=False)
    if log_z.shape != (model.m,):
        raise ValueError(f"log_z must have shape ({model.m},), got {log_z.shape}")
    j = corpus.lengths - 1
    return model.log_prob(corpus) + (model.zeta + model.log_z1())[j] - log_z[j]


def tune_linear_weight(log_p_a, log_p_b, n_predicted: int, weights=None) -> float:
    """The weight of model a in :func:`interpolate_linear` minimising perplexity on held-out sentences
    (grid 0.05, 0.10, ..., 0.95 by default)."""
    weights = np.round(np.linspace(0.05, 0.95, 19), 2) if weights is None else np.asarray(weights, dtype=float)
    ppl = [perplexity(interpolate_linear(log_p_a, log_p_b, w), n_predicted) for w in weights]
    return float(weights[int(np.argmin(ppl))])


def _check_pair(log_p_a, log_p_b, weight):
    weight = check_float(weight, "weight", low=0.0, high=1.0)
    a = as_float_array(log_p_a, "log_p_a", ndim=1, finite=False)
    b = as_float_array(log_p_b, "log_p_b", ndim=1, finite=False)
    if a.shape != b.shape:
        raise ValueError(f"log_p_a and log_p_b must have the same shape, got {a.shape} and {b.shape}")
    return a, b, weight


def interpolate_linear(log_p_a, log_p_b, weight: float) -> np.ndarray:
    """``log(weight p_a + (1 - weight) p_b)`` per sentence: a normalised mixture, valid for perplexity."""
    a, b, weight = _check_pair(log_p_a, log_p_b, weight)
    with np.errstate(divide="ignore"):
        return np.logaddexp(np.log(weight) + a, np.log1p(-weight) + b)


def interpolate_loglinear(log_p_a, log_p_b, weight: float) -> np.ndarray:
    """``weight log p_a + (1 - weight) log p_b``: unnormalised scores for n-best rescoring only."""
    a, b, weight = _check_pair(log_p_a, log_p_b, weight)
    return weight * a + (1.0 - weight) * b


def scoring_speed(model: SentenceTRF, corpus: EncodedCorpus, repeats: int = 3) -> float:
    """Best-of-``repeats`` sentences per second of ``model.log_prob`` (one thread)."""
    model.log_prob(corpus)  # compile / warm up and cache log Z_1
    best = np.inf
    for _ in range(check_int(repeats, "repeats", low=1)):
        start = time.perf_counter()
        model.log_prob(corpus)
        best = min(best, time.perf_counter() - start)
    return len(corpus) / best
