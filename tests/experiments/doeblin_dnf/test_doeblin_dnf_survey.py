"""Planted-formula survey (Experiment 2): survival curves, seeded reruns, survey bookkeeping, validation."""

import numpy as np
import pytest

from experiments.doeblin_dnf.search import planted_task, search, search_seeds
from experiments.doeblin_dnf.survey import ChainSpec, default_chains, planted_survey, survival_curve


def test_survival_curve_hand_computed():
    # T = 5, 20, unfinished, 100 under cap 100: P(T > s) at s = 0, 5, 19, 20, 99, 100
    steps = [5, 20, -1, 100]
    np.testing.assert_allclose(survival_curve(steps, 100, [0, 5, 19, 20, 99, 100]),
                               [1.0, 0.75, 0.75, 0.5, 0.5, 0.25])
    # last axis is the trial axis: one curve per row, and their mean is the pooled curve of equal-sized rows
    two = survival_curve([[5, 20], [-1, 100]], 100, [0, 20, 100])
    np.testing.assert_allclose(two, [[1.0, 0.0, 0.0], [1.0, 1.0, 0.5]])
    np.testing.assert_allclose(two.mean(axis=0), survival_curve(steps, 100, [0, 20, 100]))


def test_survival_curve_bad_input():
    with pytest.raises(ValueError, match="at"):
        survival_curve([1, 2], 10, [11])                 # beyond the cap the curve is unknown
    with pytest.raises(ValueError, match="steps"):
        survival_curve([1, 11], 10, [5])                 # a trial cannot finish after the cap
    with pytest.raises(ValueError, match="steps"):
        survival_curve([-2], 10, [5])
    with pytest.raises(ValueError, match="steps"):
        survival_curve([], 10, [5])
    with pytest.raises(ValueError, match="max_steps"):
        survival_curve([1], 0, [0])
    with pytest.raises(TypeError, match="steps"):
        survival_curve([1.5], 10, [5])


def test_search_seeds_reproduces_search_and_extends_trajectories():
    """The kernel is deterministic given its seed: search_seeds(search's seeds) repeats search, and a larger
    cap continues the same trajectory (a trial solved at s <= cap is solved at s again; one unfinished at the
    cap can only finish later)."""
    task = planted_task(d=4, n=2, m=2, n_examples=40, seed=3)
    r = search(task, 0, trials=6, seed=7, max_steps=600, beta=8.0)
    again = search_seeds(task, 0, r.seeds, max_steps=600, beta=8.0)
    np.testing.assert_array_equal(again.steps, r.steps)
    longer = search_seeds(task, 0, r.seeds, max_steps=30_000, beta=8.0)
    done = r.steps >= 0
    np.testing.assert_array_equal(longer.steps[done], r.steps[done])
    assert np.all((longer.steps[~done] == -1) | (longer.steps[~done] > 600))
    assert (~done).any() and done.any()                   # both cases are exercised at these seeds
    np.testing.assert_array_equal(r.capped_steps(), np.where(done, r.steps, 600))


def test_search_seeds_validation():
    task = planted_task(seed=0)
    with pytest.raises(ValueError, match="seeds"):
        search_seeds(task, 1, [])
    with pytest.raises(ValueError, match="seeds"):
        search_seeds(task, 1, [-1])
    with pytest.raises(ValueError, match="n_stages"):
        search_seeds(task, 4, [1])


def test_planted_survey_bookkeeping_and_rerun():
    chains = default_chains((1e-2,))
    assert [c.n_stages for c in chains] == [0, 1, 2]
    sv = planted_survey(2, 3, chains, n_examples=30, d=3, n=2, m=2, max_steps=2000, seed=5)
    assert sv.steps.shape == sv.seeds.shape == sv.seconds.shape == (3, 2, 3)
    assert len(np.unique(sv.seeds)) == sv.seeds.size      # independent trials
    # every entry is reproduced by an independent search of the same task with the same kernel seed
    for c, spec in enumerate(chains):
        for f in range(2):
            r = search_seeds(sv.task(f), spec.n_stages, sv.seeds[c, f], n=2, m=2, beta=8.0,
                             eps_restart=spec.eps_restart, max_steps=2000)
            np.testing.assert_array_equal(r.steps, sv.steps[c, f])
    np.testing.assert_allclose(sv.survival(1, [0, 2000]), [1.0, (sv.steps[1] < 0).mean()])
    np.testing.assert_allclose(sv.mean_ratio_per_formula(0, 0), 1.0)
    r = sv.rerun(2, 1, 2, 2000)
    assert r.steps[0] == sv.steps[2, 1, 2]


def test_planted_survey_validation():
    with pytest.raises(ValueError, match="n_formulas"):
        planted_survey(0, 1)
    with pytest.raises(ValueError, match="n_stages"):
        planted_survey(1, 1, [ChainSpec("bad", 3, 1e-3)])
    with pytest.raises(ValueError, match="eps_restart"):
        planted_survey(1, 1, [ChainSpec("bad", 1, 0.0)])
    with pytest.raises(ValueError, match="chains"):
        planted_survey(1, 1, [])
