"""The registered pruning suites build and run through the harness."""

import numpy as np
import pytest

from samplers.harness import Study, load_suite
from samplers.models import expected_counts
from samplers.pruning import randomized_pruning
from samplers.pruning.estimators import level_threshold
from samplers.pruning.suites import sentence_problems
from samplers.testing import assert_mc_rate


@pytest.mark.slow  # compiles every chart and ITG kernel on a cold Numba cache
def test_quick_suite_runs_and_exact_has_no_error():
    suite = load_suite("pruning-quick")
    names = {e.name for e in suite.estimators}
    assert {"randomized", "fixed-posterior", "fixed-fom", "itg-randomized", "itg-tic-tac-toe", "exact"} <= names
    problems = [suite.problems[0], suite.problems[-1]]  # one PCFG sentence, one ITG pair
    budgets = {name: [1] if name != "randomized" and name != "itg-randomized" else [4] for name in names}
    res = Study(problems, suite.estimators, budgets, replicates=1, seed=0).run(progress=False)
    rows = {(r["problem"], r["estimator"]): r for r in res.summary()}
    for p in problems:
        assert rows[(p.name, "exact")]["rmse"] < 1e-9
    # estimators only run on their own problem type
    assert (problems[0].name, "itg-tic-tac-toe") not in rows and (problems[1].name, "fixed-fom") not in rows
    assert all(np.isfinite(r["rmse"]) for r in rows.values())


def test_bias_suite_builds():
    suite = load_suite("pruning-bias")
    assert len(suite.problems) == 6 and suite.replicates >= 3
    assert level_threshold(1) == 0.5 and level_threshold(3) < level_threshold(2)


def _rmse_by_masks(problem, budgets, seeds):
    exact = problem.exact()["counts"]
    return [np.sqrt(np.mean([np.sum((randomized_pruning(problem.grammar, problem.words, n, seed=s, progress=False)
                                     .expectations.vector() - exact) ** 2) for s in seeds])) for n in budgets]


def test_quick_suite_pcfg_error_falls_with_masks():
    # issue 29: on the demo's PCFG problems the error was flat in the masks (RMSE 1.63, 1.10, 1.30 at 4/16/64)
    budgets, seeds = [4, 16, 64], range(6)
    for problem in sentence_problems([8, 12]):  # the pruning-quick suite's sentences
        rmse = _rmse_by_masks(problem, budgets, seeds)
        # a Markov-chain average: RMSE ~ N^-1/2 once the chain mixes; 6 replicates give each log RMSE an sd
        # of about 1/sqrt(12) = 0.29, so the fitted slope over a 16-fold range is within +-0.25 of -0.5
        assert_mc_rate(budgets, rmse, expected_slope=-0.5, tolerance=0.25)


def test_a_peaked_posterior_leaves_the_error_flat_at_small_mask_counts():
    # the diagnosis, kept as a negative control: at the grammar's default concentration 0.05 the 8-word
    # sentence has one bracketing of posterior > 0.99; every mask forces 2/3 of it positive, so at <= 64 masks
    # every replicate gives the same estimate and the error does not fall
    (problem,) = sentence_problems([8], concentration=0.05)
    assert expected_counts(problem.grammar, problem.words).span_posteriors[0, 5] > 0.99
    rmse = _rmse_by_masks(problem, [4, 64], range(3))
    assert rmse[1] > 0.9 * rmse[0]
