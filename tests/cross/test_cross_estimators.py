"""Every (estimator, problem kind) pair that claims support, at a small size, against the exact answer:
within k standard errors of independent replicates (k = 4: about 6e-5 false alarms per scalar check,
a few 1e-3 for the largest of a few dozen entries), or within its documented bias (Top-K and fixed
masks are lower bounds, the Doeblin chain targets pi_eps, RDP marginals are exact at K = N).
Negative controls show the checks can fail."""

from __future__ import annotations

import numpy as np
import pytest

from samplers.harness import (
    KindEstimator,
    estimators_for,
    list_estimators,
    load_estimators,
    register_estimators,
    run_all,
)
from samplers.models import Grammar, random_mrf
from samplers.problems import ChainCRF, ChainCRFProblem, PairwiseMRFProblem, PCFGProblem
from samplers.testing import assert_close_in_se

K = 4.0


def crf_problem():
    return ChainCRFProblem("crf-T4-N3", ChainCRF.random(4, 3, scale=1.0, seed=11))


def mrf_problem():
    return PairwiseMRFProblem("mrf-6", random_mrf(6, 2, density=0.6, scale=0.7, seed=3))


def pcfg_problem():
    return PCFGProblem("pcfg-NT5-T5", Grammar.random(5, 5, seed=2), "w0 w1 w2 w3 w4")


def by_name(name):
    (est,) = [e for e in load_estimators() if e.name == name]
    return est


def replicates(est, problem, budget, n, target):
    return np.array([est.estimate(problem, budget, seed)[target] for seed in range(n)])


def assert_unbiased(values, exact, what):
    """Mean of independent replicates within K standard errors (se floored at 1e-9 for constant entries)."""
    values = np.asarray(values, dtype=float)
    se = np.maximum(values.std(axis=0, ddof=1) / np.sqrt(values.shape[0]), 1e-9)
    return assert_close_in_se(values.mean(axis=0), exact, se, k=K, what=what)


# -- which estimator claims what ----------------------------------------------------------------
EXPECTED = {
    "chain-crf": {"trivial", "exact-forward", "exact-junction-tree", "ais", "gibbs", "rdp-k2=1", "rdp-k1=k2", "topk",
                  "doeblin-gibbs-eps0.05", "doeblin-gibbs-eps0.2"},
    "pairwise-mrf": {"trivial", "exact-junction-tree", "ais", "gibbs", "doeblin-gibbs-eps0.05", "doeblin-gibbs-eps0.2"},
    "pcfg": {"trivial", "rdp-k2=1", "rdp-k1=k2", "topk", "exact-inside", "pruning-randomized", "pruning-fixed"},
}


@pytest.mark.parametrize("make", [crf_problem, mrf_problem, pcfg_problem])
def test_every_claim_is_covered_by_this_file(make):
    """A new (estimator, kind) claim must be added to EXPECTED and tested below."""
    problem = make()
    assert {e.name for e in estimators_for(problem)} == EXPECTED[problem.kind]


def test_registry_lists_without_importing_and_refuses_duplicates():
    names = list_estimators()
    assert {"samplers", "rdp", "doeblin", "pruning", "trf"} <= set(names)
    with pytest.raises(ValueError, match="already registered"):
        register_estimators("rdp", "rdp.estimators:other", "rdp")
    with pytest.raises(ValueError, match="module:function"):
        register_estimators("x-test", "nocolon", "x")
    with pytest.raises(ValueError, match="unknown estimator factory"):
        load_estimators(["nope"])


def test_run_all_hands_the_problem_to_every_supporting_estimator():
    problem = pcfg_problem()
    out = run_all(problem, seed=0, families=("pruning",))
    assert set(out) == {"exact-inside", "pruning-randomized", "pruning-fixed"}
    assert set(out["pruning-randomized"]) == {"span_posteriors", "rule_counts", "evaluations"}
    assert out["exact-inside"]["log_probability"] == pytest.approx(problem.exact()["log_probability"], abs=1e-12)


def test_unsupported_kind_is_a_clear_error():
    with pytest.raises(ValueError, match="does not support problems of kind 'pcfg'"):
        by_name("gibbs").estimate(pcfg_problem(), 10, 0)


# -- exact references -----------------------------------------------------------------------------
@pytest.mark.parametrize("name, make", [("exact-forward", crf_problem), ("exact-junction-tree", crf_problem),
                                        ("exact-junction-tree", mrf_problem), ("exact-inside", pcfg_problem)])
