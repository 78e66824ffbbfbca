"""SMC estimates of log Z_j (trf.lm.smc) against brute force and exact sums, and the check's SMC side."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

from samplers._jit import jit
from trf.lm import _feature_kernels as fk
from trf.lm import _smc_kernels as sk
from trf.lm.check import check_normalisers, exact_log_z, headline_perplexity
from trf.lm.corpus import EncodedCorpus, Vocabulary
from trf.lm.features import SentenceFeatures
from trf.lm.model import SentenceTRF, smoothed_length_law
from trf.lm.smc import _smc_model, _structure, conditional_smc_log_z, smc_log_z

ALL_TEMPLATES = "w+c+ws+cs+wsh+csh+cpw+tied"


def _model(V, M, features, n_sentences=80, scale=0.8, seed=3, extra=(), n_classes=2):
    rng = np.random.default_rng(seed)
    sentences = [rng.integers(0, V, size=rng.integers(1, M + 1)) for _ in range(n_sentences)] + list(extra)
    corpus = EncodedCorpus.from_sentences(sentences)
    feats = SentenceFeatures.build(corpus, V, features, word_class=np.arange(V) % n_classes)
    lam = rng.normal(scale=scale, size=feats.n_features)
    vocab = Vocabulary(["<unk>"] + [f"w{i}" for i in range(1, V)])
    return SentenceTRF(vocab, feats, smoothed_length_law(corpus.lengths, M), lam, np.zeros(M))


def _buffers(model, history):
    V, C = model.features.n_words, model.features.n_classes
    w = np.array([V + 1, *history, 0, 0], dtype=np.int64)
    c = np.array([C + 1, *model.features.word_class[list(history)], 0, 0], dtype=np.int64)
    return w, c


@jit
def _draws(bundle, w, c, p, work, n, seed):
    np.random.seed(seed)
    _, n_touched, _ = sk.local_tables(bundle, w, c, p, work)
    counts = np.zeros(bundle.n_words)
    for _ in range(n):
        counts[sk.draw_word(bundle, work)] += 1
    sk.clear_tables(work, n_touched)
    return counts


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_class_weights_are_summed_in_logs_where_the_class_factors_leave_the_float_range(sign):
    """The class factors are products of exp(lambda) (no exp per class); where they overflow (class-final weights of
    +400: sums beyond 709) or the normaliser underflows (-400), the local normaliser is taken in logs from the summed
    weights instead (:func:`shifted_class_weights`) and still matches the brute-force log-sum-exp, on both paths, as
    does each word's local probability read through class_score."""
    V, M = 5, 12
    model = _model(V, M, ALL_TEMPLATES, n_sentences=120)
    structure = _structure(model.features)
    class_final = structure.succ.succ_feature[~structure.succ_word_final]
    model.lam[class_final] = sign * 400.0
    bundle, shift = _smc_model(model)
    fa = bundle.features
    rng = np.random.default_rng(1)
    beyond = 0
    for dense_from in (0, 10**9):
        dense = bundle._replace(dense_from=dense_from)
        work = sk.new_work(dense)
        for length in range(3, 12):
            history = rng.integers(0, V, size=length)
            w, c = _buffers(model, history)
            p = length + 1
            log_z, n_touched, _ = sk.local_tables(dense, w, c, p, work)
            beyond += abs(log_z) > 700  # exp(log Z_loc) is no float: the product path cannot hold it
            s = np.array([sk.class_score(work, k) for k in model.features.word_class])
            log_q = dense.u + s + np.log(work.factor[dense.word_position]) - log_z
            sk.clear_tables(work, n_touched)
            scores = []
            for v in range(V):
                w[p], c[p] = v, model.features.word_class[v]
                scores.append(fk.positions_score(w, c, M + 5, p, p, bundle.lam, fa))
            assert abs(log_z + shift - logsumexp(scores)) < 1e-9 * max(1.0, abs(logsumexp(scores)))
            np.testing.assert_allclose(np.exp(log_q), np.exp(np.array(scores) - logsumexp(scores)), atol=1e-10)
    assert beyond >= 10  # informative: the weights left the float range of a product


@pytest.mark.parametrize("path", ["sparse", "dense"])
def test_local_law_and_end_score_match_brute_force_for_every_template(path):
    """The local normaliser sum_w exp(s_p(history, w)), computed from the class masses and the touched words' factors
    exp(lambda) (the sparse path) or from every position's factor (the dense path), is the brute-force log-sum-exp
    of the features firing at p for every candidate word, and each word's local probability exp(u + s) factor /
    Z_loc (s: class_score) is the brute-force one, both to 1e-10; the end score that local_tables reads from the same
    contexts is the score of the </s> position (end_score, from the feature table); draws follow the local law.  Histories
    up to 11 words reach every template (the tied ones read 6-9 words back); the weights are scaled so that the
    factors span exp(+-10)."""
    V, M = 5, 12
    model = _model(V, M, ALL_TEMPLATES, n_sentences=120)
    model.lam *= 3.0
    bundle, shift = _smc_model(model)
    bundle = bundle._replace(dense_from=0 if path == "dense" else 10**9)
    fa = bundle.features
    work = sk.new_work(bundle)
    assert np.abs(bundle.succ_lam).max() > 6.0  # informative: large weights, factors far from 1
    rng = np.random.default_rng(0)
    for length in range(0, 12):
        for _ in range(4):
            history = rng.integers(0, V, size=length)
            w, c = _buffers(model, history)
            p = length + 1
            log_z, n_touched, end = sk.local_tables(bundle, w, c, p, work)
            assert (n_touched >= 0) == (path == "sparse")  # (every history reads a word-final context: <s>'s bigram)
            s = np.array([sk.class_score(work, k) for k in model.features.word_class])
            q = np.exp(bundle.u + s + np.log(work.factor[bundle.word_position])
                       - log_z)
            sk.clear_tables(work, n_touched)
            assert np.all(work.factor == 1.0) and not work.mark.any()
            weighed = sk.local_tables(bundle, w, c, p, work, False)  # weighing only: the dense path resets on the way
            assert weighed[0] == log_z and weighed[2] == end and (weighed[1] == 0) == (path == "dense")
            sk.clear_tables(work, weighed[1])
            assert np.all(work.factor == 1.0) and not work.mark.any()
            scores = []
            for v in range(V):
                w[p], c[p] = v, model.features.word_class[v]
                scores.append(fk.positions_score(w, c, M + 5, p, p, bundle.lam, fa))
            assert abs(log_z + shift - logsumexp(scores)) < 1e-10, (history, log_z + shift, logsumexp(scores))
            assert np.abs(q - np.exp(np.array(scores) - logsumexp(scores))).max() < 1e-10
            w, c = _buffers(model, history)
            assert end == sk.end_score(bundle, w, c, length) == sk.history_end_score(bundle, w, c, p)
            if length:
                assert np.isclose(end, fk.positions_score(w, c, length, p, p, bundle.lam, fa), atol=1e-12)
    history = rng.integers(0, V, size=7)
    w, c = _buffers(model, history)
    n = 200_000
    freq = _draws(bundle, w, c, 8, work, n, 11) / n
    scores = []
    for v in range(V):
        w[8], c[8] = v, model.features.word_class[v]
        scores.append(fk.positions_score(w, c, M + 5, 8, 8, bundle.lam, fa))
    q = np.exp(np.array(scores) - logsumexp(scores))
    assert np.all(np.abs(freq - q) < 5 * np.sqrt(q * (1 - q) / n) + 1e-12), (freq, q)


@pytest.fixture(scope="module")
def tiny():
    model = _model(4, 5, "w+c+ws+cpw")
    log_z = np.array([exact_log_z(model, j) for j in range(1, 6)])
    return model, log_z


def test_smc_is_unbiased_for_z_at_every_length(tiny):
    """E[Z-hat_j] = Z_j: the mean ratio of 2000 runs of 100 particles to the exact Z_j is 1 within 4 standard
    errors at every length (the estimate is unbiased whatever the number of particles)."""
    model, log_z = tiny
    res = smc_log_z(model, 5, n_particles=100, n_replicates=2000, seed=1)
    ratio = np.exp(res.replicates - log_z)
    se = ratio.std(axis=0, ddof=1) / np.sqrt(ratio.shape[0])
    assert np.all(np.abs(ratio.mean(axis=0) - 1) < 4 * se), (ratio.mean(axis=0), se)
    assert np.all(se < 0.05)  # informative


def test_smc_with_many_particles_matches_the_exact_log_z(tiny):
    model, log_z = tiny
    res = smc_log_z(model, 5, n_particles=5000, n_replicates=4, seed=2)
    assert np.all(np.abs(res.log_z - log_z) < 4 * res.stderr + 0.01), (res.log_z, log_z, res.stderr)
    assert np.all(res.spread < 0.5) and np.all(res.bias < 0.15)  # informative
    assert res.ess.shape == (4, 5) and np.all((res.ess >= 1) & (res.ess <= 5000))
    # runs are independent of how many threads execute them
    again = smc_log_z(model, 5, n_particles=500, n_replicates=3, seed=9, threads=1)
    assert np.array_equal(again.replicates, smc_log_z(model, 5, n_particles=500, n_replicates=3, seed=9).replicates)


def _exact_draws(model, j, n, rng):
    """``n`` exact draws of the model at length ``j`` by enumerating all ``V^j`` sentences."""
    V = model.features.n_words
    sentences = np.array(list(itertools.product(range(V), repeat=j)), dtype=np.int64)
    scores = np.array([model.features.feature_vector(list(x)) @ model.lam for x in sentences])
    p = np.exp(scores - scores.max())
    return sentences[rng.choice(len(sentences), size=n, p=p / p.sum())]


