"""The check's effort: a fixed effort (:class:`CheckEffort`), or a time budget shared out by a cost model.

With a time budget, SMC gets ``smc_fraction`` of it (particles from a 200-particle pilot), conditional SMC
``csmc_fraction`` (at the SMC runs' measured speed), and AIS the rest: ``T_j = clip(round(c j), 20, 5000)``
temperatures in proportion to the length, ``c`` the largest whose predicted cost fits (:class:`BudgetPlan`,
fitted by :func:`pilot_plan`).  Every measurement reads an injected ``clock`` (default
:func:`time.perf_counter`), so a test can give the plan a machine-independent cost.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, NamedTuple

import numpy as np

from samplers.validation import check_int
from trf.lm.check.estimates import AISSetup, bidirectional_estimates, forward_estimate

__all__ = ["CheckEffort", "BudgetPlan", "pilot_plan", "SMC_PARTICLE_RANGE", "Clock"]

Clock = Callable[[], float]
SMC_PARTICLE_RANGE = (100, 200_000)


class CheckEffort(NamedTuple):
    """A fixed effort for the check, independent of the machine's speed.

    Attributes
    ----------
    temperatures : int
        AIS temperatures per run at every length (>= 2).
    particles : int
        Particles per SMC run (0: no SMC and no conditional SMC).
    conditional_particles : int or None
        Particles per conditional SMC run (0: none; default ``min(particles, 1000)`` of the particles SMC ran
        with: ``particles``, or more where its runs went again, :func:`trf.lm.check.check_normalisers`
        ``smc_escalation``).
    """

    temperatures: int
    particles: int = 2000
    conditional_particles: int | None = None

    def validate(self) -> "CheckEffort":
        """Check the fields (ValueError naming ``effort.<field>``) and return ``self``."""
        check_int(self.temperatures, "effort.temperatures", low=2)
        check_int(self.particles, "effort.particles", low=0)
        if self.conditional_particles is not None:
            check_int(self.conditional_particles, "effort.conditional_particles", low=0)
        return self

    @property
    def csmc_particles(self) -> int:
        """Particles per conditional SMC run: ``conditional_particles``, or ``min(particles, 1000)`` by default."""
        return min(self.particles, 1000) if self.conditional_particles is None else self.conditional_particles

    @classmethod
    def parse(cls, text: str) -> "CheckEffort":
        """``"T,P"`` or ``"T,P,C"``: temperatures, SMC particles and conditional SMC particles."""
        parts = text.split(",")
        if not 2 <= len(parts) <= 3 or not all(p.strip().isdigit() for p in parts):
            raise ValueError(f"expected TEMPERATURES,PARTICLES[,CONDITIONAL_PARTICLES] as integers, got {text!r}")
        values = [int(p) for p in parts]
        if values[0] < 2:
            raise ValueError(f"the temperatures must be >= 2, got {values[0]}")
        return cls(*values)


@dataclass
class BudgetPlan:
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
        """AIS temperatures ``clip(round(c j), low, high)`` at ``lengths[first:]``, int64."""
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


def pilot_plan(setup: AISSetup, lengths: np.ndarray, rng, *, burn_in: int, extra: float,
               clock: Clock = time.perf_counter) -> BudgetPlan:
    """Time the bidirectional run at the shortest and the longest AIS length with ``clock`` and fit the cost of
    one temperature as ``a + b j``: a per-temperature overhead (Python, thread start) that does not shrink with
    ``j`` plus a per-word sweep cost (with the per-word cost alone short lengths were underestimated)."""
    pilot_t = 6
    # warm-up first: the first call compiles the samplers (seconds on a cold Numba cache), which the pilot must
    # not count as sampling time
    bidirectional_estimates(setup, int(lengths.min()), 2, rng, burn_in=1)
    forward_estimate(setup, int(lengths.min()), 2, rng)
    points = []
    for j in sorted({int(lengths.min()), int(lengths.max())}):
        start = clock()
        bidirectional_estimates(setup, j, pilot_t, rng, burn_in=0)
        points.append((j, (clock() - start) / pilot_t))
    if len(points) == 2 and points[1][1] > points[0][1]:
        (j0, c0), (j1, c1) = points
        per_temperature = c0 + (c1 - c0) / (j1 - j0) * (lengths - j0)
    else:  # one length, or the short one timed slower (noise): no overhead term, cost in proportion to j
        j1, c1 = points[-1]
        per_temperature = c1 * lengths / j1
    return BudgetPlan(lengths, np.asarray(per_temperature, dtype=float), extra, burn_in)
