"""Randomized Forward / Inside / entropy / Gumbel sampling: exactness at K1 + K2 = N, unbiasedness of
the linear-space estimate, the log-space lower bound, gradients, and a biased negative control."""

import math

import pytest

torch = pytest.importorskip("torch")

import numpy as np  # noqa: E402
from rdp_oracles import chain_truth  # noqa: E402

import rdp  # noqa: E402
from rdp.selection import select_indices  # noqa: E402
from samplers.testing import assert_close_in_se, assert_frequencies_match  # noqa: E402

pytestmark = pytest.mark.torch


def _chain(seed, b, t, n, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return (scale * torch.randn(b, t, n, generator=g, dtype=torch.float64),
            scale * torch.randn(n, n, generator=g, dtype=torch.float64),
            torch.randn(n, 3, generator=g, dtype=torch.float64) * 0.7)


@pytest.mark.parametrize("k1,k2", [(0, 5), (2, 3), (4, 1), (5, 0)])
def test_full_budget_reproduces_exact_chain_values(k1, k2):
    em, tr, emb = _chain(1, 2, 5, 5)
    lengths = torch.tensor([5, 3])
    gen = torch.Generator().manual_seed(0)
    per_step = torch.randn(2, 4, 5, 5, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    for trans, kw in ((tr, {}), (per_step, {}), (None, {"state_embeddings": emb})):
        exact_z = rdp.chain_log_partition(em, trans, lengths, **kw)
        exact_h = rdp.chain_entropy(em, trans, lengths, **kw)
        est = rdp.randomized_chain_log_partition(em, trans, k1=k1, k2=k2, generator=gen, lengths=lengths,
                                                 proposal="local+global", **kw)
        ent = rdp.randomized_chain_entropy(em, trans, k1=k1, k2=k2, generator=gen, lengths=lengths, **kw)
        assert torch.allclose(est, exact_z, atol=1e-10)
        assert torch.allclose(ent, exact_h, atol=1e-10)


def test_full_budget_reproduces_exact_tree_log_z():
    g = torch.Generator().manual_seed(2)
    spans = torch.randn(2, 5, 5, 4, generator=g, dtype=torch.float64)
    exact = rdp.tree_log_partition(spans)
    for k1, k2 in ((0, 4), (3, 1), (4, 0)):
        est = rdp.randomized_tree_log_partition(spans, k1=k1, k2=k2, generator=torch.Generator().manual_seed(1))
        assert torch.allclose(est, exact, atol=1e-10)


def test_randomized_gumbel_with_full_budget_samples_the_exact_posterior():
    """Chi-square over the 27 paths (alpha = 1e-3) for randomized Alg. 4 with K1 + K2 = N."""
    n, t, draws = 3, 3, 6000
    em, tr, _ = _chain(7, 1, t, n, scale=0.8)
    _, _, _, paths, p = chain_truth(em, tr, t)
    s = rdp.randomized_chain_gumbel_sample(em.expand(draws, -1, -1), tr, k1=1, k2=2, proposal="local",
                                           generator=torch.Generator().manual_seed(3))
    codes = (s.hard * torch.tensor([n * n, n, 1])).sum(-1).numpy()
    order = [sum(st * n ** (t - 1 - i) for i, st in enumerate(path)) for path in paths]
    probs = np.zeros(n ** t)
    probs[order] = p.numpy()
    assert_frequencies_match(np.bincount(codes, minlength=n ** t), probs, alpha=1e-3, what="randomized FFBS")


def test_randomized_gumbel_sample_shapes_and_support():
    em, _, emb = _chain(4, 2, 6, 30)
    s = rdp.randomized_chain_gumbel_sample(em, state_embeddings=emb, k1=3, k2=2, tau=0.5, lengths=[6, 4],
                                           generator=torch.Generator().manual_seed(0))
    assert s.hard.shape == (2, 6) and s.relaxed.shape == (2, 6, 30)
    assert (s.hard[1, 4:] == -1).all() and (s.hard[:, :4] >= 0).all()
    assert torch.allclose(s.relaxed[0].sum(-1), torch.ones(6, dtype=torch.float64))
    assert (s.relaxed > 0).sum(-1).max() <= 5  # mass only on the K1 + K2 chosen states


@pytest.mark.parametrize("seed,proposal,k1,k2,per_step", [(0, "local+global", 2, 2, False),
                                                          (1, "uniform", 1, 3, False), (2, "local", 0, 2, False),
                                                          (3, "global", 2, 1, True)])
def test_linear_space_forward_is_unbiased_for_z(seed, proposal, k1, k2, per_step):
    """Mean of 2000 linear-space estimates within 4 standard errors of Z (Theorem A.1); the mean of
    the log-space estimates does not exceed log Z beyond 4 standard errors (Jensen)."""
    reps, n, t = 2000, 8, 5
    em, _, emb = _chain(seed, 1, t, n)
    trans, kw = None, {"state_embeddings": emb}
    if per_step:  # full per-step transitions, one (T-1, N, N) copy per batch row
        trans, kw = torch.randn(1, t - 1, n, n, dtype=torch.float64, generator=torch.Generator().manual_seed(9)), {}
    exact = float(rdp.chain_log_partition(em, trans, **kw))
    gen = torch.Generator().manual_seed(seed)
    batch = em.expand(reps, -1, -1)  # one independent draw of the index sets per batch row
    if per_step:
        trans = trans.expand(reps, -1, -1, -1)
    z = rdp.randomized_chain_log_partition(batch, trans, k1=k1, k2=k2, proposal=proposal, space="linear",
                                           log_scale=exact, generator=gen, **kw).numpy()
    assert_close_in_se(z.mean(), 1.0, se=z.std(ddof=1) / math.sqrt(reps), k=4, what="mean Z-hat / Z")
    log_z = np.log(z) + exact
    assert log_z.mean() <= exact + 4 * log_z.std(ddof=1) / math.sqrt(reps)
    assert z.std() > 0.01  # the estimator is genuinely random at this budget


def test_unweighted_sampling_is_detected_as_biased():
    """Negative control: forgetting the 1 / (K2 q) correction (weight 1 for sampled states) fails the
    unbiasedness check that the correct estimator passes."""
    reps, n, t = 2000, 8, 5
    em, _, emb = _chain(0, 1, t, n)
    exact = float(rdp.chain_log_partition(em, state_embeddings=emb))
    q = rdp.resolve_proposal("uniform", em.expand(reps, -1, -1))
    sets = select_indices(q, 1, 3, torch.Generator().manual_seed(0))
    from rdp.chain import chain_sweep
    from rdp.transitions import ChainTransitions

    trans = ChainTransitions(None, emb, batch=reps, length=t, n_states=n)
    chosen = em.expand(reps, -1, -1).gather(2, sets.index)
    block = lambda step, cols: trans.block(step, sets.index[:, step - 1], sets.index[:, step, cols])  # noqa: E731
    good = torch.exp(chain_sweep(chosen, sets.log_weight, block).log_z[:, -1] - exact).numpy()
    bad = torch.exp(chain_sweep(chosen, torch.zeros_like(sets.log_weight), block).log_z[:, -1] - exact).numpy()
    assert_close_in_se(good.mean(), 1.0, se=good.std(ddof=1) / math.sqrt(reps), k=4)
    with pytest.raises(AssertionError):
        assert_close_in_se(bad.mean(), 1.0, se=bad.std(ddof=1) / math.sqrt(reps), k=4)


def test_randomized_inside_linear_space_is_unbiased():
    """Mean of 2000 linear-space randomized Inside estimates within 4 standard errors of Z."""
    reps = 2000
    g = torch.Generator().manual_seed(9)
    spans = torch.randn(1, 4, 4, 6, generator=g, dtype=torch.float64)
    exact = float(rdp.tree_log_partition(spans))
    z = rdp.randomized_tree_log_partition(spans.expand(reps, -1, -1, -1), k1=1, k2=2, space="linear",
                                          generator=torch.Generator().manual_seed(1)).numpy() / math.exp(exact)
    assert_close_in_se(z.mean(), 1.0, se=z.std(ddof=1) / math.sqrt(reps), k=4, what="mean Z-hat / Z (tree)")


def test_topk_is_deterministic_and_a_lower_bound():
    em, tr, _ = _chain(3, 2, 6, 20)
    exact = rdp.chain_log_partition(em, tr)
    a = rdp.randomized_chain_log_partition(em, tr, k1=5, k2=0, generator=torch.Generator().manual_seed(0))
    b = rdp.randomized_chain_log_partition(em, tr, k1=5, k2=0, generator=torch.Generator().manual_seed(1))
    assert torch.equal(a, b) and (a < exact).all()


def test_gradients_match_finite_differences_at_full_budget():
    em, tr, emb = _chain(5, 1, 4, 3)
    em.requires_grad_(True)
    emb.requires_grad_(True)

    def z(e, m):
        return rdp.randomized_chain_log_partition(e, state_embeddings=m, k1=1, k2=2, proposal="local",
                                                  generator=torch.Generator().manual_seed(0))

    def h(e, m):
        return rdp.randomized_chain_entropy(e, state_embeddings=m, k1=2, k2=1,
                                            generator=torch.Generator().manual_seed(0))

    def z_linear(e, m):
        return rdp.randomized_chain_log_partition(e, state_embeddings=m, k1=0, k2=3, space="linear",
                                                  log_scale=5.0, generator=torch.Generator().manual_seed(0))

    def relaxed(e, m):  # fixed Gumbel noise (same seed): a smooth function of the potentials
        return rdp.randomized_chain_gumbel_sample(e, state_embeddings=m, k1=1, k2=2, tau=0.7,
                                                  generator=torch.Generator().manual_seed(0)).relaxed

    assert torch.autograd.gradcheck(z, (em, emb))
    assert torch.autograd.gradcheck(z_linear, (em, emb))
    assert torch.autograd.gradcheck(h, (em, emb))
    assert torch.autograd.gradcheck(relaxed, (em, emb))
    spans = torch.randn(1, 3, 3, 3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda s: rdp.randomized_tree_log_partition(s, k1=2, k2=1, generator=torch.Generator().manual_seed(0)),
        (spans,))


def test_gradients_are_finite_for_every_randomized_estimator():
    em, tr, emb = _chain(6, 2, 8, 40, scale=3.0)
    em.requires_grad_(True)
    tr.requires_grad_(True)
    gen = torch.Generator().manual_seed(0)
    outs = [rdp.randomized_chain_log_partition(em, tr, k1=3, k2=2, generator=gen),
            rdp.randomized_chain_log_partition(em, tr, k1=3, k2=2, generator=gen, space="linear",
                                               log_scale=50.0),
            rdp.randomized_chain_entropy(em, tr, k1=3, k2=2, generator=gen),
            rdp.randomized_chain_gumbel_sample(em, tr, k1=3, k2=2, tau=0.5, generator=gen).relaxed[..., :5]]
    spans = (3 * torch.randn(2, 5, 5, 40, dtype=torch.float64)).requires_grad_(True)
    outs.append(rdp.randomized_tree_log_partition(spans, k1=3, k2=2, generator=gen))
    for out in outs:
        grads = torch.autograd.grad(out.sum(), [x for x in (em, tr, spans) if x.requires_grad],
                                    allow_unused=True)
        assert any(gr is not None for gr in grads)
        assert all(torch.isfinite(gr).all() for gr in grads if gr is not None)


def test_factorised_randomized_path_never_builds_n_by_n():
    """With N = 20000 embeddings and K = 20, autograd saves far less than one N x N float64 matrix."""
    from rdp.memory import measure

    n, t = 20000, 10
    g = torch.Generator().manual_seed(0)
    em = torch.randn(1, t, n, generator=g, dtype=torch.float64, requires_grad=True)
    emb = torch.randn(n, 8, generator=g, dtype=torch.float64, requires_grad=True)
    out, saved = measure(lambda: rdp.randomized_chain_log_partition(em, state_embeddings=emb, k1=15, k2=5,
                                                                    generator=g))
    assert saved < 8 * n * 100  # << 8 N^2 = 3.2 GB; inputs themselves are 1.6 MB + 1.3 MB
    out.sum().backward()
    assert torch.isfinite(emb.grad).all()


def test_selection_weights_and_repeats():
    q = torch.softmax(torch.randn(3, 12, dtype=torch.float64), -1)
    sets = select_indices(q, 4, 6, torch.Generator().manual_seed(0))
    assert sets.index.shape == (3, 10)
    top = q.topk(4, -1).indices
    assert torch.equal(sets.index[:, :4], top)
    rest = q.scatter(-1, top, 0.0)
    rest = rest / rest.sum(-1, keepdim=True)
    expect = -torch.log(6 * rest.gather(-1, sets.index[:, 4:]))
    assert torch.allclose(sets.log_weight[:, 4:], expect) and (sets.log_weight[:, :4] == 0).all()
    assert not any(bool(torch.isin(sets.index[r, 4:], top[r]).any()) for r in range(3))


@pytest.mark.parametrize("k1, k2, match", [(3, 2, "k1 \\+ k2 must be <= the number of states N = 4"),
                                           (0, 5, "k1 \\+ k2 must be <= the number of states N = 4"),
                                           (0, 0, "k1 \\+ k2 must be at least 1"),
                                           (-1, 2, "k1 must be")])
def test_select_indices_refuses_a_budget_outside_one_to_n(k1, k2, match):
    # issue 29: K larger than N used to come back as index sets with repeated top states
    q = torch.full((2, 4), 0.25, dtype=torch.float64)
    with pytest.raises(ValueError, match=match):
        rdp.select_indices(q, k1, k2, torch.Generator().manual_seed(0))


def test_select_indices_at_k_equal_n_holds_every_state_once():
    q = torch.tensor([[0.4, 0.3, 0.2, 0.1]], dtype=torch.float64)
    sets = rdp.select_indices(q, 2, 2, torch.Generator().manual_seed(0))
    assert sorted(sets.index[0].tolist()) == [0, 1, 2, 3]
