"""Harness suites of the DNF experiment: ``doeblin-dnf-planted`` and ``doeblin-dnf-cegar``.

Estimators are the 0-, 1- and 2-stage chains (:class:`StagedSearch`); the budget is the step cap.
Targets have no exact answer and are declared *measured* (``Exact(None)``): ``solved`` (1 if a
consistent formula / a verified invariant was found within the cap, so its mean over replicates is
the fraction solved within the cap, one point of the survival curve), ``steps`` (steps used,
unfinished runs counted at the cap, so its mean is a lower bound on the mean time) and, for CEGAR,
``rounds``.  Every run has its own seed, derived by the harness from the study seed.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from samplers.harness import Estimator, Problem, Suite
from samplers.harness.problem import Exact
from samplers.rng import kernel_seed, kernel_seeds

from .search import planted_task, search_seeds
from .survey import default_chains
from .verify import LoopProgram, loop_programs, state_space, verify


class PlantedProblem(Problem):
    """A random planted 3 x 3 formula over d = 5 (:func:`planted_task`) given by its task seed."""

    def __init__(self, index: int, task_seed: int, *, n_examples: int = 150):
        self.name = f"planted-{index:02d}"
        self.task_seed, self.n_examples = int(task_seed), n_examples
        self.provenance = "measured: steps to a consistent formula (no exact answer)"

    @cached_property
    def task(self):
        return planted_task(d=5, n=3, m=3, n_examples=self.n_examples, box=3, seed=self.task_seed)

    def exact(self) -> dict[str, Any]:
        return {"solved": Exact(None, provenance=self.provenance), "steps": Exact(None, provenance=self.provenance)}


class ProgramProblem(Problem):
    """A loop program of the CEGAR experiment (box [-3, 3]^5); its state space is built once."""

    def __init__(self, program: LoopProgram):
        self.program = program
        self.name = program.name
        self.provenance = "measured: steps to a verified inductive invariant (no exact answer)"

    @cached_property
    def space(self):
        return state_space(self.program)

    def exact(self) -> dict[str, Any]:
        return {t: Exact(None, provenance=self.provenance) for t in ("solved", "steps", "rounds")}


class StagedSearch(Estimator):
    """The 0-, 1- or 2-stage chain at restart rate ``eps_restart``; budget = the step cap."""

    budget_label = "step cap"
    warmup = False         # the suites compile the kernels; a warm-up run could cost a whole cap

    def __init__(self, label: str, n_stages: int, eps_restart: float, *, beta: float = 8.0,
                 eps_simplified: float = 0.04):
        self.name, self.n_stages, self.eps_restart = label, n_stages, eps_restart
        self.beta, self.eps_simplified = beta, eps_simplified

    def supports(self, problem) -> bool:
        return isinstance(problem, (PlantedProblem, ProgramProblem))

    def estimate(self, problem, budget: int, seed: int) -> dict[str, Any]:
        if isinstance(problem, PlantedProblem):
            r = search_seeds(problem.task, self.n_stages, [kernel_seed(seed)], eps_restart=self.eps_restart,
                             eps_simplified=self.eps_simplified, beta=self.beta, max_steps=int(budget))
            return {"solved": float(r.steps[0] >= 0), "steps": float(r.capped_steps()[0])}
        v = verify(problem.space, self.n_stages, beta=self.beta, eps_restart=self.eps_restart,
                   eps_simplified=self.eps_simplified, n_initial=50, batch=50, max_steps=int(budget), seed=seed)
        return {"solved": float(v.status == "verified"), "steps": float(v.steps), "rounds": float(v.rounds)}


def _chains(rates) -> list[StagedSearch]:
    return [StagedSearch(c.label, c.n_stages, c.eps_restart) for c in default_chains(rates)]


def _compile() -> None:
    """Compile (or load) the search kernels on tiny instances so no run pays for it."""
    from .verify import loop_program

    problems = [PlantedProblem(0, 0, n_examples=20), ProgramProblem(loop_program("fig1", -1, 1))]
    for est in _chains((0.01,)):
        for problem in problems:
            est.estimate(problem, 50, 0)


#: The planted survey of the docs: 40 formulas x 6 trials x 5 chains with seed 0; its task seeds are
#: the first 40 of ``kernel_seeds(0, 40 * (1 + 5 * 6))`` (experiments.doeblin_dnf.survey.planted_survey).
SURVEY_FORMULAS, SURVEY_CHAINS, SURVEY_TRIALS = 40, 5, 6


def planted_suite() -> Suite:
    """The 0-stage chain and the 1- and 2-stage chains at eps_restart 2e-4 and 2e-5 on the 40 planted
    formulas of the documented survey, cap 3e6 steps, 6 replicates (about 15 min of one core)."""
    _compile()
    seeds = kernel_seeds(0, SURVEY_FORMULAS * (1 + SURVEY_CHAINS * SURVEY_TRIALS))[:SURVEY_FORMULAS]
    return Suite(problems=[PlantedProblem(i, s) for i, s in enumerate(seeds)], estimators=_chains((2e-4, 2e-5)),
                 budgets=[3_000_000], replicates=SURVEY_TRIALS,
                 description="DNF inference on planted 3 x 3 formulas: fraction solved within the step cap and "
                             "mean steps (a lower bound) of the 0-, 1- and 2-stage chains")


def cegar_suite() -> Suite:
    """CEGAR verification of the five loop programs (fig1, cegar2, nested, tacas06, hard; box [-3, 3],
    d = 5) with the 0-stage chain and the 1- and 2-stage chains at 2e-4 and 2e-5, cap 5e6 steps,
    30 replicates (about 10 min of one core)."""
    _compile()
    return Suite(problems=[ProgramProblem(p) for p in loop_programs(-3, 3, d=5)], estimators=_chains((2e-4, 2e-5)),
                 budgets=[5_000_000], replicates=30,
                 description="Table 1 setting: steps to verify loop programs by CEGAR with the 0-, 1- and 2-stage "
                             "chains (inductive invariants)")