def test_conditional_smc_from_exact_draws_is_unbiased_for_one_over_z(tiny):
    """Conditional SMC pinned to an exact draw of the model: E[Z_j / Z-hat_j] = 1 (2000 runs of 10 particles, within
    4 standard errors at every length), so its log errs high while plain SMC's errs low (the sandwich: mean log
    error +1.0 to +2.6 nats against -0.9 to -3.0 at lengths 2-5 with 10 particles).  Pinned to uniformly drawn
    sentences instead, E[Z / Z-hat] is far from 1 (observed 7.5-59 at lengths 2-5; negative control)."""
    model, log_z = tiny
    rng = np.random.default_rng(0)
    n = 2000
    res = conditional_smc_log_z(model, {j: _exact_draws(model, j, n, rng) for j in range(1, 6)}, n_particles=10,
                                seed=1)
    assert res.runs.shape == (n, 5) and res.lengths.tolist() == [1, 2, 3, 4, 5]
    ratio = np.exp(log_z - res.runs)
    se = ratio.std(axis=0, ddof=1) / np.sqrt(n)
    assert np.all(np.abs(ratio.mean(axis=0) - 1) < 4 * se), (ratio.mean(axis=0), se)
    assert np.all(se < 0.25)  # informative
    plain = smc_log_z(model, 5, n_particles=10, n_replicates=n, seed=2)
    up, down = (res.runs - log_z).mean(axis=0), (plain.replicates - log_z).mean(axis=0)
    assert np.all(up[1:] > 0.5) and np.all(down[1:] < -0.5), (up, down)
    bad = conditional_smc_log_z(model, {j: rng.integers(0, 4, size=(n, j)) for j in range(2, 6)}, n_particles=10,
                                seed=1)
    assert np.exp(log_z[1:] - bad.runs).mean(axis=0).max() > 3.0


def test_conditional_smc_rejects_bad_references(tiny):
    model, _ = tiny
    ok = np.zeros((2, 3), dtype=np.int64)
    for refs, match in (({}, "references is empty"), ({3: np.zeros((2, 2), dtype=np.int64)}, r"references\[3\]"),
                        ({3: ok, 2: np.zeros((3, 2), dtype=np.int64)}, "same n_runs"), ({7: ok}, "length 7"),
                        ({3: ok + 9}, "word ids")):
        with pytest.raises(ValueError, match=match):
            conditional_smc_log_z(model, refs)
    with pytest.raises(ValueError, match="n_particles"):
        conditional_smc_log_z(model, {3: ok}, n_particles=1)


def _needle():
    """Twelve words, and the sentence "w1 w2 w3" given 14 nats through the features only it fires."""
    V, M = 12, 4
    rng = np.random.default_rng(0)
    sentences = [rng.integers(0, V, size=rng.integers(1, M + 1)) for _ in range(80)] + [np.array([1, 2, 3])]
    corpus = EncodedCorpus.from_sentences(sentences)
    feats = SentenceFeatures.build(corpus, V, "w+c", word_class=np.arange(V) % 3)
    lam = rng.normal(scale=0.3, size=feats.n_features)
    fv = feats.feature_vector
    only = np.flatnonzero((fv([1, 2, 3]) > 0) & (fv([1, 2]) == 0) & (fv([2, 3]) == 0))
    lam[only] += 14.0 / only.size
    vocab = Vocabulary(["<unk>"] + [f"w{i}" for i in range(1, V)])
    trf = SentenceTRF(vocab, feats, smoothed_length_law(corpus.lengths, M), lam, np.zeros(M))
    log_z = np.array([exact_log_z(trf, j) for j in range(1, M + 1)])
    trf.zeta = log_z - log_z[0]
    return trf, log_z


def test_known_sentences_bound_log_z_from_below_and_refute_a_check_that_missed_them():
    """The sum of exp(lambda . f(x)) over distinct known sentences of a length is an exact lower bound of Z_j: it is
    the brute-force log-sum-exp over those sentences (duplicates once) and below the exact log Z_j at every length;
    a check given known sentences without the needle "w1 w2 w3" refutes nothing.  Estimators blind to the needle
    (AIS at length 3 replaced by the exact log Z_3 of every other sentence) miss it by more than 2.5 nats and
    nothing says so; with known sentences that hold it, length 3 is refuted: the warning names it and the sentence,
    the interval and the checked value are raised to the bound, and the headline is the inconclusive high end."""
    from trf.lm.check import NormaliserCheck, headline_perplexity
    from trf.lm.check.estimates import known_floor

    trf, log_z = _needle()
    rng = np.random.default_rng(8)
    plain = [rng.integers(1, 12, size=rng.integers(1, 5)) for _ in range(200)]
    plain = [s for s in plain if s.tolist() != [1, 2, 3]]
    with_needle = EncodedCorpus.from_sentences(plain + [np.array([1, 2, 3])] * 2)
    without = EncodedCorpus.from_sentences(plain)
    floor = known_floor(trf, [with_needle, without], np.arange(1, 5), neighbours=None)
    distinct = {tuple(s.tolist()) for s in with_needle}
    for j in range(1, 5):
        mine = [s for s in distinct if len(s) == j]
        scores = trf.features.scores(EncodedCorpus.from_sentences(mine), trf.lam)
        assert floor.sentences[j - 1] == len(mine) and floor.log_z[j - 1] == pytest.approx(logsumexp(scores), abs=1e-9)
    assert np.all(floor.log_z <= log_z + 1e-9) and floor.heaviest[2] == "w1 w2 w3"
    check = check_normalisers(trf, range(1, 5), n_temperatures=50, n_chains=5, seed=2, exact_limit=0, parallel=False,
                              smc_particles=0, known=[without])
    assert check.refuted.size == 0 and check.floor_warning() is None  # control: no needle, nothing refuted
    assert np.all(check.lower <= log_z) and np.all(log_z <= check.upper)

    def blind_to_the_needle(floor_of, neighbours=None, value=None):
        """The check's estimates, but forward and reverse AIS at length 3 the exact log Z_3 of every sentence but the
        needle (estimators that never reached it; or ``value`` with no error), bracketed with the bound of
        ``floor_of`` (and their class neighbours of share >= ``neighbours``)."""
        needle = trf.features.scores(EncodedCorpus.from_sentences([[1, 2, 3]]), trf.lam)[0]
        rest = log_z[2] + np.log1p(-np.exp(needle - log_z[2]))
        estimates = dict(check.estimates)
        for key in ("forward", "reverse"):
            fields = estimates[key]._asdict()
            fields["log_z"] = fields["log_z"].copy()
            fields["log_z"][2] = rest if value is None else value
            fields["stderr"] = np.full(4, 0.05 if value is None else 0.0)
            estimates[key] = type(estimates[key])(**fields)
        return NormaliserCheck.bracket(check.lengths, check.method, estimates, check.augsa, margin=check.margin,
                                       z=check.z, n_chains=check.n_chains, seconds=0.0, m_total=check.m_total,
                                       notes=[], base=check.base,
                                       floor=known_floor(trf, floor_of, check.lengths, neighbours))

    caught, missed = blind_to_the_needle([with_needle]), blind_to_the_needle([without])
    assert log_z[2] - missed.checked[2] > 2.5 and missed.refuted.size == 0  # blind, and nothing says so
    assert caught.refuted.tolist() == [3]
    # an estimate that is the bound itself, up to the rounding of summing the same weights in another order (SMC
    # when the known sentences hold all of Z_j), does not refute it; one a little below it does
    bound = floor.log_z[2]
    assert blind_to_the_needle([with_needle], value=bound * (1 - 4e-16)).refuted.size == 0
    assert blind_to_the_needle([with_needle], value=bound - 1e-6).refuted.tolist() == [3]
    # a known text holding only a class neighbour of the needle ("w1 w2 w6": w3 and w6 share class 0) catches it
    # through the neighbours, and not without them
    near = [EncodedCorpus.from_sentences([np.array([1, 2, 6])])]
    assert blind_to_the_needle(near, 1e-3).refuted.tolist() == [3] and blind_to_the_needle(near).refuted.size == 0
    assert caught.lower[2] == caught.upper[2] == caught.checked[2] == pytest.approx(floor.log_z[2])
    assert log_z[2] - caught.checked[2] < 0.5  # the needle is most of Z_3
    warning = caught.floor_warning()
    assert "1 of 4 lengths (3)" in warning and "'w1 w2 w3'" in warning and "log Z_j >= " in warning
    assert f"above the estimate {missed.checked[2]:.2f}" in warning and caught.estimated[2] == missed.checked[2]
    test = EncodedCorpus.from_sentences([np.array([1, 2, 3]), np.array([4, 5, 6]), np.array([7, 8])])
    ppl = caught.perplexities(trf, test)
    assert ppl["refuted_lengths"] == 1 and headline_perplexity(ppl)[2]  # inconclusive: the high end
    assert missed.perplexities(trf, test)["refuted_lengths"] == 0
    assert ppl["high"] > missed.perplexities(trf, test)["high"]  # the bound raises the normaliser: a worse perplexity
    assert caught.rows()[2]["known_floor_refuted"] and caught.rows()[2]["known_floor"] == pytest.approx(floor.log_z[2])


def _heaviest_known(model, per_length=3):
    """The ``per_length`` heaviest sentences of every length of ``model`` (brute force) as ``known`` for the SMC runs,
    and each length's sentences and scores."""
    V, M = model.features.n_words, model.m
    tokens, lengths, weights, every = [], [], [], {}
    for j in range(1, M + 1):
        sentences = np.array(list(itertools.product(range(V), repeat=j)), dtype=np.int64)
        scores = model.features.scores(EncodedCorpus.from_sentences(list(sentences)), model.lam)
        every[j] = (sentences, scores)
        for i in np.argsort(-scores)[:per_length]:
            tokens.append(np.pad(sentences[i], (0, M - j)))
            lengths.append(j)
            weights.append(scores[i])
    return (np.array(tokens), np.array(lengths), np.array(weights)), every


