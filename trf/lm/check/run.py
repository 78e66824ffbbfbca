"""``check_normalisers``: every ``log Z_j`` checked from both sides, exactly where ``V^j`` is small.

The check is a pipeline: the plan (:mod:`trf.lm.check.plan`: the SMC runs, whose draws start the reverse AIS chains,
and the AIS temperatures, fixed or from a time budget), the estimates (:mod:`trf.lm.check.estimates`: exact, forward
and reverse AIS, SMC, conditional SMC), the bracket (:mod:`trf.lm.check.bracket`: the interval per length and the
checked value) and the notes on the effort that the report (:mod:`trf.lm.check.report`) prints.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from typing import Callable, NamedTuple, Sequence

import numpy as np

from samplers.validation import check_float, check_int
from trf.lm.check.bracket import NormaliserCheck, span
from trf.lm.check.estimates import (
    AIS_BASES,
    EXACT_LIMIT,
    AISSetup,
    LogZEstimate,
    bidirectional_estimates,
    conditional_smc_estimate,
    exact_estimate,
    forward_estimate,
    known_sentences,
    run_conditional_smc,
    run_smc,
    smc_estimate,
)
from trf.lm.check.plan import SMC_PARTICLE_RANGE, BudgetPlan, CheckEffort, Clock, pilot_plan
from trf.lm.corpus import EncodedCorpus
from trf.lm.known import Neighbours
from trf.lm.model import SentenceTRF
from trf.lm.smc import ConditionalSMCResult, SMCResult, known_mass

__all__ = ["check_normalisers", "OVERRUN"]

OVERRUN = 1.5
"""The check says at once, before its AIS runs, when its minimum effort is predicted to take more than this times
its time budget (:func:`check_normalisers`' ``on_note``)."""

_log = logging.getLogger("trf.lm.check")


SMC_ESCALATION = 4
"""Where the check's SMC runs have not settled at some length, they run once more with this many times the particles
(:func:`check_normalisers` ``smc_escalation``)."""


class _SMCStage(NamedTuple):
    """The check's SMC runs (None: none ran), their seconds, and -- where a first try had not settled and the runs
    went again with more particles -- that try's particles and unsettled lengths (``first_particles`` 0: one try)."""

    smc: SMCResult | None
    seconds: float
    first_particles: int = 0
    first_unsettled: np.ndarray = np.zeros(0, dtype=np.int64)

    def note(self) -> str | None:
        """The escalation in words (None where the first try settled or was the only one)."""
        if not self.first_particles or self.smc is None:
            return None
        named = ", ".join(map(str, self.first_unsettled[:10])) + (", ..." if self.first_unsettled.size > 10 else "")
        return (f"SMC had not settled at {self.first_unsettled.size} lengths ({named}) with {self.first_particles} "
                f"particles per run, so its runs went again with {self.smc.n_particles} (the estimates are the second "
                "try's alone)")


def _settled(smc: SMCResult, lengths: np.ndarray) -> np.ndarray:
    """Mask of ``lengths`` where the SMC replicates spread at most :attr:`NormaliserCheck.MAX_SMC_SPREAD`."""
    return smc.spread[lengths - 1] <= NormaliserCheck.MAX_SMC_SPREAD


def _smc_stage(model: SentenceTRF, lengths: np.ndarray, n_particles: int | None, n_replicates: int,
               budget: float | None, rng, n_keep: int, clock: Clock, *, known=None,
               escalation: int = SMC_ESCALATION) -> _SMCStage:
    """The check's SMC runs over ``1..max(lengths)`` and their seconds on ``clock``: ``n_particles`` per run, or as
    many as ``budget`` seconds buy by a 200-particle pilot (whose compilation is not timed); the ``known`` sentences
    weighed exactly (:func:`run_smc`).  Where they have not settled at some of ``lengths``, they run once more with
    ``escalation`` times the particles (at most :data:`SMC_PARTICLE_RANGE`'s top; ``escalation`` <= 1: never), and
    the second try's runs, independent of the first, are the estimates; the seconds are the second try's."""
    if lengths.size == 0 or n_particles == 0:
        return _SMCStage(None, 0.0)
    low, high = SMC_PARTICLE_RANGE
    if n_particles is None:
        if budget is None or budget <= 0:
            return _SMCStage(None, 0.0)
        pilot = 200
        run_smc(model, lengths, pilot, n_replicates, np.random.default_rng(0))  # compile, untimed
        start = clock()
        run_smc(model, lengths, pilot, n_replicates, rng)
        per_particle = max(clock() - start, 1e-6) / pilot
        n_particles = int(np.clip(budget / per_particle, low, high))
    start = clock()
    smc = run_smc(model, lengths, n_particles, n_replicates, rng, n_keep=n_keep, known=known)
    seconds = clock() - start
    if smc is None:
        return _SMCStage(None, seconds)
    unsettled = lengths[~_settled(smc, lengths)]
    more = min(escalation * n_particles, max(high, n_particles))
    if unsettled.size == 0 or escalation <= 1 or more <= n_particles:
        return _SMCStage(smc, seconds)
    start = clock()
    again = run_smc(model, lengths, more, n_replicates, rng, n_keep=n_keep, known=known)
    return _SMCStage(again, clock() - start, n_particles, unsettled)


def _csmc_stage(model: SentenceTRF, lengths: np.ndarray, smc: SMCResult | None, n_particles: int | None,
                budget: float | None, rng, smc_seconds: float = 0.0, *, known=None) -> ConditionalSMCResult | None:
    """The check's conditional SMC runs (None when there is nothing to run): at each of ``lengths`` where SMC settled,
    one run per SMC replicate pinned to an SMC draw; ``n_particles`` per run, or as many as ``budget`` seconds buy
    at the SMC runs' measured speed (particle-positions per ``smc_seconds``), the same time for every length (so
    ``N_j ∝ 1 / j``: short lengths, where test sentences are many and the estimates spread most, get the most)."""
    if smc is None or smc.kept is None or n_particles == 0:
        return None
    settled = lengths[_settled(smc, lengths)]
    if settled.size == 0:
        return None
    n_runs = smc.replicates.shape[0]
    if n_particles is None:
        if budget is None or budget <= 0:
            return None
        speed = n_runs * smc.n_particles * smc.lengths.size / max(smc_seconds, 1e-6)
        low, high = SMC_PARTICLE_RANGE
        per_length = np.clip(budget * speed / (n_runs * settled.size * settled), low, high).astype(np.int64)
    else:
        per_length = np.full(settled.size, max(2, n_particles), dtype=np.int64)
    return run_conditional_smc(model, smc, settled, per_length, rng, known)


@dataclass
class _Schedule:
    """The AIS temperatures per length (0 where exact): fixed, or from a time budget by a pilot-fitted cost model
    (``plan``, :func:`pilot_plan`), re-planned before each AIS length from the remaining budget and the measured
    over the predicted cost so far (the short pilot misjudged the cost by 1.2-1.45x on fortunes)."""

    temperatures: np.ndarray  # int64, per length
    ais_index: np.ndarray     # the lengths run by AIS (not exact), in order
    plan: BudgetPlan | None = None
    budget: float = 0.0
    started: float = 0.0      # the check's start on ``clock``
    clock: Clock = time.perf_counter
    done: int = 0             # AIS lengths run so far
    spent: float = 0.0        # their measured seconds
    predicted: float = 0.0    # and their predicted seconds
    tick: float = 0.0         # the current length's start
    first_plan: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # before the first length
    overrun: str = ""         # the note when the minimum effort is predicted to overrun the budget (:func:`_overrun`)

    @classmethod
    def fixed(cls, exact_mask: np.ndarray, n_temperatures: int) -> "_Schedule":
        """``n_temperatures`` at every AIS length."""
        return cls(np.where(exact_mask, 0, n_temperatures).astype(np.int64), np.flatnonzero(~exact_mask))

    @classmethod
    def budgeted(cls, setup: AISSetup | None, lengths: np.ndarray, exact_mask: np.ndarray, budget: float, rng, *,
                 burn_in: int, extra: float, started: float, clock: Clock) -> "_Schedule":
        """The temperatures that fit what is left of ``budget`` (``setup`` is None when every length is exact)."""
        ais_index = np.flatnonzero(~exact_mask)
        temperatures = np.zeros(lengths.size, dtype=np.int64)
        if setup is None:
            return cls(temperatures, ais_index, budget=budget, started=started, clock=clock)
        plan = pilot_plan(setup, lengths[ais_index], rng, burn_in=burn_in, extra=extra, clock=clock)
        spent = clock() - started
        temperatures[ais_index] = plan.solve(budget - spent)
        return cls(temperatures, ais_index, plan, budget, started, clock, first_plan=temperatures[ais_index].copy(),
                   overrun=_overrun(plan, budget, spent))

    def start_length(self, k: int) -> int:
        """The temperatures of length ``k`` (an AIS length), re-planned first on a budget."""
        if self.plan is not None:
            factor = self.spent / self.predicted if self.predicted > 0 else 1.0
            rest = self.plan.solve(self.budget - (self.clock() - self.started), self.done, factor)
            self.temperatures[self.ais_index[self.done:]] = rest
            self.tick = self.clock()
        return int(self.temperatures[k])

    def end_length(self, n_temperatures: int) -> None:
        """Record the measured and predicted cost of the AIS length just run at ``n_temperatures``."""
        if self.plan is not None:
            self.spent += self.clock() - self.tick
            self.predicted += self.plan.cost(np.array([n_temperatures]), self.done)
            self.done += 1


def _duration(seconds: float) -> str:
    """``seconds`` as ``"61 ms"`` below a second, ``"1.6 s"`` below 100 (3 significant digits), ``"1060 s"`` above."""
    if seconds >= 99.95:
        return f"{seconds:.0f} s"
    return f"{1e3 * seconds:.3g} ms" if seconds < 0.9995 else f"{seconds:.3g} s"  # 0.9996 s: "1 s", not "1e+03 ms"


def _overrun(plan: BudgetPlan, budget: float, spent: float) -> str:
    """The note, made as soon as the pilot has measured the AIS cost per temperature, when the check's minimum effort
    (``plan.low`` temperatures at every AIS length) is predicted to take more than :data:`OVERRUN` times ``budget``
    seconds in all (``spent``: the seconds already gone on SMC and the pilot); empty otherwise."""
    ais = plan.cost(np.full(plan.lengths.size, plan.low))
    total = spent + ais
    if total <= OVERRUN * budget:
        return ""
    return (f"the {_duration(budget)} budget is too small for the check's minimum effort: {plan.low} AIS temperatures "
            f"at each of {plan.lengths.size} lengths take about {_duration(ais)} by the pilot's cost model "
            f"({_duration(plan.per_temperature.min())}-{_duration(plan.per_temperature.max())} per temperature), "
            f"{_duration(total)} in all with the {_duration(spent)} spent on SMC and the pilot, {total / budget:.1f} x "
            f"the budget; the check goes on at that minimum.  To plan for it give --check-seconds {math.ceil(total)}; "
            f"for a shorter check a fixed --check-effort T,P[,C] with T < {plan.low}")


def _ais_estimates(model: SentenceTRF, setup: AISSetup | None, lengths: np.ndarray, exact_mask: np.ndarray,
                   schedule: _Schedule, smc: SMCResult | None, rng, *, n_chains: int, burn_in: int, half_run: bool,
                   exact_limit: int) -> tuple[dict[str, LogZEstimate], list[str]]:
    """Forward and reverse AIS at each AIS length (and the half run), the exact value with zero error at the others;
    the reverse chains start from SMC draws where SMC settled.  Also the method per length."""
    forward, reverse, half, method = [], [], [], []
    for k, j in enumerate(lengths.tolist()):
        if setup is None or exact_mask[k]:  # setup is None only when every length is exact
            exact = exact_estimate(model, np.array([j]), exact_limit)._replace(ess=np.array([float(n_chains)]))
            forward.append(exact)
            reverse.append(exact)
            half.append(exact)
            method.append("exact")
            continue
        n_temp = schedule.start_length(k)
        starts = (smc.draws(j, n_chains, rng) if smc is not None and smc.kept is not None
                  and smc.spread[j - 1] <= NormaliserCheck.MAX_SMC_SPREAD else None)
        fwd, rev = bidirectional_estimates(setup, j, n_temp, rng, burn_in=burn_in, reverse_starts=starts)
        forward.append(fwd)
        reverse.append(rev)
        method.append("bdmc")
        if half_run:
            half.append(forward_estimate(setup, j, max(2, (n_temp + 1) // 2), rng))
        schedule.end_length(n_temp)
    estimates = {"forward": LogZEstimate.concat("forward AIS", forward),
                 "reverse": LogZEstimate.concat("reverse AIS", reverse)}
    if half_run:
        estimates["forward_half"] = LogZEstimate.concat("forward AIS", half)
    return estimates, method


def _smc_estimates(lengths: np.ndarray, exact_mask: np.ndarray, exact_values: np.ndarray, smc: SMCResult,
                   csmc: ConditionalSMCResult | None) -> dict[str, LogZEstimate]:
    """The SMC and conditional SMC estimates at every length: ``exact_values`` with zero error where exact (SMC 0
    spread); NaN for conditional SMC where it did not run (SMC unsettled)."""
    at = ~exact_mask
    zero = np.zeros(lengths.size)
    s = smc_estimate(smc, lengths[at])
    log_z, stderr, spread, effort = exact_values.copy(), zero.copy(), zero.copy(), np.zeros(lengths.size, np.int64)
    log_z[at], stderr[at], spread[at], effort[at] = s.log_z, s.stderr, s.spread, s.effort
    estimates = {"smc": LogZEstimate("SMC", lengths, log_z, stderr, effort, spread=spread, runs=s.runs,
                                     seconds=s.seconds)}
    nan = np.where(exact_mask, 0.0, np.nan)
    log_z, stderr, spread = np.where(exact_mask, exact_values, np.nan), nan.copy(), nan.copy()
    effort = np.zeros(lengths.size, dtype=np.int64)
    runs, seconds = 0, 0.0
    if csmc is not None:
        ran = conditional_smc_estimate(csmc)
        where = np.isin(lengths, ran.lengths)
        log_z[where], stderr[where], spread[where], effort[where] = ran.log_z, ran.stderr, ran.spread, ran.effort
        runs, seconds = ran.runs, ran.seconds
    estimates["csmc"] = LogZEstimate("conditional SMC", lengths, log_z, stderr, effort, spread=spread, runs=runs,
                                     seconds=seconds)
    return estimates


def _known_note(smc: SMCResult, n_known: int, neighbours: Neighbours | None = None) -> str:
    """How much of the SMC estimates the known sentences weighed exactly, in words (and, where the limit cut them,
    whose class neighbours were among them)."""
    assert smc.log_known is not None
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.exp(smc.log_known - smc.log_z)
    share = np.where(np.isfinite(share), share, 0.0)
    worst = int(np.argmax(share))
    return (f"SMC and conditional SMC weighed {n_known:,} known sentences exactly (log Z_j = log (W_j + rest), the rest "
            f"estimated outside them): their share of the SMC estimate is at most {100 * share[worst]:.3g}% (length "
            f"{smc.lengths[worst]}), above 1% at {int((share > 0.01).sum())} of {smc.lengths.size} lengths"
            + ("" if neighbours is None or not neighbours.cut else
               f"; the class neighbours of the {neighbours.taken:,} heaviest of {neighbours.heavy:,} heavy known "
               f"sentences are among them (all would need {neighbours.rows:,} rows, past the limit of {neighbours.limit:,}; the "
               "others' neighbours are in the estimated rest)"))


def _effort_notes(schedule: _Schedule, lengths: np.ndarray, n_chains: int, smc: SMCResult | None,
                  csmc: ConditionalSMCResult | None, seconds: float, n_known: int = 0,
                  neighbours: Neighbours | None = None, *, escalation: str | None = None) -> list[str]:
    """How the effort was chosen and spent, in words (:attr:`NormaliserCheck.notes`)."""
    notes = []
    plan, ais_lengths, used = schedule.plan, lengths[schedule.ais_index], schedule.temperatures[schedule.ais_index]
    if plan is not None:
        first = schedule.first_plan
        notes.append(f"{span(used)} temperatures (in proportion to length) for a {schedule.budget:.0f} s "
                     f"budget: first plan {span(first)} from a pilot "
                     f"({_duration(plan.per_temperature.min())}-{_duration(plan.per_temperature.max())} per "
                     f"temperature at lengths {ais_lengths.min()}-{ais_lengths.max()}), re-planned before each length "
                     f"from the measured cost (measured / pilot-predicted: "
                     f"{schedule.spent / max(schedule.predicted, 1e-12):.2f})")
        if schedule.overrun:
            notes.append(schedule.overrun)
    elif ais_lengths.size:
        notes.append(f"a fixed effort: {used.max()} temperatures per AIS run, {n_chains} chains per length and "
                     "direction")
    if smc is not None:
        notes.append(f"SMC: {smc.replicates.shape[0]} runs of {smc.n_particles} particles over lengths "
                     f"1-{smc.lengths.max()} in {smc.seconds:.1f} s")
        if escalation:
            notes.append(escalation)
        if smc.log_known is not None:
            notes.append(_known_note(smc, n_known, neighbours))
    if csmc is not None:
        notes.append(f"conditional SMC: {csmc.runs.shape[0]} runs of {span(csmc.n_particles)} particles at each of "
                     f"{csmc.lengths.size} lengths where SMC settled (about the same time per length), in "
                     f"{csmc.seconds:.1f} s")
    if plan is not None and seconds > 1.25 * schedule.budget:
        notes.append(f"the check took {seconds:.0f} s, {seconds / schedule.budget:.2f} x its "
                     f"{schedule.budget:.0f} s budget")
    return notes


def _effort_or_budget(model: SentenceTRF, effort: CheckEffort | None, n_temperatures: int | None,
                      time_budget: float | None, smc_particles: int | None,
                      csmc_particles: int | None) -> CheckEffort | float:
    """What the check may spend: ``effort`` (validated); or ``n_temperatures`` with ``smc_particles`` and
    ``csmc_particles`` as a fixed effort (a :class:`CheckEffort`'s defaults where not given); or else a time budget in
    seconds (default 15% of the model's recorded training time, at least 10 s)."""
    if effort is not None:
        if not isinstance(effort, CheckEffort):
            raise TypeError(f"effort must be a CheckEffort, got {type(effort).__name__}")
        return effort.validate()
    if n_temperatures is not None:
        fixed = CheckEffort(check_int(n_temperatures, "n_temperatures", low=2), conditional_particles=csmc_particles)
        return fixed if smc_particles is None else fixed._replace(particles=smc_particles)
    if time_budget is None:
        time_budget = max(10.0, 0.15 * float(model.meta.get("train_seconds", 60.0)))
    return check_float(time_budget, "time_budget", low=0.0, low_open=True)


class _Plan(NamedTuple):
    """The check's plan: the SMC and conditional SMC runs (None when not run), the AIS temperatures, and the SMC
    runs' second try in words (None: one try)."""

    smc: SMCResult | None
    csmc: ConditionalSMCResult | None
    schedule: _Schedule
    escalation_note: str | None = None


def _plan(model: SentenceTRF, setup: AISSetup | None, lengths: np.ndarray, exact_mask: np.ndarray,
          spend: CheckEffort | float, rng, *, n_chains: int, smc_particles: int | None, csmc_particles: int | None,
          smc_replicates: int, smc_fraction: float, csmc_fraction: float, burn_in: int, half_run: bool,
          started: float, clock: Clock, on_note: Callable[[str], None], known=None,
          smc_escalation: int = SMC_ESCALATION) -> _Plan:
    """The SMC runs first (their draws start the reverse AIS chains), then the AIS temperatures: a fixed effort, or
    a time budget ``spend`` of which SMC and conditional SMC get their fractions and AIS the rest; a predicted
    overrun of the budget goes to ``on_note`` at once.  SMC runs again with ``smc_escalation`` times the particles
    where it has not settled (:func:`_smc_stage`); on a time budget that second try comes out of AIS's share."""
    ais_lengths = lengths[~exact_mask]
    if isinstance(spend, CheckEffort):
        stage = _smc_stage(model, ais_lengths, spend.particles, smc_replicates, None, rng, n_chains, clock,
                           known=known, escalation=smc_escalation)
        if stage.smc is not None:  # the default conditional particles follow the particles SMC ran with
            spend = spend._replace(particles=stage.smc.n_particles)
        csmc = _csmc_stage(model, ais_lengths, stage.smc, spend.csmc_particles, None, rng, known=known)
        return _Plan(stage.smc, csmc, _Schedule.fixed(exact_mask, spend.temperatures), stage.note())
    stage = _smc_stage(model, ais_lengths, smc_particles, smc_replicates, smc_fraction * spend, rng, n_chains, clock,
                       known=known, escalation=smc_escalation)
    csmc = _csmc_stage(model, ais_lengths, stage.smc, csmc_particles, csmc_fraction * spend, rng, stage.seconds,
                       known=known)
    schedule = _Schedule.budgeted(setup, lengths, exact_mask, spend, rng, burn_in=burn_in,
                                  extra=0.25 if half_run else 0.0, started=started, clock=clock)
    if schedule.overrun:
        on_note(schedule.overrun)
    return _Plan(stage.smc, csmc, schedule, stage.note())


def check_normalisers(model: SentenceTRF, lengths, *, n_temperatures: int | None = None, n_chains: int = 10,
                      time_budget: float | None = None, z: float = 3.0, margin: float = 0.5, burn_in: int = 10,
                      seed=0, exact_limit: int = EXACT_LIMIT, parallel: bool = True,
                      base: str = "unigram", half_run: bool = True, smc_particles: int | None = None,
                      smc_replicates: int = 8, smc_fraction: float = 0.25, csmc_particles: int | None = None,
                      csmc_fraction: float = 0.4, effort: CheckEffort | None = None,
                      clock: Clock = time.perf_counter, on_note: Callable[[str], None] | None = None,
                      known: Sequence[EncodedCorpus] = (), smc_escalation: int = SMC_ESCALATION) -> NormaliserCheck:
    """Check ``log Z_j`` for each of ``lengths`` from both sides (bidirectional AIS, or exactly), and by SMC.

    For each length ``j`` (at most ``m``): when ``V^j <= exact_limit`` the exact sum over all sentences is
    used; otherwise forward AIS from ``base`` (a stochastic lower bound of ``log Z_j``, Neal 2001) and
    reverse AIS from the forward chains' end states after ``burn_in`` sweeps at the model (the model's own
    samples; an upper bound in expectation when those are exact draws, Grosse et al. 2015, Sec. 4) give
    ``[forward - z se_f, reverse + z se_r]``.  With exact starts each side misses with probability at most
    about ``Phi(-z)`` (0.13% for ``z = 3``); approximate starts can pull the reverse estimate down, so a gap
    ``reverse - forward`` near 0 is the sign that both have converged.  Every standard error here is estimated
    from the runs behind it (AIS chains, SMC runs), so each ``z se`` below stands for Student's t quantile at the
    same tail with ``runs - 1`` degrees of freedom (:meth:`LogZEstimate.half_width`): 4.09 standard errors for 10
    chains, 4.53 for 8 SMC runs (the normal ``z`` left the exact ``log Z_j`` out at some length in 14 of 100 checks
    of the tests' needle model with 4 SMC runs; the quantile, in none).

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
        The trained model; its ``zeta`` (AugSA's estimates, plus ``log Z_1``) is what the check tests.
    lengths : iterable of int
        Lengths to check (each in 1..m).
    n_temperatures : int, optional
        Temperatures per AIS run at every length (a fixed effort, as ``effort``).  Default: chosen from ``time_budget`` in proportion to the
        length (the AIS gap to bridge grows with it): ``T_j = c j`` with ``c`` set by a pilot run so that
        the whole check fits the budget, each ``T_j`` between 20 and 5000.
    n_chains : int
        AIS chains per length and direction.
    time_budget : float, optional
        Seconds for the whole check when ``n_temperatures`` is not given; default 15% of the model's
        recorded training time (``meta["train_seconds"]``), at least 10 s.
    z, margin : float
        The interval's level, as normal standard errors (each end misses with probability about ``Phi(-z)``;
        the width is the t quantile at that tail, above), and the nats by which AugSA may leave it before it
        is flagged.
    burn_in : int
        Sweeps at ``beta = 1`` before the reverse run.
    seed : int, Generator or None
        Randomness of every run (SPEC 7); the result is reproducible at a fixed seed and ``effort``.
    exact_limit : int
        Largest ``V^j`` summed exactly (0: never; every length by AIS).
    parallel : bool
        Run the AIS chains in parallel on all cores; False runs them serially.
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
        measure, their number the degrees of freedom of the interval's ends: 8 runs put them 4.53 standard
        errors out, 4 runs 9.22); they run on all cores.  With a time budget, the runs share the SMC time.
    smc_fraction : float
        Share of ``time_budget`` given to SMC when ``smc_particles`` is not given.
    csmc_particles : int, optional
        Particles per conditional SMC run (0: none).  Default: as many as ``csmc_fraction`` of ``time_budget``
        buys at the SMC runs' measured speed (100 to 200,000), or ``min(smc_particles, 1000)`` when
        ``n_temperatures`` is given.
    csmc_fraction : float
        Share of ``time_budget`` given to conditional SMC when ``csmc_particles`` is not given (the rest of the
        budget, after SMC, goes to AIS).  Its errors set most of a settled interval's width: 0.4 rather than 0.25
        narrowed the seed-3 checks of fortunes from 2.3% to 1.6% and of KJV from 2.7% to 1.9% (600 s each).
    effort : CheckEffort, optional
        A fixed effort -- temperatures, SMC particles, conditional SMC particles -- instead of a time budget:
        the same work, and so the same result at a fixed seed, on any machine (overrides ``n_temperatures``,
        ``smc_particles`` and ``csmc_particles``).
    clock : callable, optional
        The clock the budget is measured with (default :func:`time.perf_counter`); a test injects a
        deterministic one so that the plan does not depend on the machine's speed.
    on_note : callable, optional
        Called at once with a note the check makes before its long work: on a time budget, as soon as the pilot
        has measured the AIS cost per temperature, when even the minimum effort (20 temperatures per length) is
        predicted to take more than :data:`OVERRUN` (1.5) times the budget -- the predicted seconds, the budget
        and the flags that fix it.  Default: a warning on the ``trf.lm.check`` logger.  The note is also in the
        result's :attr:`NormaliserCheck.notes`.
    known : sequence of EncodedCorpus
        Sentences at hand (the test text, the training text; the model's vocabulary): the sum of ``exp(lambda .
        f(x))`` over the distinct ones of each length is an exact lower bound of ``Z_j``
        (:func:`trf.lm.check.estimates.known_floor`, with their class neighbours).  SMC and conditional SMC weigh
        them exactly (``Z_j = W(S_j) + Z_j(rest)``, :func:`trf.lm.smc.smc_log_z` ``known``), so a run that never
        reaches a heavy known sentence still counts it.  Every interval end and checked value is at least the bound,
        and the lengths where the estimators' interval lay below it are :attr:`NormaliserCheck.refuted`: there the
        estimators (AIS alone, where SMC did not run) missed sentences the model weighs heavily.
    smc_escalation : int
        Where the SMC runs have not settled at some length (:attr:`NormaliserCheck.unsettled`), they run once more,
        before anything else, with this many times the particles (at most 200,000), and that second try -- its
        runs independent of the first -- gives the SMC estimates, the conditional SMC references and the reverse
        AIS starts (0 or 1: one try).  A note says so.  On a time budget the second try comes out of AIS's share;
        with a fixed ``effort`` it is part of the effort (the same result at a fixed seed).  The default 4 halves a
        spread that shrinks as ``1 / sqrt(N)``; where one run reaches a rare heavy sentence, more particles need not
        settle it (experiments/trf_lm/methods.md, "A second SMC try where the first has not settled").

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
    smc_escalation = check_int(smc_escalation, "smc_escalation", low=0)
    smc_fraction = check_float(smc_fraction, "smc_fraction", low=0.0, high=1.0, high_open=True)
    csmc_fraction = check_float(csmc_fraction, "csmc_fraction", low=0.0, high=1.0 - smc_fraction, high_open=True)
    if effort is None and smc_particles is not None:
        smc_particles = check_int(smc_particles, "smc_particles", low=0)
    if effort is None and csmc_particles is not None:
        csmc_particles = check_int(csmc_particles, "csmc_particles", low=0)
    spend = _effort_or_budget(model, effort, n_temperatures, time_budget, smc_particles, csmc_particles)
    started = clock()
    rng = np.random.default_rng(seed)
    exact_mask = np.array([float(model.features.n_words) ** j <= exact_limit for j in lengths])
    setup = AISSetup.build(model, n_chains, parallel, base) if not exact_mask.all() else None
    floor, known_set = known_sentences(model, known, lengths) if len(known) else (None, None)
    known_mass_set = None if known_set is None else known_mass(known_set, model.m)  # one look-up set for every run
    smc, csmc, schedule, escalated = _plan(model, setup, lengths, exact_mask, spend, rng, n_chains=n_chains,
                                           smc_particles=smc_particles, csmc_particles=csmc_particles,
                                           smc_replicates=smc_replicates, smc_fraction=smc_fraction,
                                           csmc_fraction=csmc_fraction, burn_in=burn_in, half_run=half_run,
                                           started=started, clock=clock,
                                           on_note=_log.warning if on_note is None else on_note, known=known_mass_set,
                                           smc_escalation=smc_escalation)
    estimates, method = _ais_estimates(model, setup, lengths, exact_mask, schedule, smc, rng, n_chains=n_chains,
                                       burn_in=burn_in, half_run=half_run, exact_limit=exact_limit)
    if smc is not None:
        estimates.update(_smc_estimates(lengths, exact_mask, estimates["forward"].log_z, smc, csmc))
    seconds = clock() - started
    return NormaliserCheck.bracket(lengths, method, estimates, model.zeta[lengths - 1] + model.log_z1(), margin=margin,
                                   z=z, n_chains=n_chains, seconds=seconds, m_total=int(model.pi.size),
                                   notes=_effort_notes(schedule, lengths, n_chains, smc, csmc, seconds,
                                                       0 if known_set is None else known_set[1].size,
                                                       None if floor is None else floor.neighbours, escalation=escalated),
                                   base=base, floor=floor)
