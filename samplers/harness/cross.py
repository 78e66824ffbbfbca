"""Cross-family estimators: every estimator declares the problem kinds and targets it handles, and
one problem can be handed to every registered estimator that supports it.

* :class:`KindEstimator` — base class: ``kinds = {kind: targets}``; :meth:`supports` checks
  ``problem.kind``; :meth:`estimate` returns only the targets the problem has.
* A registry of estimator factories by ``"module:function"`` (imported lazily, so listing imports
  neither torch nor the families): :func:`register_estimator`, :func:`list_estimators`,
  :func:`load_estimators`, :func:`estimators_for` and :func:`run_all`.
* The samplers-side estimators: exact forward (chain CRF), exact junction tree (MRF), AIS log Z and
  AIS-weighted marginals, Gibbs marginals.  The families' estimators live in the families
  (:mod:`rdp.estimators`, :mod:`doeblin.estimators`, :mod:`trf.estimators`,
  :mod:`samplers.pruning.estimators`) and register here by module path.

>>> from samplers.harness.cross import estimators_for
>>> from samplers.problems import ChainCRF, ChainCRFProblem
>>> problem = ChainCRFProblem("crf", ChainCRF.random(4, 3, seed=0))
>>> "gibbs" in [e.name for e in estimators_for(problem, families=("samplers",))]
True
"""

from __future__ import annotations

import importlib
import warnings
from abc import abstractmethod
from typing import Any, Callable, Sequence

import numpy as np

from ..ais import ais_log_partition, run_ais
from ..models import PairwiseMRF
from ..validation import check_float, check_int
from .estimator import Estimator
from .problem import EVALUATIONS

# name -> (family, "module:function" or callable returning a list of estimators, description)
_FACTORIES: dict[str, tuple[str, Any, str]] = {}


class KindEstimator(Estimator):
    """An estimator that declares the problem kinds and targets it handles.

    Attributes
    ----------
    kinds : dict
        ``{kind: (target, ...)}``: the targets estimated for problems of each kind.
    family : str
        The package that implements it (``"samplers"``, ``"rdp"``, ``"doeblin"``, ``"trf"``, ``"pruning"``).
    quick_budgets, budgets : list of int
        Budgets of the ``cross-quick`` and ``cross`` suites.

    Notes
    -----
    Results carry ``"evaluations"``, a machine-independent cost whose unit each estimator states in
    its docstring (single-site conditional updates for MCMC/AIS/Doeblin, table or chart entries for
    the dynamic programs): comparable within a family, only indicative across families.
    """

    kinds: dict[str, tuple] = {}
    family: str = "samplers"
    quick_budgets: Sequence[int] = (1,)
    budgets: Sequence[int] = (1,)

    def supports(self, problem) -> bool:
        return getattr(problem, "kind", None) in self.kinds

    def targets_for(self, problem) -> tuple:
        """The targets this estimator returns for ``problem`` (those of its kind the problem has)."""
        wanted = self.kinds.get(getattr(problem, "kind", None), ())
        have = getattr(problem, "targets", None)
        return tuple(t for t in wanted if have is None or t in have)

    def estimate(self, problem, budget: int, seed: int) -> dict[str, Any]:
        if not self.supports(problem):
            raise ValueError(f"estimator {self.name!r} does not support problems of kind "
                             f"{getattr(problem, 'kind', None)!r}; it handles {sorted(self.kinds)}")
        out = self._estimate(problem, int(budget), int(seed), self.targets_for(problem))
        return {k: v for k, v in out.items() if k in self.targets_for(problem) or k == EVALUATIONS}

    @abstractmethod
    def _estimate(self, problem, budget: int, seed: int, targets: tuple) -> dict[str, Any]:
        """Estimates of ``targets`` (extra keys are dropped; ``"evaluations"`` is kept)."""


# -- registry ----------------------------------------------------------------------------------
def register_estimator(name: str, factory: str | Callable[[], list], family: str, description: str = "", *,
                       replace: bool = False) -> None:
    """Register a factory of estimators under ``name``: a ``"module:function"`` path (imported lazily)
    or a callable returning a list of :class:`~samplers.harness.Estimator` (each with ``supports``)."""
    if not isinstance(name, str) or not name:
        raise ValueError("name must be a non-empty string")
    if name in _FACTORIES and not replace:
        raise ValueError(f"an estimator factory named {name!r} is already registered; pass replace=True")
    if isinstance(factory, str) and ":" not in factory:
        raise ValueError(f"factory must look like 'module:function', got {factory!r}")
    if not isinstance(factory, str) and not callable(factory):
        raise TypeError("factory must be a 'module:function' string or a callable")
    _FACTORIES[name] = (family, factory, description)


