"""AugSA trainer: schedules (Eq. 24-26), convergence against the exact fit, checkpoints, stop rule."""

from __future__ import annotations

import numpy as np
import pytest

from trf import exact
from trf.augsa import AugSA, AugSAConfig, learning_rates, pi0_eq26
from trf.exact import fit_quasi_newton
from trf.model import TRF
from trf.transms import WordBackend


def test_learning_rates_eq24_25():
    g_lam, g_zeta = learning_rates(50, 100, 0.8, 0.6, 200)
    assert g_lam == pytest.approx(1 / (100 + 50 ** 0.8)) and g_zeta == pytest.approx(50 ** -0.6)
    g_lam, g_zeta = learning_rates(500, 100, 0.8, 0.6, 200)
    assert g_lam == pytest.approx(1 / (100 + 300 + 200 ** 0.8)) and g_zeta == pytest.approx(1 / (300 + 200 ** 0.6))


def test_pi0_eq26():
    n_j = np.array([1, 5, 20, 10, 0, 2])
    expected = np.maximum([20, 20, 20, 10, 0, 2], 1e-5 * 38) / 38
    np.testing.assert_allclose(pi0_eq26(n_j, 1e-5), expected / expected.sum())
    assert np.all(pi0_eq26(n_j) > 0)
    with pytest.raises(ValueError, match="n_j"):
        pi0_eq26(np.zeros(3))


@pytest.fixture(scope="module")
def fitted(sampled_corpus):
    data, _ = sampled_corpus
    backend = WordBackend(data, n_chains=50, seed=1)
    lam_qn, info = fit_quasi_newton(backend.features, data)
    return data, backend, lam_qn, info


def run_augsa(data, pi0="eq26", t_max=600, seed=5, **kw):
    backend = WordBackend(data, n_chains=50, seed=1)
    cfg = AugSAConfig(n_samples=100, t_max=t_max, t_c=20, t0=150, pi0=pi0, seed=seed, variance_floor=1e-3, **kw)
    return backend, AugSA(backend, cfg, progress=False).fit()


def test_augsa_reaches_the_exact_fit_and_zeta_star(fitted):
    """Exact NLL of the AugSA fit within 0.2% of quasi-Newton's; mean |zeta - zeta*| below 0.1.

    Tolerances are about 5x and 2x the worst values seen over seeds 0-3 while writing the test (NLL
    gap <= 0.04%, mean |zeta - zeta*| <= 0.05); the negative control below shows the zeta check fails
    on a biased trainer (error ~1).
    """
    data, backend, lam_qn, info = fitted
    _, result = run_augsa(data)
    nll = TRF(backend.features, backend.pi, result.lam).nll(data)
    assert nll <= info["nll"] * 1.002
    assert np.abs(result.zeta - exact.exact_zeta(backend.features, result.lam, data.m)).mean() < 0.1
    assert result.t == 600 and result.n_draws == 60000 and not result.stopped_early
    assert 0.05 < np.mean([h["jump_acceptance"] for h in result.history]) < 0.95


def test_negative_control_without_importance_weights(fitted, monkeypatch):
    """Dropping the pi_j / pi0_j weights of Eq. (16) with pi0 != pi biases the fit: the zeta check fails."""
    data, backend, lam_qn, info = fitted
    monkeypatch.setattr(AugSA, "_resolve_pi0", lambda self, m: np.full(m, 1.0 / m))
    b = WordBackend(data, n_chains=50, seed=1)
    trainer = AugSA(b, AugSAConfig(t_max=600, t_c=20, t0=150, seed=5, variance_floor=1e-3), progress=False)
    trainer.length_weight = np.ones(data.m)  # the deliberate bug
    result = trainer.fit()
    assert np.abs(result.zeta - exact.exact_zeta(b.features, result.lam, data.m)).mean() > 0.3


def test_quasi_newton_is_the_mle(fitted):
    data, backend, lam_qn, info = fitted
    assert info["grad_norm"] < 1e-4
    model = TRF(backend.features, backend.pi, lam_qn)
    assert model.nll(data) == pytest.approx(info["nll"], rel=1e-10)


