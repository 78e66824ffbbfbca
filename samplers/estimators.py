"""The core's estimators, one class per method, stated once for every suite that uses them.

* :class:`TrivialEstimator` — the baseline every cross suite scores against;
* :class:`ExactEstimator` — a problem's own exact method, recomputed and timed (the time reference);
* :class:`ExactJunctionTreeEstimator` — the junction tree on any pairwise MRF;
* :class:`AISEstimator` — annealed importance sampling from the unary-only model (log Z, AIS-weighted
  marginals, AIS's own standard error and ESS as measured targets);
* :class:`GibbsEstimator` — systematic-scan Gibbs marginals.

The families' estimators live in the families (:mod:`rdp.estimators`, :mod:`doeblin.estimators`,
:mod:`trf.estimators`, :mod:`samplers.pruning.estimators`); every family registers its factory
through the ``mcsa.estimators`` entry point group.

>>> from samplers.harness import estimators_for
>>> from samplers.problems import ChainCRF, ChainCRFProblem
>>> problem = ChainCRFProblem("crf", ChainCRF.random(4, 3, seed=0))
>>> "gibbs" in [e.name for e in estimators_for(problem, families=("samplers",))]
True
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .ais import SCHEDULES, ais_log_partition, run_ais
from .factor_graph_estimators import factor_graph_estimators
from .harness import KindEstimator
from .harness.problem import EVALUATIONS
from .models import PairwiseMRF
from .models.factor_gibbs import unary_log_partition, unary_log_tables
from .problems import (
    CHAIN_CRF,
    FACTOR_GRAPH,
    KINDS,
    PAIRWISE_MRF,
    PCFG,
    TRF,
    KindProblem,
    chart_rule_entries,
    span_vector,
)
from .validation import check_float, check_int


class TrivialEstimator(KindEstimator):
    """The trivial solver every cross suite scores against (score 0; budget ignored):

    * chain CRF / MRF: the unary-only model (couplings dropped): its exact ``log_partition``,
      ``marginals`` (softmax of each site's unary potentials) and ``entropy``;
    * PCFG: the Viterbi tree (max-product instead of sum-product): its log weight as
      ``log_probability`` (a lower bound), its constituents as ``span_posteriors`` and its rules as
      ``rule_counts``;
    * TRF: ``zeta`` of the model with lambda = 0, ``zeta_j = (j - 1) log V``;
    * factor graph: the model of its unary and constant factors (higher-order factors dropped; with
      evidence conditioned in): its exact ``log_partition`` and ``marginals``.
    """

    name = "trivial"
    budget_label = "none"
    kinds = {PAIRWISE_MRF: ("log_partition", "marginals"), CHAIN_CRF: ("log_partition", "marginals", "entropy"),
             PCFG: ("log_probability", "span_posteriors", "rule_counts"), TRF: ("zeta",),
             FACTOR_GRAPH: ("log_partition", "marginals")}

    def _estimate(self, problem, budget, seed, targets):
        if problem.kind == FACTOR_GRAPH:
            model = problem.model
            lu = unary_log_tables(model)
            with np.errstate(divide="ignore", invalid="ignore"):
                p = np.exp(lu - np.logaddexp.reduce(lu, axis=1, keepdims=True))
            return {"log_partition": unary_log_partition(model), "marginals": problem.expand(np.nan_to_num(p)),
                    EVALUATIONS: int(model.cards.sum())}
        if problem.kind in (PAIRWISE_MRF, CHAIN_CRF):
            mrf = problem.mrf
            lu = mrf.log_unary
            logp = lu - np.logaddexp.reduce(lu, axis=1, keepdims=True)
            p = np.exp(logp)
            ent = float(-np.sum(np.where(p > 0, p * logp, 0.0)))
            return {"log_partition": mrf.log_partition_unary_only(), "marginals": p, "entropy": ent,
                    EVALUATIONS: int(mrf.n_states.sum())}
        if problem.kind == PCFG:
            from .models.chart import tree_spans, viterbi

            score, nodes = viterbi(problem.grammar, problem.words)
            counts = np.bincount(nodes[nodes[:, 3] >= 0, 3], minlength=problem.grammar.n_binary).astype(float)
            spans = tree_spans(nodes, len(problem.words)).astype(float)
            return {"log_probability": score, "span_posteriors": span_vector(spans), "rule_counts": counts,
                    EVALUATIONS: chart_rule_entries(len(problem.words), problem.grammar.n_binary)}
        m = problem.pi.shape[0]
        return {"zeta": np.arange(m) * np.log(problem.features.V), EVALUATIONS: m}


class ExactEstimator(KindEstimator):
    """A problem's own exact method (:meth:`KindProblem.compute_exact`), recomputed from scratch and
    timed: the time reference of a suite; the budget is ignored.  ``evaluations`` is the problem's
    :meth:`~samplers.problems.KindProblem.exact_evaluations`.

    Parameters
    ----------
    name : str
        Name in result tables (``"exact-forward"`` on chain CRFs, ``"exact-inside"`` on PCFGs ...).
    kinds : sequence of str, optional
        The registered kinds it runs on (default: every kind).
    family : str
        The family it is listed under.
    """

    budget_label = "none"

    def __init__(self, name: str = "exact", kinds: Sequence[str] | None = None, *, family: str = "samplers"):
        self.name = name
        self.family = family
        chosen = list(KINDS) if kinds is None else list(kinds)
        unknown = [k for k in chosen if k not in KINDS]
        if unknown:
            raise ValueError(f"kinds {unknown} are not registered kinds {sorted(KINDS)}")
        self.kinds = {k: KINDS[k] for k in chosen}

    def supports(self, problem) -> bool:
        """Whether ``problem`` is a :class:`~samplers.problems.KindProblem` of one of this estimator's kinds."""
        return isinstance(problem, KindProblem) and super().supports(problem)

    def _estimate(self, problem, budget, seed, targets):
        return {**problem.compute_exact(), EVALUATIONS: problem.exact_evaluations()}


class ExactJunctionTreeEstimator(KindEstimator):
    """Exact junction tree on a pairwise MRF (and a chain CRF's MRF), even where the problem's own
    method enumerates; the budget is ignored.  ``evaluations``: the plan's table entries."""

    name = "exact-junction-tree"
    budget_label = "none"
    kinds = {PAIRWISE_MRF: ("log_partition", "marginals"), CHAIN_CRF: ("log_partition", "marginals")}

    def _estimate(self, problem, budget, seed, targets):
        m = problem.mrf
        fresh = PairwiseMRF(m.unary, m.edges, m.pairwise, n_states=m.n_states)
        return {"log_partition": fresh.log_partition_exact(method="elimination"),
                "marginals": fresh.marginals_exact(method="elimination"),
                EVALUATIONS: fresh.elimination_plan.total_table_entries}


class AISEstimator(KindEstimator):
    """AIS from the unary-only model (Neal 2001) with single-site Gibbs moves; budget = temperatures.

    ``log_partition`` is the log of the mean importance weight (:func:`samplers.ais.ais_log_partition`,
    biased low in log space by about ``stderr^2 / 2``); ``marginals`` are the self-normalised
    weighted frequencies of the chains' final states (AIS-weighted samples: each final state with
    its weight is properly weighted for the target, Neal 2001 Sec. 3), computed by the generic
    :func:`samplers.ais.run_ais` with the same Gibbs move.  Problems that ask for the measured
    targets ``log_partition_stderr`` and ``ess`` get AIS's own reported standard error and ESS, to
    set beside the replicate RMSE they should track.

    ``evaluations`` = single-site Gibbs updates: n_chains x (temperatures - 2) x n_vars (one sweep
    at every intermediate temperature).

    Parameters
    ----------
    n_chains : int
        AIS chains per run (>= 2).
    schedule : {"linear", "geometric", "sigmoid"}
        Temperature schedule (:func:`samplers.ais.annealing_schedule`).
    name : str, optional
        Default ``"ais"``.
    """

    budget_label = "temperatures"
    kinds = {PAIRWISE_MRF: ("log_partition", "marginals", "log_partition_stderr", "ess"),
             CHAIN_CRF: ("log_partition", "marginals", "log_partition_stderr", "ess")}
    quick_budgets = (5, 20)
    budgets = (5, 20, 80)

    def __init__(self, n_chains: int = 100, schedule: str = "sigmoid", name: str = "ais"):
        if schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
        self.n_chains = check_int(n_chains, "n_chains", low=2)
        self.schedule = schedule
        self.name = name

    def _estimate(self, problem, budget, seed, targets):
        mrf = problem.mrf
        n_temps = max(budget, 2)
        if "marginals" not in targets:
            res = ais_log_partition(mrf, n_temperatures=n_temps, n_chains=self.n_chains, seed=seed,
                                    schedule=self.schedule)
            out = {"log_partition": res.log_partition, "log_partition_stderr": res.stderr, "ess": res.ess}
        else:
            out = ais_weighted(mrf, n_temps, self.n_chains, seed, self.schedule)
        out[EVALUATIONS] = (n_temps - 2) * self.n_chains * mrf.n_vars
        return out


def ais_weighted(mrf: PairwiseMRF, n_temperatures: int, n_chains: int, seed: int,
                 schedule: str = "sigmoid") -> dict[str, Any]:
    """AIS log Z, its reported standard error and ESS, and AIS-weighted marginals from one run of
    :func:`samplers.ais.run_ais`."""
    last: dict[str, np.ndarray] = {}

    def initial(n, gen):
        last["x"] = mrf.sample_independent(n, gen)
        return last["x"]

    def move(x, beta, gen):
        last["x"] = mrf.gibbs_sample(1, n, seed=gen, init=x, beta=beta)[:, -1]
        return last["x"]

    n = n_chains
    res = run_ais(initial, lambda x: mrf.pairwise_log_potential(x), move, n_temperatures=n_temperatures,
                  n_chains=n_chains, seed=seed, schedule=schedule,
                  log_partition_start=mrf.log_partition_unary_only())
    w = np.exp(res.log_weights - res.log_weights.max())
    w /= w.sum()
    x = last["x"]
    marg = np.stack([np.bincount(x[:, i], weights=w, minlength=mrf.max_states) for i in range(mrf.n_vars)])
    return {"log_partition": res.log_partition, "marginals": marg, "log_partition_stderr": res.stderr,
            "ess": res.ess}


class GibbsEstimator(KindEstimator):
    """Systematic-scan Gibbs marginals (:meth:`PairwiseMRF.gibbs_sample`); budget = sweeps per chain.

    ``evaluations`` = single-site Gibbs updates: n_chains x sweeps x n_vars.

    Parameters
    ----------
    n_chains : int
        Independent chains (initialised from the unary-only model).
    burn_in_fraction : float
        Fraction of each chain's sweeps discarded, in [0, 1).
    """

    name = "gibbs"
    budget_label = "sweeps"
    kinds = {PAIRWISE_MRF: ("marginals",), CHAIN_CRF: ("marginals",)}
    quick_budgets = (50, 200)
    budgets = (50, 200, 800, 3200)

    def __init__(self, n_chains: int = 4, burn_in_fraction: float = 0.1):
        self.n_chains = check_int(n_chains, "n_chains", low=1)
        self.burn_in_fraction = check_float(burn_in_fraction, "burn_in_fraction", low=0.0, high=1.0, high_open=True)

    def _estimate(self, problem, budget, seed, targets):
        mrf = problem.mrf
        burn_in = min(int(self.burn_in_fraction * budget), budget - 1)
        samples = mrf.gibbs_sample(budget, self.n_chains, seed=seed, burn_in=burn_in)
        return {"marginals": mrf.marginals_from_samples(samples), EVALUATIONS: budget * self.n_chains * mrf.n_vars}


def samplers_estimators() -> list[KindEstimator]:
    """The core's cross estimators: the trivial baseline, exact forward, exact junction tree, AIS, Gibbs, and
    on factor graphs exact elimination, loopy BP, Gibbs and AIS (:mod:`samplers.factor_graph_estimators`)."""
    return [TrivialEstimator(), ExactEstimator("exact-forward", (CHAIN_CRF,)), ExactJunctionTreeEstimator(),
            AISEstimator(), GibbsEstimator(), ExactEstimator("exact-elimination", (FACTOR_GRAPH,)),
            *factor_graph_estimators()]
