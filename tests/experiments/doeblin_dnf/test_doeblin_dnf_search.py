"""DNF search (Experiment 2): formula evaluation, consistent results, stage semantics, validation."""

import numpy as np
import pytest

from experiments.doeblin_dnf.search import DNFTask, evaluate_formula, loop_invariant_tasks, planted_task, search


def test_evaluate_formula_matches_definition():
    # [x1 != 0] or [x2 == x3] written as DNF with a in {-1,0,1}^3, b in {-1,0,1}
    a = np.zeros((3, 2, 3), dtype=int)
    b = np.zeros((3, 2), dtype=int)
    a[0, 0] = [1, 0, 0]; b[0, 0] = -1; a[0, 1] = [0, 0, 0]; b[0, 1] = 0      # x1 <= -1
    a[1, 0] = [-1, 0, 0]; b[1, 0] = -1; a[1, 1] = [0, 0, 0]; b[1, 1] = 0     # x1 >= 1
    a[2, 0] = [0, 1, -1]; b[2, 0] = 0; a[2, 1] = [0, -1, 1]; b[2, 1] = 0     # x2 == x3
    X = np.array([[1, 2, 3], [1, 4, 4], [0, 1, 0], [0, 2, 2]])
    np.testing.assert_array_equal(evaluate_formula(a, b, X), [True, True, False, True])


def test_tasks_are_balanced_and_labelled_by_invariant():
    tasks = {t.name: t for t in loop_invariant_tasks(n_examples=30)}
    t = tasks["tacas06"]
    np.testing.assert_array_equal(t.labels, t.X[:, 0] - t.X[:, 1] == t.X[:, 2] - t.X[:, 3])
    assert t.labels.mean() == 0.5


@pytest.mark.slow
@pytest.mark.parametrize("n_stages", [0, 1, 2])
def test_search_finds_consistent_formula(n_stages):
    task = loop_invariant_tasks(n_examples=30)[0]          # nested: k >= 1
    r = search(task, n_stages, trials=5, seed=0, max_steps=50_000)
    assert np.all(r.steps >= 0)      # search() itself checks each returned formula against the labels


def test_search_reports_failure_on_unsatisfiable_task():
    """Negative control: contradictory labels (same input both ways) can never be fitted."""
    X = np.array([[1, 0, 0], [1, 0, 0]])
    r = search(DNFTask("contradiction", X, np.array([True, False])), 1, trials=2, seed=0, max_steps=2000)
    assert np.all(r.steps == -1)


def test_search_validation():
    task = planted_task(seed=0)
    with pytest.raises(ValueError, match="n_stages"):
        search(task, 3)
    with pytest.raises(ValueError, match="eps_restart"):
        search(task, 1, eps_restart=0.0)