def test_checkpoint_resume_equals_uninterrupted_run(sampled_corpus, tmp_path):
    data, _ = sampled_corpus
    cfg = dict(n_samples=20, t_max=40, t_c=20, t0=10, seed=9, variance_floor=1e-3, checkpoint_every=10)
    full = AugSA(WordBackend(data, n_chains=5, seed=2), AugSAConfig(**cfg), checkpoint_path=tmp_path / "a.npz",
                 progress=False).fit()

    def stop_at_25(trainer, t, record):
        return t == 25

    first = AugSA(WordBackend(data, n_chains=5, seed=2), AugSAConfig(**cfg), checkpoint_path=tmp_path / "b.npz",
                  callbacks=[stop_at_25], progress=False)
    partial = first.fit()
    assert partial.stopped_early and partial.t == 25
    resumed = AugSA(WordBackend(data, n_chains=5, seed=77), AugSAConfig(**cfg), checkpoint_path=tmp_path / "b.npz",
                    progress=False).fit(resume=tmp_path / "b.npz")  # checkpoint of t = 20
    assert resumed.t == 40
    np.testing.assert_array_equal(resumed.lam, full.lam)
    np.testing.assert_array_equal(resumed.zeta, full.zeta)


@pytest.mark.parametrize("new_t0, ended_at, expected", [(30, None, 30), (15, None, 20), (30, 12, 12)])
def test_a_resumed_first_stage_follows_the_new_config(sampled_corpus, tmp_path, new_t0, ended_at, expected):
    """A checkpoint of a first stage that had not ended (its ``t0`` still the configured one, as a time-staged run's
    ``t0 = t_max`` sentinel) takes the resumed config's ``t0``: a run of 20 iterations with ``t0 = 20`` resumed with
    ``t_max = 40, t0 = 30`` stays in the first stage to 30 (not in the second stage at once), with ``t0 = 15``
    (passed) its first stage ends now (20); a first stage ended earlier by :meth:`AugSA.end_first_stage` keeps its
    end (12)."""
    data, _ = sampled_corpus
    cfg = dict(n_samples=20, t_c=20, seed=9, variance_floor=1e-3, checkpoint_every=20)

    def end_at(trainer, t, record):
        if t == ended_at:
            trainer.end_first_stage()
        return False

    ckpt = tmp_path / "c.npz"
    AugSA(WordBackend(data, n_chains=5, seed=2), AugSAConfig(t_max=20, t0=20, **cfg), checkpoint_path=ckpt,
          callbacks=[end_at], progress=False).fit()
    resumed = AugSA(WordBackend(data, n_chains=5, seed=2), AugSAConfig(t_max=40, t0=new_t0, **cfg),
                    checkpoint_path=ckpt, progress=False)
    resumed.load_checkpoint(ckpt)
    assert resumed.state.t == 20 and resumed.t0 == expected


def test_stop_rule_and_l2(sampled_corpus):
    data, _ = sampled_corpus
    half = len(data) // 2
    backend = WordBackend(data.subset(np.arange(half)), dev=data.subset(np.arange(half, len(data))), n_chains=10)
    cfg = AugSAConfig(n_samples=20, t_max=400, t_c=20, t0=50, stop_window=10, stop_tol=1e9, l2=1e-3,
                      variance_floor=1e-3)
    result = AugSA(backend, cfg, progress=False).fit()
    # second stage only (t > t0 = 50): S_t exists from t = t0 + 2H and is < 1e9
    assert result.stopped_early and result.t == 70
    assert "S_t" in result.history[-1] and "ll_dev" in result.history[-1]
    assert not any("S_t" in r for r in result.history if r["t"] <= 50)  # a first-stage rate cannot trip it


