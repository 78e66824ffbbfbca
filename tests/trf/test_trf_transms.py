"""TransMS leaves q(j, x^j) ∝ pi0_j exp(-zeta_j + lambda . f) invariant (Table 1, Eq. 19-22)."""

from __future__ import annotations

import numpy as np
import pytest

from samplers.testing import assert_frequencies_match, chi_square_gof
from trf import _word_kernels as K
from trf import exact
from trf.data import encode_words
from trf.transms import ChainState, init_chains, transms

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
        full = K.score_word(w, V, y, 0, L, scratch) - K.score_word(w, V, x, 0, L, scratch)
        local = K.terms_at(w, V, y, L, i) - K.terms_at(w, V, x, L, i)
        assert local == pytest.approx(full, abs=1e-12)
        if L < m:
            base = K.score_word(w, V, x, 0, L, scratch)
            K.append_deltas(w, V, x.copy(), L, deltas)
            for u in range(V):
                x[L] = u
                assert deltas[u] == pytest.approx(K.score_word(w, V, x, 0, L + 1, scratch) - base, abs=1e-12)


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
    """prange build == serial build (per-chain seeds), and its final states follow q (chi-square)."""
    features, lam, m = tiny_model
    words, q = exact_q(features, lam, m)
    n, steps = 20000, 25
    lw = np.log(PI0) - ZETA
    start = init_chains(n, m, features.V, seed=5)
    state, samples, info = transms(features, lam, lw, start, n * steps, seed=6, parallel=True)
    seeds = __import__("samplers.rng", fromlist=["kernel_seeds"]).kernel_seeds(6, n)
    tokens, lengths = start.tokens.copy(), start.lengths.copy()
    out_x = np.zeros((n * steps, m + 1), dtype=np.int32)
    out_len = np.zeros(n * steps, dtype=np.int64)
    stats = np.zeros((n, 4), dtype=np.int64)
    K.transms_chains_serial(features.dense_weights(lam), features.V, lw, m, tokens, lengths, steps, True, seeds,
                            out_x, out_len, stats)
    np.testing.assert_array_equal(lengths, state.lengths)
    np.testing.assert_array_equal(tokens, state.tokens)
    np.testing.assert_array_equal(out_len, samples.lengths)
    assert info.up_proposed == stats[:, 0].sum()
    assert_frequencies_match(chain_counts(state, words), q, alpha=1e-3, what="parallel TransMS")
    with pytest.raises(ValueError, match="schedule"):
        transms(features, lam, lw, start, 4, parallel=True, schedule=np.zeros(4, dtype=int))
