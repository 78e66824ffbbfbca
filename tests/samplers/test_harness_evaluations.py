"""The families' built-in estimators report a machine-independent cost (``evaluations``) whose value
follows its documented formula."""

from __future__ import annotations

import pytest

from samplers.harness.suites import AISEstimator, GibbsMarginalsEstimator, MRFProblem
from samplers.models import ising_grid


def test_mrf_estimators_count_single_site_updates():
    problem = MRFProblem("ising-2x3", ising_grid(2, 3))
    assert AISEstimator(n_chains=7).estimate(problem, 5, 0)["evaluations"] == 7 * (5 - 1) * 6
    assert GibbsMarginalsEstimator(n_chains=3).estimate(problem, 20, 0)["evaluations"] == 3 * 20 * 6


def test_doeblin_estimators_count_kernel_applications():
    from doeblin.bench import _estimators, quick_problems

    problem = quick_problems()[0]
    for est in _estimators():
        assert est.estimate(problem, 250, 1)["evaluations"] == 250, est.name


def test_pruning_estimators_count_inside_outside_passes():
    from samplers.pruning.bench import _estimators, sentence_pair_problems, sentence_problems

    sentence, pair = sentence_problems([6])[0], sentence_pair_problems([4])[0]
    expected = {"randomized": 5, "fixed-posterior": 2, "fixed-fom": 2, "itg-randomized": 5, "itg-tic-tac-toe": 1,
                "exact": 1}
    for est in _estimators():
        problem = sentence if est.supports(sentence) else pair
        assert est.estimate(problem, 5 if "randomized" in est.name else 1, 0)["evaluations"] == expected[est.name]


def test_trf_estimators_count_samples_and_transitions():
    from trf.bench import ESTIMATORS, trf_quick_suite

    problem = trf_quick_suite().problems[0]
    augsa, ais = ESTIMATORS
    assert augsa.estimate(problem, 8, 0)["evaluations"] == 8 * 100
    assert ais.estimate(problem, 5, 0)["evaluations"] == 5 * 10 * 6  # temperatures x particles x lengths


@pytest.mark.torch
def test_rdp_estimators_count_chart_cells():
    pytest.importorskip("torch")
    from rdp.bench import ChainProblem, RDPEstimator, TreeProblem

    chain, tree = ChainProblem(50, 6, "dense"), TreeProblem(20, 4, "dense")
    assert RDPEstimator("k1=k2").estimate(chain, 20, 0)["evaluations"] == 6 * 10    # K = 20% of 50
    assert RDPEstimator("topk").estimate(tree, 50, 0)["evaluations"] == 4 * 5 // 2 * 10
