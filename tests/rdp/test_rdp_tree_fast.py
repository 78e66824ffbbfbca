"""The width-vectorised tree inside (labels reduced once, split recursion with an outside-pass backward) against
the label-resolved recursion it replaced, brute-force enumeration and torch-struct's TreeCRF; Viterbi; gradcheck;
the uniform-proposal selection."""

import itertools
import math
import warnings

import pytest

torch = pytest.importorskip("torch")

from rdp_oracles import bracketings, tree_truth  # noqa: E402

import rdp  # noqa: E402
from rdp.selection import select_uniform  # noqa: E402
from rdp.tree import inside_on_sets  # noqa: E402
from samplers.testing import assert_close_in_se, assert_frequencies_match  # noqa: E402

pytestmark = pytest.mark.torch


def _spans(seed, b=2, t=6, n=5, scale=1.0):
    return scale * torch.randn(b, t, t, n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def label_resolved_inside(chosen, log_weight):
    """The previous rdp.tree recursion (alpha(i, j, k) kept per label, one split at a time), as the reference."""
    length = chosen.shape[1]
    beta = []
    for w in range(length):
        starts = torch.arange(length - w)
        phi = chosen[:, starts, starts + w] + log_weight[:, starts, starts + w]
        if w == 0:
            alpha = phi
        else:
            splits = torch.stack([beta[d][:, : length - w] + beta[w - 1 - d][:, d + 1: d + 1 + length - w]
                                  for d in range(w)], dim=-1)
            alpha = phi + torch.logsumexp(splits, dim=-1, keepdim=True)
        beta.append(torch.logsumexp(alpha, dim=-1))
    return beta[length - 1][:, 0]


def best_tree(spans):
    """Arg max and max score over all labelled trees of item 0 (enumeration)."""
    length, n = spans.shape[1], spans.shape[-1]
    best, best_score = None, -math.inf
    for tree in bracketings(0, length - 1):
        for labels in itertools.product(range(n), repeat=len(tree)):
            s = float(sum(spans[0, i, j, k] for (i, j), k in zip(tree, labels)))
            if s > best_score:
                best, best_score = dict(zip(tree, labels)), s
    return best, best_score


# ---------------------------------------------------------------- equal to the old recursion and to enumeration

@pytest.mark.parametrize("seed", range(4))
def test_fast_inside_equals_label_resolved_recursion_on_weighted_sets(seed):
    """log Z and its gradient (outside pass and autograd path) equal the label-resolved recursion to 1e-12."""
    g = torch.Generator().manual_seed(100 + seed)
    chosen = torch.randn(3, 7, 7, 4, generator=g, dtype=torch.float64).requires_grad_(True)
    log_w = torch.randn(3, 7, 7, 4, generator=g, dtype=torch.float64)
    ref = label_resolved_inside(chosen, log_w)
    (ref_grad,) = torch.autograd.grad(ref.sum(), chosen)
    for double_backward in (False, True):
        fast = inside_on_sets(chosen, log_w, double_backward=double_backward)
        (grad,) = torch.autograd.grad(fast.sum(), chosen)
        assert torch.allclose(fast, ref, atol=1e-12, rtol=0)
        upper = torch.ones(7, 7, dtype=torch.bool).triu()
        assert torch.allclose(grad[:, upper], ref_grad[:, upper], atol=1e-12, rtol=0)
        assert bool((grad[:, ~upper] == 0).all())


@pytest.mark.parametrize("seed", range(3))
def test_viterbi_matches_enumeration(seed):
    spans = _spans(seed, b=1, t=4, n=2, scale=2.0)
    best, score = best_tree(spans)
    out = rdp.tree_viterbi(spans)
    assert math.isclose(float(out.score[0]), score, abs_tol=1e-12)
    decoded = {(i, j): int(out.hard[0, i, j]) for i, j in (out.hard[0] >= 0).nonzero().tolist()}
    assert decoded == best
    assert float(out.score[0]) <= float(rdp.tree_log_partition(spans)[0])   # max <= logsumexp


def test_viterbi_negative_control_and_score_gradient_is_the_tree():
    """The best tree's score is the sum of its span potentials, and its gradient is the tree's indicator."""
    spans = _spans(7, b=3, t=8, n=6).requires_grad_(True)
    out = rdp.tree_viterbi(spans)
    (grad,) = torch.autograd.grad(out.score.sum(), spans)
    indicator = torch.nn.functional.one_hot(out.hard.clamp_min(0), 6).to(spans.dtype) * (out.hard >= 0)[..., None]
    assert torch.equal(grad, indicator)
    assert torch.allclose((spans * indicator).sum((1, 2, 3)), out.score)
    # a different tree (the draw of a sampler) never scores more
    other = rdp.tree_gumbel_sample(spans.detach(), generator=torch.Generator().manual_seed(1)).hard
    other_score = (spans * torch.nn.functional.one_hot(other.clamp_min(0), 6) * (other >= 0)[..., None]).sum((1, 2, 3))
    assert bool((other_score <= out.score + 1e-12).all())


def test_entropy_and_marginals_match_enumeration_at_t5():
    spans = _spans(3, b=1, t=5, n=2)
    log_z, marg, ent = tree_truth(spans)
    upper = torch.ones(5, 5, dtype=torch.bool).triu()
    assert torch.allclose(rdp.tree_log_partition(spans)[0], log_z, atol=1e-12)
    assert torch.allclose(rdp.tree_marginals(spans)[0][upper], marg[upper], atol=1e-12)
    assert torch.allclose(rdp.tree_entropy(spans)[0], ent, atol=1e-12)


# ---------------------------------------------------------------- torch-struct

def test_equals_torch_struct_tree_crf():
    """log Z, marginals, entropy and Viterbi equal torch-struct's TreeCRF (float64, B = 3, T = 9, N = 7)."""
    torch_struct = pytest.importorskip("torch_struct")
    spans = _spans(11, b=3, t=9, n=7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)   # torch-struct's missing arg_constraints
        dist = torch_struct.TreeCRF(spans)
        log_z, marg, ent, argmax = dist.partition, dist.marginals, dist.entropy, dist.argmax
    upper = torch.ones(9, 9, dtype=torch.bool).triu()
    assert torch.allclose(rdp.tree_log_partition(spans), log_z, atol=1e-12, rtol=0)
    assert torch.allclose(rdp.tree_marginals(spans)[:, upper], marg[:, upper], atol=1e-12, rtol=0)
    assert torch.allclose(rdp.tree_entropy(spans), ent, atol=1e-10, rtol=0)
    hard = rdp.tree_viterbi(spans).hard
    ours = torch.nn.functional.one_hot(hard.clamp_min(0), 7).to(spans.dtype) * (hard >= 0)[..., None]
    assert torch.equal(ours[:, upper], argmax[:, upper])


# ---------------------------------------------------------------- gradients

def test_gradcheck_log_partition_entropy_and_viterbi_score():
    spans = _spans(5, b=2, t=4, n=3).requires_grad_(True)
    small = _spans(5, b=1, t=3, n=2).requires_grad_(True)
    assert torch.autograd.gradcheck(rdp.tree_log_partition, (spans,))
    assert torch.autograd.gradcheck(lambda s: inside_on_sets(s, double_backward=True), (spans,))
    assert torch.autograd.gradgradcheck(lambda s: inside_on_sets(s, double_backward=True), (small,))
    assert torch.autograd.gradcheck(rdp.tree_entropy, (small,))
    assert torch.autograd.gradcheck(lambda s: rdp.tree_viterbi(s).score, (spans,))   # ties have probability 0
    sets = select_uniform((2, 4, 4), 3, 1, 1, torch.Generator().manual_seed(0))
    assert torch.autograd.gradcheck(lambda s: inside_on_sets(s.gather(3, sets.index), sets.log_weight), (spans,))


def test_marginals_of_a_grad_requiring_input_are_differentiable():
    spans = _spans(6, b=1, t=4, n=3).requires_grad_(True)
    marg = rdp.tree_marginals(spans)
    (g,) = torch.autograd.grad((marg * marg).sum(), spans)
    assert bool(torch.isfinite(g).all()) and float(g.abs().sum()) > 0


def test_bad_semiring():
    with pytest.raises(ValueError, match="semiring"):
        inside_on_sets(_spans(0), semiring="tropical")


# ---------------------------------------------------------------- uniform selection without the proposal tensor

def test_select_uniform_draws_uniformly_from_the_remainder():
    """K2 draws are uniform over the N - K1 labels outside the top K1 (chi-square), weights log((N - K1) / K2)."""
    sets = select_uniform((4000,), 7, 2, 3, torch.Generator().manual_seed(3))
    assert bool((sets.index[:, :2] == torch.arange(2)).all())
    assert bool((sets.log_weight[:, :2] == 0).all())
    assert torch.allclose(sets.log_weight[:, 2:], torch.full((4000, 3), math.log(5 / 3), dtype=torch.float64))
    counts = torch.bincount(sets.index[:, 2:].reshape(-1), minlength=7)[2:].numpy()
    assert_frequencies_match(counts, [0.2] * 5, alpha=1e-3, what="select_uniform")
    with pytest.raises(AssertionError):   # negative control: the top labels' frequencies are not uniform over all
        assert_frequencies_match(torch.bincount(sets.index.reshape(-1), minlength=7).numpy(), [1 / 7] * 7)


def test_select_uniform_weighted_sums_are_unbiased_and_full_budget_enumerates():
    """sum_{c in Omega} w(c) f(c) over 4000 sites has mean sum_i f(i) within 4 SE; dropping w fails."""
    f = torch.linspace(0.1, 2.0, 9, dtype=torch.float64)
    sets = select_uniform((4000,), 9, 1, 2, torch.Generator().manual_seed(4))
    est = (f[sets.index] * sets.log_weight.exp()).sum(-1)
    assert_close_in_se(est.mean(), f.sum(), se=est.std() / math.sqrt(4000), k=4, what="uniform RDP sum")
    biased = f[sets.index].sum(-1)
    with pytest.raises(AssertionError):
        assert_close_in_se(biased.mean(), f.sum(), se=biased.std() / math.sqrt(4000), k=4)
    full = select_uniform((2, 3), 9, 4, 5)
    assert torch.equal(full.index, torch.arange(9).expand(2, 3, 9)) and bool((full.log_weight == 0).all())


def test_randomized_tree_k1_k2_equals_exact_at_full_budget_with_uniform_proposal():
    spans = _spans(8)
    for k1, k2 in ((0, 5), (2, 3), (5, 0)):
        est = rdp.randomized_tree_log_partition(spans, k1=k1, k2=k2, generator=torch.Generator().manual_seed(0))
        assert torch.allclose(est, rdp.tree_log_partition(spans), atol=1e-12)


def test_label_gather_equals_gather_and_keeps_only_the_index_for_backward():
    """RDP's autograd memory does not hold the (B, T, T, N) potentials (torch.gather would save them)."""
    from rdp.memory import measure
    from rdp.randomized_tree import gather_labels

    g = torch.Generator().manual_seed(0)
    spans = torch.randn(2, 6, 6, 500, generator=g, dtype=torch.float64).requires_grad_(True)
    index = torch.randint(500, (2, 6, 6, 5), generator=g)
    assert torch.equal(gather_labels(spans, index), spans.gather(3, index))
    _, saved = measure(lambda: rdp.randomized_tree_log_partition(spans, k1=2, k2=3, generator=g))
    _, exact_saved = measure(lambda: rdp.tree_log_partition(spans))
    potentials = spans.numel() * spans.element_size()
    assert saved < potentials / 10 <= exact_saved / 10   # exact's logsumexp saves its input: negative control