def list_estimators() -> dict[str, str]:
    """Registered estimator factories and their descriptions (imports nothing)."""
    return {name: f"[{fam}] {desc}" for name, (fam, _, desc) in sorted(_FACTORIES.items())}


def load_estimators(names: Sequence[str] | None = None, *, families: Sequence[str] | None = None) -> list:
    """Build the estimators of the registered factories (all, or ``names``, or those of ``families``).

    A factory whose package cannot be imported (e.g. torch missing for rdp) is skipped with a warning.
    """
    chosen = list(_FACTORIES) if names is None else list(names)
    out = []
    for name in chosen:
        if name not in _FACTORIES:
            raise ValueError(f"unknown estimator factory {name!r}; known: {sorted(_FACTORIES)}")
        family, factory, _ = _FACTORIES[name]
        if families is not None and family not in families:
            continue
        if isinstance(factory, str):
            module_name, func_name = factory.split(":", 1)
            try:
                factory = getattr(importlib.import_module(module_name), func_name)
            except ImportError as exc:
                warnings.warn(f"estimators {name!r} skipped: {type(exc).__name__}: {exc}", stacklevel=2)
                continue
        out.extend(factory())
    return out


def estimators_for(problem, names: Sequence[str] | None = None, *,
                   families: Sequence[str] | None = None) -> list:
    """Every registered estimator (optionally restricted) whose ``supports(problem)`` is true."""
    return [e for e in load_estimators(names, families=families) if e.supports(problem)]


def run_all(problem, seed: int = 0, *, budgets: dict[str, int] | None = None, names: Sequence[str] | None = None,
            families: Sequence[str] | None = None) -> dict[str, dict[str, Any]]:
    """Hand ``problem`` to every estimator that supports it: ``{estimator name: estimates}``.

    Each estimator runs once at ``budgets[name]`` (default: the last of its ``quick_budgets``, or 1)
    with the same ``seed``.
    """
    seed = check_int(seed, "seed", low=0)
    out = {}
    for est in estimators_for(problem, names, families=families):
        budget = (budgets or {}).get(est.name, (list(getattr(est, "quick_budgets", [1])) or [1])[-1])
        out[est.name] = est.estimate(problem, budget, seed)
    return out


# -- samplers-side estimators --------------------------------------------------------------------
CHAIN_CRF, PAIRWISE_MRF = "chain-crf", "pairwise-mrf"


class ExactForwardEstimator(KindEstimator):
    """Exact forward-backward on a chain CRF (the time reference; the budget is ignored)."""

    name = "exact-forward"
    budget_label = "none"
    kinds = {CHAIN_CRF: ("log_partition", "marginals", "entropy")}

    def _estimate(self, problem, budget, seed, targets):
        from ..problems import ChainCRF  # a fresh model: no cached answers

        crf = problem.crf
        crf = ChainCRF(crf.emissions, crf.transitions)
        return {"log_partition": crf.log_partition(), "marginals": crf.marginals(), "entropy": crf.entropy(),
                EVALUATIONS: crf.length * crf.n_states**2}


class ExactEliminationEstimator(KindEstimator):
    """Exact junction tree on a pairwise MRF (and a chain CRF's MRF); the budget is ignored."""

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
    """AIS from the unary-only model (Neal 2001) with Gibbs moves; budget = temperatures.

    ``log_partition`` is the log of the mean importance weight (:func:`samplers.ais.ais_log_partition`,
    biased low in log space by about ``stderr^2 / 2``); ``marginals`` are the self-normalised
    weighted frequencies of the chains' final states (AIS-weighted samples: each final state with
    its weight is properly weighted for the target, Neal 2001 Sec. 3), computed by the generic
    :func:`samplers.ais.run_ais` with the same Gibbs move.
    """

    budget_label = "temperatures"
    kinds = {PAIRWISE_MRF: ("log_partition", "marginals"), CHAIN_CRF: ("log_partition", "marginals")}
    quick_budgets = (5, 20)
    budgets = (5, 20, 80)

    def __init__(self, n_chains: int = 100, schedule: str = "sigmoid"):
        self.n_chains = check_int(n_chains, "n_chains", low=2)
        self.schedule = schedule
        self.name = "ais"

    def _estimate(self, problem, budget, seed, targets):
        mrf = problem.mrf
        n_temps = max(budget, 2)
        if "marginals" not in targets:
            res = ais_log_partition(mrf, n_temperatures=n_temps, n_chains=self.n_chains, seed=seed,
                                    schedule=self.schedule)
            out = {"log_partition": res.log_partition}
        else:
            out = ais_weighted(mrf, n_temps, self.n_chains, seed, self.schedule)
        out[EVALUATIONS] = (n_temps - 2) * self.n_chains * mrf.n_vars  # single-site Gibbs updates
        return out


