"""rdp.LinearChainCRF / TreeCRF / SentCFG: torch-struct's layout on ragged batches, against torch-struct (the
peer), brute-force enumeration (samples, log_prob) and the exact answers (unbiasedness of RDP's Z-hat)."""

import itertools
import math
import warnings

import pytest

torch = pytest.importorskip("torch")
torch_struct = pytest.importorskip("torch_struct")

from rdp_oracles import bracketings  # noqa: E402

import rdp  # noqa: E402
from samplers.testing import assert_frequencies_match  # noqa: E402

pytestmark = pytest.mark.torch
F64 = torch.float64


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _chain(seed, batch=4, n=20, c=4, scale=1.0, dtype=F64):
    return (scale * torch.randn(batch, n - 1, c, c, generator=_gen(seed), dtype=F64)).to(dtype)


def _tree(seed, batch=4, n=20, nt=3, scale=1.0, dtype=F64):
    return (scale * torch.randn(batch, n, n, nt, generator=_gen(seed), dtype=F64)).to(dtype)


def _cfg(seed, batch=4, n=20, nt=3, t=4, scale=1.0, dtype=F64):
    g = _gen(seed)
    shapes = ((batch, n, t), (batch, nt, nt + t, nt + t), (batch, nt))
    return tuple((scale * torch.randn(shape, generator=g, dtype=F64)).to(dtype) for shape in shapes)


RAGGED = torch.tensor([20, 2, 11, 7])          # lengths differing by 10x, the longest = N (torch-struct's rule)


def _peer(cls, potentials, lengths):
    with warnings.catch_warnings():             # torch-struct's distributions define no arg_constraints
        warnings.simplefilter("ignore", UserWarning)
        return cls(potentials, lengths=lengths)


def _close(a, b, tol=1e-6):
    assert torch.allclose(a.detach(), b.detach(), atol=tol, rtol=0), float((a - b).abs().max())


@pytest.mark.parametrize("name", ["LinearChainCRF", "TreeCRF"])
def test_chain_and_tree_equal_torch_struct_on_a_ragged_batch(name):
    potentials = _chain(0) if name == "LinearChainCRF" else _tree(1)
    ours = getattr(rdp, name)(potentials, lengths=RAGGED)
    peer = _peer(getattr(torch_struct, name), potentials, RAGGED)
    _close(ours.partition, peer.partition)
    _close(ours.marginals, peer.marginals)
    _close(ours.max, peer.max)
    _close(ours.argmax, peer.argmax)
    _close(ours.entropy, peer.entropy)


def test_sentcfg_equals_torch_struct_on_a_ragged_batch():
    potentials = _cfg(2)
    ours = rdp.SentCFG(potentials, lengths=RAGGED)
    peer = _peer(torch_struct.SentCFG, potentials, RAGGED)
    _close(ours.partition, peer.partition)
    for mine, theirs in zip(ours.marginals, peer.marginals[:3]):       # terms, rules, roots (expected counts)
        _close(mine, theirs)
    _close(ours.max, peer.max)
    for mine, theirs in zip(ours.argmax, peer.argmax[:3]):
        _close(mine, theirs)
    _close(ours.entropy, peer.entropy)


@pytest.mark.parametrize("name", ["LinearChainCRF", "TreeCRF", "SentCFG"])
def test_float32_at_scores_of_magnitude_1e3_stays_finite_and_agrees_with_float64(name):
    make = {"LinearChainCRF": _chain, "TreeCRF": _tree, "SentCFG": _cfg}[name]
    cls = getattr(rdp, name)
    lengths = torch.tensor([20, 2, 11, 7])
    single = cls(make(3, scale=1e3, dtype=torch.float32), lengths=lengths)
    double = cls(make(3, scale=1e3, dtype=F64), lengths=lengths)
    marginals = single.marginals if name == "SentCFG" else (single.marginals,)
    for value in (single.partition, single.max, single.entropy, *marginals):
        assert value.dtype == torch.float32 and bool(torch.isfinite(value).all())
    # log Z ~ 1e4 here: float32 rounding of the scores (eps ~ 6e-8 relative) bounds the agreement
    assert torch.allclose(single.partition.double(), double.partition, rtol=1e-5, atol=0)
    assert torch.allclose(single.max.double(), double.max, rtol=1e-5, atol=0)
    # entropies are O(1) here: the chain's entropy DP and the trees' float64 identity keep them to 1e-3 nats
    # (log Z - E[score] evaluated in float32 lost 5 nats on the tree CRF)
    assert torch.allclose(single.entropy.double(), double.entropy, atol=1e-3, rtol=0)
    assert bool(torch.isfinite(single.sample(3)[0] if name == "SentCFG" else single.sample(3)).all())