def test_smc_weighs_known_sentences_exactly_and_stays_unbiased(tiny):
    """With the three heaviest sentences of each length known (60-99% of Z_j), every SMC replicate is W(S_j) plus an
    estimate of the rest: E[Z-hat_j] = Z_j within 4 standard errors at every length (2000 runs of 100 particles), with
    a standard error at least 4 times below plain SMC's where the known share is 99% (lengths 1-2; observed 6-190
    times).  The kept sentences are draws of the rest (no known one among them), and draws of the model take a known
    sentence with the known share.  With no known sentence the runs are the plain ones, draw for draw; with every
    sentence of a length known the rest is empty and the estimate exact; a sentence given twice is refused (it would
    count twice)."""
    model, log_z = tiny
    known, every = _heaviest_known(model)
    res = smc_log_z(model, 5, n_particles=100, n_replicates=2000, seed=1, known=known, n_keep=4)
    plain = smc_log_z(model, 5, n_particles=100, n_replicates=2000, seed=1)
    ratio, plain_ratio = np.exp(res.replicates - log_z), np.exp(plain.replicates - log_z)
    se = ratio.std(axis=0, ddof=1) / np.sqrt(2000)
    plain_se = plain_ratio.std(axis=0, ddof=1) / np.sqrt(2000)
    assert np.all(np.abs(ratio.mean(axis=0) - 1) < 4 * se + 1e-12), (ratio.mean(axis=0), se)
    share = np.exp(res.log_known - log_z)
    assert np.all(share[:2] > 0.98) and np.all(se[:2] < plain_se[:2] / 4), (share, se, plain_se)
    assert np.all(res.replicates >= res.log_known - 1e-12)
    # the kept sentences are draws of the rest, and the draws of the model take the known ones by their exact share
    known3 = {tuple(t[:3]) for t, j in zip(known[0], known[1]) if j == 3}
    found = np.isfinite(res.rest[:, 2])
    assert found.mean() > 0.9 and not any(tuple(k) in known3 for k in res.kept[found, 2, :, :3].reshape(-1, 3))
    assert all(tuple(d) not in known3 for d in res.draws(3, 50, 0, outside_known=True))
    drawn = np.mean([tuple(d) in known3 for d in res.draws(3, 4000, 1)])
    p3 = np.exp(res.log_known[2] - res.log_z[2])
    assert abs(drawn - p3) < 4 * np.sqrt(p3 * (1 - p3) / 4000), (drawn, p3)
    none = (np.zeros((0, 5), dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0))
    again = smc_log_z(model, 5, n_particles=100, n_replicates=3, seed=4, known=none)
    assert np.array_equal(again.replicates, smc_log_z(model, 5, n_particles=100, n_replicates=3, seed=4).replicates)
    sentences, scores = every[2]
    full = (np.pad(sentences, ((0, 0), (0, 3))), np.full(len(sentences), 2), scores)
    exact = smc_log_z(model, 5, n_particles=10, n_replicates=3, seed=4, known=full)
    assert np.all(np.isneginf(exact.rest[:, 1])) and np.allclose(exact.replicates[:, 1], log_z[1], atol=1e-12)
    twice = tuple(np.concatenate([a, a[:1]]) for a in known)
    with pytest.raises(ValueError, match="distinct"):
        smc_log_z(model, 5, n_particles=10, n_replicates=2, known=twice)


def test_conditional_smc_outside_known_sentences_errs_high(tiny):
    """Conditional SMC for the model restricted to the sentences outside the known ones, pinned to exact draws of
    that restricted model: E[Z_rest / Z-hat_rest] is the chance that a plain run of the same particles finds any mass
    outside them (Andrieu et al.'s identity, with the runs that find none weighing 0), within 4 standard errors at
    every length (2000 runs of 10 particles; the chance is 0.16 at length 1, where the rest is one word of 1%), so it
    is at most 1 and log Z-hat errs high, and the runs' values W(S_j) + Z-hat_rest keep the upper side.  A known
    reference is refused."""
    model, log_z = tiny
    known, every = _heaviest_known(model)
    rng = np.random.default_rng(0)
    references, log_rest = {}, np.zeros(5)
    for j in range(1, 6):
        sentences, scores = every[j]
        outside = np.ones(len(sentences), dtype=bool)
        outside[np.argsort(-scores)[:3]] = False
        p = np.exp(scores[outside] - scores[outside].max())
        references[j] = sentences[outside][rng.choice(outside.sum(), size=2000, p=p / p.sum())]
        log_rest[j - 1] = logsumexp(scores[outside])
    res = conditional_smc_log_z(model, references, n_particles=10, seed=1, known=known)
    log_known = logsumexp(np.where(known[1][None, :] == np.arange(1, 6)[:, None], known[2][None, :], -np.inf), axis=1)
    rest = res.runs + np.log1p(-np.exp(log_known - res.runs))
    ratio = np.exp(log_rest - rest)
    se = ratio.std(axis=0, ddof=1) / np.sqrt(2000)
    found = np.isfinite(smc_log_z(model, 5, n_particles=10, n_replicates=4000, seed=3, known=known).rest).mean(axis=0)
    assert np.all(np.abs(ratio.mean(axis=0) - found) < 4 * se + 4 * np.sqrt(found * (1 - found) / 4000)), (
        ratio.mean(axis=0), found, se)
    assert found[0] < 0.3 and ratio.mean(axis=0)[0] < 0.3  # informative: far below 1 where the rest is rare
    assert np.all(res.runs >= log_known - 1e-12)
    heavy = every[3][0][np.argsort(-every[3][1])[:2]]
    with pytest.raises(ValueError, match="known sentence"):
        conditional_smc_log_z(model, {3: heavy}, known=known)


def test_the_check_weighs_known_sentences_exactly_where_few_particles_miss_them():
    """On the needle model, SMC runs of 5 particles miss the needle "w1 w2 w3" (the plain replicates at length 3 fall
    1.7-7 nats short; 95.6% of 1600 runs miss it); a check given a text that holds it weighs it exactly in SMC and
    conditional SMC: every interval holds the exact log Z_j, length 3's is narrower than 1 nat and than the plain
    check's, its checked value within 0.2 nats of the exact one, conditional SMC brackets length 3, nothing is
    refuted, and a note says how much the known sentences weighed.  Over 40 check seeds: widths at length 3 with the
    known sentences mean 0.24, at most 0.55 nats; without them at least 2.06, mean 8.0; checked values within 0.07."""
    trf, log_z = _needle()
    rng = np.random.default_rng(8)
    plain = [rng.integers(1, 12, size=rng.integers(1, 5)) for _ in range(200)]
    with_needle = EncodedCorpus.from_sentences([s for s in plain if s.tolist() != [1, 2, 3]] + [np.array([1, 2, 3])])
    blind = smc_log_z(trf, 4, n_particles=5, n_replicates=8, seed=1)
    # informative: plain runs of 5 particles miss it (each with probability 0.956, so 6 of 8 fail with p < 0.001)
    assert np.count_nonzero(blind.replicates[:, 2] < log_z[2] - 1.0) >= 6
    kw = dict(n_temperatures=50, n_chains=5, seed=2, exact_limit=0, parallel=False, smc_particles=5)
    check, unknown = check_normalisers(trf, range(1, 5), known=[with_needle], **kw), check_normalisers(trf, range(1, 5), **kw)
    assert np.all(check.lower <= log_z) and np.all(log_z <= check.upper), (check.lower, log_z, check.upper)
    assert check.upper[2] - check.lower[2] < 1.0 and check.upper[2] - check.lower[2] < unknown.upper[2] - unknown.lower[2]
    assert abs(check.checked[2] - log_z[2]) < 0.2
    assert 3 in check.csmc_bracketed and check.refuted.size == 0
    assert any(n.startswith("SMC and conditional SMC weighed ") and "known sentences exactly" in n for n in check.notes)
    assert not any("heaviest of" in n for n in check.notes)  # every heavy sentence's neighbours fit the limit
    # where the neighbour limit cut some, the note says whose neighbours are in the exact part
    from trf.lm.check.estimates import known_sentences
    from trf.lm.check.run import _known_note
    from trf.lm.known import Neighbours
    from trf.lm.smc import known_mass

    floor, known = known_sentences(trf, [with_needle], np.arange(1, 5))
    assert floor.neighbours.taken == floor.neighbours.heavy > 0
    smc = smc_log_z(trf, 4, n_particles=5, n_replicates=2, seed=1, known=known_mass(known, trf.m))
    note = _known_note(smc, known[1].size, Neighbours(40, 7, 1_234_567, 500_000))
    assert note.endswith("the class neighbours of the 7 heaviest of 40 heavy known sentences are among them (all would "
                         "need 1,234,567 rows, past the limit of 500,000; the others' neighbours are in the estimated "
                         "rest)")
    assert "heaviest" not in _known_note(smc, known[1].size, floor.neighbours)


def test_the_check_takes_the_smc_estimate_where_ais_missed_probability_mass():
    """Short AIS (20 temperatures, 5 chains) misses the needle at length 3 by 3 nats; SMC finds it, the check names
    length 3, and its checked log Z_3 is the exact one within 0.3 nats.  Without SMC the check is AIS alone."""
    trf, log_z = _needle()
    kw = dict(n_temperatures=20, n_chains=5, seed=2, exact_limit=0, parallel=False, csmc_particles=0)
    check = check_normalisers(trf, range(1, 5), smc_particles=2000, **kw)
    assert check.ais_missed.tolist() == [3]
    assert log_z[2] - check.forward[2] > 2.5  # AIS alone: far too low
    assert abs(check.checked[2] - log_z[2]) < 0.3 and check.lower[2] <= log_z[2] <= check.upper[2]
    warning = check.missed_warning()
    assert "1 of 4 lengths (3)" in warning and "worst at length 3" in warning
    assert check.unsettled.size == 0 and check.unsettled_warning() is None
    assert "SMC (8 x 2000 particles)" in check.describe() and check.smc_particles == 2000
    assert any(n.startswith("SMC: 8 runs of 2000 particles") for n in check.notes)
    rows = check.rows()
    assert rows[2]["ais_missed"] and rows[2]["smc"] == check.smc[2]
    without = check_normalisers(trf, range(1, 5), smc_particles=0, **kw)
    assert without.smc is None and without.ais_missed.size == 0 and without.missed_warning() is None
    assert np.array_equal(without.checked, np.maximum(without.forward, 0.5 * (without.forward + without.reverse)))


def test_the_check_runs_unsettled_smc_again_with_more_particles():
    """SMC runs of 5 particles miss the needle (length 3) in most of 8 runs and spread by more than 1 nat there; with
    ``smc_escalation`` the check runs them again with that many times the particles, the second try settles, brackets
    the exact log Z_j and says so in a note; a first try that settled runs once; ``smc_escalation=1`` never goes
    again; a fixed effort goes again too, the same at a fixed seed."""
    from trf.lm.check import CheckEffort

    trf, log_z = _needle()
    kw = dict(n_temperatures=20, n_chains=5, seed=2, exact_limit=0, parallel=False, smc_particles=5)
    once = check_normalisers(trf, range(1, 5), smc_escalation=1, **kw)
    assert 3 in once.unsettled and once.smc_particles == 5
    assert not any(n.startswith("SMC had not settled") for n in once.notes)
    again = check_normalisers(trf, range(1, 5), smc_escalation=400, **kw)
    assert again.smc_particles == 2000 and again.unsettled.size == 0
    note = [n for n in again.notes if n.startswith("SMC had not settled")]
    assert len(note) == 1 and f"at {once.unsettled.size} lengths (" in note[0]
    assert "with 5 particles per run, so its runs went again with 2000" in note[0]
    assert np.all(again.lower <= log_z) and np.all(log_z <= again.upper), (again.lower, log_z, again.upper)
    assert abs(again.checked[2] - log_z[2]) < 0.3
    settled = check_normalisers(trf, range(1, 5), **{**kw, "smc_particles": 2000})  # the default escalation, unused
    assert settled.smc_particles == 2000 and not any(n.startswith("SMC had not settled") for n in settled.notes)
    fixed = [check_normalisers(trf, range(1, 5), effort=CheckEffort(20, 5, 1000), smc_escalation=400,
                               **{k: v for k, v in kw.items() if k not in ("n_temperatures", "smc_particles")})
             for _ in range(2)]
    assert fixed[0].smc_particles == 2000 and np.array_equal(fixed[0].checked, fixed[1].checked)
    with pytest.raises(ValueError, match="smc_escalation"):
        check_normalisers(trf, range(1, 5), smc_escalation=-1, **kw)


