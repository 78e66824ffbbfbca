"""Exact chain and tree DPs against brute-force enumeration (N <= 4, T <= 5, many seeds)."""

import pytest

torch = pytest.importorskip("torch")

import numpy as np  # noqa: E402
from rdp_oracles import chain_truth, pcfg_truth, tree_truth  # noqa: E402

import rdp  # noqa: E402
from samplers.testing import assert_frequencies_match  # noqa: E402

pytestmark = pytest.mark.torch
ATOL = 1e-5


def _chain(seed, n, t, per_step=False, scale=1.5):
    g = torch.Generator().manual_seed(seed)
    em = scale * torch.randn(1, t, n, generator=g, dtype=torch.float64)
    shape = (1, t - 1, n, n) if per_step else (n, n)
    return em, scale * torch.randn(*shape, generator=g, dtype=torch.float64)


@pytest.mark.parametrize("seed", range(12))
def test_chain_log_z_marginals_entropy_match_enumeration(seed):
    n, t = 2 + seed % 3, 2 + seed % 4
    em, tr = _chain(seed, n, t, per_step=seed % 2 == 1)
    log_z, marg, ent, paths, p = chain_truth(em, tr, t)
    assert torch.allclose(rdp.chain_log_partition(em, tr), log_z, atol=ATOL)
    assert torch.allclose(rdp.chain_marginals(em, tr)[0], marg, atol=ATOL)
    assert torch.allclose(rdp.chain_entropy(em, tr), ent, atol=ATOL)
    score, path = rdp.chain_viterbi(em, tr)
    assert tuple(path[0].tolist()) == paths[int(p.argmax())]
    assert torch.allclose(score, torch.log(p.max()) + log_z, atol=ATOL)


@pytest.mark.parametrize("seed", range(4))
def test_variable_lengths_match_enumeration_of_each_prefix(seed):
    n, t = 3, 5
    em, tr = _chain(100 + seed, n, t)
    em = em.expand(3, -1, -1).contiguous()
    lengths = torch.tensor([5, 3, 1])
    log_z = rdp.chain_log_partition(em, tr, lengths)
    ent = rdp.chain_entropy(em, tr, lengths)
    marg = rdp.chain_marginals(em, tr, lengths)
    _, path = rdp.chain_viterbi(em, tr, lengths)
    for b, length in enumerate(lengths.tolist()):
        lz, mg, h, paths, p = chain_truth(em[b:b + 1], tr, length)
        assert torch.allclose(log_z[b], lz, atol=ATOL)
        assert torch.allclose(ent[b], h, atol=ATOL)
        assert torch.allclose(marg[b, :length], mg[:length], atol=ATOL)
        assert marg[b, length:].abs().max() == 0 if length < t else True
        assert tuple(path[b, :length].tolist()) == paths[int(p.argmax())]
        assert (path[b, length:] == -1).all()


def test_factorised_and_chunked_paths_agree_with_full_transitions():
    g = torch.Generator().manual_seed(5)
    em = torch.randn(2, 6, 7, generator=g, dtype=torch.float64)
    emb = torch.randn(7, 3, generator=g, dtype=torch.float64)
    lengths = torch.tensor([6, 4])
    full = rdp.chain_log_partition(em, emb @ emb.T, lengths)
    assert torch.allclose(rdp.chain_log_partition(em, state_embeddings=emb, lengths=lengths), full, atol=1e-10)
    ref = rdp.chain_exact_reference(em, state_embeddings=emb, lengths=lengths, chunk_size=3)
    assert torch.allclose(ref["log_partition"], full, atol=1e-10)
    assert torch.allclose(ref["entropy"], rdp.chain_entropy(em, emb @ emb.T, lengths), atol=1e-10)


