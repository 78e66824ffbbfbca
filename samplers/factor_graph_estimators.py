"""The core's estimators on ``"factor-graph"`` problems (:class:`samplers.problems.FactorGraphProblem`).

* :class:`LoopyBPEstimator` (``loopy-bp``) -- loopy belief propagation, Bethe ``log Z`` and beliefs
  (deterministic; budget = iterations at most);
* :class:`FactorGibbsEstimator` (``gibbs-factor``) -- Rao-Blackwellised Gibbs marginals (budget = sweeps);
* :class:`FactorAISEstimator` (``ais-factor``) -- AIS from the unary-only model (annealing the hard zeros of
  factors of arity >= 2 in as penalties, :func:`samplers.ais.ais_factor_graph`), ``log Z`` and AIS-weighted
  marginals (budget = temperatures);
* :class:`FactorSMCEstimator` (``smc-factor``) -- annealed SMC along the same path with resampling,
  ``log Z`` (budget = temperatures).

Each works on the problem's conditioned model (:attr:`FactorGraphProblem.model`: evidence clamped by
conditioning) and returns marginals of every variable (observed ones as point masses).  The trivial
baseline of the kind is :class:`samplers.estimators.TrivialEstimator` (the unary-only model).
"""

from __future__ import annotations

import numpy as np

from .ais import SCHEDULES, ais_factor_graph, smc_factor_graph
from .harness import KindEstimator
from .harness.problem import DIAGNOSTICS, EVALUATIONS
from .models.belief_propagation import loopy_belief_propagation
from .models.factor_gibbs import ZERO_PENALTY, gibbs_marginals
from .problems import FACTOR_GRAPH
from .validation import check_float, check_int


class LoopyBPEstimator(KindEstimator):
    """Loopy BP (:func:`samplers.models.belief_propagation.loopy_belief_propagation`); budget = iterations
    at most.  ``evaluations`` = factor table entries visited: iterations x sum of table sizes.  Each run's
    ``diagnostics`` say whether it converged (largest message change below the tolerance), after how many
    iterations, and the last change: a run stopped by its budget is marked in the summaries and leaderboards."""

    name = "loopy-bp"
    budget_label = "iterations"
    kinds = {FACTOR_GRAPH: ("log_partition", "marginals")}
    quick_budgets = (10, 100)
    budgets = (10, 100, 1000)

    def __init__(self, damping: float = 0.5):
        self.damping = check_float(damping, "damping", low=0.0, high=1.0, high_open=True)

    def _estimate(self, problem, budget, seed, targets):
        model = problem.model
        res = loopy_belief_propagation(model, damping=self.damping, max_iter=max(budget, 1))
        return {"log_partition": res.log_partition, "marginals": problem.expand(res.marginals),
                EVALUATIONS: res.iterations * int(model.bundle.log_values.size),
                DIAGNOSTICS: {"converged": res.converged, "iterations": res.iterations, "max_change": res.max_change}}


class FactorGibbsEstimator(KindEstimator):
    """Systematic-scan Gibbs on the factor bundle (:func:`samplers.models.factor_gibbs.gibbs_marginals`),
    Rao-Blackwellised marginals; budget = sweeps per chain.  ``evaluations`` = single-site updates:
    n_chains x sweeps x n_vars."""

    name = "gibbs-factor"
    budget_label = "sweeps"
    kinds = {FACTOR_GRAPH: ("marginals",)}
    quick_budgets = (50, 200)
    budgets = (100, 1000, 10000)

    def __init__(self, n_chains: int = 4):
        self.n_chains = check_int(n_chains, "n_chains", low=1)

    def _estimate(self, problem, budget, seed, targets):
        model = problem.model
        res = gibbs_marginals(model, n_sweeps=max(budget, 2), n_chains=self.n_chains, seed=seed)
        return {"marginals": problem.expand(res.marginals),
                EVALUATIONS: max(budget, 2) * self.n_chains * model.n_vars}


