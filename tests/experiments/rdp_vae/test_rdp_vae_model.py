"""Tests of the structured VAE (experiments.rdp_vae.model; Sec. 4, Eq. 29-34 of the RDP paper).

Oracles: the exact entropy DP / Gumbel-FFBS (FULL) for the RDP gradients at K1 + K2 = N, enumeration of
all state sequences for log q and log p(y).  Statistical tolerances are stated next to each assert.
"""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

import experiments.rdp_vae.model as V  # noqa: E402
import rdp  # noqa: E402

pytestmark = pytest.mark.torch
WORDS = ["a", "b", "c", "d"]
SENTENCES = [["a", "b", "c"], ["d", "a"], ["b"], ["c", "c", "d", "a"]]


def tiny_model(n_states: int = 5, seed: int = 0, spread: float = 2.0, **kw) -> tuple[V.StructuredVAE, V.SentenceData]:
    torch.manual_seed(seed)
    vocab = V.Vocabulary(WORDS)
    data = vocab.encode(SENTENCES)
    model = V.StructuredVAE(len(vocab), n_states, state_dim=6, word_dim=6, hidden_size=8, encoder_hidden=5,
                            **kw).double()
    with torch.no_grad():  # spread the CRF potentials so that q is far from uniform
        model.state_embeddings.mul_(spread)
    return model, data


def inference_params(model):
    return [model.state_embeddings, model.to_query.weight, model.to_query.bias,
            *model.encoder.parameters()]


def flat_grad(value, params):
    grads = torch.autograd.grad(value, params, allow_unused=True)
    return torch.cat([(g if g is not None else torch.zeros_like(p)).reshape(-1) for g, p in zip(grads, params)])


# ------------------------------------------------------------------------------------- entropy term
@pytest.mark.parametrize("k1,k2,method", [(3, 2, "auto"), (0, 5, "log"), (4, 1, "scaled")])
def test_entropy_gradient_rdp_at_full_budget_equals_full(k1, k2, method):
    """Alg. 3 with K1 + K2 = N enumerates every state: its ELBO entropy term and gradient equal the exact
    DP's (log-space and scaled-space exact DPs), in float64, to 1e-6."""
    model, data = tiny_model()
    params = inference_params(model)
    gen = torch.Generator().manual_seed(1)
    full = model.elbo(data.tokens, data.lengths, V.Variant.full(method), generator=gen).entropy.sum()
    rand = model.elbo(data.tokens, data.lengths, V.Variant.rdp(k1, k2), generator=gen).entropy.sum()
    g_full, g_rand = flat_grad(full, params), flat_grad(rand, params)
    assert abs(float((full - rand).detach())) < 1e-9
    assert float(g_full.abs().max()) > 1e-3  # the gradient is not trivially zero
    assert float((g_full - g_rand).abs().max()) < 1e-6


def test_entropy_gradient_below_full_budget_differs():
    """Negative control: with K1 + K2 < N the entropy gradient is an estimate, not the exact one."""
    model, data = tiny_model()
    params = inference_params(model)
    full = model.elbo(data.tokens, data.lengths, V.Variant.full()).entropy.sum()
    topk = model.elbo(data.tokens, data.lengths, V.Variant.topk(2)).entropy.sum()
    assert float((flat_grad(full, params) - flat_grad(topk, params)).abs().max()) > 1e-3


# -------------------------------------------------------------------------------------- sample term
def mean_sample_gradient(model, data, variant, directions, replicates, seed0):
    """Mean and standard error over replicates of the Eq. 33 gradient of E_q log p(x~, y), projected."""
    params = inference_params(model)
    rows = []
    for r in range(replicates):
        gen = torch.Generator().manual_seed(seed0 + r)
        terms = model.elbo(data.tokens, data.lengths, variant, generator=gen)
        rows.append(directions @ flat_grad(terms.log_joint.sum(), params))
    rows = torch.stack(rows)
    return rows.mean(0), rows.std(0) / math.sqrt(replicates)


