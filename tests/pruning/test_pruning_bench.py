"""The registered pruning suites build and run through the harness."""

import numpy as np
import pytest

from samplers.harness import Study, load_suite
from samplers.pruning.estimators import level_threshold


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
