"""Experiment 1 (keyboard gestures): generator, exact u sampler, A's invariance, training, inputs."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from doeblin.learning import AdaGrad
from experiments.doeblin_gestures._kernels import base_tables, conditional_logits, sample_weight, u_forward
from experiments.doeblin_gestures.model import (
    GestureModel,
    Lexicon,
    doeblin_gradient,
    encode,
    evaluate_gestures,
    fit_u,
    generate_gestures,
    gesture_path,
    keys_under,
    make_lexicon,
    train_gestures,
)
from samplers._kernels import logsumexp_1d
from samplers.testing import assert_close_in_se, assert_frequencies_match

K_TINY = 2


@pytest.fixture(scope="module")
def lexicon():
    pytest.importorskip("english_words")     # optional extra `mcsa[data]`
    return make_lexicon(200, seed=0)


@pytest.fixture(scope="module")
def tiny():
    """Two letters (a, b) that are keyboard neighbours, a 4-word dictionary, random weights for u
    and A (rich features on)."""
    lex = Lexicon.from_words(["ab", "ba", "abb", "a"], [0.4, 0.3, 0.2, 0.1], n_letters=K_TINY)
    rng = np.random.default_rng(7)
    rel = np.array([[0, 1], [1, 0]])
    m = GestureModel(lex, n_letters=K_TINY, relation=rel)
    m = m.with_weights(rng.normal(size=m.n_base), rng.normal(size=m.n_full))
    x = np.array([0, 1, 1])
    states = np.array(list(itertools.product(range(2 * K_TINY + 1), repeat=3)))
    return m, x, states


def _law(model, x, states, rich):
    lp = np.array([model.log_potential(x, z, rich=rich) for z in states])
    p = np.exp(lp - lp.max())
    return p / p.sum(), lp


def _counts(draws, n_states):
    idx = (draws * (n_states ** np.arange(draws.shape[1] - 1, -1, -1))).sum(axis=1)
    return np.bincount(idx, minlength=n_states ** draws.shape[1])


def test_generator_deterministic_and_shapes(lexicon):
    a = generate_gestures(lexicon, 5, seed=3)
    b = generate_gestures(lexicon, 5, seed=3)
    assert [w for _, w in a] == [w for _, w in b]
    assert all(np.array_equal(xa, xb) for (xa, _), (xb, _) in zip(a, b))
    for x, w in a:
        assert x.dtype == np.int64 and x.ndim == 1 and len(x) >= len(w) and x.min() >= 0 and x.max() < 26
    assert len(lexicon.words) == 200 and np.isclose(lexicon.probs.sum(), 1) and np.all(np.diff(lexicon.probs) < 0)
    pts = gesture_path("banana", seed=1)
    assert pts.shape[1] == 2 and pts.shape[0] >= 6


def test_noiseless_gesture_contains_word_keys():
    """With sigma = 0 the keys under the path contain the word's letters as a subsequence, in order."""
    x = keys_under(gesture_path("qwerty", sigma=0.0, seed=2))
    it = iter(x.tolist())
    assert all(c in it for c in encode("qwerty").tolist())


def test_u_normaliser_matches_enumeration(tiny):
    m, x, states = tiny
    _, lp = _law(m, x, states, rich=False)
    alpha = u_forward(x, m.w_u, K_TINY, *base_tables(x, m.w_u, K_TINY, m.relation))
    assert np.isclose(logsumexp_1d(alpha[-1]), logsumexp_1d(lp))


def test_u_exact_draws_match_enumeration(tiny):
    """Chi-square of 20000 FFBS draws against the enumerated law of u (false alarm 1e-3)."""
    m, x, states = tiny
    p, _ = _law(m, x, states, rich=False)
    counts = _counts(m.u_draws(x, 20000, seed=11), 2 * K_TINY + 1)
    assert_frequencies_match(counts, p, what="u FFBS")
    assert counts[p == 0].sum() == 0
    q = np.where(p > 0, 1.0, 0.0)
    with pytest.raises(AssertionError):     # negative control: uniform over valid alignments
        assert_frequencies_match(counts, q / q.sum(), what="u vs uniform")


