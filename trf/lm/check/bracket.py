"""The checked normalisers: the interval per length from every estimator's side, the checked value, the
shortfalls of each estimator, and the perplexities they give (:class:`NormaliserCheck`); when a check is
conclusive (:func:`headline_perplexity`)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
from scipy import special

from samplers.ais import t_multiplier
from trf.lm.check.estimates import KnownFloor, LogZEstimate
from trf.lm.corpus import EncodedCorpus
from trf.lm.model import SentenceTRF

__all__ = ["NormaliserCheck", "CONCLUSIVE", "interval_is_inconclusive", "headline_perplexity"]

FLOOR_ROUNDING = 1e-12
"""Relative margin by which the known sentences' bound must exceed an interval's upper end to refute it: where the
known sentences hold all of ``Z_j``, SMC's estimate is their weight summed in another order (a fortunes model's
loops, 363.11 against 363.11)."""


@dataclass
class NormaliserCheck:
    """``log Z_j`` checked from both sides for the lengths ``lengths`` (:func:`trf.lm.check.check_normalisers`).

    Attributes
    ----------
    lengths : ndarray of int
    method : list of str
        ``"exact"`` (enumeration) or ``"bdmc"`` (forward + reverse AIS) per length.
    estimates : dict of str -> LogZEstimate
        The estimators' values at every one of ``lengths`` (the exact value with zero error where exact):
        ``"forward"`` and ``"reverse"`` AIS, ``"forward_half"`` (a second, independent forward run with half the
        temperatures, ``ceil(T_j / 2)``; see :attr:`still_rising`), ``"smc"`` (sequential Monte Carlo, the model's
        own local law as proposal, unbiased for ``Z_j`` like forward AIS; see :attr:`ais_missed` and
        :attr:`unsettled`) and ``"csmc"`` (conditional SMC pinned to SMC draws, an upper bound in expectation as far
        as those are exact draws; NaN where it was not run; see :attr:`csmc_failed`).  A key is absent when that
        estimator was not run.
    lower, upper : ndarray
        The interval per length (:func:`trf.lm.check.check_normalisers`).
    augsa : ndarray
        AugSA's ``zeta_j + log Z_1`` at the same lengths.
    margin : float
        Nats by which AugSA may leave the interval before it is flagged.
    z : float
        Interval width in standard errors.
    n_chains : int
        AIS chains per length and direction.
    seconds : float
    m_total : int
        Sub-models of the model (``m``, plus one when pooled).
    notes : list of str
        How the effort was chosen, in words.
    base : str
        The AIS base law (:func:`trf.lm.model.unigram_base` or uniform).
    floor : KnownFloor, optional
        The exact lower bound of ``log Z_j`` from known sentences (:func:`trf.lm.check.estimates.known_floor`): both
        interval ends and the checked value are at least it.
    refuted : ndarray of int
        Lengths where that bound lay above the estimators' interval (:meth:`floor_warning`).
    estimated : ndarray, optional
        The checked value from the estimators alone, before the bound (None without ``floor``).
    """

    lengths: np.ndarray
    method: list[str]
    estimates: dict[str, LogZEstimate]
    lower: np.ndarray
    upper: np.ndarray
    augsa: np.ndarray
    margin: float
    z: float
    n_chains: int
    seconds: float
    m_total: int = 0
    notes: list[str] = field(default_factory=list)
    base: str = "unigram"
    floor: KnownFloor | None = None
    refuted: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    estimated: np.ndarray | None = None

    _ALIASES = {"forward": ("forward", "log_z"), "forward_se": ("forward", "stderr"), "forward_ess": ("forward", "ess"),
                "reverse": ("reverse", "log_z"), "reverse_se": ("reverse", "stderr"),
                "forward_half": ("forward_half", "log_z"), "forward_half_se": ("forward_half", "stderr"),
                "smc": ("smc", "log_z"), "smc_se": ("smc", "stderr"), "smc_spread": ("smc", "spread"),
                "csmc": ("csmc", "log_z"), "csmc_se": ("csmc", "stderr"), "csmc_spread": ("csmc", "spread")}

    def replaced(self, **values) -> "NormaliserCheck":
        """A copy with some estimates' values replaced, named as the properties (``reverse=``, ``smc_spread=``,
        ``forward_ess=`` ...): a what-if for the tests of each shortfall."""
        estimates = dict(self.estimates)
        for name, value in values.items():
            if name not in self._ALIASES:
                raise ValueError(f"unknown estimate value {name!r}; one of {sorted(self._ALIASES)}")
            key, attribute = self._ALIASES[name]
            fields = estimates[key]._asdict()  # one field by name: a dict of mixed types
            fields[attribute] = np.asarray(value)
            estimates[key] = LogZEstimate(**fields)
        return replace(self, estimates=estimates)

    @classmethod
    def bracket(cls, lengths: np.ndarray, method: list[str], estimates: dict[str, LogZEstimate], augsa: np.ndarray, *,
                margin: float, z: float, n_chains: int, seconds: float, m_total: int, notes: list[str],
                base: str, floor: KnownFloor | None = None) -> "NormaliserCheck":
        """The check of ``estimates`` (``"forward"`` and ``"reverse"`` AIS at least): the interval per length from
        every estimator's side.

        From AIS ``[forward - z se_f, reverse + z se_r]`` (ordered); with SMC ``[max(., smc - z se_s), max(., smc +
        z se_s)]``; where conditional SMC brackets (:attr:`csmc_bracketed`) the upper end ``max(csmc + z se_c, smc
        + z se_s)``, each ``z se`` the t quantile of its runs at the tail of ``z`` (:meth:`LogZEstimate.half_width`).
        Where the forward weights are degenerate (:attr:`degenerate`) and a settled SMC estimate gives
        the checked value (:attr:`smc_covered`), the lower end is SMC's alone: a degenerate forward estimate's
        standard error measures nothing, and one lucky chain put it 3.7 nats above a settled SMC pair on a fortunes
        model, its lower end above the pair's upper one.  An upper end below the lower one is then raised to it
        (the sides contradict each other there; the conservative end stands).  Last, with ``floor`` (known sentences'
        exact lower bound) both ends are raised to at least it; the lengths where it lay above the upper end are
        :attr:`refuted`."""
        fwd, rev = estimates["forward"], estimates["reverse"]
        low, high = fwd.low(z), rev.high(z)  # as BidirectionalResult.interval
        lower, upper = np.minimum(low, high), np.maximum(low, high)
        smc = estimates.get("smc")
        if smc is not None:
            smc_low, smc_high = smc.low(z), smc.high(z)
            lower, upper = np.maximum(lower, smc_low), np.maximum(upper, smc_high)
        check = cls(lengths, method, estimates, lower, upper, augsa, margin, z, n_chains, seconds, m_total=m_total,
                    notes=notes, base=base)
        csmc = estimates.get("csmc")
        if smc is not None and csmc is not None:  # the upper side from conditional SMC where it brackets
            check.upper = np.where(check._bracketed_mask, np.maximum(csmc.high(z), smc_high),
                                   check.upper)
        if smc is not None:
            no_forward = np.isin(lengths, np.intersect1d(check.degenerate, check.smc_covered))
            check.lower = np.where(no_forward, smc_low, check.lower)
            check.upper = np.maximum(check.upper, check.lower)
        if floor is not None:
            check.estimated = check.checked
            check.floor = floor
            check.refuted = lengths[floor.log_z > check.upper + FLOOR_ROUNDING * np.maximum(1.0, np.abs(check.upper))]
            check.lower = np.maximum(check.lower, floor.log_z)
            check.upper = np.maximum(check.upper, floor.log_z)
        return check

    def floor_warning(self) -> str | None:
        """A one-line warning naming the lengths where the known sentences alone outweigh the interval (:attr:`refuted`),
        or None."""
        if self.refuted.size == 0 or self.floor is None or self.estimated is None:
            return None
        before = self.estimated
        worst = self._worst(self.refuted, self.floor.log_z - before)
        return (f"at {self._which(self.refuted)} the known sentences alone give log Z_j more than the estimators' "
                f"interval: worst at length {self.lengths[worst]}, log Z_j >= {self.floor.log_z[worst]:.2f} exactly "
                f"(the sum over {self.floor.sentences[worst]} distinct sentences of that length, the known ones and "
                f"their class neighbours; the heaviest, "
                f"{self.floor.heaviest[worst]!r}), above the estimate {before[worst]:.2f}.  Every estimator missed "
                "sentences that the model weighs heavily there (its training sampler likely never reached them); the "
                "interval and the checked value are raised to the bound, and log Z_j is likely higher still, the "
                "perplexity above the interval's high end")

    def _value(self, key: str, attribute: str = "log_z") -> np.ndarray | None:
        """Field ``attribute`` of estimate ``key`` (None when that estimator was not run)."""
        est = self.estimates.get(key)
        return None if est is None else getattr(est, attribute)

    @property
    def forward(self) -> np.ndarray:
        """Forward AIS estimates of ``log Z_j`` (a stochastic lower bound; the exact value where exact)."""
        return self.estimates["forward"].log_z

    @property
    def forward_se(self) -> np.ndarray:
        """Standard errors of :attr:`forward`."""
        return self.estimates["forward"].stderr

    @property
    def forward_ess(self) -> np.ndarray | None:
        """Effective sample size of the forward AIS weights, in ``[1, n_chains]`` (``n_chains`` where exact)."""
        return self.estimates["forward"].ess

    @property
    def temperatures(self) -> np.ndarray:
        """AIS temperatures used at each length (0 where exact)."""
        return self.estimates["forward"].effort

    @property
    def reverse(self) -> np.ndarray:
        """Reverse AIS estimates (an approximate upper bound; the exact value where exact)."""
        return self.estimates["reverse"].log_z

    @property
    def reverse_se(self) -> np.ndarray:
        """Standard errors of :attr:`reverse`."""
        return self.estimates["reverse"].stderr

    @property
    def forward_half(self) -> np.ndarray | None:
        """Forward AIS estimates with half the temperatures, an independent run (None when no half run was made)."""
        return self._value("forward_half")

    @property
    def forward_half_se(self) -> np.ndarray | None:
        """Standard errors of :attr:`forward_half` (None when no half run was made)."""
        return self._value("forward_half", "stderr")

    @property
    def smc(self) -> np.ndarray | None:
        """SMC estimates of ``log Z_j`` (None when no SMC was run)."""
        return self._value("smc")

    @property
    def smc_se(self) -> np.ndarray | None:
        """Standard errors of :attr:`smc` (None when no SMC was run)."""
        return self._value("smc", "stderr")

    @property
    def smc_spread(self) -> np.ndarray | None:
        """Spread in nats of the SMC replicates' ``log Z-hat_j`` (None when no SMC was run; see :attr:`unsettled`)."""
        return self._value("smc", "spread")

    @property
    def smc_particles(self) -> int:
        """Particles per SMC run (0 when no SMC was run)."""
        return 0 if "smc" not in self.estimates else int(self.estimates["smc"].effort.max())

    @property
    def smc_replicates(self) -> int:
        """Independent SMC runs (replicates) per length (0 when no SMC was run)."""
        return 0 if "smc" not in self.estimates else self.estimates["smc"].runs

    @property
    def csmc(self) -> np.ndarray | None:
        """Conditional SMC estimates of ``log Z_j`` (an upper bound in expectation; None when none was run)."""
        return self._value("csmc")

    @property
    def csmc_se(self) -> np.ndarray | None:
        """Standard errors of :attr:`csmc` (None when no conditional SMC was run)."""
        return self._value("csmc", "stderr")

    @property
    def csmc_spread(self) -> np.ndarray | None:
        """Spread in nats of the conditional SMC replicates' estimates (None when none was run)."""
        return self._value("csmc", "spread")

    @property
    def csmc_particles(self) -> np.ndarray:
        """Particles per conditional run at each length (0 where none was run)."""
        est = self.estimates.get("csmc")
        return np.zeros(self.lengths.size, dtype=np.int64) if est is None else est.effort

    @property
    def csmc_runs(self) -> int:
        """Conditional runs per length (0 when none was run)."""
        est = self.estimates.get("csmc")
        return 0 if est is None or not est.effort.any() else est.runs

    MIN_ESS_FRACTION = 0.2
    MAX_SMC_SPREAD = 1.0
    """Nats of spread of the SMC replicates' ``log Z-hat_j`` above which a length is :attr:`unsettled`."""

    @property
    def ais_missed(self) -> np.ndarray:
        """Lengths where the SMC estimate's low end lies above forward AIS's high end, each end the estimate +-
        its half-width at the level of ``z`` (:meth:`LogZEstimate.half_width`: Student's t quantile of its runs
        or chains).

        Both are unbiased for ``Z_j``, so the lower of the two errs low: AIS has missed probability mass there --
        sentences of high weight that its fixed-length Gibbs chains never reach (fortunes: two-word sentences
        like "errico malatesta", 68% of the exact ``Z_2``, that 900 s of AIS put 5.7 nats below the exact
        ``log Z_2``).  The checked value takes the SMC estimate there."""
        smc = self.estimates.get("smc")
        if smc is None:
            return self.lengths[:0]
        return self.lengths[smc.low(self.z) > self.estimates["forward"].high(self.z)]

    def missed_warning(self) -> str | None:
        """A one-line warning naming the lengths where AIS missed probability mass (:attr:`ais_missed`)."""
        missed, smc = self.ais_missed, self.estimates.get("smc")
        if missed.size == 0 or smc is None:
            return None
        worst = self._worst(missed, smc.log_z - self.forward)
        return (f"forward AIS missed probability mass at {self._which(missed)}: the SMC estimate of log Z_j (also "
                f"unbiased for Z_j) lies above it, their intervals apart (each end at the {self.z:g}-standard-error "
                f"level, Student's t of its runs); worst at length {self.lengths[worst]}: SMC "
                f"{smc.log_z[worst]:.2f} +- {smc.stderr[worst]:.2f}, AIS {self.forward[worst]:.2f}.  The model gives "
                "high weight to sentences that the AIS chains never reach; the checked normalisers take the SMC "
                "estimate there")

    @property
    def unsettled(self) -> np.ndarray:
        """Lengths where the SMC replicates' ``log Z-hat_j`` spread more than :attr:`MAX_SMC_SPREAD` nats: the
        particles have not settled, rare high-weight sentences decide the estimate, and ``log Z_j`` is likely
        higher still (for log-normal estimates each run falls short by about ``spread^2 / 2``)."""
        spread = self.smc_spread
        if spread is None:
            return self.lengths[:0]
        return self.lengths[spread > self.MAX_SMC_SPREAD]

    @property
    def smc_covered(self) -> np.ndarray:
        """Lengths whose checked value is a settled SMC estimate (spread at most :attr:`MAX_SMC_SPREAD`, at or
        above the AIS midpoint): degenerate AIS weights there do not make the check inconclusive, since the
        checked value does not rest on AIS."""
        smc, spread = self.smc, self.smc_spread
        if smc is None or spread is None:
            return self.lengths[:0]
        covered = (spread <= self.MAX_SMC_SPREAD) & (self._bracketed_mask | (smc >= self._ais_checked))
        return self.lengths[covered & np.array([m != "exact" for m in self.method])]

    def unsettled_warning(self) -> str | None:
        """A one-line warning naming the lengths where SMC has not settled (:attr:`unsettled`)."""
        bad, spread = self.unsettled, self.smc_spread
        if bad.size == 0 or spread is None:
            return None
        worst = self._worst(bad, spread)
        return (f"the SMC estimates have not settled at {self._which(bad)}: its {self.smc_replicates} runs of "
                f"{self.smc_particles} particles spread by more than {self.MAX_SMC_SPREAD:g} nats (worst: length "
                f"{self.lengths[worst]}, {spread[worst]:.2f} nats).  log Z_j is likely higher than the "
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
        bad, ess = self.degenerate, self.forward_ess
        if bad.size == 0 or ess is None:
            return None
        worst = int(np.argmin(ess))
        return (f"the forward AIS weights are degenerate at {self._which(bad)}: effective sample size "
                f"below {100 * self.MIN_ESS_FRACTION:g}% of the {self.n_chains} chains (worst: length "
                f"{self.lengths[worst]}, ESS {ess[worst]:.2f}).  A few chains carry those estimates and "
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
        """Lengths where forward AIS rose from ``T_j / 2`` to ``T_j`` temperatures by more than the standard error
        of the difference times the t quantile of the chains at the level of ``z``
        (:func:`samplers.ais.t_multiplier`, as each interval end): AIS has not converged there.

        Forward AIS underestimates ``log Z_j`` (Jensen) by a bias that shrinks as temperatures are added --
        asymptotically like ``1/T`` (the log-weight variance does), so the bias left at ``T`` is then about as
        large as the rise from ``T/2`` -- and a significant rise means that the check's interval is likely
        too low, the perplexity likely above its high end.  Reverse AIS from approximate samples cannot
        show this (:attr:`reverse_failed`); this test needs only forward runs, unbiased for ``Z_j``."""
        if self.forward_half is None or self.forward_half_se is None:
            return self.lengths[:0]
        se = np.hypot(self.forward_se, self.forward_half_se)
        runs = min(self.estimates["forward"].runs, self.estimates["forward_half"].runs)
        return self.lengths[self.rise > t_multiplier(self.z, runs) * se]

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
        rising, halved = self.still_rising, self.forward_half
        if rising.size == 0 or halved is None:
            return None
        worst = self._worst(rising, self.rise)
        half = (self.temperatures[worst] + 1) // 2
        return (f"forward AIS is still rising with temperatures at {self._which(rising)}: doubling the "
                f"temperatures added more than its noise at the {self.z:g}-standard-error level (Student's t of "
                f"the chains); worst at length {self.lengths[worst]}: "
                f"{halved[worst]:.2f} with {half} temperatures, {self.forward[worst]:.2f} with "
                f"{self.temperatures[worst]} (+{self.rise[worst]:.2f} nats).  AIS has not converged there: "
                "log Z_j is likely underestimated by about as much again, and the perplexity likely lies above "
                "the interval's high end; raise --check-seconds" + self._covered_note(rising))

    @property
    def reverse_failed(self) -> np.ndarray:
        """Lengths where the forward estimate's low end lies above the reverse one's high end (each the estimate
        -+ its half-width at the level of ``z``, :meth:`LogZEstimate.half_width`): the AIS interval's ends crossed.

        Forward AIS from an exactly drawn base is unbiased for ``Z_j`` (an estimate exceeds ``log Z_j`` by
        ``a`` nats with probability at most ``e^-a``); reverse AIS bounds ``log Z_j`` from above only when its
        chains start from exact draws of the model.  Started from TransMS samples that have not reached the
        model (long sentences, large models), the reverse estimate can come out far below; there the
        interval's upper end is no upper bound."""
        return self.lengths[self.estimates["forward"].low(self.z) > self.estimates["reverse"].high(self.z)]

    def bracket_warning(self) -> str | None:
        """A one-line warning naming the lengths where the reverse estimate failed (:attr:`reverse_failed`)."""
        failed = self.reverse_failed
        if failed.size == 0:
            return None
        worst = self._worst(failed, self.forward - self.reverse)
        return (f"at {self._which(failed)} the forward AIS estimate of log Z_j (unbiased for Z_j) "
                f"lies above the reverse one, their intervals apart (each end at the {self.z:g}-standard-error "
                f"level, Student's t of its chains); worst at length "
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
        value = self._unfloored_checked
        return value if self.floor is None else np.maximum(value, self.floor.log_z)

    @property
    def _unfloored_checked(self) -> np.ndarray:
        """:attr:`checked` from the estimators alone, before the known sentences' bound."""
        smc = self.smc
        if smc is None:
            return self._ais_checked
        return np.where(self._bracketed_mask, np.clip(self._smc_checked, self.lower, self.upper),
                        np.maximum(self._ais_checked, smc))

    def _smc_pair(self) -> tuple[LogZEstimate, LogZEstimate] | None:
        """The SMC and conditional SMC estimates (None unless both were run)."""
        smc, csmc = self.estimates.get("smc"), self.estimates.get("csmc")
        return None if smc is None or csmc is None else (smc, csmc)

    @property
    def _smc_checked(self) -> np.ndarray:
        """The SMC part of :attr:`checked`: the midpoint of SMC and conditional SMC where they bracket, else SMC."""
        smc = self.estimates["smc"].log_z
        csmc = self.csmc
        return smc if csmc is None else np.where(self._bracketed_mask, 0.5 * (smc + np.nan_to_num(csmc)), smc)

    @property
    def _bracketed_mask(self) -> np.ndarray:
        pair = self._smc_pair()
        if pair is None:
            return np.zeros(self.lengths.size, dtype=bool)
        ran = np.isfinite(pair[1].log_z) & np.array([m != "exact" for m in self.method])
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
        significantly below SMC or forward AIS (both lower bounds in expectation): its reference sentences, SMC
        draws, were not draws of the model, so it bounds nothing there; the interval's upper end falls back to
        reverse AIS.

        "Significantly" is a one-sided Welch t-test of each difference (:func:`_below`) at the level of ``z``
        normal standard errors, ``Phi(-z)``, shared by the lengths tested (Bonferroni): the standard errors come
        from a few SMC runs (4 until session 48, 8 since) or the AIS chains, so a normal threshold on them rang
        false alarms -- ``z = 3`` errors each flagged 3 of 317 lengths over eight full-set checks of fortunes and
        KJV (t down to -7.9) where the differences, centred on 0 (median t -0.1 to -0.2), were those runs' noise.
        Forward AIS is not consulted where its weights are degenerate (:attr:`degenerate`): its standard error measures nothing there."""
        pair = self._smc_pair()
        if pair is None:
            return self.lengths[:0]
        smc, csmc = pair
        tested = np.isfinite(csmc.log_z)
        if not tested.any():
            return self.lengths[:0]
        level = _normal_tail(self.z) / int(np.count_nonzero(tested))
        se = np.nan_to_num(csmc.stderr)
        trusted = ~np.isin(self.lengths, self.degenerate)  # a degenerate forward estimate's error is unmeasured
        below = (_below(csmc.log_z, se, csmc.runs, smc.log_z, smc.stderr, smc.runs, level)
                 | (trusted & _below(csmc.log_z, se, csmc.runs, self.forward, self.forward_se, self.n_chains, level)))
        return self.lengths[tested & below]

    def csmc_warning(self) -> str | None:
        """A one-line warning naming the lengths where conditional SMC failed (:attr:`csmc_failed`)."""
        failed, pair = self.csmc_failed, self._smc_pair()
        if failed.size == 0 or pair is None:
            return None
        smc, csmc = pair
        worst = self._worst(failed, np.maximum(smc.log_z, self.forward) - csmc.log_z)
        return (f"at {self._which(failed)} the conditional SMC estimate of log Z_j (an upper bound in expectation "
                f"when its reference sentences are draws of the model) lies below the SMC or forward AIS estimate "
                f"(one-sided Welch t-test at the {self.z:g}-standard-error level, shared by the lengths); worst at "
                f"length {self.lengths[worst]}: conditional "
                f"{csmc.log_z[worst]:.2f} +- {csmc.stderr[worst]:.2f}, SMC {smc.log_z[worst]:.2f}, forward AIS "
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
        temps = f"{span(used)} temperatures" + (", growing with length" if used.min() < used.max() else "")
        exact = ", exact where V^j is small" if "exact" in methods else ""
        ais = f"forward and reverse AIS from the {self.base} base ({temps}, {self.n_chains} chains{exact})"
        if self.smc is None:
            return f"midpoint of {ais}"
        smc = f"SMC ({self.smc_replicates} x {self.smc_particles} particles)"
        bracketed = self.csmc_bracketed.size
        if bracketed == 0:
            return f"midpoint of {ais}, or {smc} where higher"
        used = self.csmc_particles[self.csmc_particles > 0]
        particles = span(used)
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
        csmc_failed, refuted = set(self.csmc_failed.tolist()), set(self.refuted.tolist())

        def opt(values: np.ndarray | None, i: int) -> float | None:
            return None if values is None else float(values[i])
        csmc = self.estimates.get("csmc")
        return [{"j": int(j), "method": meth, "temperatures": int(t), "forward": float(f), "reverse": float(r),
                 "checked": float(c), "lower": float(lo), "upper": float(hi), "augsa": float(a),
                 "flagged": bool(a < lo - self.margin or a > hi + self.margin), "reverse_failed": bool(j in failed),
                 "forward_se": float(self.forward_se[i]), "reverse_se": float(self.reverse_se[i]),
                 "forward_half": opt(self.forward_half, i), "forward_half_se": opt(self.forward_half_se, i),
                 "still_rising": bool(j in rising), "forward_ess": opt(self.forward_ess, i),
                 "smc": opt(self.smc, i), "smc_se": opt(self.smc_se, i), "smc_spread": opt(self.smc_spread, i),
                 "ais_missed": bool(j in missed), "smc_unsettled": bool(j in unsettled),
                 "csmc": float(csmc.log_z[i]) if csmc is not None and np.isfinite(csmc.log_z[i]) else None,
                 "csmc_se": float(csmc.stderr[i]) if csmc is not None and np.isfinite(csmc.log_z[i]) else None,
                 "csmc_failed": bool(j in csmc_failed),
                 "known_floor": (float(self.floor.log_z[i]) if self.floor is not None
                                 and np.isfinite(self.floor.log_z[i]) else None),
                 "known_floor_refuted": bool(j in refuted)}
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
        conditional SMC came out below the lower side (:attr:`csmc_failed`), ``refuted_lengths`` those where the known
        sentences' bound lay above the interval (:attr:`refuted`).

        An unchecked sentence that AugSA's normaliser gives a positive log-probability has no valid probability
        (the pooled ``m+`` normaliser covers the sampled lengths ``m+1, m+2`` only, Sec. 5.4, and a much longer
        sentence can outscore it): such sentences are left out of every checked perplexity and counted in
        ``excluded_sentences``; ``impossible_checked`` counts checked sentences whose log-probability with the
        checked normalisers is positive (that ``log Z_j`` is too low)."""
        dims = model.dimension(corpus.lengths)
        base = model.log_prob(corpus, allow_positive=True)  # re-based below; log p > 0 is counted
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
        out["refuted_lengths"] = int(np.count_nonzero(np.isin(self.refuted, dims)))
        return out


def _normal_tail(z: float) -> float:
    """``P(N(0, 1) > z)``."""
    return float(special.ndtr(-z))


def _below(a: np.ndarray, se_a: np.ndarray, runs_a: int, b: np.ndarray, se_b: np.ndarray, runs_b: int,
           level: float) -> np.ndarray:
    """Where ``a`` lies below ``b`` by a one-sided Welch t-test at ``level``: ``(b - a) / sqrt(se_a^2 + se_b^2)``
    above Student's t quantile with the Welch-Satterthwaite degrees of freedom (``runs - 1`` behind each standard
    error; a side with one run or none counts as exact).  With both errors 0, any shortfall counts."""
    va, vb = np.asarray(se_a, float) ** 2, np.asarray(se_b, float) ** 2
    spread = va ** 2 / max(runs_a - 1, 1) + vb ** 2 / max(runs_b - 1, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        dof = np.where(spread > 0, (va + vb) ** 2 / spread, np.inf)
    limit = special.stdtrit(dof, 1.0 - level) * np.sqrt(va + vb)
    return np.asarray(b, float) - np.asarray(a, float) > np.nan_to_num(limit)


def span(values: np.ndarray) -> str:
    """``"20-206"`` for a note or a description, or ``"20"`` where every value is the same."""
    low, high = int(np.min(values)), int(np.max(values))
    return f"{low}" if low == high else f"{low}-{high}"


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
    is suspect) or an interval below the known sentences' exact bound (``refuted_lengths``) the checked value (midpoint normalisers) is reported; otherwise the
    check is inconclusive and the interval's **high end** is reported -- the
    conservative value: an under-converged AIS errs towards too small a ``log Z`` and so too good a
    perplexity (forward AIS is a lower bound in expectation, and reverse AIS from approximate samples fell
    below 300-temperature forward AIS at some KJV lengths), and a headline must not claim a gain it
    cannot defend."""
    inconclusive = (interval_is_inconclusive(ppl["low"], ppl["high"], tolerance)
                    or ppl.get("degenerate_lengths", 0) > 0 or ppl.get("unsettled_lengths", 0) > 0
                    or ppl.get("csmc_failed_lengths", 0) > 0 or ppl.get("refuted_lengths", 0) > 0)
    if inconclusive:
        return float(ppl["high"]), "high end of the checked interval (inconclusive check)", True
    return float(ppl["checked"]), "checked normalisers", False
