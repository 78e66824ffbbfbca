"""The one PCFG inside on index sets (rdp.pcfg): the all-nonterminal contraction equals the per-span-set one,
Viterbi from the max reduction against enumeration, and Gumbel sampling of parse trees (exact, randomized at full
budget, Top-K and on fixed weighted sets with repeats) by chi-square against enumeration, with negative controls."""

import itertools
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from rdp_oracles import bracketings, pcfg_truth  # noqa: E402

import rdp  # noqa: E402
from rdp.pcfg import pcfg_inside_on_sets, pcfg_topdown  # noqa: E402
from rdp.selection import IndexSets, select_indices  # noqa: E402
from samplers.testing import assert_frequencies_match  # noqa: E402

pytestmark = pytest.mark.torch
T, NT, DRAWS = 3, 2, 6000


def _pcfg(seed, b=1, t=T, nt=NT, shared=True, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    rules = scale * torch.randn(*(() if shared else (b,)), nt, nt, nt, generator=g, dtype=torch.float64)
    terminal = scale * torch.randn(b, t, nt, generator=g, dtype=torch.float64)
    root = scale * torch.randn(nt, generator=g, dtype=torch.float64)
    return rules, terminal, root


def _enumerate(rules, terminal, root, sets=None):
    """{labelled tree (frozenset of (i, j, A)): log of its total weight} for item 0, summed over set positions."""
    length = terminal.shape[1]
    out = {}
    for tree in bracketings(0, length - 1):
        k = terminal.shape[-1] if sets is None else sets.index.shape[-1]
        for positions in itertools.product(range(k), repeat=len(tree)):
            pos = dict(zip(tree, positions))
            lab = {span: (p if sets is None else int(sets.index[0, span[0], span[1], p])) for span, p in pos.items()}
            s = float(root[lab[(0, length - 1)]])
            for (i, j), a in lab.items():
                if sets is not None:
                    s += float(sets.log_weight[0, i, j, pos[(i, j)]])
                if i == j:
                    s += float(terminal[0, i, a])
                else:
                    m = next(m for m in range(i, j) if (i, m) in lab and (m + 1, j) in lab)
                    s += float(rules[a, lab[(i, m)], lab[(m + 1, j)]])
            key = frozenset((i, j, a) for (i, j), a in lab.items())
            out[key] = np.logaddexp(out.get(key, -np.inf), s)
    return out


def _check_draws(hard, weights, what, alpha=1e-3):
    trees = list(weights)
    logw = np.array([weights[t] for t in trees])
    probs = np.exp(logw - np.logaddexp.reduce(logw))
    code = {tree: c for c, tree in enumerate(trees)}
    counts = np.zeros(len(trees), dtype=int)
    for b in range(hard.shape[0]):
        idx = (hard[b] >= 0).nonzero().tolist()
        counts[code[frozenset((i, j, int(hard[b, i, j])) for i, j in idx)]] += 1
    assert_frequencies_match(counts, probs, alpha=alpha, what=what)


# ---------------------------------------------------------------- one recursion, two contraction orders

@pytest.mark.parametrize("semiring", ["log", "max"])
@pytest.mark.parametrize("shared", [True, False])
def test_full_sets_equal_the_all_nonterminal_contraction(semiring, shared):
    """Explicit full sets (every A, weight 1) give the same value and gradients as ``sets=None``."""
    rules, terminal, root = (x.requires_grad_(True) for x in _pcfg(1, b=2, t=5, nt=4, shared=shared))
    full = IndexSets(torch.arange(4).expand(2, 5, 5, 4), torch.zeros(2, 5, 5, 4, dtype=torch.float64))
    a = pcfg_inside_on_sets(rules, terminal, root, semiring=semiring)
    b = pcfg_inside_on_sets(rules, terminal, root, full, semiring=semiring)
    assert torch.allclose(a, b, atol=1e-12, rtol=0)
    ga = torch.autograd.grad(a.sum(), (rules, terminal, root))
    gb = torch.autograd.grad(b.sum(), (rules, terminal, root))
    assert all(torch.allclose(x, y, atol=1e-12) for x, y in zip(ga, gb))


@pytest.mark.parametrize("seed", range(3))
def test_exact_inside_and_entropy_match_enumeration(seed):
    rules, terminal, root = _pcfg(seed, t=4, nt=3)
    log_z, ent = pcfg_truth(rules, terminal, root)
    assert torch.allclose(rdp.pcfg_log_partition(rules, terminal, root)[0], log_z, atol=1e-12)
    assert torch.allclose(rdp.pcfg_entropy(rules, terminal, root)[0], ent, atol=1e-12)


def test_weighted_sets_inside_matches_enumeration_with_repeats():
    """On fixed sets drawn with replacement (repeats allowed) the recursion is log sum_y W(y) exp(s(y))."""
    rules, terminal, root = _pcfg(4, nt=4)
    q = torch.tensor([0.4, 0.3, 0.2, 0.1], dtype=torch.float64).expand(1, T, T, 4)
    sets = select_indices(q, 1, 2, torch.Generator().manual_seed(2))
    assert len({tuple(r) for r in sets.index.reshape(-1, 3).tolist()}) > 1 and bool((sets.log_weight != 0).any())
    weights = _enumerate(rules, terminal, root, sets)
    expected = np.logaddexp.reduce(np.array(list(weights.values())))
    assert math.isclose(float(pcfg_inside_on_sets(rules, terminal, root, sets)[0]), expected, abs_tol=1e-12)


def test_gradcheck_exact_and_sets():
    rules, terminal, root = (x.requires_grad_(True) for x in _pcfg(5, b=2, t=3, nt=2, shared=False))
    assert torch.autograd.gradcheck(rdp.pcfg_log_partition, (rules, terminal, root))
    assert torch.autograd.gradcheck(lambda r, t, o: rdp.pcfg_viterbi(r, t, o).score, (rules, terminal, root))
    sets = select_indices(torch.full((2, 3, 3, 2), 0.5, dtype=torch.float64), 0, 2, torch.Generator().manual_seed(0))
    assert torch.autograd.gradcheck(lambda r, t, o: pcfg_inside_on_sets(r, t, o, sets), (rules, terminal, root))


def test_bad_semiring():
    with pytest.raises(ValueError, match="semiring"):
        pcfg_inside_on_sets(*_pcfg(0), semiring="sum")


# ---------------------------------------------------------------- Viterbi

@pytest.mark.parametrize("seed", range(3))
def test_viterbi_matches_enumeration(seed):
    rules, terminal, root = _pcfg(10 + seed, t=4, nt=2, scale=2.0)
    weights = _enumerate(rules, terminal, root)
    best = max(weights, key=weights.get)
    out = rdp.pcfg_viterbi(rules, terminal, root)
    assert math.isclose(float(out.score[0]), weights[best], abs_tol=1e-12)
    decoded = frozenset((i, j, int(out.hard[0, i, j])) for i, j in (out.hard[0] >= 0).nonzero().tolist())
    # distinct parses can use the same multiset of rules (exact ties): the decoded parse must score the maximum
    assert math.isclose(weights[decoded], weights[best], abs_tol=1e-12)
    runner_up = max(v for k, v in weights.items() if not math.isclose(v, weights[best], abs_tol=1e-12))
    assert weights[best] > runner_up   # negative control: not every parse scores the maximum


def test_viterbi_batched_rules_each_item_its_own_best():
    rules, terminal, root = _pcfg(20, b=3, t=3, nt=2, shared=False, scale=2.0)
    out = rdp.pcfg_viterbi(rules, terminal, root)
    for b in range(3):
        weights = _enumerate(rules[b], terminal[b: b + 1], root)
        best = max(weights, key=weights.get)
        assert math.isclose(float(out.score[b]), weights[best], abs_tol=1e-12)
        decoded = frozenset((i, j, int(out.hard[b, i, j])) for i, j in (out.hard[b] >= 0).nonzero().tolist())
        assert math.isclose(weights[decoded], weights[best], abs_tol=1e-12)


# ---------------------------------------------------------------- Gumbel sampling

def test_exact_pcfg_samples_follow_the_pcfg():
    """Chi-square over all 64 parse trees (T = 3, NT = 2) of 6000 exact draws (alpha = 1e-3)."""
    rules, terminal, root = _pcfg(1)
    hard = rdp.pcfg_gumbel_sample(rules, terminal.expand(DRAWS, -1, -1), root, generator=torch.Generator().manual_seed(2))
    assert bool(((hard >= 0).sum((1, 2)) == 2 * T - 1).all())
    _check_draws(hard, _enumerate(rules, terminal, root), "PCFG Gumbel")


def test_pcfg_sampling_chi_square_detects_wrong_rules():
    """Negative control: draws from the PCFG with permuted rule scores fail the same test."""
    rules, terminal, root = _pcfg(1)
    hard = rdp.pcfg_gumbel_sample(rules.flip(0), terminal.expand(DRAWS, -1, -1), root,
                                  generator=torch.Generator().manual_seed(2))
    with pytest.raises(AssertionError):
        _check_draws(hard, _enumerate(rules, terminal, root), "wrong PCFG")


def test_batched_rules_sampling():
    rules, terminal, root = _pcfg(3, b=1, shared=False)
    hard = rdp.pcfg_gumbel_sample(rules.expand(DRAWS, -1, -1, -1), terminal.expand(DRAWS, -1, -1), root,
                                  generator=torch.Generator().manual_seed(4))
    _check_draws(hard, _enumerate(rules[0], terminal, root), "PCFG Gumbel, per-item rules")


def test_randomized_sampling_at_full_budget_is_exact():
    rules, terminal, root = _pcfg(5)
    hard = rdp.randomized_pcfg_gumbel_sample(rules, terminal.expand(DRAWS, -1, -1), root, k1=1, k2=1,
                                             proposal="local", generator=torch.Generator().manual_seed(6))
    _check_draws(hard, _enumerate(rules, terminal, root), "RDP PCFG, K = NT")


def test_top_k_sampling_draws_from_the_restricted_pcfg():
    """k2 = 0 with the local proposal: draws follow the PCFG restricted to each span's top nonterminal."""
    rules, terminal, root = _pcfg(7, nt=3, scale=1.5)
    hard = rdp.randomized_pcfg_gumbel_sample(rules, terminal.expand(DRAWS, -1, -1), root, k1=1, k2=0,
                                             proposal="local", generator=torch.Generator().manual_seed(8))
    from rdp.randomized_pcfg import pcfg_site_scores
    top = pcfg_site_scores(rules, terminal)[0].argmax(-1)       # (T, T)
    sets = IndexSets(top[None, :, :, None], torch.zeros(1, T, T, 1, dtype=torch.float64))
    _check_draws(hard, _enumerate(rules, terminal, root, sets), "Top-1 PCFG")


def test_sampling_on_weighted_sets_with_repeats_follows_w_times_exp_score():
    """On fixed sets with weights 1 / (K2 q) (and repeated members) the draws follow W(y) exp(s(y)) / Z-hat."""
    rules, terminal, root = _pcfg(9, nt=4)
    sets = select_indices(torch.tensor([0.4, 0.35, 0.2, 0.05], dtype=torch.float64).expand(1, T, T, 4), 1, 2,
                          torch.Generator().manual_seed(0))
    batch_sets = IndexSets(sets.index.expand(DRAWS, -1, -1, -1), sets.log_weight.expand(DRAWS, -1, -1, -1))
    chart = pcfg_inside_on_sets(rules, terminal.expand(DRAWS, -1, -1), root, batch_sets, return_chart=True)
    hard = pcfg_topdown(chart, rules, generator=torch.Generator().manual_seed(3))
    weights = _enumerate(rules, terminal, root, sets)
    _check_draws(hard, weights, "PCFG on weighted sets")
    assert float(sets.log_weight.max() - sets.log_weight[..., 1:].min()) > 1.0   # weights differ by > e
    unweighted = _enumerate(rules, terminal, root, IndexSets(sets.index, 0 * sets.log_weight))
    with pytest.raises(AssertionError):   # negative control: ignoring the weights is detected
        _check_draws(hard, unweighted, "unweighted")


def test_sampling_bad_input():
    rules, terminal, root = _pcfg(0)
    with pytest.raises(TypeError, match="generator"):
        rdp.pcfg_gumbel_sample(rules, terminal, root, generator=3)
    with pytest.raises(ValueError, match="rule_scores"):
        rdp.pcfg_gumbel_sample(rules[0], terminal, root)
    with pytest.raises(ValueError, match="k1"):
        rdp.randomized_pcfg_gumbel_sample(rules, terminal, root, k1=-1, k2=1)


def test_equals_torch_struct_sent_cfg():
    """log Z, rule / terminal / root marginals, entropy and the best parse's score equal torch-struct's SentCFG
    (our symbols serve as its nonterminals and its preterminals: the rule tensor repeated over the 2 x 2 blocks)."""
    torch_struct = pytest.importorskip("torch_struct")
    import warnings

    rules, terminal, root = _pcfg(30, b=2, t=6, nt=4)
    big = rules.repeat(1, 2, 2).expand(2, -1, -1, -1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)   # torch-struct's missing arg_constraints
        dist = torch_struct.SentCFG((terminal, big, root.expand(2, -1)))
        log_z, marg, ent, best = dist.partition, dist.marginals, dist.entropy, dist.max
    assert torch.allclose(rdp.pcfg_log_partition(rules, terminal, root), log_z, atol=1e-12, rtol=0)
    counts = rdp.pcfg_marginals(rules, terminal, root)
    assert torch.allclose(counts["terminals"], marg[0], atol=1e-12)
    assert torch.allclose(counts["rules"], marg[1].reshape(2, 4, 2, 4, 2, 4).sum((0, 2, 4)), atol=1e-10)
    assert torch.allclose(counts["roots"], marg[2].sum(0), atol=1e-12)
    assert torch.allclose(rdp.pcfg_entropy(rules, terminal, root), ent, atol=1e-10, rtol=0)
    assert torch.allclose(rdp.pcfg_viterbi(rules, terminal, root).score, best, atol=1e-12, rtol=0)
