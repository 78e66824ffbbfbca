"""Multi-sample exact FFBS (rdp.chain_sample) and path scores (rdp.chain_score) against enumeration.

Oracle: every state path of a tiny chain (N = 3, T <= 3: at most 27 paths) scored by a plain Python loop
(:func:`rdp_oracles.chain_scores`).  Frequencies are tested by chi-square with false-alarm rate
alpha = 1e-3 per item (``samplers.testing.assert_frequencies_match``), fixed seeds, with a negative control.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from rdp_oracles import chain_scores  # noqa: E402
from scipy import stats  # noqa: E402

import rdp  # noqa: E402
from samplers.testing import assert_frequencies_match  # noqa: E402

pytestmark = pytest.mark.torch
F64 = torch.float64
ALPHA = 1e-3
KINDS = ("shared", "per_step", "embeddings")
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def tiny_chain(kind: str, device: str = "cpu", n: int = 3, length: int = 3, seed: int = 0):
    """Emissions (2, T, N), the transition keyword argument, lengths [T, T - 1], and item b's (N, N) or
    (1, T-1, N, N) transition scores for the oracle."""
    g = torch.Generator().manual_seed(seed)
    em = 1.5 * torch.randn(2, length, n, generator=g, dtype=F64)
    if kind == "embeddings":
        emb = torch.randn(n, 2, generator=g, dtype=F64)
        kw, per_item = {"state_embeddings": emb.to(device)}, [emb @ emb.T] * 2
    elif kind == "shared":
        tr = 1.5 * torch.randn(n, n, generator=g, dtype=F64)
        kw, per_item = {"transitions": tr.to(device)}, [tr] * 2
    else:
        tr = 1.5 * torch.randn(2, length - 1, n, n, generator=g, dtype=F64)
        kw, per_item = {"transitions": tr.to(device)}, [tr[b:b + 1] for b in range(2)]
    return em.to(device), kw, torch.tensor([length, length - 1], device=device), per_item


def path_counts(paths: "torch.Tensor", b: int, length: int, n: int) -> "torch.Tensor":
    """Counts of item b's drawn paths (S, B, T) over the N^L paths, in itertools.product order."""
    code = torch.zeros(paths.shape[0], dtype=torch.long)
    for t in range(length):
        code = code * n + paths[:, b, t].cpu()
    return torch.bincount(code, minlength=n ** length)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kind", KINDS)
def test_samples_follow_the_exact_posterior_and_log_prob_is_exact(kind, device):
    """20,000 paths per item from one forward pass: chi-square against the enumerated posterior (alpha 1e-3),
    negative control at 1.5x the scores rejected; every path's log_prob equals its enumerated log p to 1e-10;
    -1 beyond each length."""
    em, kw, lengths, per_item = tiny_chain(kind, device)
    draws = rdp.chain_sample(em, lengths=lengths, n_samples=20_000,
                             generator=torch.Generator(device=device).manual_seed(3), **kw)
    assert draws.paths.shape == (20_000, 2, 3) and draws.log_prob.shape == (20_000, 2)
    assert draws.paths.device.type == device and bool((draws.paths[:, 1, 2] == -1).all())
    for b, length in enumerate(lengths.tolist()):
        paths, scores = chain_scores(em[b:b + 1].cpu(), per_item[b], length)
        log_p = scores - torch.logsumexp(scores, 0)
        counts = path_counts(draws.paths, b, length, 3)
        assert_frequencies_match(counts.numpy(), log_p.exp().numpy(), alpha=ALPHA, what=f"{kind} item {b}")
        if b == 0:
            with pytest.raises(AssertionError, match="do not match"):
                assert_frequencies_match(counts.numpy(), torch.softmax(1.5 * scores, 0).numpy(), alpha=ALPHA)
        index = {p: i for i, p in enumerate(paths)}
        drawn = [index[tuple(row)] for row in draws.paths[:, b, :length].cpu().tolist()]
        assert torch.allclose(draws.log_prob[:, b].cpu(), log_p[drawn], atol=1e-10, rtol=0)


@pytest.mark.parametrize("kind", KINDS)
def test_same_law_as_the_single_sample_gumbel_path(kind):
    """The S-sample draw and the hard path of Gumbel-FFBS (one sample per forward pass, 20,000 batch copies)
    agree: a chi-square test of homogeneity of their path counts, p > alpha = 1e-3."""
    em, kw, lengths, _ = tiny_chain(kind)
    one = {"transitions": kw["transitions"][:1]} if kind == "per_step" else kw
    many = rdp.chain_sample(em[:1], n_samples=20_000, generator=torch.Generator().manual_seed(5), **one).paths
    if kind == "per_step":
        kw = {"transitions": kw["transitions"][:1].expand(20_000, -1, -1, -1)}
    single = rdp.chain_gumbel_sample(em[:1].expand(20_000, -1, -1), generator=torch.Generator().manual_seed(6),
                                     **kw).hard
    assert homogeneity_p(many, single) > ALPHA
    if kind == "shared":  # negative control: Gumbel-FFBS of the transposed transitions is another law
        wrong = rdp.chain_gumbel_sample(em[:1].expand(20_000, -1, -1), kw["transitions"].T,
                                        generator=torch.Generator().manual_seed(6)).hard
        assert homogeneity_p(many, wrong) < ALPHA