def test_the_stop_rule_takes_its_gaps_at_every_stop_every_th_iteration(sampled_corpus):
    """``stop_every = 5``: the gap D(t) at t = 55, 60, ... only (t0 = 50), S_t the difference of the two windows'
    mean gaps (H / 5 = 2 each), so with the same draws the rule stops at t0 + 2H as the paper's every-iteration
    rule does, and the training itself is the same bit for bit (the rule only reads the parameters)."""
    data, _ = sampled_corpus
    half = len(data) // 2
    results = {}
    for every in (1, 5):
        backend = WordBackend(data.subset(np.arange(half)), dev=data.subset(np.arange(half, len(data))), n_chains=10)
        cfg = AugSAConfig(n_samples=20, t_max=400, t_c=20, t0=50, stop_window=10, stop_every=every, stop_tol=1e9,
                          l2=1e-3, variance_floor=1e-3)
        results[every] = AugSA(backend, cfg, progress=False).fit()
    for every, result in results.items():
        assert result.stopped_early and result.t == 70
        gapped = [r for r in result.history if "ll_dev" in r]
        assert [r["t"] for r in gapped] == list(range(50 + every, 71, every))
        gaps = np.array([r["ll_train"] - r["ll_dev"] for r in gapped])
        n = 10 // every
        assert result.history[-1]["S_t"] == pytest.approx(gaps[-n:].mean() - gaps[-2 * n:-n].mean(), rel=1e-12)
        assert [r["t"] for r in result.history if "S_t" in r] == [70]  # the first S_t stops it (tol 1e9)
        assert ("a gap every 5 iterations" in result.stop_reason) == (every == 5)
    np.testing.assert_array_equal(results[1].lam, results[5].lam)
    with pytest.raises(ValueError, match="stop_window .10. must be a multiple of stop_every .3."):
        AugSA(WordBackend(data, n_chains=2), AugSAConfig(stop_window=10, stop_every=3))
    with pytest.raises(ValueError, match="stop_every"):
        AugSA(WordBackend(data, n_chains=2), AugSAConfig(stop_every=0))


def _toy_backend(step_rule_floor):
    from trf.lm.backend import SentenceBackend
    from trf.lm.corpus import EncodedCorpus
    from trf.lm.features import SentenceFeatures

    rng = np.random.default_rng(0)
    sentences = [rng.integers(0, 6, size=rng.integers(1, 5)) for _ in range(40)]
    corpus = EncodedCorpus.from_sentences(sentences)
    feats = SentenceFeatures.build(corpus, 6, "w+c+ws", word_class=np.array([0, 0, 1, 1, 2, 2]))
    return SentenceBackend(corpus, feats, corpus, n_chains=2, seed=0, parallel=False)


def test_guard_stops_with_a_message_and_the_last_passing_parameters():
    """Tiny variance floor + huge rate: lambda runs away; with guards on, training stops with a message and
    the returned parameters pass every check (finite, |lambda| bounded, log p <= 0 on train)."""
    backend = _toy_backend(1e-15)
    cfg = AugSAConfig(n_samples=20, t_max=200, t_c=1.0, t0=10, variance_floor=1e-15, guard_every=5)
    trainer = AugSA(backend, cfg, progress=False)
    result = trainer.fit()
    assert result.stopped_early and result.guard_message.startswith("training stopped:")
    assert "divergence guard" in result.guard_message and result.t < 200
    assert np.all(np.isfinite(result.lam)) and np.abs(result.lam).max() <= cfg.max_abs_lambda
    assert backend.sentence_log_probs(result.lam, result.zeta, "train").max() <= 1e-9
    assert trainer.invariant_violations() == []
    # the same run without guards ends with parameters that violate the invariants (negative control)
    free = AugSA(_toy_backend(1e-15), AugSAConfig(n_samples=20, t_max=200, t_c=1.0, t0=10, variance_floor=1e-15),
                 progress=False)
    try:
        free.fit()
        assert free.invariant_violations() != []
    except FloatingPointError:
        pass


def test_guard_halves_the_step_and_continues():
    backend = _toy_backend(1e-15)
    cfg = AugSAConfig(n_samples=20, t_max=60, t_c=1.0, t0=10, variance_floor=1e-15, guard_every=5,
                      on_violation="halve", max_halvings=20)
    result = AugSA(backend, cfg, progress=False).fit()
    assert result.step_scale < 1.0
    if result.guard_message is None:
        assert result.t == 60 and not result.stopped_early
    assert backend.sentence_log_probs(result.lam, result.zeta, "train").max() <= 1e-9
    with pytest.raises(ValueError, match="on_violation"):
        AugSAConfig(on_violation="panic").validate()