def test_conditional_smc_brackets_the_needle_and_the_check_takes_the_midpoint():
    """On the needle model (20-temperature AIS misses length 3 by 3 nats) SMC and conditional SMC from SMC draws
    bracket every exact log Z_j in 4 of 4 seeds; the checked value is their midpoint, within 0.4 nats of the exact
    one (100 seeds: root mean square error 0.077 nats at length 3, 0.073 at length 4, the largest 0.30; all 100
    bracketed), the interval's upper end comes from conditional SMC, not from the 20-temperature reverse AIS.
    Without conditional SMC (csmc_particles=0) the check is as before."""
    trf, log_z = _needle()
    kw = dict(n_temperatures=20, n_chains=5, exact_limit=0, parallel=False, smc_particles=2000)
    for seed in range(4):
        check = check_normalisers(trf, range(1, 5), seed=seed, **kw)
        assert check.csmc_bracketed.tolist() == [1, 2, 3, 4] and check.csmc_failed.size == 0
        assert np.all(check.lower <= log_z) and np.all(log_z <= check.upper), (check.lower, log_z, check.upper)
        assert np.allclose(check.checked, 0.5 * (check.smc + check.csmc))
        assert np.all(np.abs(check.checked - log_z) < 0.4), (check.checked, log_z)
        ends = check.estimates["csmc"].half_width(check.z), check.estimates["smc"].half_width(check.z)
        assert np.allclose(check.upper, np.maximum(check.csmc + ends[0], check.smc + ends[1]))
        assert np.allclose(ends[1], 4.53 * check.smc_se, rtol=1e-3)  # t quantile, 7 degrees of freedom, z = 3
    assert "conditional SMC (8 x 1000 particles per length) at 4 of 4 lengths" in check.describe()
    assert any(n.startswith("conditional SMC: 8 runs of 1000 particles at each of 4 lengths") for n in check.notes)
    row = check.rows()[2]
    assert row["csmc"] == check.csmc[2] and not row["csmc_failed"]
    without = check_normalisers(trf, range(1, 5), seed=0, csmc_particles=0, **kw)
    assert without.csmc_bracketed.size == 0 and not without.csmc_particles.any()
    assert np.array_equal(without.checked, np.maximum(without._ais_checked, without.smc))
    # a conditional estimate below the lower side refutes the bracket: named, and the old rule applies there
    low = check.csmc.copy()
    low[2] = check.smc[2] - 5.0
    failed = check.replaced(csmc=low)
    assert failed.csmc_failed.tolist() == [3] and failed.csmc_bracketed.tolist() == [1, 2, 4]
    assert failed.checked[2] == max(failed._ais_checked[2], failed.smc[2])
    assert "1 of 4 lengths (3)" in failed.csmc_warning() and check.csmc_warning() is None
    corpus = EncodedCorpus.from_sentences([np.array([1, 2, 3]), np.array([1, 2])])
    ok_ppl, bad_ppl = check.perplexities(trf, corpus), failed.perplexities(trf, corpus)
    assert ok_ppl["csmc_failed_lengths"] == 0 and bad_ppl["csmc_failed_lengths"] == 1
    narrow = dict(low=ok_ppl["checked"], high=ok_ppl["checked"], degenerate_lengths=0, unsettled_lengths=0)
    assert not headline_perplexity({**ok_ppl, **narrow})[2]
    assert headline_perplexity({**bad_ppl, **narrow})[2]  # a failed bracket makes the check inconclusive


def test_the_interval_ends_lie_at_the_t_quantile_of_the_runs_behind_each_standard_error():
    """Each standard error comes from a few runs (4 SMC runs, 5 AIS chains here), so ``z = 3`` of them is too narrow
    an end: over 60 checks of the needle model the intervals hold the exact log Z_j at every length in at least 58
    (observed 60 of 60, and 100 of 100 over seeds 0-99); the same estimates bracketed at the normal ``z`` (runs
    unknown) leave it out at some length in at least 3 (observed 9 of 60, 14 of 100: lower ends above it at lengths
    1-3, where one SMC run overweighted the needle or 5 AIS chains erred high)."""
    from trf.lm.check import NormaliserCheck

    trf, log_z = _needle()
    held = held_normal = 0
    for seed in range(60):
        check = check_normalisers(trf, range(1, 5), seed=seed, n_temperatures=20, n_chains=5, exact_limit=0,
                                  parallel=False, smc_particles=2000, smc_replicates=4)
        held += bool(np.all(check.lower <= log_z) and np.all(log_z <= check.upper))
        normal = {key: estimate._replace(runs=0) for key, estimate in check.estimates.items()}
        at_z = NormaliserCheck.bracket(check.lengths, check.method, normal, check.augsa, margin=check.margin,
                                       z=check.z, n_chains=check.n_chains, seconds=0.0, m_total=check.m_total,
                                       notes=[], base=check.base)
        held_normal += bool(np.all(at_z.lower <= log_z) and np.all(log_z <= at_z.upper))
    assert held >= 58 and held_normal <= 57, (held, held_normal)


def test_a_conditional_estimate_below_smc_by_its_runs_noise_is_no_failure():
    """Issue 27: the standard errors of SMC and conditional SMC come from 4 runs each, so a conditional estimate
    6 combined standard errors below SMC at one of 4 lengths is within what those runs' noise gives (Welch t-test,
    Bonferroni over the lengths): not a failure, while the former rule (3 standard errors each) flagged it.  Gaps
    far beyond the noise (40 combined standard errors, or 5 nats as above) still fail."""
    from scipy import special

    trf, log_z = _needle()
    check = check_normalisers(trf, range(1, 5), seed=0, n_temperatures=20, n_chains=5, exact_limit=0, parallel=False,
                              smc_particles=2000, smc_replicates=4)
    assert check.csmc_failed.size == 0 and check.smc_replicates == 4 and check.csmc_runs == 4
    combined = np.hypot(check.csmc_se, check.smc_se)
    assert np.all(combined > 0)
    for gap, failed in ((6.0, []), (40.0, [3])):
        low = check.csmc.copy()
        low[2] = check.smc[2] - gap * combined[2]
        assert check.replaced(csmc=low).csmc_failed.tolist() == failed, gap
    low = check.csmc.copy()
    low[2] = check.smc[2] - 6.0 * combined[2]
    old_rule = low + 3 * check.csmc_se < check.smc - 3 * check.smc_se  # the former test, for the record
    assert old_rule[2]
    assert special.stdtrit(6.0, 1.0 - special.ndtr(-3.0) / 4) > 6.0  # the threshold the 6 SE stay under


def test_a_degenerate_forward_estimate_above_a_settled_smc_pair_does_not_invert_the_interval():
    """On a fortunes w+c model one lucky AIS chain (ESS 1.01 of 10) put forward AIS 3.7 nats above a settled SMC /
    conditional SMC pair, and its lower end (forward - 3 se) above the pair's upper end: an inverted interval.  Now
    a degenerate forward estimate does not set the lower end where settled SMC gives the checked value, and an upper
    end below the lower one is raised to it.  Here, forward 4 nats above SMC at length 3: with degenerate weights
    the SMC pair's interval stays; with healthy weights and a standard error of 0.8 (not significant against the
    pair at the check's level: t = 5.0 below the threshold 5.07 for 9 degrees of freedom) the forward lower end
    stands, 4.09 standard errors below it, and the upper end is raised to it.  The former rule left both
    inverted."""
    from trf.lm.check import NormaliserCheck

    trf, log_z = _needle()
    check = check_normalisers(trf, range(1, 5), seed=0, n_temperatures=20, n_chains=10, exact_limit=0, parallel=False,
                              smc_particles=2000)
    assert 3 in check.csmc_bracketed

    def rebracket(forward_ess, forward_se):
        estimates = dict(check.estimates)
        fwd = estimates["forward"]._asdict()
        fwd["log_z"] = fwd["log_z"].copy()
        fwd["log_z"][2] = check.smc[2] + 4.0
        fwd["stderr"] = np.full(4, float(forward_se))
        fwd["ess"] = np.full(4, float(forward_ess))
        estimates["forward"] = type(estimates["forward"])(**fwd)
        return NormaliserCheck.bracket(check.lengths, check.method, estimates, check.augsa, margin=check.margin,
                                       z=check.z, n_chains=check.n_chains, seconds=0.0, m_total=check.m_total,
                                       notes=[], base=check.base)

    degenerate, healthy = rebracket(1.01, 0.3), rebracket(8.0, 0.8)
    assert 3 in degenerate.degenerate and 3 in degenerate.smc_covered and degenerate.csmc_failed.size == 0
    assert degenerate.lower[2] == pytest.approx(check.smc[2] - check.estimates["smc"].half_width(check.z)[2])
    assert degenerate.upper[2] == pytest.approx(check.upper[2])
    assert healthy.degenerate.size == 0 and healthy.csmc_failed.size == 0 and 3 in healthy.csmc_bracketed
    forward_low = check.smc[2] + 4.0 - 4.094 * 0.8  # 10 chains: the t quantile with 9 degrees of freedom
    assert healthy.lower[2] == pytest.approx(forward_low, abs=1e-3) and healthy.upper[2] == healthy.lower[2]
    assert np.all(degenerate.lower <= degenerate.upper) and np.all(healthy.lower <= healthy.upper)
    assert forward_low > check.upper[2] and check.smc[2] + 4.0 - 4.094 * 0.3 > check.upper[2]  # the former rule


