"""FactorGraph: layout, enumeration oracle, evidence, pairwise converters, and exact inference by
the junction tree (samplers.models.elimination) against enumeration on random factor graphs with
arities 0-4, mixed domains and zeros."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from samplers.models import (
    FactorGraph,
    PairwiseMRF,
    TooWideError,
    ZeroPartitionError,
    ising_grid,
    plan_elimination,
    random_mrf,
)


def log(x) -> np.ndarray:
    """``np.log`` with ``log 0 = -inf`` and no warning."""
    with np.errstate(divide="ignore"):
        return np.log(np.asarray(x, dtype=np.float64))


def random_factor_graph(seed: int, n_vars: int = 5, max_card: int = 3, n_factors: int = 6, max_arity: int = 4,
                        zero_rate: float = 0.15) -> FactorGraph:
    rng = np.random.default_rng(seed)
    cards = rng.integers(1, max_card + 1, size=n_vars)
    scopes, tables = [], []
    for _ in range(n_factors):
        arity = int(rng.integers(0, min(max_arity, n_vars) + 1))
        scope = tuple(int(v) for v in rng.choice(n_vars, arity, replace=False))
        table = rng.normal(scale=1.5, size=tuple(int(cards[v]) for v in scope))
        table[rng.random(table.shape) < zero_rate] = -np.inf
        scopes.append(scope)
        tables.append(table)
    return FactorGraph(cards, scopes, tables)


# -- the oracle ------------------------------------------------------------------------------------
def test_constant_factors_are_kept():
    # a table [[1, 2], [3, 4]] and a constant factor 10: Z = 10 * 10 = 100 (dropping the constant gives 10)
    fg = FactorGraph([2, 2], [(0, 1), ()], [np.log([[1.0, 2.0], [3.0, 4.0]]), np.log(10.0)])
    assert fg.log_constant == pytest.approx(math.log(10))
    assert fg.log_partition_enumerate() == pytest.approx(math.log(100), abs=1e-12)
    assert fg.log_partition_exact() == pytest.approx(math.log(100), abs=1e-12)
    without = FactorGraph([2, 2], [(0, 1)], [np.log([[1.0, 2.0], [3.0, 4.0]])])
    assert without.log_partition_exact() == pytest.approx(math.log(10), abs=1e-12)  # negative control


def test_enumeration_by_hand_with_zeros():
    # x0 in {0,1}, x1 in {0,1,2}; phi(x0, x1) = [[1, 0, 2], [0, 3, 0]], psi(x1) = (1, 1, 4)
    fg = FactorGraph([2, 3], [(0, 1), (1,)], [log([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]]), np.log([1.0, 1.0, 4.0])])
    # weights: (0,0)=1, (0,2)=8, (1,1)=3 -> Z = 12
    assert fg.log_partition_enumerate() == pytest.approx(math.log(12), abs=1e-12)
    m = fg.marginals_enumerate()
    np.testing.assert_allclose(m[0, :2], [9 / 12, 3 / 12], atol=1e-12)
    np.testing.assert_allclose(m[1], [1 / 12, 3 / 12, 8 / 12], atol=1e-12)
    np.testing.assert_allclose(fg.marginals_exact(), m, atol=1e-12)
    assert fg.log_unnormalized([0, 2]) == pytest.approx(math.log(8))
    assert fg.log_unnormalized([0, 1]) == -np.inf


# -- exact inference against the oracle -------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n_vars=st.integers(1, 7), n_factors=st.integers(0, 9),
       max_card=st.integers(1, 4), zero_rate=st.sampled_from([0.0, 0.1, 0.4]))
def test_junction_tree_equals_enumeration(seed, n_vars, n_factors, max_card, zero_rate):
    fg = random_factor_graph(seed, n_vars, max_card, n_factors, 4, zero_rate)
    exact = fg.log_partition_enumerate()
    got = fg.log_partition_exact()
    if exact == -np.inf:
        assert got == -np.inf
        with pytest.raises(ZeroPartitionError, match="Z = 0"):
            fg.marginals_exact()
        return
    assert got == pytest.approx(exact, abs=1e-10)
    log_z, marg = fg.solve()
    assert log_z == pytest.approx(exact, abs=1e-10)
    np.testing.assert_allclose(marg, fg.marginals_enumerate(), atol=1e-10)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n_observed=st.integers(0, 3))
def test_evidence_equals_enumeration_of_the_clamped_graph(seed, n_observed):
    fg = random_factor_graph(seed, 6, 3, 8, 4, 0.1)
    rng = np.random.default_rng(seed + 1)
    observed = rng.choice(fg.n_vars, n_observed, replace=False)
    evidence = {int(v): int(rng.integers(fg.cards[v])) for v in observed}
    cond = fg.condition(evidence)
    # the oracle: enumerate the full graph with the evidence clamped by -inf unary factors
    clamps = [np.where(np.arange(fg.cards[v]) == s, 0.0, -np.inf) for v, s in evidence.items()]
    clamped = FactorGraph(fg.cards, list(fg.scopes) + [(v,) for v in evidence], list(fg.log_tables) + clamps)
    exact = clamped.log_partition_enumerate()
    assert cond.graph.log_partition_exact() == pytest.approx(exact, abs=1e-10) if exact > -np.inf else \
        cond.graph.log_partition_exact() == -np.inf
    if exact > -np.inf:
        full = cond.expand_marginals(cond.graph.marginals_exact(), fg.max_states)
        np.testing.assert_allclose(full, clamped.marginals_enumerate(), atol=1e-10)


def test_impossible_evidence_says_so():
    fg = FactorGraph([2, 2], [(0, 1)], [log([[1.0, 0.0], [0.0, 1.0]])])
    cond = fg.condition({0: 0, 1: 1})
    assert cond.graph.log_partition_exact() == -np.inf
    with pytest.raises(ZeroPartitionError, match="evidence has probability zero"):
        cond.graph.marginals_exact()


def test_evidence_on_every_variable():
    fg = FactorGraph([2, 3], [(0, 1)], [np.log([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])])
    cond = fg.condition([(0, 1), (1, 2)])
    assert cond.kept.size == 0
    assert cond.graph.log_partition_exact() == pytest.approx(math.log(6))
    full = cond.expand_marginals(cond.graph.marginals_exact(), fg.max_states)
    np.testing.assert_array_equal(full, [[0, 1, 0], [0, 0, 1]])


@pytest.mark.parametrize("evidence, message", [
    ({5: 0}, "names variable 5"), ({0: 2}, "has 2 states"), ([(0, 0), (0, 1)], "twice"), ([("a",)], "map variable"),
])
def test_bad_evidence(evidence, message):
    fg = FactorGraph([2, 2], [(0, 1)], [np.zeros((2, 2))])
    with pytest.raises((ValueError, TypeError), match=message):
        fg.condition(evidence)


# -- converters ------------------------------------------------------------------------------------
def test_pairwise_round_trip_is_exact():
    mrf = random_mrf(6, 3, density=0.6, scale=1.0, seed=3)
    fg = FactorGraph.from_pairwise(mrf)
    assert fg.log_partition_enumerate() == pytest.approx(mrf.log_partition_exact(method="enumeration"), abs=1e-10)
    back, constant = fg.to_pairwise()
    assert constant == 0.0
    assert back.log_partition_exact() == pytest.approx(mrf.log_partition_exact(), abs=1e-10)
    np.testing.assert_allclose(back.marginals_exact(), mrf.marginals_exact(), atol=1e-12)


def test_to_pairwise_keeps_constants_and_refuses_what_it_cannot_hold():
    fg = FactorGraph([2, 2], [(0,), (0, 1), ()], [np.array([0.1, 0.2]), np.ones((2, 2)), np.array(1.5)])
    mrf, constant = fg.to_pairwise()
    assert mrf.log_partition_exact() + constant == pytest.approx(fg.log_partition_exact(), abs=1e-12)
    with pytest.raises(ValueError, match="factor 0 has arity 3"):
        FactorGraph([2, 2, 2], [(0, 1, 2)], [np.zeros((2, 2, 2))]).to_pairwise()
    with pytest.raises(ValueError, match="factor 0 has zero entries"):
        FactorGraph([2], [(0,)], [np.array([0.0, -np.inf])]).to_pairwise()
    with pytest.raises(TypeError, match="PairwiseMRF"):
        FactorGraph.from_pairwise("not a model")


def test_pairwise_mrf_and_factor_graph_share_one_elimination():
    grid = ising_grid(6, 5, coupling=0.6, field=0.1)
    fg = FactorGraph.from_pairwise(grid)
    assert isinstance(grid, PairwiseMRF)
    assert grid.elimination_plan == fg.elimination_plan
    assert grid.log_partition_exact(method="elimination") == fg.log_partition_exact()


# -- the flat bundle -------------------------------------------------------------------------------
def test_bundle_indexes_every_table_entry():
    fg = random_factor_graph(11, 5, 4, 7, 4, 0.0)
    b = fg.bundle
    rng = np.random.default_rng(0)
    for x in rng.integers(0, fg.cards, size=(20, fg.n_vars)):
        total = 0.0
        for f in range(fg.n_factors):
            lo, hi = b.scope_ptr[f], b.scope_ptr[f + 1]
            offset = int(np.sum(x[b.scope_vars[lo:hi]] * b.strides[lo:hi]))
            total += b.log_values[b.table_ptr[f] + offset]
        assert total == pytest.approx(fg.log_unnormalized(x), abs=1e-12)
    for v in range(fg.n_vars):  # the variable -> factor index is the inverse of the scopes
        for m in range(b.var_ptr[v], b.var_ptr[v + 1]):
            assert b.scope_vars[b.var_slots[m]] == v
            assert b.scope_ptr[b.var_factors[m]] <= b.var_slots[m] < b.scope_ptr[b.var_factors[m] + 1]
    assert b.var_ptr[-1] == sum(len(s) for s in fg.scopes)
    assert not b.log_values.flags.writeable


# -- validation and refusals -----------------------------------------------------------------------
@pytest.mark.parametrize("cards, scopes, tables, message", [
    ([2, 0], [], [], "cards must be >= 1"),
    ([2.5], [], [], "cards must be a non-empty"),
    ([2, 2], [(0, 2)], [np.zeros((2, 2))], "names variable 2"),
    ([2, 2], [(0, 0)], [np.zeros((2, 2))], "names a variable twice"),
    ([2, 2], [(0, 1)], [np.zeros(3)], "must have shape"),
    ([2, 2], [(0, 1)], [np.full((2, 2), np.nan)], "finite or -inf"),
    ([2], [(0,)], [np.array([0.0, np.inf])], "finite or -inf"),
    ([2], [(0,), (0,)], [np.zeros(2)], "same length"),
])
def test_bad_graphs_are_refused(cards, scopes, tables, message):
    with pytest.raises((ValueError, TypeError), match=message):
        FactorGraph(cards, scopes, tables)


def test_too_wide_is_refused_naming_width_and_memory():
    fg = FactorGraph.from_pairwise(ising_grid(12, 12))
    with pytest.raises(TooWideError, match=r"induced width \d+; log Z would need .* MiB .* memory cap of 1 KiB"):
        fg.log_partition_exact(memory_cap=1024)
    with pytest.raises(TooWideError, match="log Z and the marginals"):
        fg.marginals_exact(memory_cap=1024)


def test_hopeless_width_is_planned_fast_and_refused():
    # a 60 x 60 grid has treewidth 60: the planner abandons its orders early and says "at least"
    fg = FactorGraph.from_pairwise(ising_grid(60, 60))
    plan = plan_elimination(fg.cards, fg.scopes, memory_cap=2**30)
    assert not plan.complete
    with pytest.raises(TooWideError, match="width at least"):
        fg.log_partition_exact(memory_cap=2**30)


def test_minor_min_width_is_a_treewidth_lower_bound():
    from samplers.models._order_kernels import minor_min_width
    from samplers.models.elimination import ORDER_HEURISTICS, interaction_bits

    # exact on a clique (treewidth n - 1) and on a cycle (treewidth 2); a tree has treewidth 1
    assert minor_min_width(interaction_bits(9, [tuple(range(9))])) == 8
    assert minor_min_width(interaction_bits(12, [(i, (i + 1) % 12) for i in range(12)])) == 2
    assert minor_min_width(interaction_bits(7, [(0, i) for i in range(1, 7)])) == 1
    # never above the induced width of any order found
    bounds = []
    for seed in range(20):
        fg = random_factor_graph(seed, 14, 3, 24, 3, 0.0)
        bounds.append(minor_min_width(interaction_bits(fg.n_vars, fg.scopes)))
        widths = [plan_elimination(fg.cards, fg.scopes, heuristics=(h,)).width for h in ORDER_HEURISTICS]
        assert bounds[-1] <= min(widths)
    assert max(bounds) >= 3  # not a trivial bound


def test_fill_evaluations_count_the_pairs_tested():
    # path 0-1-2: min-fill and weighted min-fill each test the pair of 1's neighbours once; min-degree
    # and the given order test none
    plan = plan_elimination(np.full(3, 2), [(0, 1), (1, 2)])
    assert plan.complete and plan.fill_evaluations == 2


def test_thousands_of_high_degree_variables_refused_without_fill_scoring():
    # 3000 binary variables with about 40 random neighbours each: the greedy min-fill orders would
    # rescore thousands of high-degree variables before outgrowing the cap (seconds to minutes on UAI
    # instances of this shape); the treewidth lower bound refuses before any fill pair is tested
    rng = np.random.default_rng(7)
    n = 3000
    edges = {tuple(sorted(map(int, rng.choice(n, 2, replace=False)))) for _ in range(20 * n)}
    plan = plan_elimination(np.full(n, 2), sorted(edges), memory_cap=2**30)
    assert plan.heuristic == "minor-min-width" and not plan.complete and plan.order == ()
    assert plan.fill_evaluations == 0
    assert plan.width >= 28  # a cluster of 2**29 entries sends a message of 2**28 * 8 bytes > 2**30
    with pytest.raises(TooWideError, match=rf"every elimination order has induced width at least {plan.width}; "
                                           r"log Z would need more than .* of tables \(largest cluster at least"):
        plan.check_memory(2**30, marginals=False)


def test_elimination_order_minimises_total_work():
    fg = random_factor_graph(4, 12, 3, 18, 3, 0.0)
    best = plan_elimination(fg.cards, fg.scopes)
    for name in ("min-fill", "weighted-min-fill", "min-degree", "natural"):
        other = plan_elimination(fg.cards, fg.scopes, heuristics=(name,))
        assert best.total_table_entries <= other.total_table_entries
    with pytest.raises(ValueError, match="heuristics must be among"):
        plan_elimination(fg.cards, fg.scopes, heuristics=("magic",))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), chunk=st.sampled_from([1, 2, 5, 16]))
def test_clusters_summed_in_slabs_equal_enumeration(seed, chunk):
    from samplers.models import elimination

    fg = random_factor_graph(seed, 7, 3, 10, 4, 0.1)
    exact = fg.log_partition_enumerate()
    saved = elimination.CHUNK_ENTRIES
    elimination.CHUNK_ENTRIES = chunk   # every cluster above `chunk` entries is summed slab by slab
    try:
        got = fg.log_partition_exact()
        marg = fg.marginals_exact() if exact > -np.inf else None
    finally:
        elimination.CHUNK_ENTRIES = saved
    assert got == pytest.approx(exact, abs=1e-10) if exact > -np.inf else got == -np.inf
    if marg is not None:
        np.testing.assert_allclose(marg, fg.marginals_enumerate(), atol=1e-10)


def test_order_abandoned_at_the_default_cap_is_planned_again_for_a_larger_cap(monkeypatch):
    from samplers.models import elimination, factor_graph

    expected = FactorGraph.from_pairwise(ising_grid(8, 8, coupling=0.3)).log_partition_exact()
    monkeypatch.setattr(elimination, "default_memory_cap", lambda: 1024)
    monkeypatch.setattr(factor_graph, "default_memory_cap", lambda: 1024)
    fg = FactorGraph.from_pairwise(ising_grid(8, 8, coupling=0.3))
    assert not fg.elimination_plan.complete        # planned for a 1 KiB default: abandoned
    with pytest.raises(TooWideError, match="width at least"):
        fg.log_partition_exact()
    assert fg.log_partition_exact(memory_cap=2**26) == pytest.approx(expected, abs=1e-10)
