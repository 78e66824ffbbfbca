"""The DNF harness suites: measured targets, per-run seeds from the study seed, registration."""

from __future__ import annotations

import numpy as np

from experiments.doeblin_dnf.search import search_seeds
from experiments.doeblin_dnf.suite import SURVEY_FORMULAS, PlantedProblem, ProgramProblem, StagedSearch
from experiments.doeblin_dnf.survey import planted_survey
from experiments.doeblin_dnf.verify import loop_program
from samplers.harness import Study
from samplers.harness.problem import Exact
from samplers.rng import kernel_seed, kernel_seeds


def _study(seed=1):
    problems = [PlantedProblem(0, 5, n_examples=20), ProgramProblem(loop_program("fig1", -2, 2))]
    chains = [StagedSearch("0-stage", 0, 0.01), StagedSearch("2-stage", 2, 0.01)]
    return Study(problems, chains, budgets=[3000], replicates=2, seed=seed).run(progress=False)


def test_rows_are_measured_targets_and_reproducible():
    res = _study()
    assert len(res.rows) == 2 * 2 * 2 * 2 + 2 * 2   # planted: solved, steps; program: + rounds
    for row in res.rows:
        assert row["error"] is None and row["exact"] is None
        if row["target"] == "solved":
            assert row["estimate"] in (0.0, 1.0)
        if row["target"] == "steps":
            assert 0 <= row["estimate"] <= 3000
    again = _study()
    assert [r["estimate"] for r in res.rows] == [r["estimate"] for r in again.rows]


def test_planted_run_is_search_seeds_with_the_run_seed():
    """A run is the library search with the harness seed (same steps), so its numbers are the
    planted survey's at that seed."""
    problem = PlantedProblem(0, 5, n_examples=20)
    est = StagedSearch("1-stage", 1, 0.01)
    got = est.estimate(problem, 5000, 123456789012)
    direct = search_seeds(problem.task, 1, [kernel_seed(123456789012)], eps_restart=0.01, beta=8.0, max_steps=5000)
    assert got["steps"] == float(direct.capped_steps()[0])
    assert got["solved"] == float(direct.steps[0] >= 0)


def test_exact_is_declared_measured():
    problem = PlantedProblem(0, 5)
    assert all(isinstance(v, Exact) and v.value is None for v in problem.exact().values())


def test_planted_suite_uses_the_documented_survey_formulas():
    """The suite's formulas are those of planted_survey(40, 6, 5 chains, seed=0) (task seeds)."""
    seeds = kernel_seeds(0, SURVEY_FORMULAS * 31)[:SURVEY_FORMULAS]
    sv = planted_survey(1, 1, [("0-stage", 0, 2e-4)], max_steps=10, seed=0)
    assert sv.task_seeds[0] == kernel_seeds(0, 2)[0]             # the prefix property the suite relies on
    assert np.unique(seeds).size == SURVEY_FORMULAS


def test_registered():
    from samplers.harness import list_suites
    assert {"doeblin-dnf-planted", "doeblin-dnf-cegar"} <= set(list_suites())
