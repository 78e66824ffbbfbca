"""``check_normalisers``: every ``log Z_j`` checked from both sides, exactly where ``V^j`` is small."""

from __future__ import annotations

import time

import numpy as np

from samplers.validation import check_float, check_int
from trf.lm.check.bracket import NormaliserCheck
from trf.lm.check.estimates import (
    AIS_BASES,
    EXACT_LIMIT,
    AISSetup,
    LogZEstimate,
    bidirectional_estimates,
    conditional_smc_estimate,
    exact_estimate,
    forward_estimate,
    run_conditional_smc,
    run_smc,
    smc_estimate,
)
from trf.lm.check.plan import SMC_PARTICLE_RANGE, CheckEffort, Clock, pilot_plan
from trf.lm.model import SentenceTRF

__all__ = ["check_normalisers"]


def _smc_stage(model: SentenceTRF, lengths: np.ndarray, n_particles: int | None, n_replicates: int,
               budget: float | None, rng, n_keep: int, clock: Clock):
    """The check's SMC runs over ``1..max(lengths)`` and their seconds on ``clock`` ((None, 0) when there is
    nothing to run): ``n_particles`` per run, or as many as ``budget`` seconds buy by a 200-particle pilot (whose
    compilation is not timed)."""
    if lengths.size == 0 or n_particles == 0 or (n_particles is None and budget is not None and budget <= 0):
        return None, 0.0
    if n_particles is None:
        pilot = 200
        run_smc(model, lengths, pilot, n_replicates, np.random.default_rng(0))  # compile, untimed
        start = clock()
        run_smc(model, lengths, pilot, n_replicates, rng)
        per_particle = max(clock() - start, 1e-6) / pilot
        low, high = SMC_PARTICLE_RANGE
        n_particles = int(np.clip(budget / per_particle, low, high))
    start = clock()
    smc = run_smc(model, lengths, n_particles, n_replicates, rng, n_keep=n_keep)
    return smc, clock() - start