def test_exact_estimators_are_exact(name, make):
    problem = make()
    ex = problem.exact()
    out = by_name(name).estimate(problem, 1, 0)
    assert out.pop("evaluations") > 0
    for target, value in out.items():
        np.testing.assert_allclose(value, ex[target], atol=1e-10, err_msg=f"{name} {target}")


# -- samplers: AIS and Gibbs ------------------------------------------------------------------------
@pytest.mark.parametrize("make", [crf_problem, mrf_problem])
def test_ais_log_partition_unbiased_in_linear_space(make):
    """AIS's Z-hat is unbiased: mean of Z-hat / Z over 30 independent runs is 1 within K se."""
    problem = make()
    est = by_name("ais")
    log_z = problem.exact()["log_partition"]
    ratio = np.exp(replicates(est, problem, 10, 30, "log_partition") - log_z)
    assert_unbiased(ratio, 1.0, "AIS Z-hat / Z")
    with pytest.raises(AssertionError):  # negative control: a log Z off by 0.25
        assert_unbiased(ratio * np.exp(-0.25), 1.0, "shifted")


@pytest.mark.parametrize("make", [crf_problem, mrf_problem])
def test_ais_weighted_marginals_consistent(make):
    """Self-normalised AIS weights are consistent with a bias O(1 / n_chains) per run, which averaging
    replicates does not remove: with 1000 chains per run it is small against the se of 10 runs."""
    from samplers.estimators import AISEstimator

    problem = make()
    values = replicates(AISEstimator(n_chains=1000), problem, 10, 10, "marginals")
    assert_unbiased(values, problem.exact()["marginals"], "AIS-weighted marginals")


@pytest.mark.parametrize("make", [crf_problem, mrf_problem])
def test_gibbs_marginals(make):
    problem = make()
    values = replicates(by_name("gibbs"), problem, 400, 12, "marginals")
    assert_unbiased(values, problem.exact()["marginals"], "Gibbs marginals")
    wrong = problem.exact()["marginals"].copy()
    wrong[0] = wrong[0][::-1]
    with pytest.raises(AssertionError):
        assert_unbiased(values, wrong, "negative control")


# -- doeblin: exact draws of pi_eps, biased for pi --------------------------------------------------
@pytest.mark.parametrize("eps", [0.05, 0.2])
@pytest.mark.parametrize("make", [crf_problem, mrf_problem])
def test_doeblin_marginals_target_pi_eps(make, eps):
    from doeblin.estimators import doeblin_gibbs_stationary

    problem = make()
    est = by_name(f"doeblin-gibbs-eps{eps:g}")
    n = 4000
    marg = est.estimate(problem, n, 7)["marginals"]
    ref = doeblin_gibbs_stationary(problem.mrf, eps)
    se = np.maximum(np.sqrt(ref["marginals"] * (1 - ref["marginals"]) / n), 1e-9)  # i.i.d. exact draws
    assert_close_in_se(marg, ref["marginals"], se, k=K, what="Doeblin marginals vs pi_eps")
    # the documented bias: pi_eps - pi is what the estimator carries on top of its noise
    np.testing.assert_allclose(ref["marginals"] - problem.exact()["marginals"], ref["bias"], atol=1e-12)


@pytest.mark.parametrize("eps", [0.05, 0.2])
def test_doeblin_on_a_factor_graph_targets_the_same_pi_eps(eps):
    """The factor-graph Doeblin chain (restart: unary-only model; kernel: one sweep over the factor bundle)
    on the factor graph of a pairwise MRF has the MRF chain's pi_eps (same scan, same conditionals)."""
    from doeblin.estimators import doeblin_gibbs_stationary
    from samplers.models import FactorGraph
    from samplers.problems import FactorGraphProblem

    mrf = mrf_problem().mrf
    problem = FactorGraphProblem("fg", FactorGraph.from_pairwise(mrf))
    n = 4000
    marg = by_name(f"doeblin-gibbs-eps{eps:g}").estimate(problem, n, 7)["marginals"]
    ref = doeblin_gibbs_stationary(mrf, eps)["marginals"]
    se = np.maximum(np.sqrt(ref * (1 - ref) / n), 1e-9)  # i.i.d. exact draws
    assert_close_in_se(marg, ref, se, k=K, what="factor-graph Doeblin marginals vs pi_eps")