def test_gibbs_sweep_leaves_full_model_invariant(tiny):
    """z ~ pi_A (enumerated, rich features on), one sweep of A, chi-square against pi_A."""
    m, x, states = tiny
    p, _ = _law(m, x, states, rich=True)
    rng = np.random.default_rng(5)
    start = states[rng.choice(len(states), size=6000, p=p)]
    after = np.array([m.gibbs_sweep(x, z, seed=rng) for z in start])
    assert_frequencies_match(_counts(after, 2 * K_TINY + 1), p, what="Gibbs sweep")
    # negative control: a sweep whose rich weights are wrong does not keep pi_A
    w_bad = m.w_A.copy()
    w_bad[m.n_base:] = 0.0
    bad = m.with_weights(m.w_u, w_bad)
    after_bad = np.array([bad.gibbs_sweep(x, z, seed=rng) for z in start])
    with pytest.raises(AssertionError):
        assert_frequencies_match(_counts(after_bad, 2 * K_TINY + 1), p, what="wrong sweep")


def test_invariant_start_leaves_u_invariant_assumption_43(tiny):
    """A's weights = (u's, rich 0): z ~ u (FFBS), one sweep of A, chi-square against u's law."""
    m, x, states = tiny
    w_A = np.zeros(m.n_full)
    w_A[:m.n_base] = m.w_u
    start = m.with_weights(m.w_u, w_A)
    p, _ = _law(m, x, states, rich=False)
    draws = m.u_draws(x, 6000, seed=12)
    rng = np.random.default_rng(13)
    after = np.array([start.gibbs_sweep(x, z, seed=rng) for z in draws])
    assert_frequencies_match(_counts(after, 2 * K_TINY + 1), p, what="A at the Assumption 4.3 start")


def test_gibbs_conditionals_match_full_score():
    """Incremental site conditionals (prefix/suffix trie state) equal differences of the full log
    potential, at every site of random valid alignments (3 neighbouring letters, l = 7)."""
    K = 3
    lex = Lexicon.from_words(["ab", "abc", "ca", "cab", "bbb", "a"], [0.3, 0.2, 0.2, 0.1, 0.1, 0.1], n_letters=K)
    rng = np.random.default_rng(3)
    rel = np.array([[0, 1, 2], [1, 0, 1], [2, 1, 0]])
    m = GestureModel(lex, n_letters=K, relation=rel)
    m = m.with_weights(rng.normal(size=m.n_base), rng.normal(size=m.n_full))
    x = rng.integers(0, K, size=7)
    checked = 0
    for z in m.u_draws(x, 40, seed=4):
        for i in range(len(z)):
            logits = conditional_logits(x, z, i, m.w_A, m.tables)
            full = np.empty(2 * K + 1)
            for v in range(2 * K + 1):
                zv = z.copy()
                zv[i] = v
                full[v] = m.log_potential(x, zv)
            ok = np.isfinite(full)
            assert np.array_equal(ok, np.isfinite(logits))
            d = logits[ok] - full[ok]
            np.testing.assert_allclose(d, d[0], atol=1e-9)
            checked += 1
    assert checked == 280


def _sweep_matrix(m, x, states):
    """Enumerated transition matrix of one Gibbs sweep of A: product of the site conditionals."""
    A = np.zeros((len(states), len(states)))
    index = {tuple(z): j for j, z in enumerate(states)}
    for a, z in enumerate(states):
        for z_new in states:
            prob, cur = 1.0, z.copy()
            for i in range(len(x)):
                lg = conditional_logits(x, cur, i, m.w_A, m.tables)
                prob *= np.exp(lg[z_new[i]] - logsumexp_1d(lg))
                cur[i] = z_new[i]
            A[a, index[tuple(z_new)]] = prob
    return A