def test_unsettled_smc_replicates_make_the_check_inconclusive(tiny):
    model, _ = tiny
    check = check_normalisers(model, range(1, 6), n_temperatures=20, n_chains=5, seed=0, exact_limit=0,
                              parallel=False, smc_particles=3000)
    corpus = EncodedCorpus.from_sentences([np.array([1, 2]), np.array([3, 1, 2, 0])])
    assert check.unsettled.size == 0 and check.perplexities(model, corpus)["unsettled_lengths"] == 0
    spread = check.smc_spread.copy()
    spread[[1, 3]] = [1.5, 3.0]
    wide = check.replaced(smc_spread=spread)
    assert wide.unsettled.tolist() == [2, 4]
    text = wide.unsettled_warning()
    assert "2 of 5 lengths (2, 4)" in text and "length 4, 3.00 nats" in text and "--check-particles" in text
    ppl = wide.perplexities(model, corpus)
    assert ppl["unsettled_lengths"] == 2
    value, label, inconclusive = headline_perplexity(ppl)
    assert inconclusive and value == ppl["high"]


def test_smc_rejects_bad_arguments(tiny):
    model, _ = tiny
    for kwargs, name in ((dict(n_particles=0), "n_particles"), (dict(n_replicates=0), "n_replicates"),
                         (dict(max_length=0), "max_length")):
        with pytest.raises(ValueError, match=name):
            smc_log_z(model, **kwargs)
    with pytest.raises(ValueError, match="smc_replicates"):
        check_normalisers(model, [2], n_temperatures=5, smc_replicates=1)
    with pytest.raises(ValueError, match="smc_fraction"):
        check_normalisers(model, [2], smc_fraction=1.0)


def test_exact_log_z_two_ways(tiny):
    """The tiny fixture's exact log Z_j (enumeration) against a direct sum over all sentences."""
    model, log_z = tiny
    brute = logsumexp([model.features.feature_vector(list(s)) @ model.lam for s in itertools.product(range(4), repeat=3)])
    assert np.isclose(brute, log_z[2])


def test_smc_sampler_draws_follow_the_length_mixture_of_eq12():
    """SMCSampler.draw targets q(j, x) ∝ exp(w_j + lambda . f(x)) over all sentences of 1..3 words: the empirical
    law of 24,000 draws (3000 particles per run) is within 0.02 total variation of the exact one (observed 0.005),
    and 0.3 or more from the law of 0.3 lambda (observed 0.52; negative control)."""
    from trf.lm.smc import SMCSampler

    V, M = 4, 3
    model = _model(V, M, "w+c+cpw", scale=1.0, seed=5)
    sampler = SMCSampler(model.features, M, n_particles=3000, n_runs=2)
    log_len_weight = np.array([0.3, -1.0, -4.0])
    sentences = [s for j in range(1, M + 1) for s in itertools.product(range(V), repeat=j)]
    index = {s: i for i, s in enumerate(sentences)}
    corpus = EncodedCorpus.from_sentences([np.array(s) for s in sentences])

    def exact(lam):
        log_q = model.features.scores(corpus, lam) + log_len_weight[corpus.lengths - 1]
        return np.exp(log_q - logsumexp(log_q))

    counts = np.zeros(len(sentences))
    for seed in range(8):
        tokens, lengths, info = sampler.draw(model.lam, log_len_weight, 3000, seed)
        assert tokens.shape == (3000, M) and np.all(tokens[np.arange(M)[None, :] >= lengths[:, None]] == 0)
        for row, j in zip(tokens, lengths):
            counts[index[tuple(row[:j])]] += 1
        assert info["log_z"].shape == (M,) and info["smc_min_ess"] >= 1
    empirical = counts / counts.sum()
    assert 0.5 * np.abs(empirical - exact(model.lam)).sum() < 0.02
    assert 0.5 * np.abs(empirical - exact(model.lam * 0.3)).sum() > 0.3


def test_smc_sampler_survives_weights_that_overflow():
    """While lambda diverges (the paper's step rule on the docs' toy corpus) the local masses overflow; the
    sampler must still return sentences of valid lengths, so that the trainer's guard can stop the run with its
    message (it had raised 'Probabilities contain NaN' from numpy)."""
    from trf.lm.smc import SMCSampler

    model = _model(4, 3, "w+c+cpw", scale=1.0, seed=5)
    sampler = SMCSampler(model.features, 3, n_particles=50, n_runs=2)
    lam = model.lam * 1e6
    tokens, lengths, _ = sampler.draw(lam, np.zeros(3), 40, 0)
    assert tokens.shape == (40, 3) and np.all((lengths >= 1) & (lengths <= 3))
    assert np.all((tokens >= 0) & (tokens < 4))


def test_reverse_ais_starts_from_smc_draws_where_smc_settled():
    """Reverse AIS bounds log Z_j from above in expectation only from draws of the model.  On the needle model the
    forward chains' end states rarely hold the needle, so reverse AIS from them comes out below the exact log Z_3
    (observed: 3 of 12 seeds within 0.5 nats of it or above, mean 2.3 nats low); started from the check's SMC draws
    it mostly stays above (observed: 11 of 12, mean 1.5 nats above -- 20 temperatures, 5 chains; the twelfth
    started from five draws that all missed the needle, 3 nats below)."""
    trf, log_z = _needle()
    from_smc, from_forward = [], []
    for seed in range(12):
        kw = dict(n_temperatures=20, n_chains=5, seed=seed, exact_limit=0, parallel=False, half_run=False)
        from_smc.append(check_normalisers(trf, [3], smc_particles=2000, **kw).reverse[0])
        from_forward.append(check_normalisers(trf, [3], smc_particles=0, **kw).reverse[0])
    from_smc, from_forward = np.array(from_smc), np.array(from_forward)
    assert np.mean(from_smc >= log_z[2] - 0.5) >= 0.75 and from_smc.mean() > log_z[2], from_smc
    assert np.mean(from_forward >= log_z[2] - 0.5) <= 0.5 and from_smc.mean() - from_forward.mean() > 2.0


def test_a_raised_stop_flag_ends_the_runs_and_an_interrupt_reaches_the_caller(tiny, monkeypatch):
    """Ctrl-C during a long SMC check must not wait for the runs (a 4 x 200,000-particle check took 397 s to exit):
    the kernel returns at once when its stop flag is up, and _run_all raises the flag when the caller's thread is
    interrupted, then re-raises."""
    from trf.lm import smc as smc_module

    model, _ = tiny
    bundle, _ = _smc_model(model)
    out, ess = np.full(5, -7.0), np.zeros(5)
    sk.smc_log_z(bundle, smc_module._smc_settings(100, 5, 1), sk.SMCOutput(out, ess, smc_module._NO_KEEP),
                 np.ones(1, dtype=np.int64))
    assert np.all(out == -7.0)  # nothing computed
    flags = []
    real = smc_module._smc_run

    def interrupted_run(*args):
        flags.append(args[-1])
        if len(flags) == 2:  # the first call compiles; interrupt the first real run
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(smc_module, "_smc_run", interrupted_run)
    with pytest.raises(KeyboardInterrupt):
        smc_log_z(model, 5, n_particles=100, n_replicates=1, seed=0)
    assert flags[-1][0] == 1


@pytest.mark.parametrize("path", ["sparse", "dense"])
@pytest.mark.parametrize("pinned", [False, True])
def test_kept_local_tables_give_the_same_draws_as_recomputed_ones(pinned, path):
    """Issue 27: a particle's local law is computed once per position (for its weight); its class masses and contexts
    are kept for its children's draws, which rebuild the drawn class's factors from the contexts' sorted successor
    lists.  At a fixed seed, runs with no cache (every ancestor's tables recomputed), with a cache that holds only
    some particles and with the default cache give identical estimates, ESS and kept sentences, plain and
    conditional, with every template, on the sparse and on the dense path."""
    from trf.lm import smc as smc_module

    model = _model(5, 12, ALL_TEMPLATES, n_sentences=120)
    bundle, _ = _smc_model(model)
    bundle = bundle._replace(dense_from=0 if path == "dense" else 10**9)
    n_particles, m = 300, 10
    reference = np.random.default_rng(4).integers(0, 5, size=m) if pinned else smc_module._NO_REFERENCE
    C, R = model.features.n_classes, bundle.features.row_len.size
    partial = 8 * (C + R) * 100  # room for the class masses and contexts of 100 of the 300 identities
    results = []
    for cache_bytes in (0, partial, smc_module.TABLE_CACHE_BYTES):
        run = sk.SMCRun(n_particles, m, 123, reference, cache_bytes)
        output = sk.SMCOutput(np.zeros(m), np.zeros(m), np.zeros((m, 3, m), dtype=np.int64))
        sk.smc_log_z(bundle, run, output, np.zeros(1, dtype=np.int64))
        results.append(output)
        cache = sk.new_table_cache(run, C, R)
        assert cache.mass.shape[0] == {0: 0, partial: 100}.get(cache_bytes, n_particles)
    for other in results[1:]:
        for a, b in zip(results[0], other):
            np.testing.assert_array_equal(a, b)
    assert np.all(np.isfinite(results[0].log_z[-1:] if pinned else results[0].log_z))
    # negative control: another seed gives other draws, so the comparison can fail
    output = sk.SMCOutput(np.zeros(m), np.zeros(m), np.zeros((m, 3, m), dtype=np.int64))
    sk.smc_log_z(bundle, sk.SMCRun(n_particles, m, 124, reference, 0), output, np.zeros(1, dtype=np.int64))
    assert not np.array_equal(output.keep, results[0].keep)


def test_smc_is_unbiased_for_z_with_every_template():
    """Issue 27: the SMC kernels (word factors multiplied, end scores from the contexts, kept tables drawn a class at a
    time) with every template row, plain and tied, on three words and lengths 1-9 (the tied rows read 6-9 words
    back): the mean ratio of 1000 runs of 50 particles to the exact Z_j (enumeration of 3^j sentences) is 1 within 4
    standard errors at every length (observed |z| <= 0.94).  Negative control: against the Z_j of the model without
    its tied word features (what a kernel that skipped those rows would estimate; 0.4-0.8 nats apart from length 5 on)
    the same runs miss by more than 4 standard errors at some length (observed 22-30)."""
    V, M = 3, 9
    model = _model(V, M, ALL_TEMPLATES, n_sentences=150, scale=0.5, seed=6)
    log_z = np.array([exact_log_z(model, j) for j in range(1, M + 1)])
    res = smc_log_z(model, M, n_particles=50, n_replicates=1000, seed=4)
    ratio = np.exp(res.replicates - log_z)
    se = ratio.std(axis=0, ddof=1) / np.sqrt(ratio.shape[0])
    assert np.all(np.abs(ratio.mean(axis=0) - 1) < 4 * se), (ratio.mean(axis=0), se)
    assert np.all(se < 0.05)  # informative
    tied_group = model.features.rows.row_group[-1]  # the last template row is a tied word row
    untied = SentenceTRF(model.vocab, model.features, model.pi, np.where(model.features.key_hi >> 48 == tied_group, 0.0,
                                                                         model.lam), model.zeta)
    assert np.any(untied.lam != model.lam)
    other = np.array([exact_log_z(untied, j) for j in range(1, M + 1)])
    miss = np.abs(np.exp(res.replicates - other).mean(axis=0) - 1) / (np.exp(res.replicates - other).std(axis=0, ddof=1)
                                                                    / np.sqrt(ratio.shape[0]))
    assert miss.max() > 4, miss