def test_gumbel_ffbs_hard_samples_follow_the_exact_posterior():
    """Chi-square goodness of fit of 6000 exact FFBS draws over all 27 paths (alpha = 1e-3)."""
    n, t, draws = 3, 3, 6000
    em, tr = _chain(7, n, t, scale=0.8)
    _, _, _, paths, p = chain_truth(em, tr, t)
    gen = torch.Generator().manual_seed(11)
    sample = rdp.chain_gumbel_sample(em.expand(draws, -1, -1), tr, tau=0.5, generator=gen)
    codes = (sample.hard * torch.tensor([n * n, n, 1])).sum(-1).numpy()
    counts = np.bincount(codes, minlength=n ** t)
    order = [sum(s * n ** (t - 1 - i) for i, s in enumerate(path)) for path in paths]
    probs = np.zeros(n ** t)
    probs[order] = p.numpy()
    assert_frequencies_match(counts, probs, alpha=1e-3, what="exact Gumbel-FFBS")
    assert torch.allclose(sample.relaxed.sum(-1), torch.ones(draws, t, dtype=torch.float64))


def test_gumbel_chi_square_detects_a_wrong_posterior():
    """Negative control: samples of a different chain fail the same chi-square test."""
    n, t, draws = 3, 3, 6000
    em, tr = _chain(7, n, t, scale=0.8)
    _, _, _, paths, p = chain_truth(em, tr, t)
    gen = torch.Generator().manual_seed(11)
    sample = rdp.chain_gumbel_sample(em.expand(draws, -1, -1), tr.T, generator=gen)  # transposed transitions
    codes = (sample.hard * torch.tensor([n * n, n, 1])).sum(-1).numpy()
    counts = np.bincount(codes, minlength=n ** t)
    order = [sum(s * n ** (t - 1 - i) for i, s in enumerate(path)) for path in paths]
    probs = np.zeros(n ** t)
    probs[order] = p.numpy()
    with pytest.raises(AssertionError):
        assert_frequencies_match(counts, probs, alpha=1e-3)


def test_straight_through_and_lengths_in_gumbel_sample():
    em, tr = _chain(3, 4, 5)
    em = em.expand(2, -1, -1)
    s = rdp.chain_gumbel_sample(em, tr, lengths=[5, 2], tau=0.3, straight_through=True,
                                generator=torch.Generator().manual_seed(0))
    assert (s.hard[1, 2:] == -1).all() and (s.hard[:, :2] >= 0).all()
    one_hot = torch.nn.functional.one_hot(s.hard.clamp_min(0), 4).to(s.relaxed.dtype)
    assert torch.allclose(s.relaxed[0], one_hot[0]) and torch.allclose(s.relaxed[1, :2], one_hot[1, :2])
    assert s.relaxed[1, 2:].abs().max() == 0


@pytest.mark.parametrize("seed", range(6))
def test_tree_inside_marginals_entropy_match_enumeration(seed):
    t, n = 2 + seed % 3, 1 + seed % 3
    g = torch.Generator().manual_seed(seed)
    spans = torch.randn(1, t, t, n, generator=g, dtype=torch.float64)
    log_z, marg, ent = tree_truth(spans)
    assert torch.allclose(rdp.tree_log_partition(spans), log_z, atol=ATOL)
    upper = torch.triu(torch.ones(t, t, dtype=torch.bool))
    assert torch.allclose(rdp.tree_marginals(spans)[0][upper], marg[upper], atol=ATOL)
    assert torch.allclose(rdp.tree_entropy(spans), ent, atol=ATOL)


@pytest.mark.parametrize("seed", range(3))
def test_pcfg_inside_and_entropy_match_enumeration(seed):
    t, nt = 2 + seed, 2
    g = torch.Generator().manual_seed(seed)
    rules = torch.randn(nt, nt, nt, generator=g, dtype=torch.float64)
    terminal = torch.randn(1, t, nt, generator=g, dtype=torch.float64)
    root = torch.randn(nt, generator=g, dtype=torch.float64)
    log_z, ent = pcfg_truth(rules, terminal, root)
    assert torch.allclose(rdp.pcfg_log_partition(rules, terminal, root), log_z, atol=ATOL)
    assert torch.allclose(rdp.pcfg_entropy(rules, terminal, root), ent, atol=ATOL)
    counts = rdp.pcfg_marginals(rules, terminal, root)
    assert torch.allclose(counts["roots"].sum(), torch.tensor(1.0, dtype=torch.float64))
    assert torch.allclose(counts["terminals"].sum(-1), torch.ones(1, t, dtype=torch.float64))