def test_log_p_guard_applies_in_the_second_stage_beyond_its_margin():
    """log p > 0 means some zeta_j is too low; a lag of a few tenths of a nat is AugSA noise (first stage:
    zeta lags lambda by design).  An excess is flagged only when it more than doubled since the last passing
    check (the first stage's lag is still there when the second begins, rolling lambda back cannot cure it,
    and the zeta refinement after training removes it); without a reference (first check) it passes."""
    backend = _toy_backend(1e-15)
    trainer = AugSA(backend, AugSAConfig(t_max=100, t0=10, guard_every=5), progress=False)
    top = backend.sentence_log_probs(trainer.lam, trainer.zeta, "train").max()  # exact zeta at lambda = 0
    assert top < 0
    exact = trainer.zeta.copy()
    trainer.zeta = exact - (0.3 - top)  # every zeta_j 0.3 - top nats too low: max log p = +0.3
    assert abs(backend.sentence_log_probs(trainer.lam, trainer.zeta, "train").max() - 0.3) < 1e-9
    for t, margin, flagged in [(5, 0.1, False), (11, 0.5, False), (11, 0.1, False), (100, 0.1, False)]:
        trainer.t, trainer.config = t, AugSAConfig(t_max=100, t0=10, guard_every=5, log_p_margin=margin)
        problems = trainer.invariant_violations()
        assert any("log p >" in p for p in problems) == flagged, (t, margin, problems)
    # a steady lag of 5 nats at the start of the second stage passes and becomes the reference ...
    trainer.config = AugSAConfig(t_max=100, t0=10, guard_every=5)
    trainer.zeta, trainer.t = exact - 5.0, 11
    assert not trainer._guard() and trainer._log_p_last == pytest.approx(top + 5.0)
    trainer.t = 16
    assert trainer.invariant_violations() == []          # ... the same lag again: not a divergence
    trainer.zeta = exact - 4.0                           # shrinking: fine
    assert trainer.invariant_violations() == []
    trainer.zeta = exact - 6.0                           # grown by 1 nat: a lag moving, not a divergence
    assert trainer.invariant_violations() == []
    trainer.zeta = exact - 10.0                          # more than doubled: flagged, with the reference
    problems = trainer.invariant_violations()
    assert any("log p > 0.5" in p and "up from" in p for p in problems), problems


def test_clipping_bounds_every_step(sampled_corpus):
    data, _ = sampled_corpus
    backend = WordBackend(data, n_chains=10)
    trainer = AugSA(backend, AugSAConfig(n_samples=20, t_max=1, clip=1e-3, variance_floor=1e-6), progress=False)
    zeta0 = trainer.zeta.copy()
    trainer.fit()
    assert np.abs(trainer.lam).max() <= 1e-3 + 1e-15
    assert np.abs(np.diff(trainer.zeta - zeta0)).max() <= 2e-3 + 1e-12


@pytest.mark.parametrize("field, value, match", [
    ("n_samples", 0, "n_samples"), ("t_max", 0, "t_max"), ("beta_lambda", 1.5, "beta_lambda"),
    ("pi0", "uniform", "pi0"), ("clip", -1.0, "clip"), ("l2", -1.0, "l2"),
])
def test_bad_config(sampled_corpus, field, value, match):
    data, _ = sampled_corpus
    with pytest.raises(ValueError, match=match):
        AugSA(WordBackend(data, n_chains=2), AugSAConfig(**{field: value}))


def test_bad_backend_and_pi0(sampled_corpus):
    data, _ = sampled_corpus
    with pytest.raises(TypeError, match="backend lacks"):
        AugSA(object())
    with pytest.raises(ValueError, match="pi0"):
        AugSA(WordBackend(data, n_chains=2), AugSAConfig(pi0=[0.5, 0.5]))
    with pytest.raises(ValueError, match="checkpoint_path"):
        AugSA(WordBackend(data, n_chains=2), AugSAConfig(checkpoint_every=5))