def homogeneity_p(many: "torch.Tensor", single: "torch.Tensor") -> float:
    """p-value of the chi-square test that item 0's paths in ``many`` (S, B, T) and the paths ``single``
    (M, T) (one per batch copy) come from one law (paths seen in neither dropped)."""
    table = torch.stack([path_counts(many, 0, 3, 3), path_counts(single.unsqueeze(1), 0, 3, 3)])
    return float(stats.chi2_contingency(table[:, table.sum(0) > 0].numpy()).pvalue)


def test_sample_blocks_and_seeds():
    """Drawing in blocks of samples (block_elements = 1: one sample at a time) keeps the law (chi-square,
    alpha 1e-3); a fixed generator seed repeats the draw exactly."""
    em, kw, lengths, per_item = tiny_chain("shared")
    gen = torch.Generator().manual_seed(8)
    blocked = rdp.chain_sample(em[:1], n_samples=3000, generator=gen, block_elements=1, **kw).paths
    _, scores = chain_scores(em[:1], per_item[0], 3)
    assert_frequencies_match(path_counts(blocked, 0, 3, 3).numpy(), torch.softmax(scores, 0).numpy(), alpha=ALPHA)
    again = rdp.chain_sample(em[:1], n_samples=3000, generator=torch.Generator().manual_seed(8), block_elements=1,
                             **kw).paths
    assert torch.equal(blocked, again)


@pytest.mark.parametrize("kind", KINDS)
def test_chain_score_matches_a_python_loop_and_normalises(kind):
    """chain_score of every path equals the loop oracle's score; logsumexp over all paths is the forward
    algorithm's log Z (an independent DP); it is differentiable in the potentials."""
    em, kw, lengths, per_item = tiny_chain(kind)
    for b, length in enumerate(lengths.tolist()):
        paths, scores = chain_scores(em[b:b + 1], per_item[b], length)
        grid = torch.full((len(paths), 2, 3), -1, dtype=torch.long)
        grid[:, b, :length] = torch.tensor(paths)
        grid[:, 1 - b, :int(lengths[1 - b])] = 0
        got = rdp.chain_score(grid, em, lengths=lengths, **kw)[:, b]
        assert torch.allclose(got, scores, atol=1e-12, rtol=0)
        log_z = rdp.chain_log_partition(em, lengths=lengths, **kw)[b]
        assert abs(float(torch.logsumexp(got, 0) - log_z)) < 1e-10
    leaf = em.clone().requires_grad_(True)
    rdp.chain_score(torch.zeros(2, 3, dtype=torch.long), leaf, lengths=lengths, **kw).sum().backward()
    assert float(leaf.grad[:, :, 0].sum()) == 5.0  # state 0 at 3 + 2 active steps


def test_chain_forward_matches_chain_log_partition_in_both_spaces():
    """The no-grad forward's log Z equals chain_log_partition, in scaled space and, with potentials spread
    by ~1000 nats (the scaled product would underflow), in the log-space fallback."""
    em, kw, lengths, _ = tiny_chain("embeddings")
    for scale in (1.0, 400.0):
        alpha, log_z = rdp.chain_forward(em * scale, lengths=lengths, state_embeddings=kw["state_embeddings"] * scale)
        ref = rdp.chain_log_partition(em * scale, lengths=lengths, state_embeddings=kw["state_embeddings"] * scale)
        assert alpha.shape == (2, 3, 3) and torch.allclose(log_z, ref, rtol=1e-12, atol=1e-10)


def test_bad_arguments_name_themselves():
    em, kw, lengths, _ = tiny_chain("shared")
    with pytest.raises(ValueError, match="n_samples"):
        rdp.chain_sample(em, n_samples=0, **kw)
    with pytest.raises(ValueError, match="block_elements"):
        rdp.chain_sample(em, block_elements=0, **kw)
    with pytest.raises(ValueError, match="paths"):
        rdp.chain_score(torch.zeros(2, 3), em, **kw)  # float states
    with pytest.raises(ValueError, match="paths"):
        rdp.chain_score(torch.zeros(3, 2, dtype=torch.long), em, **kw)  # (T, B)
    with pytest.raises(ValueError, match="paths"):
        rdp.chain_score(torch.full((2, 3), 3), em, **kw)  # state N
    bad = torch.zeros(2, 3, dtype=torch.long)
    bad[1, 2] = -1  # beyond item 1's length 2: ignored
    assert torch.isfinite(rdp.chain_score(bad, em, lengths=lengths, **kw)).all()