def test_doeblin_test_time_chain_ends_at_pi_tilde_times_A(tiny):
    """The paper's test-time Doeblin sampler (a u draw, then Geometric(eps) sweeps, support 1, 2, ...)
    ends in the law eps sum_{T>=1} (1-eps)^{T-1} u A^T = pi~ A (Prop. 3.2): chi-square of the last
    state of 6000 one-chain runs against the enumerated law. Negative control: u's law is rejected."""
    m, x, states = tiny
    eps = 0.25
    p_u, _ = _law(m, x, states, rich=False)
    valid = p_u > 0
    A = _sweep_matrix(m, x, states[valid])
    pi = eps * np.linalg.solve((np.eye(valid.sum()) - (1 - eps) * A).T, p_u[valid])
    law = np.zeros(len(states))
    law[valid] = pi @ A
    rng = np.random.default_rng(14)
    last = np.array([m.run_chains(x, "doeblin", 4, 1, seed=rng)[-1] for _ in range(6000)])
    counts = _counts(last, 2 * K_TINY + 1)
    assert_frequencies_match(counts, law, what="Doeblin test-time sampler")
    with pytest.raises(AssertionError):
        assert_frequencies_match(counts, p_u, what="vs u")


def test_doeblin_sample_counts_follow_chain_lengths(tiny):
    """Modes with a fixed length return n_chains * (T - T // 2) rows; the Doeblin sampler's row count
    is sum_c (T_c - T_c // 2) with mean about T / 2 per chain."""
    m, x, _ = tiny
    for method in ("basic-gibbs", "u-gibbs", "doeblin-restarts"):
        assert m.run_chains(x, method, 7, 5, seed=0).shape == (5 * 4, len(x))
    rows = m.run_chains(x, "doeblin", 20, 4000, seed=1).shape[0] / 4000
    assert 9.5 < rows < 11.0      # E[T - T // 2] = E[ceil(T / 2)] = 10 + P(T odd) / 2 ~ 10.26 here


def _doeblin_objective(m, x, states, target, eps):
    """log sum_z pi~(z) weight(z): pi~ = eps u (I - (1 - eps) A)^-1 (Prop. 3.2), Sec. 5 weights."""
    p_u, _ = _law(m, x, states, rich=False)
    valid = p_u > 0
    sub = states[valid]
    A = _sweep_matrix(m, x, sub)
    pi = eps * np.linalg.solve((np.eye(len(sub)) - (1 - eps) * A).T, p_u[valid])
    y = np.empty(len(x), dtype=np.int64)
    w = np.array([sample_weight(z, target, m.K, y) for z in sub])
    return np.log(pi @ w)


def _directional_estimates(m, x, target, eps, d, *, n, chains, control_variate, seed, part=0):
    """Ratio estimate sum(g . d) / sum(Z) over n calls of ``chains`` chains, and its delta-method se
    (``part`` 0: A's gradient, 1: u's)."""
    rng = np.random.default_rng(seed)
    gd, Z = np.empty(n), np.empty(n)
    for c in range(n):
        out = doeblin_gradient(m, x, target, eps, chains, control_variate=control_variate, seed=rng)
        gd[c], Z[c] = out[part] @ d, out[2]
    ratio = gd.sum() / Z.sum()
    se = np.std(gd - ratio * Z, ddof=1) / np.sqrt(n) / Z.mean()
    return ratio, se


@pytest.mark.parametrize("control_variate", [False, True])
def test_algorithm1_gradient_matches_finite_differences(tiny, control_variate):
    """Algorithm 1 with the Sec. 5 weights (doeblin_gradient), with and without the leave-one-out
    control variate, estimates d/dw_A log sum_z pi~(z) w(z): its projection on a random direction
    matches central finite differences of the enumerated closed form within 3 delta-method standard
    errors (1000 calls of 4 chains; seeded runs: -0.71 +- 0.09 plain, -0.68 +- 0.06 with the control
    variate, vs -0.54; six other seeds: within 1.9 se). Negative control: the derivative of the
    eps = 1 objective (pi~ = u, which A does not move: exactly 0) is rejected."""
    m, x, states = tiny
    target = np.array([0, 1])
    eps = 0.3
    d = np.random.default_rng(8).normal(size=m.n_full)
    h = 1e-5

    def objective(w_A, e):
        return _doeblin_objective(m.with_weights(m.w_u, w_A), x, states, target, e)

    exact = (objective(m.w_A + h * d, eps) - objective(m.w_A - h * d, eps)) / (2 * h)
    ratio, se = _directional_estimates(m, x, target, eps, d, n=1000, chains=4, control_variate=control_variate, seed=9)
    assert_close_in_se(ratio, exact, se, what="Algorithm 1 directional derivative")
    with pytest.raises(AssertionError):
        assert_close_in_se(ratio, 0.0, se, what="vs the eps = 1 derivative")