def test_a_rollback_also_undoes_the_stop_rule_gaps():
    """The stop rule's train-dev gaps (one per iteration after t0) of iterations a guard undoes must go: the
    fortunes run stopped by the rule right after three rollbacks had re-appended the same 50 iterations."""
    trainer = AugSA(_toy_backend(1e-15), AugSAConfig(t_max=400, t0=10, guard_every=5, on_violation="halve"),
                    progress=False)
    trainer.state = trainer.state._replace(good_t=50, t=100, d_gaps=np.zeros(90))  # gaps of iterations 11..100
    assert not trainer._guard(problems=["test"])    # halve: back to iteration 50
    assert trainer.t == 50 and trainer.state.d_gaps.size == 39  # 11..49; the loop then appends iteration 50's
    trainer.state = trainer.state._replace(good_t=5)
    assert not trainer._guard(problems=["test"]) and trainer.state.d_gaps.size == 0
    # a gap at every 5th iteration: 15, 20, ..., 100 held, back to 50 keeps 15..45 (50's is appended by the loop)
    trainer = AugSA(_toy_backend(1e-15), AugSAConfig(t_max=400, t0=10, guard_every=5, on_violation="halve",
                                                     stop_window=10, stop_every=5), progress=False)
    trainer.state = trainer.state._replace(good_t=50, t=100, d_gaps=np.arange(15.0, 101.0, 5.0))
    assert not trainer._guard(problems=["test"])
    np.testing.assert_array_equal(trainer.state.d_gaps, np.arange(15.0, 46.0, 5.0))


@pytest.mark.parametrize("clip", [None, 0.05])
@pytest.mark.parametrize("moment_bound", [False, True])
def test_the_one_pass_lambda_step_is_the_numpy_expression_bit_for_bit(monkeypatch, clip, moment_bound):
    """The lambda step of Eq. (16) / (38) runs as one Numba pass in blocks on threads (issue 27, item 2); it must be
    NumPy's ``lam + clip(gamma / (sigma + mu) * (mean - feature_sum / K - mu lam))`` to the last bit, however many
    blocks, with a weight of infinite variance never moving, and a non-finite new weight an error (a NaN in the
    batch: FloatingPointError, never a silent NaN).  With the moment bound a step is at least ``log(mean / b)``
    wherever the batch mean ``b = feature_sum / K`` exceeds ``mean``, and the count of shortened steps is the
    NumPy one."""
    import samplers._blocks as blocks
    from trf.augsa import _lambda_step

    rng = np.random.default_rng(7)
    d, K, mu, gamma = 10_001, 100, 4e-5, 0.002
    lam, mean = rng.normal(size=d), rng.random(d) * 0.05
    mean[:50] = 0.0                                    # never bounded: no data mean to match
    feature_sum = rng.poisson(3.0, d).astype(float) * rng.random(d)
    sigma = rng.random(d) ** 3
    sigma[5] = np.inf
    feature_sum[100:400] *= 100.0                      # features seen once (variance about their mean) a batch is full of
    mean[100:400] = 3e-5
    sigma[100:400] = mean[100:400] * (1 - mean[100:400])
    d_lam = gamma / (sigma + mu) * (mean - feature_sum / K - mu * lam)
    expected_bounded = 0
    if moment_bound:
        b = feature_sum / K
        with np.errstate(divide="ignore"):
            floor = np.where((b > mean) & (mean > 0), np.log(mean / np.where(b > 0, b, 1.0)), -np.inf)
        shorten = d_lam < floor
        expected_bounded = int(shorten.sum())
        assert expected_bounded > 100                  # the case exercises the bound
        d_lam = np.where(shorten, floor, d_lam)
    expected = lam + (d_lam if clip is None else np.clip(d_lam, -clip, clip))
    bound = np.inf if clip is None else clip
    for min_block, threads in [(1 << 16, 1), (1, 3), (1, 7)]:
        monkeypatch.setattr(blocks, "MIN_BLOCK", min_block)
        monkeypatch.setattr(blocks.numba, "get_num_threads", lambda threads=threads: threads)
        assert blocks.block_edges(d).size - 1 == threads  # the blocks this case asks for
        out, bad, bounded = _lambda_step(lam, mean, feature_sum, K, mu, sigma, gamma, bound, moment_bound=moment_bound)
        assert bad == 0 and out[5] == lam[5] and bounded == expected_bounded
        if moment_bound:   # np.log may be a SIMD log a last bit away from libm's
            np.testing.assert_allclose(out, expected, rtol=1e-15, atol=1e-15)
        else:
            np.testing.assert_array_equal(out, expected)
    feature_sum[d - 3] = np.nan
    _, bad, _ = _lambda_step(lam, mean, feature_sum, K, mu, sigma, gamma, bound, moment_bound=moment_bound)
    assert bad == 1
    with pytest.raises(ValueError, match="feature_sum must have shape"):
        _lambda_step(lam, mean, feature_sum[:-1], K, mu, sigma, gamma, bound)