# --- enumeration oracles (independent of the DPs) --------------------------------------------------------

def _chain_structures(lp, b, length):
    """{key: score} of every state path of item b (key: its edges (n, c_next, c_prev))."""
    c = lp.shape[-1]
    out = {}
    for path in itertools.product(range(c), repeat=length):
        key = tuple((n, path[n + 1], path[n]) for n in range(length - 1))
        out[key] = float(sum(lp[b, n, path[n + 1], path[n]] for n in range(length - 1)))
    return out


def _tree_structures(spans, b, length):
    nt = spans.shape[-1]
    out = {}
    for tree in bracketings(0, length - 1):
        for labels in itertools.product(range(nt), repeat=len(tree)):
            key = tuple(sorted((i, j, k) for (i, j), k in zip(tree, labels)))
            out[key] = float(sum(spans[b, i, j, k] for i, j, k in key))
    return out


def _cfg_structures(potentials, b, length):
    """{key: score} of every parse of item b; key: its sorted rule, preterminal and root counts."""
    terms, rules, roots = potentials
    nt, t = rules.shape[1], terms.shape[-1]
    out = {}
    for tree in bracketings(0, length - 1):
        wide = [s for s in tree if s[0] < s[1]]
        leaves = [s for s in tree if s[0] == s[1]]
        for inner in itertools.product(range(nt), repeat=len(wide)):
            for pre in itertools.product(range(t), repeat=len(leaves)):
                sym = {**dict(zip(wide, inner)), **{s: nt + p for s, p in zip(leaves, pre)}}
                counts = {}
                for (i, j) in wide:
                    m = max(e for (s, e) in sym if s == i and e < j)
                    rule = ("rule", sym[(i, j)], sym[(i, m)], sym[(m + 1, j)])
                    counts[rule] = counts.get(rule, 0) + 1
                for (i, _), p in zip(leaves, pre):
                    counts[("term", i, p)] = 1
                counts[("root", sym[(0, length - 1)])] = 1
                score = float(roots[b, sym[(0, length - 1)]]) + sum(float(terms[b, i, p]) for (i, _), p in
                                                                  zip(leaves, pre))
                score += sum(n * float(rules[b, r[1], r[2], r[3]]) for r, n in counts.items() if r[0] == "rule")
                out[tuple(sorted(counts.items()))] = score
    return out


def _event_key(name, event, s, b):
    if name == "SentCFG":
        terms, rules, roots = (x[s, b] for x in event)
        counts = {("rule", *map(int, idx)): int(rules[tuple(idx)]) for idx in torch.nonzero(rules)}
        counts.update({("term", int(i), int(p)): 1 for i, p in torch.nonzero(terms)})
        counts[("root", int(torch.nonzero(roots)[0, 0]))] = 1
        return tuple(sorted(counts.items()))
    return tuple(sorted(tuple(map(int, idx)) for idx in torch.nonzero(event[s, b])))


SMALL = {"LinearChainCRF": (lambda: _chain(4, batch=2, n=4, c=2), _chain_structures),
         "TreeCRF": (lambda: _tree(5, batch=2, n=3, nt=2), _tree_structures),
         "SentCFG": (lambda: _cfg(6, batch=2, n=3, nt=2, t=2), _cfg_structures)}