@pytest.mark.parametrize("n_states, eps", [(2, 0.2), (3, 0.05)])
def test_doeblin_on_a_factor_graph_draws_as_the_pairwise_chain(n_states, eps):
    """Both Gibbs-sweep Doeblin chains run through the one exact-draw kernel (doeblin.core) with the same
    restart rows and one uniform per site update, so on the factor graph of a pairwise MRF they give the
    same draws and sweep counts at the same seed (the unary restart and the factor sweep, step by step)."""
    from doeblin.estimators import doeblin_factor_draws, doeblin_gibbs_draws
    from samplers.models import FactorGraph

    mrf = random_mrf(5, n_states, density=0.7, scale=0.8, seed=n_states)
    draws, sweeps = doeblin_factor_draws(FactorGraph.from_pairwise(mrf), 500, eps, 11)
    ref, ref_sweeps = doeblin_gibbs_draws(mrf, 500, eps, 11)
    assert sweeps == ref_sweeps > 0
    np.testing.assert_array_equal(draws, ref)
    other, _ = doeblin_factor_draws(FactorGraph.from_pairwise(mrf), 500, eps, 12)
    assert not np.array_equal(other, ref)  # negative control: another seed, other draws


def test_doeblin_bias_is_visible_at_large_eps():
    """Negative control: at eps = 0.9 on a strongly coupled chain, pi_eps is far from pi, and the
    estimator's draws resolve the difference (it is bias, not noise)."""
    from doeblin.estimators import DoeblinGibbsEstimator, doeblin_gibbs_stationary

    problem = ChainCRFProblem("sticky", ChainCRF(np.zeros((4, 2)) + [0.0, 0.3], 2.5 * np.eye(2)))
    ref = doeblin_gibbs_stationary(problem.mrf, 0.9)
    assert np.max(np.abs(ref["bias"])) > 0.02
    n = 20000
    marg = DoeblinGibbsEstimator(0.9).estimate(problem, n, 1)["marginals"]
    se = np.maximum(np.sqrt(ref["marginals"] * (1 - ref["marginals"]) / n), 1e-9)
    assert_close_in_se(marg, ref["marginals"], se, k=K)
    with pytest.raises(AssertionError):
        assert_close_in_se(marg, problem.exact()["marginals"], se, k=K)


# -- rdp ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["rdp-k2=1", "rdp-k1=k2"])
def test_rdp_chain_log_partition_unbiased_in_linear_space(name):
    """Z-hat of the randomized Forward is unbiased (Theorem A.1): mean Z-hat / Z = 1 within K se."""
    problem = ChainCRFProblem("crf-T5-N10", ChainCRF.random(5, 10, seed=4))
    log_z = problem.exact()["log_partition"]
    ratio = np.exp(replicates(by_name(name), problem, 50, 300, "log_partition") - log_z)
    assert_unbiased(ratio, 1.0, f"{name} Z-hat / Z")


@pytest.mark.parametrize("name", ["rdp-k2=1", "rdp-k1=k2", "topk"])
def test_rdp_chain_exact_at_full_budget(name):
    problem = crf_problem()
    ex = problem.exact()
    out = by_name(name).estimate(problem, 100, 0)
    for target in ("log_partition", "marginals", "entropy"):
        np.testing.assert_allclose(out[target], ex[target], atol=1e-9, err_msg=target)


def test_rdp_chain_marginals_and_topk_bias():
    """Below K = N: gradient marginals are distributions per position (documented: biased); Top-K
    log Z is a deterministic lower bound."""
    problem = ChainCRFProblem("crf-T5-N10", ChainCRF.random(5, 10, seed=4))
    ex = problem.exact()
    out = by_name("rdp-k2=1").estimate(problem, 50, 0)
    np.testing.assert_allclose(out["marginals"].sum(axis=1), 1.0, atol=1e-9)
    assert np.all(out["marginals"] >= -1e-12)
    topk = by_name("topk")
    assert topk.estimate(problem, 50, 0)["log_partition"] < ex["log_partition"]
    assert topk.estimate(problem, 50, 0)["log_partition"] == topk.estimate(problem, 50, 1)["log_partition"]


@pytest.mark.parametrize("name", ["rdp-k2=1", "rdp-k1=k2"])
def test_rdp_pcfg_log_probability_unbiased_in_linear_space(name):
    problem = pcfg_problem()
    log_p = problem.exact()["log_probability"]
    ratio = np.exp(replicates(by_name(name), problem, 60, 300, "log_probability") - log_p)
    assert_unbiased(ratio, 1.0, f"{name} P-hat / P")