def test_partial_proposal_is_unbiased_for_z_and_needs_its_correction():
    """Issue 27: the partial proposal (words drawn from the local law of the unigram rows, the rows reading the
    previous symbol and the class-final rows, 22 of the 31 rows; the other 9 -- word skips, long word skips, tied word
    rows -- weigh the drawn word) with every template row on three words and lengths 1-9: the mean ratio of 1000 runs
    of 50 particles to the exact Z_j is 1 within 4 standard errors at every length (observed |z| <= 1.6; 1.9 before
    session 47's resampling before the draws).  Negative control: the same kernel with the correction left out (the
    other rows' lambda read as 0 at the drawn word) misses by more than 4 standard errors at some length (observed up
    to 4.9e4)."""
    V, M = 3, 9
    model = _model(V, M, ALL_TEMPLATES, n_sentences=150, scale=0.5, seed=6)
    log_z = np.array([exact_log_z(model, j) for j in range(1, M + 1)])
    bundle, shift = _smc_model(model, "partial")
    assert bundle.rest_rows.size == 9 and bundle.draw_row.sum() == 22
    assert np.array_equal(np.flatnonzero(~bundle.draw_row), bundle.rest_rows)

    def misses(replicates):
        ratio = np.exp(replicates - log_z)
        se = ratio.std(axis=0, ddof=1) / np.sqrt(ratio.shape[0])
        assert np.all(se < 0.1)  # informative
        return np.abs(ratio.mean(axis=0) - 1) / se

    res = smc_log_z(model, M, n_particles=50, n_replicates=1000, seed=4, proposal="partial")
    assert misses(res.replicates).max() < 4, misses(res.replicates)
    uncorrected = bundle._replace(lam=np.zeros_like(bundle.lam))  # rest_scores reads lam; the drawn rows do not
    out = np.zeros((1000, M))
    for r in range(1000):
        sk.smc_log_z(uncorrected, sk.SMCRun(50, M, 1000 + r, np.zeros(0, dtype=np.int64), 0),
                     sk.SMCOutput(out[r], np.zeros(M), np.zeros((M, 0, M), dtype=np.int64)), np.zeros(1, dtype=np.int64))
    assert misses(out + np.arange(1, M + 1) * shift).max() > 4, misses(out + np.arange(1, M + 1) * shift)


@pytest.mark.parametrize("proposal", ["trimmed", "trimmed-skips"])
def test_trimmed_proposal_is_unbiased_for_z_and_needs_its_correction(proposal):
    """Issue 27: the trimmed proposal (the word-final successor lists without the features whose |lambda| is below
    the threshold, those weights entering at the drawn word) with every template row on three words and lengths
    1-9, at a threshold of 0.3 that takes out 154 of the 351 word-final entries: the mean ratio of 1000 runs of 50
    particles to the exact Z_j is 1 within 4 standard errors at every length (observed |z| <= 1.8).  Negative
    control: the same trimmed tables without the correction (no left-out weight enters) miss by more than 4
    standard errors at some length (observed 6.6-33 at every length).  "trimmed-skips" trims only the rows whose
    context skips a position (ws, wsh, tied words; 48 of the 447 entries here), every entry of the contiguous rows
    kept: observed |z| <= 2.3 with the correction, 6.6-57 at lengths 2-9 without."""
    V, M = 3, 9
    model = _model(V, M, ALL_TEMPLATES, n_sentences=150, scale=0.5, seed=6)
    log_z = np.array([exact_log_z(model, j) for j in range(1, M + 1)])
    full, _ = _smc_model(model)
    bundle, shift = _smc_model(model, proposal, 0.3)
    assert bundle.draw_row.all() and bundle.rest_rows.size > 0
    structure = _structure(model.features)
    trimmable = structure.succ_skip if proposal == "trimmed-skips" else structure.succ_word_final
    small = trimmable & (np.abs(full.succ_lam) < 0.3)
    assert np.array_equal(bundle.succ.succ_feature, full.succ.succ_feature[~small])  # exactly those, in order
    share = 0.2 if proposal == "trimmed" else 0.05
    assert share * full.succ.succ_symbol.size < small.sum() < full.succ.succ_symbol.size
    if proposal == "trimmed-skips":  # the skip rows: gapped offsets, word-final; every word n-gram row kept whole
        _, row_len, row_off, row_type = model.features.rows
        for r in range(row_len.size):
            off, kind = row_off[r, :row_len[r]], row_type[r, :row_len[r]]
            gapped = row_len[r] >= 2 and kind[-1] == 0 and not np.array_equal(off, np.arange(1 - row_len[r], 1))
            assert (r in bundle.rest_rows) == gapped
        assert set(bundle.rest_rows) < set(structure.trimmed_rows)

    def misses(replicates):
        ratio = np.exp(replicates - log_z)
        se = ratio.std(axis=0, ddof=1) / np.sqrt(ratio.shape[0])
        assert np.all(se < 0.1)  # informative
        return np.abs(ratio.mean(axis=0) - 1) / se

    res = smc_log_z(model, M, n_particles=50, n_replicates=1000, seed=4, proposal=proposal, trim=0.3)
    assert misses(res.replicates).max() < 4, misses(res.replicates)
    uncorrected = bundle._replace(rest_below=0.0)  # no |lambda| is below 0: nothing enters
    out = np.zeros((1000, M))
    for r in range(1000):
        sk.smc_log_z(uncorrected, sk.SMCRun(50, M, 1000 + r, np.zeros(0, dtype=np.int64), 0),
                     sk.SMCOutput(out[r], np.zeros(M), np.zeros((M, 0, M), dtype=np.int64)), np.zeros(1, dtype=np.int64))
    assert misses(out + np.arange(1, M + 1) * shift).max() > 4, misses(out + np.arange(1, M + 1) * shift)
    with pytest.raises(ValueError, match="trim must be >= 0"):
        smc_log_z(model, M, proposal=proposal, trim=-1.0)


@pytest.mark.parametrize("proposal", ["trimmed", "trimmed-skips"])
def test_a_proposal_that_leaves_nothing_out_runs_the_exact_proposals_path(proposal):
    """Session 47: the proposals that leave weights out of the local law resample before each draw, carrying the
    weight left out at a particle's word to the next position, as the exact proposal's path resamples before its
    draws.  At a threshold of 0 (no |lambda| below it) the trimmed tables are the exact ones and nothing is left out,
    but the run takes the carrying path: its estimates, ESS and kept sentences equal the exact proposal's bit for bit,
    with every template row.  (Until session 47 those proposals drew each word before resampling, so that their
    children shared it: a different run.)"""
    V, M = 3, 9
    model = _model(V, M, ALL_TEMPLATES, n_sentences=150, scale=0.5, seed=6)
    bundle, _ = _smc_model(model, proposal, 0.0)
    full, _ = _smc_model(model)
    assert bundle.rest_rows.size > 0 and np.array_equal(bundle.succ.succ_feature, full.succ.succ_feature)
    a = smc_log_z(model, M, n_particles=200, n_replicates=3, seed=3, n_keep=5, proposal=proposal, trim=0.0)
    b = smc_log_z(model, M, n_particles=200, n_replicates=3, seed=3, n_keep=5)
    assert np.array_equal(a.replicates, b.replicates) and np.array_equal(a.ess, b.ess)
    assert np.array_equal(a.kept, b.kept)


@pytest.mark.parametrize("proposal", ["exact", "trimmed-skips"])
def test_class_factor_rows_give_the_draws_of_the_scattered_lists(proposal):
    """Session 54: a class-final row whose context is one class (``c-1 c0``, the class skips, the tied class rows)
    multiplies a dense row of its context's factors into the class factors instead of scattering its list (1 off the
    successors, the same products in the same row order).  With every such row on its rows, or none, the runs'
    estimates, ESS and kept sentences are the same bit for bit, with every template row, on the exact and the
    trimmed-skips proposal; rows with one factor changed give other estimates (the rows are read)."""
    from trf.lm import smc as smc_module

    model = _model(8, 9, ALL_TEMPLATES, n_sentences=150, scale=0.5, seed=6, n_classes=4)
    bundle, _ = _smc_model(model, proposal, 0.3)
    fa = model.features.rows
    one_class = np.flatnonzero((fa.row_len == 2) & (fa.row_type[:, 0] == 1) & (fa.row_type[:, 1] == 1))
    assert one_class.size >= 4 and np.array_equal(np.flatnonzero(bundle.class_row_base >= 0), one_class)
    lists = bundle._replace(class_row_base=np.full_like(bundle.class_row_base, -1))
    changed = bundle._replace(class_rows=bundle.class_rows.copy())
    changed.class_rows[:, 0] *= 2.0  # negative control: every row's factor of class 0 doubled
    m, results = 9, []
    for variant in (lists, bundle, changed):
        output = sk.SMCOutput(np.zeros(m), np.zeros(m), np.zeros((m, 3, m), dtype=np.int64))
        run = sk.SMCRun(300, m, 123, smc_module._NO_REFERENCE, smc_module.TABLE_CACHE_BYTES)
        sk.smc_log_z(variant, run, output, np.zeros(1, dtype=np.int64))
        results.append(output)
    for a, b in zip(results[0], results[1]):
        np.testing.assert_array_equal(a, b)
    assert np.all(np.isfinite(results[0].log_z))
    assert not np.array_equal(results[2].log_z, results[0].log_z)


