"""The families' built-in estimators report a machine-independent cost (``evaluations``) whose value
follows its documented formula."""

from __future__ import annotations

import pytest

from samplers.estimators import AISEstimator, GibbsEstimator
from samplers.models import ising_grid
from samplers.problems import PairwiseMRFProblem, chart_rule_entries


def test_mrf_estimators_count_single_site_updates():
    problem = PairwiseMRFProblem("ising-2x3", ising_grid(2, 3))
    # one Gibbs sweep at each of the 5 - 2 intermediate temperatures
    assert AISEstimator(n_chains=7).estimate(problem, 5, 0)["evaluations"] == 7 * (5 - 2) * 6
    GibbsMarginalsEstimator = GibbsEstimator
    assert GibbsMarginalsEstimator(n_chains=3).estimate(problem, 20, 0)["evaluations"] == 3 * 20 * 6


def test_doeblin_estimators_count_kernel_applications():
    from doeblin.estimators import chain_estimators
    from doeblin.suites import quick_problems

    problem = quick_problems()[0]
    for est in chain_estimators():
        assert est.estimate(problem, 250, 1)["evaluations"] == 250, est.name


def test_pruning_estimators_count_chart_rule_applications_and_passes():
    """PCFG: binary-rule applications of an unpruned chart, inside + outside, per mask (5 masks; a fixed
    mask is a coarse and a fine pass); ITG: masked bitext passes."""
    from samplers.pruning.suites import _estimators, sentence_pair_problems, sentence_problems

    sentence, pair = sentence_problems([6])[0], sentence_pair_problems([4])[0]
    chart = 2 * chart_rule_entries(6, sentence.grammar.n_binary)
    expected = {"randomized": 5 * chart, "fixed-posterior": 2 * chart, "fixed-fom": 2 * chart, "itg-randomized": 5,
                "itg-tic-tac-toe": 1}
    for est in _estimators():
        for problem in (sentence, pair):
            if not est.supports(problem):
                continue
            want = expected.get(est.name, problem.exact_evaluations())
            assert est.estimate(problem, 5 if "randomized" in est.name else 1, 0)["evaluations"] == want, est.name


def test_trf_estimators_count_samples_and_transitions():
    from trf.suites import trf_quick_suite

    suite = trf_quick_suite()
    problem = suite.problems[0]
    augsa, ais = suite.estimators
    assert augsa.estimate(problem, 8, 0)["evaluations"] == 8 * 100
    assert ais.estimate(problem, 5, 0)["evaluations"] == 5 * 10 * 6  # temperatures x particles x lengths


@pytest.mark.torch
def test_rdp_estimators_count_chart_cells():
    pytest.importorskip("torch")
    from rdp.estimators import RDPEstimator
    from rdp.problems import SyntheticChainProblem as ChainProblem
    from rdp.problems import TreeCRFProblem as TreeProblem

    chain, tree = ChainProblem(50, 6, "dense"), TreeProblem(20, 4, "dense")
    assert RDPEstimator("k1=k2").estimate(chain, 20, 0)["evaluations"] == 6 * 10    # K = 20% of 50
    assert RDPEstimator("topk").estimate(tree, 50, 0)["evaluations"] == 4 * 5 // 2 * 10