def ais_weighted(mrf: PairwiseMRF, n_temperatures: int, n_chains: int, seed: int,
                 schedule: str = "sigmoid") -> dict[str, Any]:
    """AIS log Z and AIS-weighted marginals from one run of :func:`samplers.ais.run_ais`."""
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
    return {"log_partition": res.log_partition, "marginals": marg}


class GibbsEstimator(KindEstimator):
    """Systematic-scan Gibbs marginals (:meth:`PairwiseMRF.gibbs_sample`); budget = sweeps per chain."""

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
        return {"marginals": mrf.marginals_from_samples(samples),
                EVALUATIONS: budget * self.n_chains * mrf.n_vars}  # single-site updates


def samplers_estimators() -> list[KindEstimator]:
    """The samplers-side cross estimators: the trivial baseline, exact forward, exact junction tree,
    AIS, Gibbs."""
    return [TrivialEstimator(), ExactForwardEstimator(), ExactEliminationEstimator(), AISEstimator(), GibbsEstimator()]


register_estimator("samplers", "samplers.harness.cross:samplers_estimators", "samplers",
                   "trivial baseline, exact forward / junction tree, AIS (log Z, weighted marginals), Gibbs marginals")
register_estimator("rdp", "rdp.estimators:rdp_estimators", "rdp",
                   "RDP (K2=1, K1=K2) and Top-K: chain CRF log Z / marginals / entropy, PCFG log P")
register_estimator("doeblin", "doeblin.estimators:doeblin_estimators", "doeblin",
                   "exact draws of a strong Doeblin chain over Gibbs sweeps: marginals (biased, eps-dependent)")
register_estimator("pruning", "samplers.pruning.estimators:pruning_estimators", "pruning",
                   "PCFG exact inside-outside, randomized pruning, fixed coarse-posterior masks")
register_estimator("trf", "trf.estimators:trf_estimators", "trf", "TRF per-length zeta by AugSA and AIS")


def chart_rule_entries(length: int, n_rules: int) -> int:
    """Binary-rule applications of a full CNF chart: ``n_rules * sum_w (T - w) w`` (spans x splits)."""
    return int(n_rules) * sum((length - w) * w for w in range(1, length))


class TrivialEstimator(KindEstimator):
    """The trivial solver every cross suite scores against (score 0; budget ignored):

    * chain CRF / MRF: the unary-only model (couplings dropped): its exact ``log_partition``,
      ``marginals`` (softmax of each site's unary potentials) and ``entropy``;
    * PCFG: the Viterbi tree (max-product instead of sum-product): its log weight as
      ``log_probability`` (a lower bound), its constituents as ``span_posteriors`` and its rules as
      ``rule_counts``;
    * TRF: ``zeta`` of the model with lambda = 0, ``zeta_j = (j - 1) log V``.
    """

    name = "trivial"
    budget_label = "none"
    kinds = {PAIRWISE_MRF: ("log_partition", "marginals"), CHAIN_CRF: ("log_partition", "marginals", "entropy"),
             "pcfg": ("log_probability", "span_posteriors", "rule_counts"), "trf": ("zeta",)}

    def _estimate(self, problem, budget, seed, targets):
        if problem.kind in (PAIRWISE_MRF, CHAIN_CRF):
            mrf = problem.mrf
            lu = mrf.log_unary
            logp = lu - np.logaddexp.reduce(lu, axis=1, keepdims=True)
            p = np.exp(logp)
            ent = float(-np.sum(np.where(p > 0, p * logp, 0.0)))
            return {"log_partition": mrf.log_partition_unary_only(), "marginals": p, "entropy": ent,
                    EVALUATIONS: int(mrf.n_states.sum())}
        if problem.kind == "pcfg":
            from ..models.chart import tree_spans, viterbi
            from ..problems import span_vector

            score, nodes = viterbi(problem.grammar, problem.words)
            counts = np.bincount(nodes[nodes[:, 3] >= 0, 3], minlength=problem.grammar.n_binary).astype(float)
            spans = tree_spans(nodes, len(problem.words)).astype(float)
            return {"log_probability": score, "span_posteriors": span_vector(spans), "rule_counts": counts,
                    EVALUATIONS: chart_rule_entries(len(problem.words), problem.grammar.n_binary)}
        m = problem.pi.shape[0]
        return {"zeta": np.arange(m) * np.log(problem.features.V), EVALUATIONS: m}