@pytest.mark.parametrize("proposal", ["partial", "trimmed-skips"])
def test_partial_proposal_is_the_exact_one_when_every_row_reads_the_previous_symbol(tiny, proposal):
    """w+c: every non-unigram row reads x_{p-1} and no word row skips a position, so the partial proposal and the
    trimmed-skips one have nothing to leave out and give the exact proposal's runs bit for bit (trimmed-skips at a
    threshold above every weight); an unknown proposal is named in the error."""
    model = _model(4, 5, "w+c")
    bundle, _ = _smc_model(model, proposal, 100.0)
    assert bundle.rest_rows.size == 0 and bundle.draw_row.all()
    assert np.abs(model.lam).max() < 100.0  # informative: "trimmed" would empty every word-final list
    a = smc_log_z(model, 5, n_particles=200, n_replicates=2, seed=3, proposal=proposal, trim=100.0)
    b = smc_log_z(model, 5, n_particles=200, n_replicates=2, seed=3)
    assert np.array_equal(a.replicates, b.replicates)
    with pytest.raises(ValueError, match="proposal must be one of exact, partial, trimmed"):
        smc_log_z(tiny[0], 5, proposal="local")


def test_allot_splits_exactly_in_expectation_and_within_one_of_it():
    """_allot gives each stratum floor(n s) or one more, and over 20,000 calls the mean count is n s (within 4
    standard errors of a Bernoulli(1/2) extra draw)."""
    from trf.lm.smc import _allot

    shares = np.array([0.5, 0.27, 0.2, 0.03])
    rng = np.random.default_rng(0)
    counts = np.array([_allot(shares, 37, rng) for _ in range(20000)])
    assert np.all(counts.sum(axis=1) == 37)
    assert np.all((counts >= np.floor(37 * shares)) & (counts <= np.floor(37 * shares) + 1))
    se = np.sqrt(0.25 / counts.shape[0])
    np.testing.assert_allclose(counts.mean(axis=0), 37 * shares, atol=4 * se)


def test_stratified_draws_allot_lengths_and_estimate_the_models_expectation_for_any_zeta():
    """With strata the lengths are allotted (pi0 = (0.5, 0.3, 0.2) of 3,000 draws: 1500, 900, 600), the sentences of
    each length follow p_j (within 0.04 total variation of the exact law over 8 x 3,000 draws; observed 0.006-0.027),
    and the batch mean of (pi_j / pi0_j) f estimates sum_j pi_j p_j[f] (Eq. 6; within 0.05, observed 0.012)
    although the length weights (zeta) are far from the normalisers; the same batches with drawn lengths miss it
    by 0.58 (negative control).  The runs' length law matches the exact q(j) (observed 0.011), and grouping
    lengths 1 and 2 into one stratum splits its draws between them by it (observed 0.002 off)."""
    from trf.lm.smc import SMCSampler

    V, M = 4, 3
    model = _model(V, M, "w+c+cpw", scale=1.0, seed=5)
    sampler = SMCSampler(model.features, M, n_particles=3000, n_runs=2, threads=1)
    pi0, pi = np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.3, 0.5])
    log_len_weight = np.log(pi0) - np.array([0.0, 0.5, 3.0])     # zeta far from log Z_j / Z_1
    by_length = {j: [s for s in itertools.product(range(V), repeat=j)] for j in range(1, M + 1)}
    exact_p, exact_f, log_z = {}, np.zeros(model.features.n_features), np.zeros(M)
    for j, sentences in by_length.items():
        f = np.array([model.features.feature_vector(list(s)) for s in sentences])
        scores = f @ model.lam
        log_z[j - 1] = logsumexp(scores)
        exact_p[j] = np.exp(scores - log_z[j - 1])
        exact_f += pi[j - 1] * exact_p[j] @ f

    def batch_mean(strata, seed):
        tokens, lengths, info = sampler.draw(model.lam, log_len_weight, 3000, seed, strata)
        f = np.array([model.features.feature_vector(list(row[:j])) for row, j in zip(tokens, lengths)])
        return tokens, lengths, info, (pi / pi0)[lengths - 1] @ f / len(lengths)

    identity = (np.arange(M), pi0)
    means, counts = [], {j: np.zeros(V ** j) for j in by_length}
    for seed in range(8):
        tokens, lengths, info, mean = batch_mean(identity, seed)
        assert np.array_equal(np.bincount(lengths, minlength=M + 1)[1:], [1500, 900, 600])
        means.append(mean)
        for row, j in zip(tokens, lengths):
            counts[j][by_length[j].index(tuple(row[:j]))] += 1
    for j in by_length:
        assert 0.5 * np.abs(counts[j] / counts[j].sum() - exact_p[j]).sum() < 0.04
    assert np.abs(np.mean(means, axis=0) - exact_f).max() < 0.05
    drawn = np.mean([batch_mean(None, seed)[3] for seed in range(4)], axis=0)
    assert np.abs(drawn - exact_f).max() > 0.2
    exact_law = np.exp(log_len_weight + log_z - logsumexp(log_len_weight + log_z))
    np.testing.assert_allclose(info["length_law"], exact_law, atol=0.02)
    _, lengths, _, _ = batch_mean((np.array([0, 0, 1]), np.array([0.8, 0.2])), 9)
    share_1 = exact_law[0] / exact_law[:2].sum()
    assert np.sum(lengths == 3) == 600 and abs(np.mean(lengths[lengths < 3] == 1) - share_1) < 0.05
    with pytest.raises(ValueError, match="strata must be"):
        sampler.draw(model.lam, log_len_weight, 10, 0, (np.array([0, 0, 2]), np.array([0.5, 0.3, 0.2])))


def test_known_sentences_are_weighed_exactly_and_the_batch_keeps_its_expectation():
    """Known sentences (issue 27): with three sentences of lengths 2-3 weighed exactly (one planted heavy, 0.60 of
    Z_3), the runs' rest estimates plus the known weight give every log Z_j (mean of 40 draws within 0.05 of the
    exact value; observed 0.006), no draw is a known sentence, the draw and known weights of each length sum to its
    draw count, and the weighted batch mean of (pi_j / pi0_j) f estimates its exact expectation under q(j, x)
    (within 0.05; observed 0.0014).  Negative control: the same batches without the known sentences' weights miss
    it by more than 0.2 (observed 1.5)."""
    from trf.lm.smc import SMCSampler

    V, M = 4, 3
    model = _model(V, M, "w+c", scale=0.5, seed=5)
    heavy = [1, 2, 3]
    lam = model.lam.copy()
    lam[model.features.feature_vector(heavy) > 0] += 1.0
    model = SentenceTRF(model.vocab, model.features, model.pi, lam, model.zeta)
    sampler = SMCSampler(model.features, M, n_particles=500, n_runs=2, threads=1)
    pi0, pi = np.array([0.3, 0.3, 0.4]), np.array([0.2, 0.3, 0.5])
    log_len_weight = np.log(pi0) - np.array([0.0, 1.0, 2.0])
    by_length = {j: [s for s in itertools.product(range(V), repeat=j)] for j in range(1, M + 1)}
    log_z, f_j = np.zeros(M), {}
    for j, sentences in by_length.items():
        f = np.array([model.features.feature_vector(list(s)) for s in sentences])
        scores = f @ model.lam
        log_z[j - 1] = logsumexp(scores)
        f_j[j] = np.exp(scores - log_z[j - 1]) @ f
    q = np.exp(log_len_weight + log_z - logsumexp(log_len_weight + log_z))
    exact_f = sum(q[j - 1] * (pi / pi0)[j - 1] * f_j[j] for j in by_length)
    known_rows = [[0, 1], [1, 2, 3], [3, 3, 0]]
    tokens = np.zeros((3, M), dtype=np.int64)
    for i, row in enumerate(known_rows):
        tokens[i, :len(row)] = row
    k_len = np.array([2, 3, 3])
    k_log = model.features.scores(EncodedCorpus.from_sentences(known_rows), model.lam)
    assert np.exp(k_log[1] - log_z[2]) > 0.4  # the planted one holds about half of Z_3
    fk_ = np.array([model.features.feature_vector(r) for r in known_rows])
    means, plain, log_zs = [], [], []
    for seed in range(40):
        drawn, lengths, info = sampler.draw(model.lam, log_len_weight, 200, seed, known=(tokens, k_len, k_log))
        for row, j in zip(drawn, lengths):
            if info["weight"][lengths == j][0] > 0:
                assert not any(j == len(r) and list(row[:j]) == r for r in known_rows)
        n_j = np.bincount(lengths, minlength=M + 1)[1:]
        per_length = np.bincount(lengths, weights=info["weight"], minlength=M + 1)[1:] + np.bincount(
            k_len, weights=info["known_weight"], minlength=M + 1)[1:]
        np.testing.assert_allclose(per_length, n_j, atol=1e-9)
        f = np.array([model.features.feature_vector(list(row[:j])) for row, j in zip(drawn, lengths)])
        ratio = (pi / pi0)[lengths - 1]
        means.append(((ratio * info["weight"]) @ f + ((pi / pi0)[k_len - 1] * info["known_weight"]) @ fk_) / 200)
        plain.append((ratio * info["weight"]) @ f / 200)
        log_zs.append(info["log_z"])
    assert np.abs(np.mean(log_zs, axis=0) - log_z).max() < 0.05, (np.mean(log_zs, axis=0), log_z)
    assert np.abs(np.mean(means, axis=0) - exact_f).max() < 0.05, np.abs(np.mean(means, axis=0) - exact_f).max()
    assert np.abs(np.mean(plain, axis=0) - exact_f).max() > 0.2
    with pytest.raises(ValueError, match="known must be"):
        sampler.draw(model.lam, log_len_weight, 10, 0, known=(tokens, np.array([2, 3, 5]), k_log))
    with pytest.raises(ValueError, match="cannot be combined"):
        sampler.draw(model.lam, log_len_weight, 10, 0, (np.arange(M), pi0), known=(tokens, k_len, k_log))