class _AnnealedEstimator(KindEstimator):
    """Base of the estimators along AIS's annealing path from the unary-only model (``schedule`` of the
    temperatures, hard zeros annealed in as penalties of ``zero_penalty`` nats below the smallest finite
    entry); budget = temperatures."""

    budget_label = "temperatures"
    quick_budgets = (10, 50)
    budgets = (10, 100, 1000)

    def __init__(self, schedule: str, zero_penalty: float):
        if schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
        self.schedule = schedule
        self.zero_penalty = check_float(zero_penalty, "zero_penalty", low=0.0, low_open=True)


class FactorAISEstimator(_AnnealedEstimator):
    """AIS on the factor graph (:func:`samplers.ais.ais_factor_graph`, the one AIS with Gibbs moves on the
    factor bundle; hard zeros annealed in as penalties of ``zero_penalty`` nats below the smallest finite
    entry); ``log_partition`` and AIS-weighted marginals of the chains' final states; budget =
    temperatures.  ``evaluations`` = single-site updates: n_chains x (temperatures - 2) x n_vars."""

    name = "ais-factor"
    kinds = {FACTOR_GRAPH: ("log_partition", "marginals")}

    def __init__(self, n_chains: int = 100, schedule: str = "sigmoid", zero_penalty: float = ZERO_PENALTY):
        super().__init__(schedule, zero_penalty)
        self.n_chains = check_int(n_chains, "n_chains", low=2)

    def _estimate(self, problem, budget, seed, targets):
        model = problem.model
        n_temps = max(budget, 2)
        res, x = ais_factor_graph(model, n_temperatures=n_temps, n_chains=self.n_chains, seed=seed,
                                  schedule=self.schedule, zero_penalty=self.zero_penalty)
        w = np.exp(res.log_weights - res.log_weights.max())
        w /= w.sum()
        marg = np.stack([np.bincount(x[:, i], weights=w, minlength=model.max_states) for i in range(model.n_vars)])
        return {"log_partition": res.log_partition, "marginals": problem.expand(marg),
                EVALUATIONS: (n_temps - 2) * self.n_chains * model.n_vars}


class FactorSMCEstimator(_AnnealedEstimator):
    """Annealed SMC on the factor graph (:func:`samplers.ais.smc_factor_graph`: AIS's path and Gibbs moves,
    systematic resampling when a group's ESS falls below half); ``log_partition`` (log of the mean of
    ``n_groups`` independent groups' unbiased estimates); budget = temperatures.  ``evaluations`` =
    single-site updates: particles x (temperatures - 2) x n_vars."""

    name = "smc-factor"
    kinds = {FACTOR_GRAPH: ("log_partition",)}

    def __init__(self, n_particles: int = 25, n_groups: int = 4, schedule: str = "sigmoid",
                 zero_penalty: float = ZERO_PENALTY):
        super().__init__(schedule, zero_penalty)
        self.n_particles = check_int(n_particles, "n_particles", low=2)
        self.n_groups = check_int(n_groups, "n_groups", low=2)

    def _estimate(self, problem, budget, seed, targets):
        model = problem.model
        n_temps = max(budget, 2)
        res = smc_factor_graph(model, n_temperatures=n_temps, n_particles=self.n_particles, seed=seed,
                               schedule=self.schedule, n_groups=self.n_groups, zero_penalty=self.zero_penalty)
        return {"log_partition": res.log_partition,
                EVALUATIONS: (n_temps - 2) * self.n_particles * self.n_groups * model.n_vars}


def factor_graph_estimators() -> list[KindEstimator]:
    """The ``mcsa.estimators`` factory of the factor-graph estimators (loopy BP, Gibbs, AIS, SMC)."""
    return [LoopyBPEstimator(), FactorGibbsEstimator(), FactorAISEstimator(), FactorSMCEstimator()]
