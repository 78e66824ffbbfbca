"""The pooled sub-model for sentences longer than m (Sec. 5.4, Eq. 27): sampler, zeta_{m+}, scoring."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from samplers.testing import assert_frequencies_match, chi_square_gof
from trf.augsa import AugSA
from trf.lm.backend import SentenceBackend, lm_config
from trf.lm.corpus import EncodedCorpus, Vocabulary
from trf.lm.features import SentenceFeatures
from trf.lm.model import SentenceTRF
from trf.lm.train import train_lm
from trf.lm.transms import ChainState

V, MAX_LEN = 3, 2            # lengths 1, 2 own sub-models; 3, 4 (sampled up to m + 2) pooled as m+
WORD_CLASS = np.array([0, 0, 1])
N_CHAINS, STEPS = 4000, 5


@pytest.fixture(scope="module")
def pooled():
    rng = np.random.default_rng(5)
    sentences = [rng.integers(0, V, size=rng.choice([1, 2, 3, 4, 6], p=[0.3, 0.3, 0.2, 0.1, 0.1]))
                 for _ in range(60)]
    corpus = EncodedCorpus.from_sentences(sentences)
    feats = SentenceFeatures.build(corpus, V, "w+c+ws+cpw", word_class=WORD_CLASS)
    backend = SentenceBackend(corpus, feats, corpus, max_length=MAX_LEN, n_chains=10, seed=0, parallel=False)
    states = [s for j in range(1, MAX_LEN + 3) for s in itertools.product(range(V), repeat=j)]
    return corpus, feats, backend, states


def _log_z(feats, lam, j):
    return np.logaddexp.reduce([feats.feature_vector(list(s)) @ lam for s in itertools.product(range(V), repeat=j)])


def test_pooled_backend_dimensions_and_initial_zeta(pooled):
    corpus, feats, backend, _ = pooled
    assert backend.pooled and backend.m == MAX_LEN + 1 and backend.sampler.m == MAX_LEN + 2
    np.testing.assert_array_equal(backend.dimension([1, 2, 3, 4, 9]), [1, 2, 3, 3, 3])
    n_long = np.count_nonzero(corpus.lengths > MAX_LEN)
    # pi_{m+} = n_{m+} / n with the add-0.5 smoothing of every sub-model
    assert backend.pi[-1] == pytest.approx((n_long + 0.5) / (len(corpus) + 0.5 * (MAX_LEN + 1)))
    # exact at lambda = 0: zeta_{m+} = log (Z_{m+1} + Z_{m+2}) / Z_1 over the sampled lengths
    lam0 = np.zeros(feats.n_features)
    exact = np.logaddexp(_log_z(feats, lam0, 3), _log_z(feats, lam0, 4)) - _log_z(feats, lam0, 1)
    assert backend.initial_zeta()[-1] == pytest.approx(exact)
    lw = backend.sampler_log_weights(np.full(3, 1 / 3), np.array([0.0, 1.0, 2.5]))
    np.testing.assert_allclose(lw, np.log(1 / 3) - np.array([0.0, 1.0, 2.5, 2.5]))


def _pooled_exact(feats, lam, lw, states):
    logq = np.array([lw[len(s) - 1] + feats.feature_vector(list(s)) @ lam for s in states])
    p = np.exp(logq - logq.max())
    return p / p.sum()


def test_class_based_transms_leaves_pooled_q_invariant(pooled):
    """Invariance: 4000 independent chains started at exact draws of the pooled q over the 120 sentences
    of lengths 1..m+2 are still distributed as q after 5 steps (chi-square); a check that does not
    depend on mixing speed.  Negative control: weights that give m+2 its own zeta are rejected."""
    _, feats, backend, states = pooled
    rng = np.random.default_rng(2)
    lam = rng.normal(scale=0.6, size=feats.n_features)
    pi0 = np.array([0.3, 0.3, 0.4])
    zeta = np.array([0.0, 1.2, 3.0])
    lw = backend.sampler_log_weights(pi0, zeta)
    sampler = backend.sampler
    exact = _pooled_exact(feats, lam, lw, states)
    picks = np.random.default_rng(7).choice(len(states), size=N_CHAINS, p=exact)
    lengths = np.array([len(states[i]) for i in picks], dtype=np.int64)
    tokens = np.zeros((N_CHAINS, sampler.m), dtype=np.int64)
    for r, i in enumerate(picks):
        tokens[r, :lengths[r]] = states[i]
    final, _, _, info = sampler.run(lam, lw, ChainState(tokens, lengths), STEPS, seed=8, parallel=False)
    index = {s: i for i, s in enumerate(states)}
    counts = np.zeros(len(states))
    for r in range(N_CHAINS):
        counts[index[tuple(final.tokens[r, :final.lengths[r]].tolist())]] += 1
    # alpha = 1e-3 over 120 cells; the chains are independent
    assert_frequencies_match(counts, exact, alpha=1e-3)
    assert info.up_accepted > 0 and info.down_accepted > 0
    wrong = lw.copy()
    wrong[-1] -= 1.0                                  # length m+2 weighted apart from m+1: not Eq. (27)
    _, _, p_value = chi_square_gof(counts, _pooled_exact(feats, lam, wrong, states))
    assert p_value < 1e-6


def test_augsa_zeta_of_pooled_submodel_matches_exact(pooled):
    """lambda frozen (learn_lambda=False, footnote 17): zeta_j and zeta_{m+} (Eq. 17-18 with delta_{m+}) converge to the exact
    log ratios, zeta_{m+} = log (Z_{m+1} + Z_{m+2}) / Z_1."""
    corpus, feats, _, _ = pooled
    backend = SentenceBackend(corpus, feats, corpus, max_length=MAX_LEN, n_chains=10, seed=0, parallel=False)
    rng = np.random.default_rng(4)
    lam0 = rng.normal(scale=0.3, size=feats.n_features)
    cfg = lm_config(n_samples=100, t_max=400, t_c=20.0, t0=100, stop_window=None, l2=0.0, seed=3, learn_lambda=False)
    result = AugSA(backend, cfg, progress=False).fit(lam0=lam0)
    log_z = [_log_z(feats, result.lam, j) for j in range(1, MAX_LEN + 3)]
    exact = np.array([0.0, log_z[1] - log_z[0], np.logaddexp(log_z[2], log_z[3]) - log_z[0]])
    # SA error after 400 iterations of K = 100 draws (same setting as the unpooled test): atol 0.12
    np.testing.assert_allclose(result.zeta, exact, atol=0.12)
    # the pooled model scores sentences longer than m + 2 too; an unpooled model refuses them
    vocab = Vocabulary(["<unk>", "a", "b"])
    model = SentenceTRF(vocab, feats, backend.pi, result.lam, result.zeta, pooled=True)
    long = EncodedCorpus.from_sentences([[0, 1, 2, 0, 1, 2, 0]])
    expected = np.log(backend.pi[-1]) + feats.scores(long, result.lam)[0] - result.zeta[-1] - log_z[0]
    assert model.log_prob(long)[0] == pytest.approx(expected)
    assert model.m == MAX_LEN
    with pytest.raises(ValueError, match="longer than m"):
        SentenceTRF(vocab, feats, backend.pi, result.lam, result.zeta).log_prob(long)
    with pytest.raises(ValueError, match="not both"):
        SentenceBackend(corpus, feats, m=6, max_length=MAX_LEN)


def test_train_lm_max_length_round_trip(tmp_path):
    text = "\n".join(["the cat sat", "a dog ran home fast today now", "the dog sat", "a cat"] * 10)
    path = tmp_path / "train.txt"
    path.write_text(text + "\n")
    model, result = train_lm(path, features="w+c", classes=2, max_length=4, n_chains=2, progress=False,
                             config=lm_config(n_samples=10, t_max=5, t_c=100.0, t0=2, stop_window=None))
    assert model.pooled and model.m == 4 and model.zeta.size == 5 and result.t == 5
    model.save(tmp_path / "lm.npz")
    again = SentenceTRF.load(tmp_path / "lm.npz")
    assert again.pooled and again.m == 4
    sentences = ["a dog ran home fast today now and then the cat sat", "the cat"]
    np.testing.assert_allclose(again.log_prob(sentences), model.log_prob(sentences))