def _csmc_stage(model: SentenceTRF, lengths: np.ndarray, smc, n_particles: int | None, budget: float | None, rng,
                smc_seconds: float = 0.0):
    """The check's conditional SMC runs (None when there is nothing to run): at each of ``lengths`` where SMC settled,
    one run per SMC replicate pinned to an SMC draw; ``n_particles`` per run, or as many as ``budget`` seconds buy
    at the SMC runs' measured speed (particle-positions per ``smc_seconds``), the same time for every length (so
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
        speed = n_runs * smc.n_particles * smc.lengths.size / max(smc_seconds, 1e-6)
        low, high = SMC_PARTICLE_RANGE
        per_length = np.clip(budget * speed / (n_runs * settled.size * settled), low, high).astype(np.int64)
    else:
        per_length = np.full(settled.size, max(2, n_particles), dtype=np.int64)
    return run_conditional_smc(model, smc, settled, per_length, rng)


def check_normalisers(model: SentenceTRF, lengths, *, n_temperatures: int | None = None, n_chains: int = 10,
                      time_budget: float | None = None, z: float = 3.0, margin: float = 0.5, burn_in: int = 10,
                      seed=0, exact_limit: int = EXACT_LIMIT, parallel: bool = True,
                      base: str = "unigram", half_run: bool = True, smc_particles: int | None = None,
                      smc_replicates: int = 4, smc_fraction: float = 0.25, csmc_particles: int | None = None,
                      csmc_fraction: float = 0.25, effort: CheckEffort | None = None,
                      clock: Clock = time.perf_counter) -> NormaliserCheck:
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
        Interval width in standard errors, and the nats by which AugSA may leave it before it is flagged.
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
    effort : CheckEffort, optional
        A fixed effort -- temperatures, SMC particles, conditional SMC particles -- instead of a time budget:
        the same work, and so the same result at a fixed seed, on any machine (overrides ``n_temperatures``,
        ``smc_particles`` and ``csmc_particles``).
    clock : callable, optional
        The clock the budget is measured with (default :func:`time.perf_counter`); a test injects a
        deterministic one so that the plan does not depend on the machine's speed.

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
    if effort is not None:
        if not isinstance(effort, CheckEffort):
            raise TypeError(f"effort must be a CheckEffort, got {type(effort).__name__}")
        effort = effort.validate()
        n_temperatures, smc_particles, csmc_particles = effort.temperatures, effort.particles, effort.csmc_particles
    if smc_particles is not None:
        smc_particles = check_int(smc_particles, "smc_particles", low=0)
    if csmc_particles is not None:
        csmc_particles = check_int(csmc_particles, "csmc_particles", low=0)
    started = clock()
    rng = np.random.default_rng(seed)
    V = model.features.n_words
    exact_mask = np.array([float(V) ** j <= exact_limit for j in lengths])
    setup = AISSetup.build(model, n_chains, parallel, base) if not exact_mask.all() else None
    notes, plan = [], None
    ais_lengths = lengths[~exact_mask]
    if n_temperatures is not None:
        temperatures = np.full(lengths.size, check_int(n_temperatures, "n_temperatures", low=2), dtype=np.int64)
        smc, _ = _smc_stage(model, ais_lengths, 2000 if smc_particles is None else smc_particles, smc_replicates,
                            None, rng, n_chains, clock)
        csmc = _csmc_stage(model, ais_lengths, smc, min(smc.n_particles, 1000) if smc is not None and
                           csmc_particles is None else csmc_particles, None, rng)
    else:
        if time_budget is None:
            time_budget = max(10.0, 0.15 * float(model.meta.get("train_seconds", 60.0)))
        time_budget = check_float(time_budget, "time_budget", low=0.0, low_open=True)
        smc, smc_seconds = _smc_stage(model, ais_lengths, smc_particles, smc_replicates,
                                      smc_fraction * time_budget, rng, n_chains, clock)
        csmc = _csmc_stage(model, ais_lengths, smc, csmc_particles, csmc_fraction * time_budget, rng, smc_seconds)
        temperatures = np.full(lengths.size, 20, dtype=np.int64)
        if ais_lengths.size:
            plan = pilot_plan(setup, ais_lengths, rng, burn_in=burn_in, extra=0.25 if half_run else 0.0,
                              clock=clock)
            temperatures[~exact_mask] = plan.solve(time_budget - (clock() - started))
            first_plan = temperatures[~exact_mask].copy()
    temperatures[exact_mask] = 0
    forward, reverse, half, method = [], [], [], []
    done, spent, predicted = 0, 0.0, 0.0  # AIS lengths run so far, their measured and predicted seconds
    for k, j in enumerate(lengths):
        if exact_mask[k]:
            exact = exact_estimate(model, [int(j)], exact_limit)._replace(ess=np.array([float(n_chains)]))
            forward.append(exact), reverse.append(exact), half.append(exact)
            method.append("exact")
            continue
        if plan is not None:
            # re-plan the remaining lengths from the remaining budget and the measured/predicted cost so far (the
            # short pilot misjudged the cost by 1.2-1.45x on fortunes)
            factor = spent / predicted if predicted > 0 else 1.0
            rest = plan.solve(time_budget - (clock() - started), done, factor)
            temperatures[np.flatnonzero(~exact_mask)[done:]] = rest
            tick = clock()
        n_temp = int(temperatures[k])
        starts = (smc.draws(int(j), n_chains, rng) if smc is not None and smc.kept is not None
                  and smc.spread[j - 1] <= NormaliserCheck.MAX_SMC_SPREAD else None)
        fwd, rev = bidirectional_estimates(setup, int(j), n_temp, rng, burn_in=burn_in, reverse_starts=starts)
        forward.append(fwd), reverse.append(rev), method.append("bdmc")
        if half_run:
            half.append(forward_estimate(setup, int(j), max(2, (n_temp + 1) // 2), rng))
        if plan is not None:
            spent += clock() - tick
            predicted += plan.cost(np.array([n_temp]), done)
            done += 1
    estimates = {"forward": LogZEstimate.concat("forward AIS", forward), "reverse": LogZEstimate.concat("reverse AIS", reverse)}
    if half_run:
        estimates["forward_half"] = LogZEstimate.concat("forward AIS", half)
    fwd, rev = estimates["forward"], estimates["reverse"]
    low, high = fwd.log_z - z * fwd.stderr, rev.log_z + z * rev.stderr  # BidirectionalResult.interval
    lower, upper = np.minimum(low, high), np.maximum(low, high)
    at = ~exact_mask
    if smc is not None:  # exact lengths keep their value (SMC 0 spread), the others gain the SMC side
        s = smc_estimate(smc, ais_lengths)
        zero = np.zeros(lengths.size)
        est = LogZEstimate("SMC", lengths, fwd.log_z.copy(), zero.copy(), np.zeros(lengths.size, dtype=np.int64),
                           spread=zero.copy(), runs=s.runs, seconds=s.seconds)
        est.log_z[at], est.stderr[at], est.spread[at], est.effort[at] = s.log_z, s.stderr, s.spread, s.effort
        estimates["smc"] = est
        lower = np.maximum(lower, est.log_z - z * est.stderr)
        upper = np.maximum(upper, est.log_z + z * est.stderr)
        # exact lengths: the exact value with 0 error; lengths without a conditional run (SMC unsettled): NaN
        nan = np.where(exact_mask, 0.0, np.nan)
        c = LogZEstimate("conditional SMC", lengths, np.where(exact_mask, fwd.log_z, np.nan), nan.copy(),
                         np.zeros(lengths.size, dtype=np.int64), spread=nan.copy())
        if csmc is not None:
            ran = conditional_smc_estimate(csmc)
            where = np.isin(lengths, ran.lengths)
            c.log_z[where], c.stderr[where], c.spread[where], c.effort[where] = (ran.log_z, ran.stderr, ran.spread,
                                                                                 ran.effort)
            c = c._replace(runs=ran.runs, seconds=ran.seconds)
        estimates["csmc"] = c
    seconds = clock() - started
    if plan is not None:
        used = temperatures[~exact_mask]
        notes.append(f"{used.min()}-{used.max()} temperatures (in proportion to length) for a {time_budget:.0f} s "
                     f"budget: first plan {first_plan.min()}-{first_plan.max()} from a pilot "
                     f"({1e3 * plan.per_temperature.min():.3g}-{1e3 * plan.per_temperature.max():.3g} ms per "
                     f"temperature at lengths {ais_lengths.min()}-{ais_lengths.max()}), re-planned before each length "
                     f"from the measured cost (measured / pilot-predicted: {spent / max(predicted, 1e-12):.2f})")
        if plan.cost(np.full(ais_lengths.size, plan.low)) > time_budget:
            notes.append(f"the budget is too small even for {plan.low} temperatures per length")
    elif ais_lengths.size:
        notes.append(f"a fixed effort: {temperatures[~exact_mask].max()} temperatures per AIS run, {n_chains} chains "
                     "per length and direction")
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
    check = NormaliserCheck(lengths, method, estimates, lower, upper, model.zeta[lengths - 1] + model.log_z1(),
                            margin, z, n_chains, seconds, m_total=int(model.pi.size), notes=notes, base=base)
    if csmc is not None:  # the upper side from conditional SMC where it brackets
        check.upper = np.where(check._bracketed_mask, np.maximum(check.csmc + z * check.csmc_se,
                                                                 check.smc + z * check.smc_se), check.upper)
    return check