def test_rdp_pcfg_rule_counts_below_full_budget():
    """Gradient rule counts of log Z-hat: each tree uses T - 1 binary rules, so the counts of the
    randomized distribution over trees also sum to T - 1 (a check of the weighting), and they are
    non-negative; below K = NT they are biased (documented), so only the full budget is exact."""
    problem = pcfg_problem()
    counts = by_name("rdp-k2=1").estimate(problem, 60, 3)["rule_counts"]
    assert counts.sum() == pytest.approx(len(problem.words) - 1, abs=1e-9) and counts.min() >= -1e-12


def test_rdp_pcfg_exact_at_full_budget_and_topk_lower_bound():
    problem = pcfg_problem()
    log_p = problem.exact()["log_probability"]
    for name in ("rdp-k2=1", "rdp-k1=k2", "topk"):
        out = by_name(name).estimate(problem, 100, 0)
        assert out["log_probability"] == pytest.approx(log_p, abs=1e-9)
        np.testing.assert_allclose(out["rule_counts"], problem.exact()["rule_counts"], atol=1e-9)
    assert by_name("topk").estimate(problem, 60, 0)["log_probability"] <= log_p + 1e-12


# -- pruning ------------------------------------------------------------------------------------------
def test_randomized_pruning_consistent():
    problem = pcfg_problem()
    ex = problem.exact()
    est = by_name("pruning-randomized")
    runs = [est.estimate(problem, 200, seed) for seed in range(8)]
    for target in ("span_posteriors", "rule_counts"):
        assert_unbiased([r[target] for r in runs], ex[target], f"randomized pruning {target}")


def test_fixed_mask_lower_bound_and_exact_without_pruning():
    problem = pcfg_problem()
    ex = problem.exact()
    est = by_name("pruning-fixed")
    assert est.estimate(problem, 1, 0)["log_probability"] <= ex["log_probability"] + 1e-12
    loose = est.estimate(problem, 40, 0)  # threshold 5e-21: nothing pruned
    for target in ("log_probability", "span_posteriors", "rule_counts"):
        np.testing.assert_allclose(loose[target], ex[target], atol=1e-9)


# -- trf ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def trf_problem():
    from trf.estimators import TRFProblem

    return TRFProblem.random("trf-V3-m4", "abc", m=4)


def test_trf_ais_zeta(trf_problem):
    est = by_name("ais-zeta")
    values = replicates(est, trf_problem, 30, 12, "zeta")
    assert_unbiased(values[:, 1:], trf_problem.exact()["zeta"][1:], "AIS zeta")  # zeta_1 = 0 by definition


def test_trf_augsa_zeta(trf_problem):
    est = by_name("augsa-zeta")
    values = replicates(est, trf_problem, 400, 8, "zeta")
    assert_unbiased(values[:, 1:], trf_problem.exact()["zeta"][1:], "AugSA zeta")


def test_kind_estimator_is_an_estimator_and_reports_evaluations(trf_problem):
    """Every estimator reports a positive machine-independent cost on every kind it supports."""
    problems = [crf_problem(), mrf_problem(), pcfg_problem(), trf_problem]
    for est in load_estimators():
        assert isinstance(est, KindEstimator)
        for problem in problems:
            if est.supports(problem):
                budget = est.quick_budgets[0]
                assert est.estimate(problem, budget, 0)["evaluations"] > 0, (est.name, problem.name)


def test_trivial_baseline_is_what_it_says(trf_problem):
    """The baseline is exact for the model without couplings / with lambda = 0, and a Viterbi tree."""
    from samplers.models import PairwiseMRF

    est = by_name("trivial")
    problem = crf_problem()
    m = problem.mrf
    decoupled = PairwiseMRF(m.unary, np.zeros((0, 2), int), np.zeros((0, 3, 3)))
    out = est.estimate(problem, 1, 0)
    assert out["log_partition"] == pytest.approx(decoupled.log_partition_exact(), abs=1e-12)
    np.testing.assert_allclose(out["marginals"], decoupled.marginals_exact(), atol=1e-12)
    p = decoupled.probabilities_exact()
    assert out["entropy"] == pytest.approx(float(-np.sum(p * np.log(p))), abs=1e-10)
    pc = pcfg_problem()
    tree = est.estimate(pc, 1, 0)
    assert tree["log_probability"] < pc.exact()["log_probability"]
    assert tree["rule_counts"].sum() == len(pc.words) - 1
    assert set(np.unique(tree["span_posteriors"])) <= {0.0, 1.0}
    assert est.estimate(trf_problem, 1, 0)["zeta"] == pytest.approx(np.arange(4) * np.log(3))