@pytest.mark.slow
def test_sample_gradient_rdp_at_full_budget_matches_gumbel_ffbs_in_expectation():
    """Alg. 4 at K1 + K2 = N and exact Gumbel-FFBS give gradient estimators with the same mean.

    Three fixed random projections of the inference-network gradient; independent replicates (250
    each, different seeds); |difference| / combined standard error must be below 4 for each
    projection (two-sided normal tail 6e-5 per projection).  The negative control shows the same test
    rejects Top-K with K = 1, whose relaxed samples sit on the top state only.
    """
    model, data = tiny_model()
    n_params = sum(p.numel() for p in inference_params(model))
    directions = torch.randn(3, n_params, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    m_full, se_full = mean_sample_gradient(model, data, V.Variant.full(), directions, 250, 0)
    m_rdp, se_rdp = mean_sample_gradient(model, data, V.Variant.rdp(3, 2), directions, 250, 10_000)
    z = (m_full - m_rdp) / torch.sqrt(se_full ** 2 + se_rdp ** 2)
    assert float(z.abs().max()) < 4.0, z
    m_top, se_top = mean_sample_gradient(model, data, V.Variant.topk(1), directions, 250, 20_000)
    z_top = (m_full - m_top) / torch.sqrt(se_full ** 2 + se_top ** 2)
    assert float(z_top.abs().max()) > 4.0, z_top


# ------------------------------------------------------------------------------- exact CRF sampling
def enumerate_log_q(model, tokens, lengths):
    em = model.emissions(tokens, lengths).detach()
    n, length = model.n_states, tokens.shape[1]
    grid = torch.cartesian_prod(*[torch.arange(n)] * length)
    score = rdp.chain_score(grid.unsqueeze(1), em, lengths=lengths, state_embeddings=model.state_embeddings.detach())
    return grid, score - torch.logsumexp(score, 0)


def test_posterior_samples_frequencies_and_log_q_match_enumeration():
    """rdp's exact FFBS on the VAE's CRF: chi-square goodness of fit of 20000 draws against enumerated q
    (27 sequences), p > 1e-4; log q of every draw equals the enumerated value."""
    from scipy import stats

    model, _ = tiny_model(n_states=3)
    data = V.Vocabulary(WORDS).encode([["a", "b"]])  # length 3 with </s>
    grid, log_q = enumerate_log_q(model, data.tokens, data.lengths)
    states, lq = V.posterior_samples(model, data.tokens, data.lengths, 20000, generator=torch.Generator().manual_seed(3))
    code = (states[:, 0] * torch.tensor([9, 3, 1])).sum(-1)
    grid_code = (grid * torch.tensor([9, 3, 1])).sum(-1)
    expected = torch.zeros(27, dtype=torch.float64).scatter(0, grid_code, log_q[:, 0].exp()) * 20000
    observed = torch.bincount(code, minlength=27).double()
    assert stats.chisquare(observed.numpy(), expected.numpy()).pvalue > 1e-4
    # log q of each draw equals the enumerated value of its sequence
    lookup = torch.zeros(27, dtype=torch.float64).scatter(0, grid_code, log_q[:, 0])
    assert torch.allclose(lq[:, 0], lookup[code], atol=1e-10)


# --------------------------------------------------------------------------- importance-sampled NLL
def exact_relative_variance(model, data) -> "torch.Tensor":
    """Var_q[w] / p(y)^2 of the importance weight w = p(x, y) / q(x | y), by enumeration, per sentence."""
    out = []
    for b in range(len(data)):
        tok, L = data.tokens[b:b + 1, :int(data.lengths[b])], data.lengths[b:b + 1]
        grid, log_q = enumerate_log_q(model, tok, L)
        m = grid.shape[0]
        log_joint = model.log_joint(grid, tok.expand(m, -1), L.expand(m)).detach()
        log_w = log_joint - log_q[:, 0] - torch.logsumexp(log_joint, 0)
        out.append(torch.logsumexp(log_q[:, 0] + 2 * log_w, 0).exp() - 1.0)
    return torch.stack(out)


@pytest.mark.slow
def test_importance_sampling_is_unbiased_for_p_of_y():
    """exp of the S-sample IS estimate is unbiased for p(y) (exact by enumeration of up to 3^5 sequences).

    400 independent estimates with S = 4 each: the mean of exp(estimate) / p(y) differs from 1 by less
    than 4 exact standard errors sqrt(Var_q[w] / p(y)^2 / (S R)) (variance by enumeration; 0.25-1.1
    here, so the normal approximation of the mean of 1600 weights holds) for every sentence.  The log
    estimate from 4000 samples lies within 4 delta-method standard errors of log p(y).  Negative
    control: log p(y) shifted by 10 standard errors is rejected by the same test.
    """
    model, data = tiny_model(n_states=3, spread=0.5)
    exact = V.exact_log_likelihood(model, data.tokens, data.lengths)
    rel_var = exact_relative_variance(model, data)
    assert float(rel_var.max()) < 2.0
    gen = torch.Generator().manual_seed(11)
    reps = torch.stack([V.importance_log_likelihood(model, data.tokens, data.lengths, n_samples=4,
                                                    generator=gen).log_likelihood for _ in range(400)])
    ratio = torch.exp(reps - exact)  # unbiased for 1
    z = (ratio.mean(0) - 1.0) / torch.sqrt(rel_var / 1600)
    assert float(z.abs().max()) < 4.0, z
    big = V.importance_log_likelihood(model, data.tokens, data.lengths, n_samples=4000, generator=gen)
    assert torch.allclose(big.log_se, torch.sqrt(rel_var / 4000), rtol=0.25)  # delta-method SE vs exact
    z_log = (big.log_likelihood - exact) / big.log_se
    assert float(z_log.abs().max()) < 4.0, z_log
    shifted = exact + 10 * big.log_se
    assert float(((big.log_likelihood - shifted) / big.log_se).abs().min()) > 4.0


def test_exact_log_likelihood_normalises_over_sentences():
    """p(y) sums to 1 over all sentences of length 2 plus </s> (V = 3 words + </s>), by enumeration."""
    torch.manual_seed(0)
    vocab = V.Vocabulary(["a", "b", "c"])
    model = V.StructuredVAE(len(vocab), 2, state_dim=3, word_dim=3, hidden_size=4, encoder_hidden=3).double()
    # all 2-word sentences end in </s>: sum_y p(y_1, y_2, y_3 = </s>) = P(length 2, then </s>) <= 1;
    # summing over every third word too (not only </s>) must give exactly 1
    words = torch.arange(len(vocab))
    tokens = torch.cartesian_prod(words, words, words)
    lengths = torch.full((tokens.shape[0],), 3, dtype=torch.long)
    total = torch.logsumexp(V.exact_log_likelihood(model, tokens, lengths), 0)
    assert abs(float(total)) < 1e-10


# ----------------------------------------------------------------------------------- bad input
def test_bad_input_errors():
    model, data = tiny_model()
    with pytest.raises(ValueError, match="vocabulary mismatch"):
        model.elbo(data.tokens + 10, data.lengths, V.Variant.full())
    with pytest.raises(ValueError, match="empty batch"):
        model.elbo(torch.zeros((0, 3), dtype=torch.long), torch.zeros(0, dtype=torch.long), V.Variant.full())
    with pytest.raises(ValueError, match="exceeds the number of states"):
        model.elbo(data.tokens, data.lengths, V.Variant.rdp(4, 2))
    with pytest.raises(ValueError, match="exceeds the number of states"):
        V.train_vae(model, data, V.Variant.topk(6), V.TrainConfig(steps=1), progress=False)
    with pytest.raises(ValueError, match="vocabulary mismatch"):
        V.train_vae(model, V.Vocabulary(WORDS + ["e"]).encode(SENTENCES), V.Variant.full(),
                    V.TrainConfig(steps=1), progress=False)
    with pytest.raises(ValueError, match="vocabulary mismatch"):
        V.StructuredVAE(10, 3, encoder=V.BiLSTMEncoder(12))
    with pytest.raises(TypeError, match="output_dim"):
        V.StructuredVAE(10, 3, encoder=torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match="k2 = 0"):
        V.Variant("topk", 2, 1)
    with pytest.raises(ValueError, match="variant kind"):
        V.Variant("beam")
    with pytest.raises(ValueError, match="variant method"):
        V.Variant.full("fast")
    with pytest.raises(ValueError, match="lengths"):
        model.elbo(data.tokens, data.lengths + 10, V.Variant.full())
    with pytest.raises(TypeError, match="variant"):
        model.elbo(data.tokens, data.lengths, "full")
    with pytest.raises(ValueError, match="empty"):
        V.Vocabulary(WORDS).encode([])
    with pytest.raises(ValueError, match="n_samples"):
        V.importance_log_likelihood(model, data.tokens, data.lengths, n_samples=0)


# ------------------------------------------------------------------------------------------ training
@pytest.mark.slow
def test_training_lowers_the_negative_elbo_and_resume_reproduces_the_run(tmp_path):
    model_a, data = tiny_model(seed=3)
    model_b, _ = tiny_model(seed=3)
    variant = V.Variant.rdp(2, 2)
    config = V.TrainConfig(steps=40, batch_size=2, lr=0.02, seed=5, checkpoint_every=10)
    history = V.train_vae(model_a, data, variant, config, progress=False)
    first, last = sum(h[1] for h in history[:8]) / 8, sum(h[1] for h in history[-8:]) / 8
    assert last < first - 1.0  # the fit improves by more than a nat per sentence on 4 sentences
    ckpt = tmp_path / "run.pt"
    V.train_vae(model_b, data, variant, V.TrainConfig(steps=17, batch_size=2, lr=0.02, seed=5,
                                                      checkpoint_every=10), checkpoint=ckpt, progress=False)
    assert ckpt.is_file() and not list(tmp_path.glob("*.tmp*"))
    model_c, _ = tiny_model(seed=99)  # different init: everything must come from the checkpoint
    resumed = V.train_vae(model_c, data, variant, config, checkpoint=ckpt, progress=False)
    assert [h[0] for h in resumed] == list(range(1, 41))
    for p, q in zip(model_a.parameters(), model_c.parameters()):
        assert torch.allclose(p, q, atol=1e-12)
    with pytest.raises(ValueError, match="different model or variant"):
        V.train_vae(model_c, data, V.Variant.full(), config, checkpoint=ckpt, progress=False)


def test_aggregated_posterior_counts_every_position():
    model, data = tiny_model(spread=0.5)
    counts = V.aggregated_posterior(model, data, seed=0)
    assert counts.shape == (model.n_states,)
    assert int(counts.sum()) == int(data.lengths.sum())
    result = V.evaluate_nll(model, data, n_samples=20, seed=0)
    assert len(result["log_likelihoods"]) == len(data)
    assert abs(result["nll"] + sum(result["log_likelihoods"]) / len(data)) < 1e-9
    exact = V.exact_log_likelihood(model, data.tokens, data.lengths)
    # mean NLL within 4 IS standard errors of the exact mean NLL (S = 20 per sentence; the Jensen bias
    # of the log, about relative variance / (2 S) < 0.05 here, is far below that tolerance)
    assert abs(result["nll"] + float(exact.mean())) < 4 * result["is_se"]


def test_variant_fractions():
    assert V.Variant.from_fractions("rdp", 2000) == V.Variant.rdp(200, 200)
    assert V.Variant.from_fractions("topk", 100) == V.Variant.topk(20)
    assert V.Variant.from_fractions("full", 100) == V.Variant.full()