def test_the_lambda_step_with_a_mu_per_range_is_eq_38_with_that_mu_bit_for_bit(monkeypatch):
    """``l2_ranges`` (another mu of Eq. (38) on ranges of weights) gives NumPy's step with the mu of each weight, to
    the last bit, however the blocks of the pass cut the ranges (a block meeting several ranges runs once per
    range); the mu outside the ranges is ``l2``, and ``feature_l2`` reports every weight's."""
    import samplers._blocks as blocks
    from trf.augsa import _lambda_step, l2_pieces

    rng = np.random.default_rng(11)
    d, K, gamma = 10_001, 100, 0.002
    lam, mean = rng.normal(size=d) * 3, rng.random(d) * 0.05
    feature_sum = rng.poisson(3.0, d).astype(float) * rng.random(d)
    sigma = rng.random(d) ** 3 + 1e-4
    ranges = ((0, 17, 0.5), (2_000, 2_001, 0.0), (4_000, 9_000, 0.03), (9_500, d, 2.0))
    mu = np.full(d, 4e-3)
    for lo, hi, m in ranges:
        mu[lo:hi] = m
    edges, mus = l2_pieces(4e-3, ranges, d)
    np.testing.assert_array_equal(np.repeat(mus, np.diff(edges)), mu)
    expected = lam + gamma / (sigma + mu) * (mean - feature_sum / K - mu * lam)
    uniform = lam + gamma / (sigma + 4e-3) * (mean - feature_sum / K - 4e-3 * lam)
    assert np.abs(expected - uniform).max() > 1e-3            # the ranges change the step
    for min_block, threads in [(1 << 16, 1), (1, 3), (1, 7)]:
        monkeypatch.setattr(blocks, "MIN_BLOCK", min_block)
        monkeypatch.setattr(blocks.numba, "get_num_threads", lambda threads=threads: threads)
        out, bad, _ = _lambda_step(lam, mean, feature_sum, K, (edges, mus), sigma, gamma, np.inf)
        assert bad == 0
        np.testing.assert_array_equal(out, expected)
        out, _, _ = _lambda_step(lam, mean, feature_sum, K, 4e-3, sigma, gamma, np.inf)
        np.testing.assert_array_equal(out, uniform)
    trainer = AugSA(_RepetitionBackend(9), AugSAConfig(l2=1e-3, l2_ranges=((1, 2, 0.5),)), progress=False)
    np.testing.assert_array_equal(trainer.feature_l2(), [1e-3, 0.5])
    assert trainer.feature_l2(0) == 1e-3 and trainer.feature_l2(1) == 0.5
    for outside in (-1, 2):
        with pytest.raises(IndexError, match="outside the 2 weights"):
            trainer.feature_l2(outside)


@pytest.mark.parametrize("ranges, message", [
    (((0, 1),), "l2_ranges must hold"), (((0, 1, -1.0),), "l2_ranges mu must lie in"),
    (((1, 1, 0.1),), "l2_ranges hi must be >= 2"), (((0, 2, 0.1), (1, 3, 0.1)), "sorted and not overlap"),
    (((-1, 1, 0.1),), "l2_ranges lo must be >= 0"), (((0, 3, 0.1),), "reach weight 2; the backend has d = 2")])
def test_bad_l2_ranges_are_refused_by_name(ranges, message):
    with pytest.raises(ValueError, match=message):
        AugSA(_RepetitionBackend(9), AugSAConfig(l2_ranges=ranges), progress=False)