@pytest.mark.parametrize("control_variate", [False, True])
def test_algorithm1_u_gradient_matches_finite_differences(tiny, control_variate):
    """Algorithm 1's dlog u(z_0) term (doeblin_gradient's g_u) estimates d/dw_u of the same enumerated
    objective within 3 standard errors (1000 calls of 4 chains; seeded runs: 0.46 +- 0.07 plain,
    0.38 +- 0.04 with the control variate, vs 0.43). Negative control: the objective's derivative in
    the opposite direction is rejected."""
    m, x, states = tiny
    target = np.array([0, 1])
    eps = 0.3
    d = np.random.default_rng(12).normal(size=m.n_base)
    h = 1e-5

    def objective(w_u):
        return _doeblin_objective(m.with_weights(w_u, m.w_A), x, states, target, eps)

    exact = (objective(m.w_u + h * d) - objective(m.w_u - h * d)) / (2 * h)
    ratio, se = _directional_estimates(m, x, target, eps, d, n=1000, chains=4, control_variate=control_variate, seed=13,
                                       part=1)
    assert_close_in_se(ratio, exact, se, what="Algorithm 1 u directional derivative")
    with pytest.raises(AssertionError):
        assert_close_in_se(ratio, -exact, se, what="vs the opposite direction")


def test_control_variate_lowers_algorithm1_variance(tiny):
    """The leave-one-out control variate lowers the standard error of the same directional
    derivative (eps = 0.1, 500 calls of 8 chains each) below 0.7 of plain Algorithm 1's (seeded run:
    0.074 vs 0.158; on gestures of a 200-word lexicon the variance of the 16-chain gradient drops
    7-75x)."""
    m, x, states = tiny
    target = np.array([0, 1])
    d = np.random.default_rng(8).normal(size=m.n_full)
    _, se_plain = _directional_estimates(m, x, target, 0.1, d, n=500, chains=8, control_variate=False, seed=11)
    _, se_cv = _directional_estimates(m, x, target, 0.1, d, n=500, chains=8, control_variate=True, seed=11)
    assert se_cv < 0.7 * se_plain, (se_cv, se_plain)


def test_algorithm1_adagrad_raises_exact_objective(tiny):
    """20 AdaGrad steps on Algorithm 1 gradients (16 chains each) raise the enumerated objective
    log sum_z pi~(z) w(z) (seeded run: -1.27 -> -0.53); negative control: descending instead of
    ascending lowers it (-2.14)."""
    m, x, states = tiny
    target = np.array([0, 1])
    eps = 0.3

    def run(sign):
        w = m.w_A.copy()
        opt = AdaGrad(m.n_full, lr=0.1)
        rng = np.random.default_rng(10)
        for _ in range(20):
            g, _, Z, _ = doeblin_gradient(m.with_weights(m.w_u, w), x, target, eps, 16, seed=rng)
            w = opt.step(w, sign * g / Z)
        return _doeblin_objective(m.with_weights(m.w_u, w), x, states, target, eps)

    start = _doeblin_objective(m, x, states, target, eps)
    up, down = run(+1.0), run(-1.0)
    assert up > start + 0.2
    assert down < start


def test_train_u_moves_only_doeblin_u_weights(tiny):
    """With ``train_u`` the Algorithm-1 trainer also updates u's weights (its dlog u term); without it,
    and for the plug-in trainers, u's weights stay exactly as given."""
    m, x, _ = tiny
    data = [(x, "ab")] * 4
    moved = train_gestures(m, data, "doeblin", 5, n_chains=4, n_epochs=1, seed=0, doeblin_estimator="algorithm1-cv",
                           train_u=True)
    assert not np.allclose(moved.w_u, m.w_u)
    for method, estimator in (("doeblin", "algorithm1-cv"), ("u-gibbs", "algorithm1")):
        kept = train_gestures(m, data, method, 5, n_chains=4, n_epochs=1, seed=0, doeblin_estimator=estimator)
        np.testing.assert_array_equal(kept.w_u, m.w_u)
        assert not np.allclose(kept.w_A, m.w_A)


