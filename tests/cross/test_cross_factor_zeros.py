"""The Doeblin factor-graph chain declines factor graphs with hard zeros (its unary restarts land on forbidden
configurations), and still runs on those without."""

from __future__ import annotations

import numpy as np

from doeblin.estimators import DoeblinGibbsEstimator, doeblin_factor_draws
from samplers.models import FactorGraph
from samplers.models.constructors import random_factor_graph
from samplers.models.factor_gibbs import higher_order_log_weights
from samplers.problems import FactorGraphProblem

EQUAL = np.array([[0.0, -np.inf], [-np.inf, 0.0]])


def test_doeblin_declines_hard_zeros_whose_draws_it_cannot_keep_feasible():
    chain = FactorGraph([2] * 6, [(i, i + 1) for i in range(5)] + [(0,)], [EQUAL] * 5 + [np.array([0.3, -0.2])])
    draws, _ = doeblin_factor_draws(chain, 400, 0.2, seed=0)
    forbidden = np.mean(higher_order_log_weights(chain, draws) == -np.inf)
    assert forbidden > 0.2  # why it declines: pi_eps weighs configurations of probability zero
    est = DoeblinGibbsEstimator(0.2)
    assert not est.supports(FactorGraphProblem("chain", chain))
    soft = random_factor_graph(5, n_factors=5, max_arity=3, zero_rate=0.0, seed=1)
    assert est.supports(FactorGraphProblem("soft", soft))
