"""Exact MRF inference beyond enumeration (variable elimination / junction tree), checked against
enumeration and transfer matrices (the UAI formats: tests/samplers/test_samplers_uai.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

from samplers.models import (
    PairwiseMRF,
    ising_grid,
    plan_elimination,
    potts_grid,
    random_mrf,
)


# -- elimination equals enumeration ----------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(n_vars=st.integers(1, 8), n_states=st.integers(1, 3), density=st.floats(0.0, 1.0),
       seed=st.integers(0, 2**31 - 1))
def test_elimination_equals_enumeration_random_graphs(n_vars, n_states, density, seed):
    mrf = random_mrf(n_vars, n_states, density=density, scale=1.5, seed=seed)
    assert mrf.log_partition_exact(method="elimination") == pytest.approx(
        mrf.log_partition_exact(method="enumeration"), abs=1e-10)
    np.testing.assert_allclose(mrf.marginals_exact(method="elimination"),
                               mrf.marginals_exact(method="enumeration"), atol=1e-12)


@pytest.mark.parametrize("make", [lambda: ising_grid(3, 4, coupling=0.7, field=-0.2),
                                  lambda: potts_grid(3, 3, n_states=3, coupling=0.9, field=0.3),
                                  lambda: potts_grid(2, 5, n_states=4, coupling=-0.5,
                                                     field=np.random.default_rng(1).normal(size=(10, 4)))])
def test_elimination_equals_enumeration_ising_potts(make):
    mrf = make()
    assert mrf.log_partition_exact(method="elimination") == pytest.approx(
        mrf.log_partition_exact(method="enumeration"), abs=1e-10)
    np.testing.assert_allclose(mrf.marginals_exact(method="elimination"),
                               mrf.marginals_exact(method="enumeration"), atol=1e-12)


def test_elimination_respects_per_variable_state_counts():
    rng = np.random.default_rng(3)
    edges = [[0, 1], [1, 2], [2, 3], [3, 0], [1, 3]]
    mrf = PairwiseMRF(rng.normal(size=(4, 3)), edges, rng.normal(size=(5, 3, 3)), n_states=[1, 3, 2, 3])
    assert mrf.log_partition_exact(method="elimination") == pytest.approx(
        mrf.log_partition_exact(method="enumeration"), abs=1e-12)
    marg = mrf.marginals_exact(method="elimination")
    np.testing.assert_allclose(marg, mrf.marginals_exact(method="enumeration"), atol=1e-13)
    assert marg[0, 1:].sum() == 0 and marg[2, 2] == 0


def test_disconnected_graph_sums_components():
    mrf = random_mrf(6, 2, edges=[[0, 1], [2, 3]], seed=4)  # 4 and 5 isolated
    assert mrf.log_partition_exact(method="elimination") == pytest.approx(
        mrf.log_partition_exact(method="enumeration"), abs=1e-12)


def test_negative_control_elimination_sees_a_changed_potential():
    mrf = random_mrf(7, 2, density=0.6, seed=9)
    pw = mrf.pairwise.copy()
    pw[0, 0, 0] += 0.3
    other = PairwiseMRF(mrf.unary, mrf.edges, pw)
    assert abs(other.log_partition_exact(method="elimination") - mrf.log_partition_exact(method="enumeration")) > 1e-3


# -- beyond enumeration: a 10 x 10 grid against transfer matrices ----------------------------------
def transfer_matrix_log_partition(unary: np.ndarray, coupling_h: np.ndarray, coupling_v: np.ndarray,
                                  rows: int, cols: int) -> tuple[float, np.ndarray]:
    """log Z and single-site marginals of a grid MRF by transfer matrices over whole rows.

    Row configurations are the K^cols tuples; ``within[r, s]`` holds row r's unary and horizontal
    terms, ``between[s, s']`` the vertical terms between consecutive rows.  Forward/backward over
    the rows in log space; independent of the junction-tree code.
    """
    k = unary.shape[-1]
    configs = np.array(np.unravel_index(np.arange(k**cols), (k,) * cols)).T  # (S, cols)
    within = np.zeros((rows, configs.shape[0]))
    for r in range(rows):
        for c in range(cols):
            within[r] += unary[r * cols + c, configs[:, c]]
        for c in range(cols - 1):
            within[r] += coupling_h[configs[:, c], configs[:, c + 1]]
    between = np.zeros((configs.shape[0], configs.shape[0]))
    for c in range(cols):
        between += coupling_v[configs[:, c][:, None], configs[:, c][None, :]]
    alpha = [within[0]]
    for r in range(1, rows):
        alpha.append(within[r] + logsumexp(alpha[-1][:, None] + between, axis=0))
    beta = [np.zeros(configs.shape[0])]
    for r in range(rows - 1, 0, -1):
        beta.insert(0, logsumexp(between + (within[r] + beta[0])[None, :], axis=1))
    log_z = float(logsumexp(alpha[-1]))
    marg = np.zeros((rows * cols, k))
    for r in range(rows):
        p = np.exp(alpha[r] + beta[r] - log_z)
        for c in range(cols):
            marg[r * cols + c] = np.bincount(configs[:, c], weights=p, minlength=k)
    return log_z, marg


def test_ising_10x10_against_transfer_matrices():
    coupling, field = 0.45, 0.1  # near the critical coupling 0.4407: strongly correlated
    mrf = ising_grid(10, 10, coupling=coupling, field=field)
    assert mrf.n_configurations == 2**100 and mrf.exact_method() == "elimination"
    spin = np.array([-1.0, 1.0])
    log_z, marg = transfer_matrix_log_partition(np.tile(field * spin, (100, 1)), coupling * np.outer(spin, spin),
                                                coupling * np.outer(spin, spin), 10, 10)
    assert mrf.log_partition_exact() == pytest.approx(log_z, rel=1e-12, abs=1e-9)
    np.testing.assert_allclose(mrf.marginals_exact(), marg, atol=1e-10)
    assert mrf.elimination_plan.width <= 13


def test_random_potts_6x5_against_transfer_matrices():
    rng = np.random.default_rng(11)
    unary = rng.normal(size=(30, 3))
    mrf = potts_grid(6, 5, n_states=3, coupling=0.8, field=unary)
    log_z, marg = transfer_matrix_log_partition(unary, 0.8 * np.eye(3), 0.8 * np.eye(3), 6, 5)
    assert mrf.log_partition_exact() == pytest.approx(log_z, abs=1e-9)
    np.testing.assert_allclose(mrf.marginals_exact(), marg, atol=1e-10)


def test_long_chain_and_tree_are_cheap():
    n = 2000
    chain = random_mrf(n, 4, edges=np.stack([np.arange(n - 1), np.arange(1, n)], axis=1), seed=1)
    assert chain.elimination_plan.width == 1
    rng = np.random.default_rng(2)
    parents = [int(rng.integers(0, i)) for i in range(1, 300)]
    tree = random_mrf(300, 3, edges=np.stack([parents, np.arange(1, 300)], axis=1), seed=2)
    assert tree.elimination_plan.width == 1
    # a chain's log Z by an explicit forward recursion
    alpha = chain.unary[0]
    for t in range(1, n):
        alpha = chain.unary[t] + logsumexp(alpha[:, None] + chain.pairwise[t - 1], axis=0)
    assert chain.log_partition_exact() == pytest.approx(float(logsumexp(alpha)), rel=1e-13)
    assert tree.marginals_exact().sum(axis=1) == pytest.approx(np.ones(300))


def test_refusal_names_the_treewidth():
    with pytest.raises(ValueError, match=r"width 30 \(treewidth <= 30\).*about 10\^270 joint states"):
        ising_grid(30, 30).log_partition_exact()
    with pytest.raises(ValueError, match=r"has width 5 \(treewidth <= 5\).*64 entries"):
        ising_grid(5, 5).log_partition_exact(max_table_entries=8)
    with pytest.raises(ValueError, match="method must be one of"):
        ising_grid(2, 2).log_partition_exact(method="magic")
    with pytest.raises(ValueError, match="exact enumeration refused"):
        ising_grid(5, 5).log_partition_exact(method="enumeration", max_states=2**10)


def test_plan_prefers_the_narrow_side_of_a_grid():
    from samplers.models import grid_edges
    plan = plan_elimination(np.full(60, 2), [tuple(e) for e in grid_edges(20, 3)])
    assert plan.width == 3 and plan.complete