def test_short_training_improves_heldout_accuracy(lexicon):
    """Training A with the plug-in gradient (from u, Assumption 4.3) on the Doeblin chain's samples
    raises held-out word accuracy (seeded run: 0.02 -> 0.37 on 60 test words; the assertion asks
    for +0.10, about 2 binomial SEs)."""
    train = generate_gestures(lexicon, 250, seed=1)
    test = generate_gestures(lexicon, 60, seed=2)
    base = fit_u(GestureModel(lexicon), train, n_epochs=3, seed=3)
    before = evaluate_gestures(base, test, "doeblin", 20, n_chains=4, seed=4)
    trained = train_gestures(base, train, "doeblin", 20, n_chains=4, n_epochs=1, seed=5,
                             doeblin_estimator="contrastive")
    after = evaluate_gestures(trained, test, "doeblin", 20, n_chains=4, seed=4)
    assert after["word_acc"] >= before["word_acc"] + 0.1, (before, after)
    assert after["char_acc"] > before["char_acc"]
    assert after["sample_char_acc"] >= after["sample_word_acc"]


def test_bad_inputs(lexicon, tiny):
    m, x, _ = tiny
    with pytest.raises(ValueError, match="word"):
        encode("Ab1")
    with pytest.raises(ValueError, match="n_words"):
        make_lexicon(0)
    with pytest.raises(ValueError, match="sigma"):
        gesture_path("abc", sigma=-1.0)
    with pytest.raises(ValueError, match="method"):
        m.run_chains(x, "metropolis", 10, 2)
    with pytest.raises(ValueError, match="n_steps"):
        m.run_chains(x, "doeblin", 1, 2)
    with pytest.raises(ValueError, match="x"):
        m.u_draws([0, 5], 3)
    with pytest.raises(ValueError, match="w_u"):
        GestureModel(m.lexicon, np.zeros(3), n_letters=K_TINY)
    with pytest.raises(ValueError, match="words"):
        Lexicon.from_words(["ab", "cz"], [0.5, 0.5], n_letters=2)
    with pytest.raises(ValueError, match="z must be a valid"):
        m.gibbs_sweep(x, [K_TINY, 0, 0])          # continuation at the first position
    with pytest.raises(ValueError, match="data"):
        train_gestures(m, [], "doeblin", 10)
    with pytest.raises(ValueError, match="doeblin_estimator"):
        train_gestures(m, [(x, "ab")], "doeblin", 10, doeblin_estimator="exact")
    with pytest.raises(ValueError, match="eps"):
        doeblin_gradient(m, x, "ab", 0.0, 4)
    with pytest.raises(ValueError, match="lexicon"):
        GestureModel(lexicon, n_letters=K_TINY)


_ALGORITHM1_FIRST = """
import numpy as np
from experiments.doeblin_gestures.model import GestureModel, Lexicon, doeblin_gradient
lex = Lexicon.from_words(["ab", "ba", "abb", "a"], [0.4, 0.3, 0.2, 0.1], n_letters=2)
m = GestureModel(lex, n_letters=2, relation=np.array([[0, 1], [1, 0]]))
g, g_u, Z, n = doeblin_gradient(m, np.array([0, 1, 1]), np.array([0, 1]), 0.3, 4, seed=1)
assert np.isfinite(Z) and Z > 0
"""


def test_algorithm1_compiles_first_in_a_fresh_process(tmp_path):
    """The restart (FFBS from u) runs inside doeblin.core's loop kernels, compiled without reference counting,
    so it must not allocate: when Algorithm 1 was the first thing compiled on a fresh Numba cache, the restart's
    FFBS was typed in that mode and its scratch ``np.empty`` failed to compile (order-dependent: the whole file
    passed, ``-k algorithm1`` alone failed)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    subprocess.run([sys.executable, "-c", _ALGORITHM1_FIRST], check=True, env=env, timeout=600)