class _RepetitionBackend:
    """One 40-word sub-model whose feature 0 is ``'line' 'line'`` (2 of 27,990 KJV training verses hold it, once
    each) and feature 1 a common word; ``sample`` returns a batch of 100 in which ``heavy`` sentences are the
    repetition ``'line' x 40`` (feature 0 fires 39 times in each)."""

    n_features, m = 2, 1
    pi = np.array([1.0])

    def __init__(self, heavy: int) -> None:
        p = np.array([2 / 27_990, 1.5])
        self.empirical_mean, self.feature_variance = p, np.array([p[0] * (1 - p[0]), 1.0])
        self.heavy = heavy

    def initial_zeta(self):
        return np.zeros(1)

    def sample(self, lam, zeta, pi0, n_samples, length_weight, seed):
        from trf.augsa import SampleBatch
        return SampleBatch(np.ones(n_samples, dtype=int), np.array([39.0 * self.heavy, 1.5 * n_samples]), {},
                           draws=(n_samples,))

    def feature_hits(self, n_samples):
        """Draws ``0..heavy-1`` fire feature 0 39 times and feature 1 once or twice (1.5 on average over the batch,
        as ``sample``'s sum says: the repetitions once, the others alike); the others fire feature 1 only."""
        ones = [1 + (r >= self.heavy and (r - self.heavy) % 2 == 0) for r in range(n_samples)]
        draw = np.concatenate([np.repeat(np.arange(self.heavy), 39), np.repeat(np.arange(n_samples), ones)])
        feature = np.concatenate([np.zeros(39 * self.heavy, dtype=int), np.ones(sum(ones), dtype=int)])
        return draw, feature


@pytest.mark.parametrize("heavy", [9, 100])
def test_the_moment_bound_keeps_a_repetition_spike_inside_the_guard(heavy):
    """The KJV seed-3 spike of issue 27 in one step: the base stage's rate (1 / 501, L2 4e-5) and Eq. (38) with the
    data's variance (about ``p~`` for a feature seen twice) send ``'line' 'line'`` from 1.65 to -61 when 9 batch
    sentences in a hundred are the repetition (the run saw -60.3) and to -697 when all are, past the guard's
    ``max_abs_lambda`` of 50; with ``moment_bound`` the step is ``log(p~ / b)`` with ``b`` the batch mean (39 per
    repetition / 100): -10.8 and -13.2, inside the guard; the common feature, which the batch holds at its data
    mean, takes the same step either way."""
    steps = {}
    for bound in (False, True):
        trainer = AugSA(_RepetitionBackend(heavy), AugSAConfig(n_samples=100, t_c=500.0, beta_lambda=0.0, t0=10**6,
                                                               l2=4e-5, moment_bound=bound), progress=False)
        state = trainer.init(np.array([1.65, 0.3]), np.zeros(1))
        new, info = trainer.update(state, trainer.backend.sample(state.lam, None, None, 100, None, 0))
        steps[bound] = new.lam - state.lam
        assert info.get("lambda_bounded", 0) == (1 if bound else 0)
        assert (abs(new.lam[0]) > trainer.config.max_abs_lambda) != bound   # the guard would fire without the bound
    b, p = 0.39 * heavy, 2 / 27_990
    assert steps[True][0] == pytest.approx(np.log(p / b), rel=1e-12)
    assert steps[False][0] == pytest.approx(1 / 501 / (p * (1 - p) + 4e-5) * (p - b - 4e-5 * 1.65), rel=1e-12)
    assert steps[True][1] == steps[False][1]


def test_no_moment_match_lies_beyond_the_moment_bound():
    """Why the bound is safe: for a count feature with model mean ``b`` above the data's ``p``, the tilt ``delta`` that
    matches them (``E[f e^(delta f)] / E[e^(delta f)] = p``) is never below ``log(p / b) + log P(f = 0)``; the
    bound's ``log(p / b)`` is within that much of the furthest match.  Checked on random count laws (a feature that
    fires once or not, a Poisson count, a repetition that fires 39 times) by bisection on the exact tilted mean."""
    rng = np.random.default_rng(3)
    counts = np.arange(41.0)
    for _ in range(200):
        law = np.zeros(41)
        kind = rng.integers(3)
        if kind == 0:
            law[[0, 1]] = [1 - (q := rng.uniform(1e-4, 0.9)), q]
        elif kind == 1:
            law = np.exp(-(lam := rng.uniform(0.01, 5.0))) * lam ** counts / np.cumprod(np.r_[1.0, counts[1:]])
        else:
            law[[0, 1, 39]] = [1 - (q := rng.uniform(1e-4, 0.5)) - 0.05, 0.05, q]
        law /= law.sum()
        b = float(law @ counts)
        p = b * rng.uniform(1e-6, 0.9)

        def tilted(delta, law=law):
            w = law * np.exp(delta * counts - (delta * counts).max())
            return float(w @ counts / w.sum())

        lo, hi = -200.0, 0.0
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if tilted(mid) < p else (lo, mid)
        assert lo >= np.log(p / b) + np.log(law[0]) - 1e-9


