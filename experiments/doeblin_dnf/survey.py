"""Planted-formula survey for Experiment 2 (DNF inference, Sec. 5 of Steinhardt & Liang 2015).

Table 1 of the paper reports mean times with the 0-stage chain at ">= 600 s": a chain without
restarts that falls into a local minimum of the cost stays there, while a strong Doeblin chain
(1-stage) or a staged one (2-stage) restarts and finishes in geometrically distributed time.  A mean
over a few trials hides that difference (unfinished trials can only be counted at the cap), so the
survey measures, over many random planted n x m formulas (:func:`experiments.doeblin_dnf.search.planted_task`) and
several trials each, the **survival curve** ``P(T > s)`` of the number of steps ``T`` to a formula
consistent with the examples: a trapped chain's curve plateaus, a restarting chain's decays.

Every trial keeps its kernel seed, and the search kernel is deterministic given its seed, so an
unfinished trial can be rerun with a larger cap (:meth:`PlantedSurvey.rerun`): the first
``max_steps`` steps are the same trajectory, so this shows whether traps are permanent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple, Sequence

import numpy as np
from tqdm.auto import tqdm

from samplers.rng import kernel_seeds
from samplers.validation import as_int_array, check_float, check_int

from .search import N_STAGES, DNFTask, SearchResult, capped_steps, planted_task, search_seeds


def survival_curve(steps, max_steps: int, at) -> np.ndarray:
    """Fraction of trials not yet solved after ``s`` steps, for each ``s`` in ``at``.

    Parameters
    ----------
    steps : array_like of int, shape (..., trials)
        Steps to a consistent formula per trial; -1 = not found within ``max_steps`` (as returned by
        :func:`experiments.doeblin_dnf.search.search`).  The curve is taken over the last axis.
    max_steps : int
        The cap the trials ran under; a curve beyond it is unknown, so ``at`` must not exceed it.
    at : array_like of int, shape (S,)
        Step counts ``s`` in ``[0, max_steps]``.

    Returns
    -------
    np.ndarray, shape (..., S)
        ``mean(T > s)`` with ``T = steps`` (``T = inf`` for unfinished trials): the empirical survival
        function, exact because every trial was observed up to the same cap (no censoring before it).
    """
    max_steps = check_int(max_steps, "max_steps", low=1)
    steps = as_int_array(steps, "steps", low=-1, high=max_steps + 1)
    if steps.ndim == 0 or steps.shape[-1] == 0:
        raise ValueError(f"steps must hold at least one trial on its last axis, got shape {steps.shape}")
    at = as_int_array(at, "at", ndim=1, low=0, high=max_steps + 1)
    t = np.where(steps >= 0, steps, max_steps + 1)
    return (t[..., None] > at).mean(axis=-2)


class ChainSpec(NamedTuple):
    """One chain of the survey: a label, its number of stages (0, 1, 2) and restart rate."""

    label: str
    n_stages: int
    eps_restart: float


def default_chains(eps_restart: Sequence[float] = (2e-4,)) -> list[ChainSpec]:
    """The 0-stage chain plus the 1- and 2-stage chains at each restart rate (the paper's is 2e-4)."""
    chains = [ChainSpec("0-stage", 0, float(eps_restart[0]))]
    for eps in eps_restart:
        chains += [ChainSpec(f"1-stage eps={eps:g}", 1, float(eps)), ChainSpec(f"2-stage eps={eps:g}", 2, float(eps))]
    return chains


@dataclass
class PlantedSurvey:
    """Results of :func:`planted_survey`: arrays indexed ``[chain, formula, trial]``.

    ``steps`` (-1 = unfinished at ``max_steps``), ``seconds`` and the trials' kernel ``seeds``;
    ``task_seeds[f]`` regenerates formula ``f``'s examples with :func:`experiments.doeblin_dnf.search.planted_task` and
    ``task_options``; ``search_options`` are the chains' common settings (beta, eps_simplified, n, m).
    """

    chains: list[ChainSpec]
    task_seeds: np.ndarray
    steps: np.ndarray
    seconds: np.ndarray
    seeds: np.ndarray
    max_steps: int
    task_options: dict = field(default_factory=dict)
    search_options: dict = field(default_factory=dict)

    def task(self, formula: int) -> DNFTask:
        """The examples of planted formula ``formula``."""
        formula = check_int(formula, "formula", low=0, high=len(self.task_seeds) - 1)
        return planted_task(seed=int(self.task_seeds[formula]), **self.task_options)

    def capped_steps(self, chain: int) -> np.ndarray:
        """Steps (formula, trial) of chain ``chain``, unfinished trials counted at ``max_steps``."""
        return capped_steps(self.steps[chain], self.max_steps)

    def survival(self, chain: int, at) -> np.ndarray:
        """Survival curve of chain ``chain`` pooled over formulas and trials (:func:`survival_curve`)."""
        return survival_curve(self.steps[chain].ravel(), self.max_steps, at)

    def mean_ratio_per_formula(self, numerator: int, denominator: int) -> np.ndarray:
        """Per formula, the ratio of the two chains' mean capped steps over trials (a lower bound on
        the ratio of true means when only the numerator chain has unfinished trials)."""
        return self.capped_steps(numerator).mean(axis=1) / self.capped_steps(denominator).mean(axis=1)

    def rerun(self, chain: int, formula: int, trial: int, max_steps: int) -> SearchResult:
        """Rerun one trial (same kernel seed, hence the same trajectory) with cap ``max_steps``."""
        chain = check_int(chain, "chain", low=0, high=len(self.chains) - 1)
        trial = check_int(trial, "trial", low=0, high=self.seeds.shape[2] - 1)
        spec = self.chains[chain]
        return search_seeds(self.task(formula), spec.n_stages, self.seeds[chain, formula, trial:trial + 1],
                            eps_restart=spec.eps_restart, max_steps=max_steps, **self.search_options)


def planted_survey(n_formulas: int, trials: int, chains: Sequence[ChainSpec] | None = None, *,
                   n_examples: int = 150, d: int = 5, n: int = 3, m: int = 3, box: int = 3, beta: float = 8.0,
                   eps_simplified: float = 0.04, max_steps: int = 1_000_000, seed=0,
                   progress: bool = False) -> PlantedSurvey:
    """Time-to-solution of each chain on ``n_formulas`` random planted n x m formulas, ``trials`` each.

    Formula ``f`` is :func:`experiments.doeblin_dnf.search.planted_task` (``d`` variables, ``n_examples`` uniform inputs
    in ``[-box, box]^d``, 25-75 % positive); the searched formulas have the paper's shape (``n`` x
    ``m`` atoms, entries in {-1, 0, 1}).  Every chain runs with the same ``beta`` and
    ``eps_simplified`` and its own ``eps_restart``; all trials are independent (their own kernel seed).

    Parameters
    ----------
    n_formulas, trials : int
    chains : sequence of ChainSpec, optional
        Default :func:`default_chains` (0-stage, 1- and 2-stage at the paper's eps_restart = 2e-4).
    n_examples, d, n, m, box : int
        The planted tasks (and the searched formulas' shape, n = m = 3 as in Table 1).
    beta, eps_simplified : float
        MH inverse temperature and the 2-stage chain's rate of leaving the simplified cost.
    max_steps : int
        Cap C per trial.
    seed : int, Generator or None
        Draws the formulas' seeds and every trial's kernel seed.
    progress : bool
        Show a progress bar over formulas.
    """
    n_formulas = check_int(n_formulas, "n_formulas", low=1)
    trials = check_int(trials, "trials", low=1)
    chains = default_chains() if chains is None else [ChainSpec(*c) for c in chains]
    if not chains:
        raise ValueError("chains must name at least one chain")
    for c in chains:
        if c.n_stages not in N_STAGES:
            raise ValueError(f"chains: n_stages must be one of {N_STAGES}, got {c.n_stages!r} for {c.label!r}")
        check_float(c.eps_restart, "chains: eps_restart", low=0.0, high=1.0, low_open=True)
    task_options = dict(d=check_int(d, "d", low=1), n=check_int(n, "n", low=1), m=check_int(m, "m", low=1),
                        n_examples=check_int(n_examples, "n_examples", low=2), box=check_int(box, "box", low=1))
    search_options = dict(n=n, m=m, beta=check_float(beta, "beta", low=0.0),
                          eps_simplified=check_float(eps_simplified, "eps_simplified", low=0.0, high=1.0,
                                                     low_open=True))
    max_steps = check_int(max_steps, "max_steps", low=1)
    all_seeds = kernel_seeds(seed, n_formulas * (1 + len(chains) * trials))
    task_seeds = all_seeds[:n_formulas]
    seeds = all_seeds[n_formulas:].reshape(len(chains), n_formulas, trials)
    steps = np.empty(seeds.shape, dtype=np.int64)
    seconds = np.empty(seeds.shape)
    for f in tqdm(range(n_formulas), disable=not progress, desc="planted formulas"):
        task = planted_task(seed=int(task_seeds[f]), **task_options)
        for c, spec in enumerate(chains):
            r = search_seeds(task, spec.n_stages, seeds[c, f], eps_restart=spec.eps_restart, max_steps=max_steps,
                             **search_options)
            steps[c, f], seconds[c, f] = r.steps, r.seconds
    return PlantedSurvey(chains, task_seeds, steps, seconds, seeds, max_steps, task_options, search_options)