@pytest.mark.parametrize("name", sorted(SMALL))
def test_samples_match_enumeration_and_log_prob_is_score_minus_log_z(name):
    """Chi-square of 4000 exact draws per item against enumeration (false-alarm rate 1e-3 per item, with a
    negative control), on a ragged batch; log_prob of every drawn event equals its enumerated score minus the enumerated log Z."""
    make, structures = SMALL[name]
    potentials, lengths, draws = make(), torch.tensor([3 if name != "LinearChainCRF" else 4, 2]), 4000
    dist = getattr(rdp, name)(potentials, lengths=lengths)
    events = dist.sample((draws,), generator=_gen(7))
    log_prob = dist.log_prob(events)
    assert log_prob.shape == (draws, 2)
    for b, length in enumerate(lengths.tolist()):
        table = structures(potentials, b, length)
        keys = sorted(table)
        scores = torch.tensor([table[k] for k in keys], dtype=F64)
        log_z = torch.logsumexp(scores, 0)
        assert math.isclose(float(dist.partition[b]), float(log_z), abs_tol=1e-9)
        code = {k: i for i, k in enumerate(keys)}
        drawn = [code[_event_key(name, events, s, b)] for s in range(draws)]   # KeyError: an impossible structure
        counts = torch.bincount(torch.tensor(drawn), minlength=len(keys)).numpy()
        assert_frequencies_match(counts, torch.softmax(scores, 0).numpy(), what=f"{name} item {b}")
        if b == 0:      # negative control: the same draws reject the distribution at 1.5x the scores
            with pytest.raises(AssertionError, match="do not match"):
                assert_frequencies_match(counts, torch.softmax(1.5 * scores, 0).numpy())
        expected = torch.tensor([table[keys[i]] for i in drawn], dtype=F64) - log_z
        assert torch.allclose(log_prob[:, b].detach(), expected, atol=1e-9, rtol=0)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_sample_shape_and_event_layout(name):
    make, _ = SMALL[name]
    dist = getattr(rdp, name)(make(), lengths=torch.tensor([3, 2]))
    one = dist.sample(generator=_gen(0))
    many = dist.sample((2, 3), generator=_gen(0))
    first = one[1] if name == "SentCFG" else one          # SentCFG: the rule counts (B, NT, NT+T, NT+T)
    block = many[1] if name == "SentCFG" else many
    event = dist.log_potentials.rules.shape[1:] if name == "SentCFG" else dist.event_shape
    assert tuple(first.shape) == (2, *event) and tuple(block.shape) == (2, 3, 2, *event)
    assert dist.log_prob(many).shape == (2, 3, 2)
    assert bool((dist.log_prob(many) <= 1e-12).all())
    with pytest.raises(ValueError, match="value"):
        dist.log_prob(torch.zeros(5, 5)) if name != "SentCFG" else dist.log_prob((torch.zeros(1),) * 3)


# --- the one-word switch to RDP ----------------------------------------------------------------------------

CASES = {"LinearChainCRF": (lambda: _chain(8, batch=2, n=5, c=6), 6),
         "TreeCRF": (lambda: _tree(9, batch=2, n=5, nt=6), 6),
         "SentCFG": (lambda: _cfg(10, batch=2, n=4, nt=3, t=3), 3)}   # SentCFG: k1 = max(NT, T) is exact


@pytest.mark.parametrize("name", sorted(CASES))
def test_rdp_at_full_budget_equals_exact(name):
    make, full = CASES[name]
    potentials, lengths = make(), torch.tensor([5 if name != "SentCFG" else 4, 2])
    exact = getattr(rdp, name)(potentials, lengths=lengths)
    randomized = getattr(rdp, name)(potentials, lengths=lengths, method=rdp.RDP(full, 0, generator=_gen(0)))
    _close(randomized.partition, exact.partition, 1e-10)
    _close(randomized.entropy, exact.entropy, 1e-9)
    mine = randomized.marginals if name == "SentCFG" else (randomized.marginals,)
    theirs = exact.marginals if name == "SentCFG" else (exact.marginals,)
    for a, b in zip(mine, theirs):
        _close(a, b, 1e-10)


@pytest.mark.parametrize("name", sorted(CASES))
def test_rdp_partition_is_unbiased_for_z_in_linear_space(name):
    """mean over R = 4000 independent draws of Z-hat / Z (one batched DP: the batch holds R copies, each with
    its own index sets) lies within 4 standard errors of 1 for every item of a ragged batch (k1 = 1, k2 = 2,
    a budget well below the number of states); negative control: the same draws are > 4 standard errors from
    a target 25% off (the check has power at this R)."""
    make, _ = CASES[name]
    potentials, lengths, reps = make(), torch.tensor([5 if name != "SentCFG" else 4, 2]), 4000

    def tile(x):
        return x.repeat(reps, *([1] * (x.dim() - 1)))

    tiled = tuple(tile(x) for x in potentials) if name == "SentCFG" else tile(potentials)
    exact = getattr(rdp, name)(potentials, lengths=lengths).partition.detach()
    estimate = getattr(rdp, name)(tiled, lengths=tile(lengths), method=rdp.RDP(1, 2, generator=_gen(11)))
    ratio = torch.exp(estimate.partition.detach().reshape(reps, 2) - exact)
    mean, se = ratio.mean(0), ratio.std(0) / math.sqrt(reps)
    assert bool((se > 0).all())
    assert bool(((mean - 1).abs() < 4 * se).all()), (mean, se)
    assert bool(((mean - 1.25).abs() > 4 * se).all()), (mean, se)


