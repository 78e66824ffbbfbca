"""AIS and SMC on factor graphs with hard zeros in factors of arity >= 2: the constraint-annealing path
(:func:`samplers.ais.ais_factor_graph`) against enumeration, a model the unary-only start almost never
satisfies, and a model with ``Z = 0``."""

from __future__ import annotations

import numpy as np
import pytest

from samplers.ais import ais_factor_graph, run_ais, smc_factor_graph
from samplers.models import FactorGraph
from samplers.models.constructors import random_factor_graph
from samplers.models.factor_gibbs import (
    gibbs_move,
    has_hard_zeros,
    higher_order_log_weights,
    softened_zero,
    unary_log_partition,
    unary_sample,
)

EQUAL = np.array([[0.0, -np.inf], [-np.inf, 0.0]])


def zero_graph(seed: int) -> FactorGraph:
    """A random graph with zeros in its factors of arity 2-4 (30% of entries), conditioned on evidence."""
    fg = random_factor_graph(7, n_factors=8, max_arity=4, zero_rate=0.3, scale=0.8, seed=seed)
    return fg.condition({1: 0}).graph


def equality_chain(n: int = 12, seed: int = 0) -> FactorGraph:
    """``x_0 = x_1 = ... = x_{n-1}`` (hard equality factors) with random unary fields and one soft pair:
    a unary-only draw satisfies every constraint with probability about ``2^-(n-1)``."""
    rng = np.random.default_rng(seed)
    scopes = [(i, i + 1) for i in range(n - 1)] + [(i,) for i in range(n)] + [(0, n - 1)]
    tables = [EQUAL] * (n - 1) + [rng.normal(scale=0.5, size=2) for _ in range(n)] + [rng.normal(size=(2, 2))]
    return FactorGraph([2] * n, scopes, tables)


def infeasible_fraction(fg: FactorGraph, n: int = 2000) -> float:
    x = unary_sample(fg, n, np.random.default_rng(0))
    return float(np.mean(higher_order_log_weights(fg, x) == -np.inf))


@pytest.mark.parametrize("seed", [0, 1, 4, 6])
def test_ais_with_hard_zeros_within_standard_errors(seed):
    """AIS log Z within 4 reported standard errors (+ the Jensen bias stderr^2) of enumeration, on graphs where
    most unary-only draws meet a zero."""
    g = zero_graph(seed)
    assert has_hard_zeros(g) and infeasible_fraction(g) > 0.4
    res, x = ais_factor_graph(g, n_temperatures=60, n_chains=400, seed=seed, schedule="sigmoid")
    assert abs(res.log_partition - g.log_partition_enumerate()) <= 4 * res.stderr + res.stderr ** 2
    assert res.stderr < 0.2
    alive = np.isfinite(res.log_weights)
    assert np.all(higher_order_log_weights(g, x[alive]) > -np.inf)  # weighted chains end feasible


@pytest.mark.parametrize("seed", [0, 1, 4, 6])
def test_smc_with_hard_zeros_within_standard_errors(seed):
    """SMC log Z within 4 group standard errors (+ stderr^2) of enumeration on the same graphs."""
    g = zero_graph(seed)
    res = smc_factor_graph(g, n_temperatures=40, n_particles=100, seed=seed, n_groups=8, schedule="sigmoid")
    assert abs(res.log_partition - g.log_partition_enumerate()) <= 4 * res.stderr + res.stderr ** 2
    assert res.stderr < 0.2


def test_equality_chain_needs_the_annealed_constraints():
    """The old path (zeros kept at every temperature) loses all 200 chains on a chain of 12 equalities (each
    unary draw is feasible with probability ~ 2^-11); constraint annealing estimates log Z within its
    standard errors, AIS and SMC."""
    g = equality_chain()
    exact = g.log_partition_enumerate()
    assert infeasible_fraction(g) > 0.99

    def plain_move(x, beta, gen):
        return gibbs_move(g, x, beta, gen)

    with pytest.raises(ValueError, match="weight zero"):  # negative control: the unary-only start fails
        run_ais(lambda n, gen: unary_sample(g, n, gen), lambda x: higher_order_log_weights(g, x), plain_move,
                n_temperatures=50, n_chains=200, seed=0, schedule="sigmoid",
                log_partition_start=unary_log_partition(g), zero_weights=True)
    res, _ = ais_factor_graph(g, n_temperatures=50, n_chains=200, seed=0, schedule="sigmoid")
    assert abs(res.log_partition - exact) <= 4 * res.stderr + res.stderr ** 2
    assert np.isfinite(res.log_weights).mean() > 0.5
    smc = smc_factor_graph(g, n_temperatures=50, n_particles=50, seed=0, n_groups=4, schedule="sigmoid")
    assert abs(smc.log_partition - exact) <= 4 * smc.stderr + smc.stderr ** 2


def test_zero_partition_function_is_a_clear_error():
    """x0 = x1 and x0 != x1 together: Z = 0; AIS and SMC say so instead of returning -inf or NaN."""
    fg = FactorGraph([2, 2], [(0, 1), (0, 1)], [EQUAL, EQUAL[::-1]])
    assert fg.log_partition_enumerate() == -np.inf
    with pytest.raises(ValueError, match="Z = 0"):
        ais_factor_graph(fg, n_temperatures=20, n_chains=50, seed=0)
    with pytest.raises(ValueError, match="Z = 0"):
        smc_factor_graph(fg, n_temperatures=20, n_particles=20, seed=0)


def test_models_without_hard_zeros_keep_the_plain_path():
    """No zero in a factor of arity >= 2 (a unary zero is allowed): the weights are those of the plain
    geometric path, draw for draw."""
    fg = random_factor_graph(6, n_factors=6, max_arity=3, zero_rate=0.0, seed=4)
    tables = [t.copy() for t in fg.log_tables]
    unary = next(i for i, sc in enumerate(fg.scopes) if len(sc) == 1)
    tables[unary].flat[0] = -np.inf
    g = FactorGraph(fg.cards, fg.scopes, tables)
    assert not has_hard_zeros(g)
    res, _ = ais_factor_graph(g, n_temperatures=20, n_chains=30, seed=3)
    plain = run_ais(lambda n, gen: unary_sample(g, n, gen), lambda x: higher_order_log_weights(g, x),
                    lambda x, beta, gen: gibbs_move(g, x, beta, gen), n_temperatures=20, n_chains=30, seed=3,
                    log_partition_start=unary_log_partition(g), zero_weights=True)
    np.testing.assert_array_equal(res.log_weights, plain.log_weights)


def test_softened_sweeps_keep_unary_zeros():
    """The softened model softens zeros of factors of arity >= 2 only: a state a unary factor forbids is
    never visited, however low the penalty."""
    g = FactorGraph([3, 2], [(0,), (0, 1)], [np.array([-np.inf, 0.0, 0.0]), np.array([[0.0, -np.inf]] * 3)])
    x = unary_sample(g, 200, np.random.default_rng(0))
    gen = np.random.default_rng(1)
    seen = np.zeros((2, 3), dtype=bool)
    for _ in range(20):
        x = gibbs_move(g, x, 1.0, gen, zero_as=softened_zero(g, 0.1))
        seen[0, np.unique(x[:, 0])] = True
        seen[1, np.unique(x[:, 1])] = True
    assert not seen[0, 0] and seen[1, 1]  # the unary zero held; the pairwise zero was softened


def test_zero_penalty_is_validated():
    with pytest.raises(ValueError, match="zero_penalty"):
        ais_factor_graph(equality_chain(4), n_temperatures=5, n_chains=5, seed=0, zero_penalty=0.0)
