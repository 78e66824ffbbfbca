"""TransMS leaves q(j, x^j) ∝ pi0_j exp(-zeta_j + lambda . f) invariant (Table 1, Eq. 19-22)."""

from __future__ import annotations

import numpy as np
import pytest

from samplers.testing import assert_frequencies_match, chi_square_gof
from trf import _word_kernels as word_kernels
from trf import transms_core
from trf.data import encode_words
from trf.transms import ChainState, init_chains, transms, word_model

from .conftest import all_words

PI0 = np.array([0.15, 0.25, 0.35, 0.25])
ZETA = np.array([0.0, 0.8, 1.9, 2.4])


def exact_q(features, lam, m, zeta=ZETA):
    words = all_words(features.V, m)
    data = encode_words(["".join("abc"[c] for c in w) for w in words], features.alphabet, m)
    logq = np.log(PI0[data.lengths - 1]) - zeta[data.lengths - 1] + features.scores(lam, data)
    q = np.exp(logq - logq.max())
    return words, q / q.sum()


def chain_counts(state: ChainState, words) -> np.ndarray:
    index = {w: i for i, w in enumerate(words)}
    counts = np.zeros(len(words))
    for tok, L in zip(state.tokens, state.lengths):
        counts[index[tuple(int(c) for c in tok[:L])]] += 1
    return counts


def test_one_step_from_q_stays_q(tiny_model):
    """Chains started from exact draws of q: after one TransMS step they are still exact draws of q.

    The 30000 chains are independent, so Pearson's chi-square applies with false-alarm rate alpha.
    """
    features, lam, m = tiny_model
    words, q = exact_q(features, lam, m)
    rng = np.random.default_rng(11)
    n = 30000
    start = rng.choice(len(words), size=n, p=q)
    tokens = np.zeros((n, m + 1), dtype=np.int32)
    lengths = np.array([len(words[i]) for i in start])
    for c, i in enumerate(start):
        tokens[c, :lengths[c]] = words[i]
    state, _, info = transms(features, lam, np.log(PI0) - ZETA, ChainState(tokens, lengths), n, seed=12)
    assert info.up_proposed + info.down_proposed > n / 3
    assert 0.05 < info.jump_acceptance < 0.95
    assert_frequencies_match(chain_counts(state, words), q, alpha=1e-3, what="TransMS one step")


def test_long_run_frequencies_match_q(tiny_model):
    """20000 independent chains from length-1 starts, 25 steps each: final states follow q."""
    features, lam, m = tiny_model
    words, q = exact_q(features, lam, m)
    n, steps = 20000, 25
    state = init_chains(n, m, features.V, seed=3)
    schedule = np.tile(np.arange(n), steps)
    state, samples, _ = transms(features, lam, np.log(PI0) - ZETA, state, n * steps, seed=4, schedule=schedule)
    assert len(samples) == n * steps
    assert_frequencies_match(chain_counts(state, words), q, alpha=1e-3, what="TransMS long run")


def test_negative_control_wrong_target_is_detected(tiny_model):
    """The same check rejects chains that target zeta off by 0.3 in one length (p-value ~ 0)."""
    features, lam, m = tiny_model
    words, q = exact_q(features, lam, m)
    n, steps = 20000, 25
    wrong = ZETA + np.array([0.0, 0.0, 0.3, 0.0])
    state = init_chains(n, m, features.V, seed=3)
    state, _, _ = transms(features, lam, np.log(PI0) - wrong, state, n * steps, seed=4,
                          schedule=np.tile(np.arange(n), steps))
    _, _, pval = chi_square_gof(chain_counts(state, words), q)
    assert pval < 1e-6


def test_gibbs_only_keeps_lengths(tiny_model):
    features, lam, m = tiny_model
    state = init_chains(5, m, features.V, seed=1)
    state = ChainState(state.tokens, np.array([1, 2, 3, 4, 2]))
    new, samples, info = transms(features, lam, np.zeros(m), state, 50, seed=2, jump=False)
    np.testing.assert_array_equal(new.lengths, state.lengths)
    assert info.up_proposed == info.down_proposed == 0
    np.testing.assert_array_equal(samples.lengths, np.tile(state.lengths, 10))


def test_local_score_changes_match_full_rescoring(tiny_model):
    """terms_at / append_deltas (used by the moves) equal differences of full scores."""
    features, lam, m = tiny_model
    w = features.dense_weights(lam)
    V = features.V
    rng = np.random.default_rng(0)
    scratch = np.empty(64, dtype=np.int64)
    deltas = np.empty(V)
    for _ in range(200):
        L = int(rng.integers(1, m + 1))
        x = np.zeros(m + 1, dtype=np.int32)
        x[:L] = rng.integers(0, V, size=L)
        i = int(rng.integers(0, L))
        y = x.copy()
        y[i] = (x[i] + 1) % V
        full = word_kernels.score_word(w, V, y, 0, L, scratch) - word_kernels.score_word(w, V, x, 0, L, scratch)
        local = word_kernels.terms_at(w, V, y, L, i) - word_kernels.terms_at(w, V, x, L, i)
        assert local == pytest.approx(full, abs=1e-12)
        if L < m:
            base = word_kernels.score_word(w, V, x, 0, L, scratch)
            word_kernels.append_deltas(w, V, x.copy(), L, deltas)
            for u in range(V):
                x[L] = u
                assert deltas[u] == pytest.approx(word_kernels.score_word(w, V, x, 0, L + 1, scratch) - base, abs=1e-12)