# --- lengths on the free functions and validation --------------------------------------------------------

def test_tree_and_pcfg_free_functions_read_each_root_at_its_length():
    spans, lengths = _tree(12, batch=3, n=6, nt=2), torch.tensor([6, 1, 4])
    term, rules, root = torch.randn(3, 6, 2, dtype=F64), torch.randn(2, 2, 2, dtype=F64), torch.randn(2, dtype=F64)
    tree = rdp.tree_log_partition(spans, lengths)
    pcfg = rdp.pcfg_log_partition(rules, term, root, lengths)
    for b, length in enumerate(lengths.tolist()):
        alone = spans[b:b + 1, :length, :length]
        assert math.isclose(float(tree[b]), float(rdp.tree_log_partition(alone)), abs_tol=1e-12)
        expected = rdp.pcfg_log_partition(rules, term[b:b + 1, :length], root)
        assert math.isclose(float(pcfg[b]), float(expected), abs_tol=1e-12)
    draws = rdp.tree_gumbel_sample(spans, lengths, generator=_gen(0)).hard
    parses = rdp.pcfg_gumbel_sample(rules, term, root, lengths, generator=_gen(0))
    for hard in (draws, parses):
        assert (hard >= 0).sum((1, 2)).tolist() == [2 * n - 1 for n in lengths.tolist()]
        assert bool((hard[1, :, 1:] == -1).all())
    estimate = rdp.randomized_tree_log_partition(spans, k1=2, k2=0, lengths=lengths)
    assert torch.allclose(estimate, tree, atol=1e-12, rtol=0)


@pytest.mark.parametrize("name", sorted(SMALL))
@pytest.mark.parametrize("lengths, error", [([3], ValueError), ([0, 2], ValueError), ([4, 2], ValueError),
                                            ([2.5, 2], TypeError)])
def test_bad_lengths_raise_errors_naming_lengths(name, lengths, error):
    make, _ = SMALL[name]
    potentials = make()
    if name == "LinearChainCRF":
        potentials = potentials[:, :2]                                  # N = 3 positions
    with pytest.raises(error, match="lengths"):
        getattr(rdp, name)(potentials, lengths=torch.tensor(lengths))


def test_sentcfg_rejects_one_word_sentences_and_bad_shapes():
    with pytest.raises(ValueError, match="lengths must be >= 2"):
        rdp.SentCFG(_cfg(0, batch=2, n=3), lengths=[3, 1])
    terms, rules, roots = _cfg(0, batch=2, n=3)
    with pytest.raises(ValueError, match="rules"):
        rdp.SentCFG((terms, rules[..., :-1], roots))
    with pytest.raises(TypeError, match="log_potentials"):
        rdp.SentCFG(terms)


def test_method_and_budget_validation():
    with pytest.raises(TypeError, match="method"):
        rdp.TreeCRF(_tree(0, batch=1, n=3), method="rdp")
    with pytest.raises(ValueError, match="k1"):
        rdp.TreeCRF(_tree(0, batch=1, n=3), method=rdp.RDP(-1, 2))
    with pytest.raises(ValueError, match="k1 \\+ k2"):
        rdp.TreeCRF(_tree(0, batch=1, n=3, nt=3), method=rdp.RDP(3, 1))
    with pytest.raises(ValueError, match="log_potentials must be finite"):
        rdp.LinearChainCRF(torch.full((1, 2, 2, 2), float("nan")))
    chain = rdp.LinearChainCRF(_chain(0, batch=1, n=3))
    with pytest.raises(ValueError, match="sample_shape"):
        chain.sample(0)
    with pytest.raises(TypeError, match="sample_shape"):
        chain.sample("many")
    with pytest.raises(TypeError, match="generator"):
        chain.sample(2, generator=0)
