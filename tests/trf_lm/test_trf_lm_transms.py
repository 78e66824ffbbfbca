"""Class-based TransMS leaves q (Eq. 12) invariant: chi-square against exact enumeration."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from samplers.testing import assert_frequencies_match, chi_square_gof
from trf.lm.corpus import EncodedCorpus
from trf.lm.features import SentenceFeatures
from trf.lm.transms import ChainState, SentenceSampler

V, M = 3, 3
WORD_CLASS = np.array([0, 0, 1])  # one class with two words, one singleton class
N_CHAINS, STEPS = 8000, 25


@pytest.fixture(scope="module")
def setup():
    rng = np.random.default_rng(0)
    corpus = EncodedCorpus.from_sentences([rng.integers(0, V, size=rng.integers(1, M + 1)) for _ in range(40)])
    feats = SentenceFeatures.build(corpus, V, "w+c+ws+cpw", word_class=WORD_CLASS)
    lam = rng.normal(scale=0.8, size=feats.n_features)
    log_len_weight = rng.normal(size=M)
    states = [s for j in range(1, M + 1) for s in itertools.product(range(V), repeat=j)]
    return feats, lam, log_len_weight, states


def _exact(feats, lam, log_len_weight, states):
    logq = np.array([log_len_weight[len(s) - 1] + feats.feature_vector(list(s)) @ lam for s in states])
    p = np.exp(logq - logq.max())
    return p / p.sum()


def _final_state_counts(sampler, lam, log_len_weight, states, seed):
    """Independent draws: the last state of many short chains started from single words."""
    start = sampler.init_chains(N_CHAINS, seed=seed)
    final, _, _, info = sampler.run(lam, log_len_weight, start, STEPS, seed=seed + 1, parallel=False)
    index = {s: i for i, s in enumerate(states)}
    counts = np.zeros(len(states))
    for r in range(N_CHAINS):
        counts[index[tuple(final.tokens[r, :final.lengths[r]].tolist())]] += 1
    return counts, info


def test_class_based_transms_is_invariant_for_q(setup):
    feats, lam, lw, states = setup
    sampler = SentenceSampler(feats, M)
    counts, info = _final_state_counts(sampler, lam, lw, states, seed=11)
    # chi-square GOF at alpha = 1e-3 over 39 states (lengths 1..3); draws are independent chains
    assert_frequencies_match(counts, _exact(feats, lam, lw, states), alpha=1e-3)
    assert 0.05 < info.jump_acceptance < 0.95 and info.class_proposed > 0 and info.class_accepted > 0


def test_transms_negative_control_wrong_target_is_detected(setup):
    feats, lam, lw, states = setup
    sampler = SentenceSampler(feats, M)
    counts, _ = _final_state_counts(sampler, lam, lw, states, seed=11)
    wrong = lam.copy()
    wrong[np.argmax(feats.counts)] += 0.5  # the most frequent feature's weight off by 0.5
    _, _, p_value = chi_square_gof(counts, _exact(feats, wrong, lw, states))
    assert p_value < 1e-6


def test_parallel_path_runs_blocks_of_chains_on_threads_with_the_serial_draws(setup, monkeypatch):
    """``parallel=True`` runs the serial build on blocks of chains in worker threads (Numba's random state is
    per thread and every chain seeds its own stream): the same draws as the serial path."""
    import threading

    import numba

    from trf import _transms_skeleton as skeleton

    feats, lam, lw, _ = setup
    sampler = SentenceSampler(feats, M)
    start = sampler.init_chains(7, seed=3)
    serial = sampler.run(lam, lw, start, 6, seed=4, parallel=False)
    calls = []
    kernel = skeleton.run_chains_serial

    def spy(*args):
        calls.append((threading.get_ident(), args[1].lengths.size))  # (thread, chains in the block)
        return kernel(*args)

    monkeypatch.setattr(skeleton, "run_chains_serial", spy)
    monkeypatch.setattr(numba, "get_num_threads", lambda: 3)  # 3 blocks of 2-3 chains, whatever the machine
    threaded = sampler.run(lam, lw, start, 6, seed=4, parallel=True)
    assert sorted(n for _, n in calls) == [2, 2, 3]
    assert all(ident != threading.get_ident() for ident, _ in calls)  # worker threads, not the caller
    np.testing.assert_array_equal(serial[1], threaded[1])  # every visited state
    np.testing.assert_array_equal(serial[2], threaded[2])
    np.testing.assert_array_equal(serial[0].tokens, threaded[0].tokens)
    np.testing.assert_array_equal(serial[0].lengths, threaded[0].lengths)
    assert serial[3] == threaded[3]  # acceptance counts


def test_parallel_chains_match_serial_and_bad_input(setup):
    feats, lam, lw, _ = setup
    sampler = SentenceSampler(feats, M)
    start = sampler.init_chains(6, seed=3)
    serial = sampler.run(lam, lw, start, 5, seed=4, parallel=False)
    parallel = sampler.run(lam, lw, start, 5, seed=4, parallel=True)
    np.testing.assert_array_equal(serial[1], parallel[1])
    np.testing.assert_array_equal(serial[2], parallel[2])
    np.testing.assert_array_equal(start.lengths, np.ones(6))  # input state not modified
    data = EncodedCorpus.from_sentences([[0, 1], [2, 2, 1], [1, 0, 0, 2]])  # the last is longer than M
    from_data = sampler.init_chains(50, seed=0, start=data)
    assert set(from_data.lengths.tolist()) == {2, 3}
    assert all(tuple(t[:n]) in {(0, 1), (2, 2, 1)} for t, n in zip(from_data.tokens, from_data.lengths))
    with pytest.raises(ValueError, match="no sentence"):
        sampler.init_chains(2, start=EncodedCorpus.from_sentences([[0, 0, 0, 0]]))
    with pytest.raises(ValueError, match="log_len_weight"):
        sampler.run(lam, lw[:2], start, 1)
    with pytest.raises(ValueError, match="lam"):
        sampler.run(lam[:-1], lw, start, 1)


def test_one_step_from_q_stays_q(setup):
    """Chains started at exact draws of q make one TransMS step (jump + class move): still q.

    The stationarity check of Table 1 itself (no burn-in to hide a wrong acceptance): 30000
    independent chains, Pearson chi-square at alpha = 1e-3 over the 39 states.
    """
    feats, lam, lw, states = setup
    sampler = SentenceSampler(feats, M)
    q = _exact(feats, lam, lw, states)
    n = 30000
    picks = np.random.default_rng(21).choice(len(states), size=n, p=q)
    tokens = np.zeros((n, M), dtype=np.int64)
    lengths = np.array([len(states[i]) for i in picks], dtype=np.int64)
    for r, i in enumerate(picks):
        tokens[r, :lengths[r]] = states[i]
    final, _, _, info = sampler.run(lam, lw, ChainState(tokens, lengths), 1, seed=22, parallel=False)
    assert info.up_proposed + info.down_proposed > n / 3 and 0.05 < info.jump_acceptance < 0.95
    index = {s: i for i, s in enumerate(states)}
    counts = np.bincount([index[tuple(t[:L].tolist())] for t, L in zip(final.tokens, final.lengths)],
                         minlength=len(states))
    assert_frequencies_match(counts, q, alpha=1e-3, what="sentence TransMS one step")
    _, _, p_wrong = chi_square_gof(counts, _exact(feats, lam, lw + np.array([0.0, 0.0, 0.4]), states))
    assert p_wrong < 1e-6                                      # negative control: length-3 weight off by 0.4


def test_class_proposal_is_the_per_class_sum_of_its_dense_rows():
    """The class proposal ``Q_i`` (App. C) adds each dense row's weights over all candidate classes at once (a row of
    the table for ``d = 0``, a column for ``d > 0``); it must be, bit for bit, the sum that sets ``c_i = k`` and adds
    each row's weight in turn (``lam`` through the dense index tables), at every position of sentences of lengths
    1-12 with every template (the tied class rows read 6-9 positions back), ``</s>`` included."""
    from samplers._kernels import logsumexp_1d
    from trf.lm import _transms_kernels as tk
    from trf.lm._feature_kernels import load_sentence, row_fires

    rng = np.random.default_rng(5)
    n_words, word_class = 6, np.array([0, 1, 2, 0, 1, 2])
    corpus = EncodedCorpus.from_sentences([rng.integers(0, n_words, size=rng.integers(1, 13)) for _ in range(120)])
    feats = SentenceFeatures.build(corpus, n_words, "w+c+ws+cs+wsh+csh+cpw+tied", word_class=word_class)
    lam = rng.normal(size=feats.n_features)
    sampler = SentenceSampler(feats, 12)
    model = sampler.model(lam)
    tab, fa, n_classes = model.tables, model.features, model.n_classes
    work = tk._new_workspace(model)
    informative = 0
    for j in range(1, 13):
        sentence = rng.integers(0, n_words, size=j)
        load_sentence(sentence, model, work.w, work.c)
        work.w[j + 1], work.c[j + 1] = n_words, n_classes
        for i in range(1, j + 1):
            tk.class_proposal_logits(model, work, j, i)
            c = work.c.copy()
            expected = np.zeros(n_classes)
            for k in range(n_classes):
                c[i] = k
                total = 0.0
                for d in range(model.span + 1):
                    p = i + d
                    if p > j + 1:
                        break
                    for r in tab.proposal_rows[tab.proposal_ptr[d]:tab.proposal_ptr[d + 1]]:
                        if not row_fires(r, p, j, fa):
                            continue
                        at = (c[p] if fa.row_len[r] == 1
                              else c[p + fa.row_off[r, 0]] * (n_classes + 2) + c[p])
                        f = tab.proposal_dense[tab.proposal_base[r] + at]
                        total += lam[f] if f >= 0 else 0.0
                expected[k] = total
            expected -= logsumexp_1d(expected)  # the kernel's normaliser
            np.testing.assert_array_equal(work.log_q[:n_classes], expected)
            informative += np.ptp(expected) > 0.1
    assert informative > 30


def test_class_word_scores_from_hole_tables_equal_one_look_up_per_word():
    """Resampling the word at ``i``: the scores of every word of a class, read from the hole tables (one look-up of
    each row's key with that word blanked, then the class's positions by binary search), are bit for bit the sums of
    one look-up per word and row (``touched_score`` with ``x_i`` set to the word), at every position and for every
    class, with every template; a word that fires no feature scores 0.  Negative control: a model whose hole tables
    miss the tied word rows' groups scores differently."""
    from trf.lm import _transms_kernels as tk
    from trf.lm._feature_kernels import load_sentence
    from trf.lm.features import hash_table

    rng = np.random.default_rng(6)
    n_words, word_class = 7, np.array([0, 1, 2, 0, 1, 2, 0])
    corpus = EncodedCorpus.from_sentences([rng.integers(0, n_words, size=rng.integers(1, 13)) for _ in range(150)])
    feats = SentenceFeatures.build(corpus, n_words, "w+c+ws+cs+wsh+csh+cpw+tied", word_class=word_class)
    lam = rng.normal(size=feats.n_features)
    model = SentenceSampler(feats, 12).model(lam)
    tab, n_classes = model.tables, model.n_classes
    tied = feats.rows.row_group[-1]  # the last template row is a tied word row
    holes = model.holes
    keep = (holes.hi >> 48) != tied
    crippled = model._replace(holes=holes._replace(slots=hash_table(np.where(keep, holes.hi, -1),
                                                                    np.where(keep, holes.lo, -1))))
    work = tk._new_workspace(model)
    out = np.empty(model.max_class_size)
    differs = 0
    for j in range(1, 13):
        load_sentence(rng.integers(0, n_words, size=j), model, work.w, work.c)
        work.w[j + 1], work.c[j + 1] = n_words, n_classes
        for i in range(1, j + 1):
            for k in range(n_classes):
                n = tk.class_word_scores(model, work, j, i, k, out)
                words = model.class_words[model.class_start[k]:model.class_start[k + 1]]
                saved = work.w[i], work.c[i]
                expected = []
                for v in words:
                    work.w[i], work.c[i] = v, k
                    expected.append(tk.touched_score(model, work, j, i, tab.word_ptr, tab.word_rows))
                work.w[i], work.c[i] = saved
                np.testing.assert_array_equal(out[:n], np.array(expected))
                tk.class_word_scores(crippled, work, j, i, k, out)
                differs += not np.array_equal(out[:n], np.array(expected))
    assert differs > 0
