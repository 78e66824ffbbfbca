"""Algorithm 1 against the exact gradient of log pi~_theta(y) (finite differences of the closed form)."""

import numpy as np
import pytest

from doeblin.implicit import SequenceDoeblinChain, SequenceModel
from doeblin.learning import exact_gradient, exact_log_likelihood, fit_restart_law, sample_gradient, train_doeblin
from samplers.testing import assert_close_in_se

D, K, L = 2, 2, 3


@pytest.fixture(scope="module")
def setup():
    rng = np.random.default_rng(0)
    model = SequenceModel(rng.normal(size=(D, K)), rng.normal(size=(D, K)), rng.normal(size=(K, K)))
    return model, rng.normal(size=(L, D)), np.array([1, 0, 1])


@pytest.mark.slow
def test_algorithm1_matches_exact_gradient(setup):
    model, x, y = setup
    exact = exact_gradient(model, x, y, 0.3)
    est = sample_gradient(model, x, y, 0.3, 20000, seed=1)
    # the ratio estimator's bias is O(1/k) (k = 20000), far below its se; 3-se band per coordinate
    for j in range(model.n_params):
        assert_close_in_se(est.grad[j], exact[j], est.se[j], k=3.5, what=f"dlog pi~/dtheta[{j}]")


def test_algorithm1_detects_wrong_eps(setup):
    """Negative control: the gradient of log pi~ for a different eps is rejected."""
    model, x, y = setup
    wrong = exact_gradient(model, x, y, 0.9)
    est = sample_gradient(model, x, y, 0.3, 20000, seed=1)
    z = np.abs(est.grad - wrong) / est.se
    assert z.max() > 5


def test_adagrad_training_raises_exact_likelihood():
    rng = np.random.default_rng(3)
    truth = SequenceModel(rng.normal(size=(D, K)), rng.normal(size=(D, K)), 2.0 * np.array([[1.0, -1.0], [-1.0, 1.0]]))
    data = []
    for i in range(6):
        x = rng.normal(size=(L, D))
        data.append((x, SequenceDoeblinChain(truth, x, 0.2).sample_stationary(1, seed=i)[0]))
    start = SequenceModel(np.zeros((D, K)), np.zeros((D, K)), np.zeros((K, K)))
    u_only = fit_restart_law(start, data).invariant_init()
    base = exact_log_likelihood(u_only, data, 0.2)
    result = train_doeblin(start, data, 0.2, n_epochs=15, chains_per_example=30, lr=0.3, seed=4,
                           track_exact=True)
    # Assumption 4.3: training starts where u alone is (pi~ = u)
    assert result.history[0]["log_likelihood"] == pytest.approx(base, abs=1e-9)
    assert result.history[-1]["log_likelihood"] > base + 0.05
