"""Top-down Gumbel sampling of labelled trees (exact and randomized) against enumeration."""

import itertools

import pytest

torch = pytest.importorskip("torch")

import numpy as np  # noqa: E402
from rdp_oracles import bracketings  # noqa: E402

import rdp  # noqa: E402
from samplers.testing import assert_frequencies_match  # noqa: E402

pytestmark = pytest.mark.torch
T, N, DRAWS = 3, 2, 6000


def _spans(seed, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return scale * torch.randn(1, T, T, N, generator=g, dtype=torch.float64)


def _trees(allowed=None):
    """Every labelled tree over T leaves as a frozenset of (i, j, k); optionally only allowed labels."""
    out = []
    for tree in bracketings(0, T - 1):
        for labels in itertools.product(range(N), repeat=len(tree)):
            if allowed is None or all(allowed[i][j][k] for (i, j), k in zip(tree, labels)):
                out.append(frozenset((i, j, k) for (i, j), k in zip(tree, labels)))
    return out


def _probs(spans, trees):
    scores = torch.stack([sum(spans[0, i, j, k] for i, j, k in tree) for tree in trees])
    return torch.softmax(scores, 0).numpy()


def _counts(hard, trees):
    code = {tree: c for c, tree in enumerate(trees)}
    counts = np.zeros(len(trees), dtype=int)
    for b in range(hard.shape[0]):
        idx = (hard[b] >= 0).nonzero().tolist()
        counts[code[frozenset((i, j, int(hard[b, i, j])) for i, j in idx)]] += 1
    return counts


def test_exact_tree_samples_follow_the_tree_crf():
    """Chi-square over all 64 labelled trees (T = 3, N = 2) of 6000 exact draws (alpha = 1e-3)."""
    spans = _spans(1)
    trees = _trees()
    sample = rdp.tree_gumbel_sample(spans.expand(DRAWS, -1, -1, -1), tau=0.5, generator=torch.Generator().manual_seed(2))
    assert_frequencies_match(_counts(sample.hard, trees), _probs(spans, trees), alpha=1e-3, what="tree Gumbel")
    on = sample.hard >= 0
    assert (on.sum((1, 2)) == 2 * T - 1).all() and on[:, 0, T - 1].all() and on[:, range(T), range(T)].all()
    assert torch.allclose(sample.relaxed.sum(-1), on.to(torch.float64))


def test_tree_sampling_chi_square_detects_wrong_potentials():
    """Negative control: draws from other potentials fail the same test."""
    spans, trees = _spans(1), _trees()
    other = rdp.tree_gumbel_sample(spans.flip(-1).expand(DRAWS, -1, -1, -1), generator=torch.Generator().manual_seed(2))
    with pytest.raises(AssertionError):
        assert_frequencies_match(_counts(other.hard, trees), _probs(spans, trees), alpha=1e-3)


def test_randomized_tree_sampling_at_full_budget_is_exact():
    spans, trees = _spans(3), _trees()
    sample = rdp.randomized_tree_gumbel_sample(spans.expand(DRAWS, -1, -1, -1), k1=1, k2=1,
                                               generator=torch.Generator().manual_seed(4))
    assert_frequencies_match(_counts(sample.hard, trees), _probs(spans, trees), alpha=1e-3, what="RDP tree, K = N")


def test_top_k_tree_sampling_draws_from_the_restricted_crf():
    """k2 = 0 with the local proposal keeps the top-1 label per span: draws follow the CRF restricted to it."""
    spans = _spans(5, scale=1.5)
    top = spans[0].argmax(-1)
    allowed = [[[k == int(top[i, j]) for k in range(N)] for j in range(T)] for i in range(T)]
    trees = _trees(allowed)
    sample = rdp.randomized_tree_gumbel_sample(spans.expand(DRAWS, -1, -1, -1), k1=1, k2=0, proposal="local",
                                               generator=torch.Generator().manual_seed(6))
    assert_frequencies_match(_counts(sample.hard, trees), _probs(spans, trees), alpha=1e-3, what="Top-1 tree")


def test_straight_through_and_bad_tau():
    spans = _spans(7).expand(4, -1, -1, -1)
    s = rdp.tree_gumbel_sample(spans, tau=0.2, straight_through=True, generator=torch.Generator().manual_seed(0))
    one_hot = torch.nn.functional.one_hot(s.hard.clamp_min(0), N).to(s.relaxed.dtype) * (s.hard >= 0).unsqueeze(-1)
    assert torch.allclose(s.relaxed, one_hot)
    with pytest.raises(ValueError, match="tau"):
        rdp.tree_gumbel_sample(spans, tau=0.0)
    with pytest.raises(ValueError, match="k1"):
        rdp.randomized_tree_gumbel_sample(spans, k1=0, k2=0)