@pytest.mark.parametrize("heavy", [9, 100])
def test_the_sentence_move_bound_keeps_a_repetition_spike_inside_the_guard(heavy):
    """The same spike with ``max_sentence_move = 20``: each repetition draw would move by ``39 |d0| + |d1|`` (over
    2,000 nats), so its two features' steps are scaled by ``20 / M`` and the draw moves by 20 exactly; ``'line'
    'line'`` stays far inside the guard, the common feature is scaled alike, and the step without the bound is
    Eq. (38)'s."""
    steps = {}
    for bound in (None, 20.0):
        trainer = AugSA(_RepetitionBackend(heavy), AugSAConfig(n_samples=100, t_c=500.0, beta_lambda=0.0, t0=10**6,
                                                               l2=4e-5, max_sentence_move=bound), progress=False)
        state = trainer.init(np.array([1.65, 0.3]), np.zeros(1))
        new, info = trainer.update(state, trainer.backend.sample(state.lam, None, None, 100, None, 0))
        steps[bound] = new.lam - state.lam
        if bound is not None:
            assert info["sentences_bounded"] == heavy
            assert info["largest_sentence_move"] == pytest.approx(39 * abs(steps[None][0]) + abs(steps[None][1]))
    raw = steps[None]
    factor = 20.0 / (39 * abs(raw[0]) + abs(raw[1]))
    np.testing.assert_allclose(steps[20.0], raw * factor, rtol=1e-12, atol=1e-15)
    assert 39 * abs(steps[20.0][0]) + abs(steps[20.0][1]) == pytest.approx(20.0)
    assert abs(1.65 + raw[0]) > 50 and abs(1.65 + steps[20.0][0]) < 2


def test_bound_sentence_moves_against_a_per_draw_oracle():
    """Random batches: every draw's move after the bound is at most the bound; a feature's step is scaled by the
    smallest ``bound / M`` of the over-bound draws it fires in (a loop over draws, here), other steps are untouched
    bit for bit; a bound no draw reaches changes nothing."""
    from trf.augsa import bound_sentence_moves

    rng = np.random.default_rng(11)
    for _ in range(50):
        d, n_draws = int(rng.integers(5, 40)), int(rng.integers(1, 12))
        old = rng.normal(size=d)
        new = old + rng.normal(scale=rng.uniform(0.1, 5.0), size=d) * (rng.random(d) < 0.7)
        draw = np.sort(rng.integers(0, n_draws, size=int(rng.integers(1, 80))))
        feature = rng.integers(0, d, size=draw.size)
        bound = float(rng.uniform(0.5, 20.0))
        moves = np.zeros(n_draws)
        for r, f in zip(draw, feature):
            moves[r] += abs(new[f] - old[f])
        factor = np.ones(d)
        for r in range(n_draws):
            if moves[r] > bound:
                for f in set(feature[draw == r]):
                    factor[f] = min(factor[f], bound / moves[r])
        expected = old + factor * (new - old)
        expected[factor == 1.0] = new[factor == 1.0]
        out = new.copy()
        largest, over = bound_sentence_moves(old, out, draw, feature, bound)
        assert largest == moves.max() and over == int((moves > bound).sum())  # the moves summed in the same order
        np.testing.assert_allclose(out, expected, rtol=1e-13, atol=0)
        assert np.array_equal(out[factor == 1.0], new[factor == 1.0])
        after = np.bincount(draw, weights=np.abs(out[feature] - old[feature]), minlength=n_draws)
        assert np.all(after <= bound * (1 + 1e-12))
        same = new.copy()
        assert bound_sentence_moves(old, same, draw, feature, moves.max() * 2 + 1)[1] == 0
        assert np.array_equal(same, new)


def test_the_sentence_move_bound_needs_a_backend_that_gives_feature_hits(sampled_corpus):
    data, _ = sampled_corpus
    with pytest.raises(ValueError, match="max_sentence_move needs a backend with feature_hits"):
        AugSA(WordBackend(data, n_chains=5, seed=1), AugSAConfig(max_sentence_move=10.0), progress=False)
    with pytest.raises(ValueError, match="max_sentence_move"):
        AugSAConfig(max_sentence_move=0.0).validate()
