"""Gibbs sampling and loopy BP on factor graphs against enumeration (arities 1-4, mixed domains, zeros,
evidence)."""

from __future__ import annotations

import numpy as np
import pytest

from samplers.models import FactorGraph
from samplers.models.belief_propagation import loopy_belief_propagation
from samplers.models.constructors import random_factor_graph
from samplers.models.factor_gibbs import feasible_states, gibbs_marginals


def random_graph(seed: int, n_vars: int = 6, n_factors: int = 7, max_arity: int = 4, zero_rate: float = 0.1,
                 scale: float = 1.0, tree: bool = False) -> FactorGraph:
    return random_factor_graph(n_vars, n_factors=n_factors, max_arity=max_arity, zero_rate=zero_rate, scale=scale,
                               tree=tree, seed=seed)


# -- loopy BP ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(6))
def test_bp_is_exact_on_trees(seed):
    fg = random_graph(seed, n_vars=7, tree=True)
    res = loopy_belief_propagation(fg, damping=0.0, tol=1e-12)
    assert res.converged
    assert res.log_partition == pytest.approx(fg.log_partition_enumerate(), abs=1e-9)
    np.testing.assert_allclose(res.marginals, fg.marginals_enumerate(), atol=1e-9)


def test_bp_is_exact_on_a_conditioned_tree():
    fg = random_graph(11, n_vars=8, tree=True, zero_rate=0.0)
    cond = fg.condition({0: 1, 5: 0})
    res = loopy_belief_propagation(cond.graph)
    assert res.log_partition == pytest.approx(cond.graph.log_partition_enumerate(), abs=1e-8)
    np.testing.assert_allclose(cond.expand_marginals(res.marginals, fg.max_states),
                               cond.expand_marginals(cond.graph.marginals_enumerate(), fg.max_states), atol=1e-8)


def test_bp_on_loops_is_an_approximation_flagged_by_convergence():
    """Negative control: on a loopy, strongly coupled graph BP is not exact (the tree test can fail)."""
    fg = random_graph(3, n_vars=6, n_factors=10, max_arity=3, zero_rate=0.0, scale=2.0)
    res = loopy_belief_propagation(fg, max_iter=2000)
    assert np.isfinite(res.log_partition)
    assert abs(res.log_partition - fg.log_partition_enumerate()) > 1e-3
    short = loopy_belief_propagation(fg, max_iter=1)
    assert not short.converged and short.iterations == 1


@pytest.mark.parametrize("kwargs, message", [({"damping": 1.0}, "damping"), ({"tol": 0.0}, "tol"),
                                             ({"max_iter": 0}, "max_iter")])
def test_bp_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        loopy_belief_propagation(random_graph(0), **kwargs)


# -- Gibbs ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", [0, 1, 2, 4])
def test_gibbs_marginals_match_enumeration(seed):
    """Each marginal entry within 5 between-chain standard errors (16 chains) + 2e-3 of the exact one."""
    fg = random_graph(seed, zero_rate=0.1, scale=0.8)
    res = gibbs_marginals(fg, n_sweeps=3000, n_chains=16, seed=seed)
    exact = fg.marginals_enumerate()
    assert np.all(np.abs(res.marginals - exact) <= 5 * res.stderr + 2e-3)


def test_gibbs_with_evidence_matches_the_conditioned_enumeration():
    fg = random_graph(7, n_vars=7, zero_rate=0.05)
    cond = fg.condition({2: 1})
    res = gibbs_marginals(cond.graph, n_sweeps=3000, n_chains=16, seed=1)
    exact = cond.graph.marginals_enumerate()
    assert np.all(np.abs(res.marginals - exact) <= 5 * res.stderr + 2e-3)


def test_gibbs_negative_control_detects_a_wrong_target():
    """The same tolerance rejects the marginals of a different model (the check can fail)."""
    res = gibbs_marginals(random_graph(0, zero_rate=0.1, scale=0.8), n_sweeps=3000, n_chains=16, seed=0)
    other = random_graph(1, zero_rate=0.1, scale=0.8)
    wrong = np.zeros_like(res.marginals)
    wrong[:, :other.max_states] = other.marginals_enumerate()[:, :res.marginals.shape[1]]
    assert not np.all(np.abs(res.marginals - wrong) <= 5 * res.stderr + 2e-3)


def test_chains_never_visit_zero_states():
    parity = np.indices((2, 2, 2)).sum(axis=0) % 2  # only even-parity configurations are possible
    fg = FactorGraph([2, 2, 2], [(0, 1, 2)], [np.where(parity == 0, 0.0, -np.inf)])
    x = feasible_states(fg, 20, seed=0)
    assert np.all(fg.log_unnormalized(x) > -np.inf)
    res = gibbs_marginals(fg, n_sweeps=50, n_chains=3, seed=0)
    assert np.all(fg.log_unnormalized(res.final_states) > -np.inf)


def test_infeasible_model_is_refused_clearly():
    same = np.array([[0.0, -np.inf], [-np.inf, 0.0]])
    fg = FactorGraph([2, 2], [(0, 1), (0, 1)], [same, same[::-1]])  # x0 == x1 and x0 != x1: Z = 0
    with pytest.raises(ValueError, match="no feasible start"):
        gibbs_marginals(fg, n_sweeps=10, seed=0)


def test_infeasible_init_is_refused():
    fg = FactorGraph([2, 2], [(0, 1)], [np.array([[0.0, -np.inf], [0.0, 0.0]])])
    with pytest.raises(ValueError, match="init"):
        gibbs_marginals(fg, n_sweeps=10, init=[0, 1])