def test_transms_input_errors(tiny_model):
    features, lam, m = tiny_model
    state = init_chains(3, m, features.V)
    with pytest.raises(ValueError, match="lam"):
        transms(features, lam[:-1], np.zeros(m), state, 3)
    with pytest.raises(ValueError, match="n_samples"):
        transms(features, lam, np.zeros(m), state, 0)
    with pytest.raises(ValueError, match="m ="):
        transms(features, lam, np.zeros(m + 1), state, 3)
    with pytest.raises(ValueError, match="n_chains"):
        init_chains(0, m, features.V)


@pytest.mark.slow
def test_parallel_chains_match_serial_build_and_q(tiny_model):
    """parallel path (threads) == serial build (per-chain seeds), and its final states follow q (chi-square)."""
    features, lam, m = tiny_model
    words, q = exact_q(features, lam, m)
    n, steps = 20000, 25
    lw = np.log(PI0) - ZETA
    start = init_chains(n, m, features.V, seed=5)
    state, samples, info = transms(features, lam, lw, start, n * steps, seed=6, parallel=True)
    model = word_model(features, lam, m)
    serial, visits, serial_info = transms_core.step(model, start, steps, lw, seed=6, parallel=False)
    lengths, tokens = serial.lengths, serial.tokens
    out_len = visits.lengths.reshape(n, steps).T.ravel()            # chain-major -> step-major
    np.testing.assert_array_equal(lengths, state.lengths)
    np.testing.assert_array_equal(tokens, state.tokens)
    np.testing.assert_array_equal(out_len, samples.lengths)
    assert info == serial_info
    assert_frequencies_match(chain_counts(state, words), q, alpha=1e-3, what="parallel TransMS")
    with pytest.raises(ValueError, match="schedule"):
        transms(features, lam, lw, start, 4, parallel=True, schedule=np.zeros(4, dtype=int))


def test_jump_law_of_the_shared_skeleton():
    """Gamma(k, .) of Eq. (19): rows sum to 1 on 1..m, and draw_jump follows it (chi-square)."""
    from trf import _transms_skeleton as skeleton

    for m in (1, 2, 5):
        for k in range(1, m + 1):
            row = np.array([skeleton.jump_probability(k, j, m) for j in range(1, m + 1)])
            assert row.sum() == pytest.approx(1.0)
            assert np.count_nonzero(row) == min(m, 3 if 1 < k < m else 2)
    m, n = 5, 30000
    for k in (1, 3, 5):
        draws = np.array([skeleton.draw_jump(k, m) for _ in range(n)])
        expected = np.array([skeleton.jump_probability(k, j, m) for j in range(1, m + 1)])
        counts = np.bincount(draws - 1, minlength=m)
        support = expected > 0
        assert counts[~support].sum() == 0
        assert_frequencies_match(counts[support], expected[support], alpha=1e-3, what=f"jump law from {k}")
    assert skeleton.log_jump_ratio(1, 2, 5) == pytest.approx(np.log(1 / 3) - np.log(1 / 2))


def test_core_rejects_bad_state_and_registration(tiny_model):
    from trf import _transms_skeleton as skeleton

    features, lam, m = tiny_model
    model = word_model(features, lam, m)
    good = init_chains(3, m, features.V, seed=0)
    with pytest.raises(ValueError, match="state.lengths"):
        transms_core.step(model, ChainState(good.tokens, np.array([0, 1, 1])), 1, np.zeros(m))
    with pytest.raises(ValueError, match="state.tokens"):
        transms_core.step(model, ChainState(good.tokens[:, :2], good.lengths), 1, np.zeros(m))
    with pytest.raises(TypeError, match="ChainState"):
        transms_core.step(model, good.tokens, 1, np.zeros(m))
    with pytest.raises(ValueError, match="log_len_weight"):
        transms_core.step(model, good, 1, np.array([0.0, np.nan, 0.0, 0.0]))
    with pytest.raises(ValueError, match="schedule"):
        transms_core.step_schedule(model, good, [0, 3], np.zeros(m))
    with pytest.raises(ValueError, match="operation"):
        skeleton.implements(len, type(model))
    with pytest.raises(TypeError, match="NamedTuple"):
        skeleton.implements(skeleton.load_chain, dict)
    with pytest.raises(NotImplementedError, match="Numba-only"):
        skeleton.load_chain(model, None, None, 1)


def test_legacy_state_layout_is_accepted(tiny_model):
    """States of the earlier (n_chains, m + 1) int32 layout (old checkpoints, callers) give the same draws."""
    features, lam, m = tiny_model
    state = init_chains(20, m, features.V, seed=1, length_probs=PI0)
    legacy = ChainState(np.hstack([state.tokens, np.zeros((20, 1), dtype=np.int64)]).astype(np.int32), state.lengths)
    a = transms(features, lam, np.log(PI0) - ZETA, state, 60, seed=2)
    b = transms(features, lam, np.log(PI0) - ZETA, legacy, 60, seed=2)
    np.testing.assert_array_equal(a[0].tokens, b[0].tokens)
    np.testing.assert_array_equal(a[1].tokens, b[1].tokens)
    assert a[0].tokens.shape == (20, m) and a[0].tokens.dtype == np.int64