def test_the_bundle_is_the_same_in_any_number_of_blocks(monkeypatch):
    """Issue 27, item 2: the bundle's successor weights, their ``exp`` and the trimmed lists are computed in blocks on
    the Numba threads; with one block or many they are the NumPy gather and the brute-force filter, bit for bit, and so
    are the contexts' ``</s>`` weights (a model with every template row on 12 words).  The ``exp`` of any number of
    blocks is the one-block ``exp`` bit for bit, and ``np.exp`` within one unit in the last place (NumPy's vectorised
    ``exp`` and Numba's differ in the last bit on some CPUs)."""
    import samplers._blocks as blocks

    model = _model(12, 6, ALL_TEMPLATES, n_sentences=300, scale=0.5, seed=11)
    structure, lam = _structure(model.features), model.lam
    succ = structure.succ
    keep = ~structure.succ_word_final | (np.abs(lam[succ.succ_feature]) >= 0.3)
    assert 0 < (~keep).sum() < keep.sum()  # informative: some entries trimmed, most kept
    n_kept = np.array([keep[a:b].sum() for a, b in zip(succ.ctx_start[:-1], succ.ctx_start[1:])])
    one_block = {}
    for min_block, threads in [(1 << 16, 1), (1, 3), (1, 5)]:
        monkeypatch.setattr(blocks, "MIN_BLOCK", min_block)
        monkeypatch.setattr(blocks.numba, "get_num_threads", lambda threads=threads: threads)
        assert blocks.block_edges(succ.succ_feature.size).size - 1 == threads
        exact, _ = _smc_model(model)
        np.testing.assert_array_equal(exact.succ_lam, lam[succ.succ_feature])
        np.testing.assert_array_max_ulp(exact.succ_exp, np.exp(lam[succ.succ_feature]), maxulp=1)
        np.testing.assert_array_equal(exact.succ_exp, one_block.setdefault("exact", exact.succ_exp))
        np.testing.assert_array_equal(exact.ctx_end_lam, np.where(structure.ctx_end >= 0, lam[structure.ctx_end], 0.0))
        trimmed, _ = _smc_model(model, "trimmed", 0.3)
        np.testing.assert_array_equal(trimmed.succ.succ_feature, succ.succ_feature[keep])
        np.testing.assert_array_equal(trimmed.succ.succ_symbol, succ.succ_symbol[keep])
        np.testing.assert_array_equal(trimmed.succ.ctx_start, np.concatenate(([0], np.cumsum(n_kept))))
        np.testing.assert_array_max_ulp(trimmed.succ_exp, np.exp(lam[succ.succ_feature[keep]]), maxulp=1)
        np.testing.assert_array_equal(trimmed.succ_exp, one_block.setdefault("trimmed", trimmed.succ_exp))
        skips, _ = _smc_model(model, "trimmed-skips", 0.3)  # other runs of whole and trimmed lists
        kept = ~structure.succ_skip | (np.abs(lam[succ.succ_feature]) >= 0.3)
        assert 0 < (~kept).sum() < (~keep).sum()
        np.testing.assert_array_equal(skips.succ.succ_feature, succ.succ_feature[kept])
        np.testing.assert_array_equal(skips.succ.succ_symbol, succ.succ_symbol[kept])
        np.testing.assert_array_equal(skips.succ.ctx_start, np.concatenate(
            ([0], np.cumsum([kept[a:b].sum() for a, b in zip(succ.ctx_start[:-1], succ.ctx_start[1:])]))))
        np.testing.assert_array_equal(skips.succ_lam, lam[succ.succ_feature[kept]])
        np.testing.assert_array_equal(skips.succ_exp, one_block.setdefault("skips", skips.succ_exp))
    bounds, trims = structure.trimmable["trimmed-skips"][1]
    assert 2 <= trims.size < 0.01 * succ.ctx_start.size and trims.any() and not trims.all()


def _planted_collision(key_hi, key_lo, slots, k):
    """A copy of the hash table ``slots`` whose first slot for key ``k`` claims the next key's index with ``k``'s
    fingerprint, ``k``'s own entry moved to the first empty slot down the probe when it sat there; also that other
    index, the first slot's former value and its position."""
    mask = slots.size - 1
    h = int(fk.key_hash(key_hi[k], key_lo[k]))
    first = h & mask
    slots = slots.copy()
    own = slots[first]
    empty = next(s & mask for s in range(first + 1, first + slots.size) if slots[s & mask] < 0)
    other = (k + 1) % key_hi.size
    slots[first] = (int(fk.fingerprint(h)) << 32) | other
    slots[empty] = own if own >= 0 and (own & 0xFFFFFFFF) == k else slots[empty]
    return slots, other, own, first


@jit
def _contexts_both_ways(bundle, w, c, p, work):
    sk.find_contexts(bundle, w, c, p, work)
    one_at_a_time = np.empty(work.found.size, dtype=np.int64)
    for r in range(work.found.size):
        one_at_a_time[r] = sk.context_index(bundle, r, p, w, c)
    return work.found.copy(), one_at_a_time


def test_the_batched_context_look_ups_find_what_one_at_a_time_finds():
    """Issue 27, item 2: the local tables look up every row's context in passes (keys and first slots, candidates,
    comparisons) so that the cache misses overlap; the indices must be :func:`context_index`'s for every row, at
    every position of random histories reaching all templates.  A planted fingerprint collision -- a context's first
    slot made to hold its fingerprint with another context's index, its own entry moved down the probe -- must still
    find the context (the keys are compared, and the probe goes on); the candidate alone would be the other one.
    The rows whose context is one symbol read it from the bundle's dense tables (session 54): the same indices, and
    the same as with no table."""
    V, M = 5, 12
    model = _model(V, M, ALL_TEMPLATES, n_sentences=120)
    bundle, _ = _smc_model(model)
    tabled = bundle.ctx_table_base >= 0
    assert np.array_equal(tabled, model.features.rows.row_len == 2)
    hashed_only = bundle._replace(ctx_table_base=np.full_like(bundle.ctx_table_base, -1))
    work = sk.new_work(bundle)
    rng = np.random.default_rng(5)
    looked_up = np.zeros(2, dtype=np.int64)
    for length in range(12):
        for _ in range(5):
            w, c = _buffers(model, rng.integers(0, V, size=length))
            found, expected = _contexts_both_ways(bundle, w, c, length + 1, work)
            np.testing.assert_array_equal(found, expected)
            np.testing.assert_array_equal(_contexts_both_ways(hashed_only, w, c, length + 1, work)[0], expected)
            looked_up += [(expected[tabled] >= 0).sum(), (expected[~tabled] >= 0).sum()]
    assert looked_up.min() > 200  # informative: most rows find their context, by table and by hash
    # the planted collision: context k's first slot claims index `other` with k's fingerprint
    succ = bundle.succ
    w, c = _buffers(model, [1, 2, 3, 4])
    _, expected = _contexts_both_ways(bundle, w, c, 5, work)
    r = int(np.flatnonzero((expected >= 0) & ~tabled)[0])
    k = int(expected[r])
    slots, other, own, first = _planted_collision(succ.ctx_hi, succ.ctx_lo, succ.ctx_slots, k)
    mask = slots.size - 1
    if (own & 0xFFFFFFFF) != k:  # k's entry lay further down the probe: it stays there
        assert any((slots[s & mask] & 0xFFFFFFFF) == k for s in range(first + 1, first + slots.size)
                   if slots[s & mask] >= 0)
    planted = bundle._replace(succ=succ._replace(ctx_slots=slots))
    found, expected = _contexts_both_ways(planted, w, c, 5, sk.new_work(planted))
    assert found[r] == expected[r] == k and other != k


def _rest_score(bundle, w, c, p):
    """:func:`sk.rest_scores` of one history."""
    out = np.zeros(1)
    keys = tuple(np.empty(bundle.rest_rows.size, dtype=np.int64) for _ in range(4))
    sk.rest_scores(bundle, w.reshape(1, -1), c.reshape(1, -1), np.zeros(1, dtype=np.int64), p, keys, out)
    return out[0]


def _rest_one_at_a_time(bundle, w, c, p):
    total = 0.0
    for r in bundle.rest_rows:
        x = fk.row_weight(int(r), p, p, w, c, bundle.lam, bundle.features)
        total += x if abs(x) < bundle.rest_below else 0.0
    return total


@pytest.mark.parametrize("proposal", ["trimmed", "partial"])
def test_the_batched_rest_look_ups_sum_what_one_at_a_time_sums(proposal):
    """Issue 27, item 2: the importance correction of the trimmed and partial proposals (:func:`rest_scores`) looks
    up its rows' features in passes, as the contexts are looked up; its sum must be the one-at-a-time sum of the
    left-out weights at every position of random histories, and a planted fingerprint collision -- a feature's
    first slot made to claim another feature's index with its fingerprint -- must still find the feature's weight."""
    V, M = 5, 12
    model = _model(V, M, ALL_TEMPLATES, n_sentences=120)
    bundle, _ = _smc_model(model, proposal, 0.5) if proposal == "trimmed" else _smc_model(model, proposal)
    rng = np.random.default_rng(6)
    nonzero = []
    for length in range(1, 12):
        histories = [_buffers(model, rng.integers(0, V, size=length)) for _ in range(5)]
        for p in range(1, length + 1):
            expected = [_rest_one_at_a_time(bundle, w, c, p) for w, c in histories]
            for (w, c), one in zip(histories, expected):
                assert _rest_score(bundle, w, c, p) == pytest.approx(one, abs=1e-12)
                nonzero.append(one != 0.0)
            # all the histories at once (session 54: a position's identities together), every other one asked for
            size = 5 * bundle.rest_rows.size
            keys = tuple(np.empty(size, dtype=np.int64) for _ in range(4))
            out = np.full(5, np.nan)
            which = np.array([0, 2, 4])
            sk.rest_scores(bundle, np.stack([w for w, _ in histories]), np.stack([c for _, c in histories]), which, p,
                           keys, out)
            np.testing.assert_allclose(out[which], np.array(expected)[which], rtol=0, atol=1e-12)
            assert np.isnan(out[[1, 3]]).all()
    assert np.mean(nonzero) > 0.5  # informative: most positions leave weight out
    # the planted collision on a rest row's feature at the last position of a history
    fa = bundle.features
    w, c = _buffers(model, [1, 2, 3, 4])
    rows = [int(r) for r in bundle.rest_rows if fk.row_feature(int(r), 4, 4, w, c, fa) >= 0
            and abs(bundle.lam[fk.row_feature(int(r), 4, 4, w, c, fa)]) < bundle.rest_below]
    assert rows
    f = int(fk.row_feature(rows[0], 4, 4, w, c, fa))
    slots, other, _, _ = _planted_collision(fa.key_hi, fa.key_lo, fa.slots, f)
    planted = bundle._replace(features=fa._replace(slots=slots))
    assert fk.row_feature(rows[0], 4, 4, w, c, planted.features) == f  # the one-at-a-time probe goes on
    assert _rest_score(planted, w, c, 4) == pytest.approx(_rest_one_at_a_time(planted, w, c, 4), abs=1e-12)
    assert bundle.lam[other] != bundle.lam[f]  # informative: the candidate alone would add another weight
