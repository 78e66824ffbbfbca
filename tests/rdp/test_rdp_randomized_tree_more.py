"""Randomized tree entropy and randomized PCFG inside / entropy: exactness at K1 + K2 = N, unbiasedness of
the linear-space PCFG estimate (with a biased negative control), gradients and bad input."""

import math

import pytest

torch = pytest.importorskip("torch")

import rdp  # noqa: E402
from rdp.randomized_pcfg import pcfg_inside_on_sets, pcfg_site_scores  # noqa: E402
from rdp.selection import IndexSets, select_indices  # noqa: E402
from samplers.testing import assert_close_in_se  # noqa: E402

pytestmark = pytest.mark.torch


def _pcfg(seed, b=2, t=4, nt=5, shared=True, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    rules = scale * torch.randn(*(() if shared else (b,)), nt, nt, nt, generator=g, dtype=torch.float64)
    terminal = scale * torch.randn(b, t, nt, generator=g, dtype=torch.float64)
    root = scale * torch.randn(nt, generator=g, dtype=torch.float64)
    return rules, terminal, root


def _spans(seed, b=2, t=5, n=4):
    return torch.randn(b, t, t, n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


SPLITS = [(0, 5), (2, 3), (4, 1), (5, 0)]


# ---------------------------------------------------------------- exactness at K1 + K2 = N

@pytest.mark.parametrize("proposal", ["uniform", "local"])
def test_full_budget_tree_entropy_is_exact(proposal):
    spans = _spans(2, n=4)
    exact = rdp.tree_entropy(spans)
    for k1, k2 in ((0, 4), (3, 1), (4, 0)):
        est = rdp.randomized_tree_entropy(spans, k1=k1, k2=k2, proposal=proposal,
                                          generator=torch.Generator().manual_seed(1))
        assert torch.allclose(est, exact, atol=1e-10)


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("k1,k2", SPLITS)
def test_full_budget_pcfg_equals_exact_inside_and_entropy(shared, k1, k2):
    rules, terminal, root = _pcfg(3, shared=shared)
    gen = torch.Generator().manual_seed(0)
    exact_z = rdp.pcfg_log_partition(rules, terminal, root)
    exact_h = rdp.pcfg_entropy(rules, terminal, root)
    weights = torch.rand(2, 4, 4, 5, generator=torch.Generator().manual_seed(9), dtype=torch.float64) + 0.1
    for proposal in ("uniform", "local", weights):
        est = rdp.randomized_pcfg_log_partition(rules, terminal, root, k1=k1, k2=k2, proposal=proposal, generator=gen)
        assert torch.allclose(est, exact_z, atol=1e-10)
    lin = rdp.randomized_pcfg_log_partition(rules, terminal, root, k1=k1, k2=k2, space="linear", generator=gen)
    assert torch.allclose(lin, exact_z.exp(), rtol=1e-10)
    ent = rdp.randomized_pcfg_entropy(rules, terminal, root, k1=k1, k2=k2, generator=gen)
    assert torch.allclose(ent, exact_h, atol=1e-10)


def test_tree_entropy_identity_is_the_chain_entropy_dp():
    """The entropy of :mod:`rdp.randomized_tree` / :mod:`rdp.randomized_pcfg` is ``log Z-hat - theta . grad``;
    on a chain, with the same index sets, that must equal the randomized entropy DP of Alg. 3."""
    g = torch.Generator().manual_seed(4)
    em = torch.randn(2, 5, 6, generator=g, dtype=torch.float64).requires_grad_(True)
    tr = torch.randn(2, 4, 6, 6, generator=g, dtype=torch.float64).requires_grad_(True)
    log_z = rdp.randomized_chain_log_partition(em, tr, k1=2, k2=2, proposal="local",
                                               generator=torch.Generator().manual_seed(5))
    dp = rdp.randomized_chain_entropy(em, tr, k1=2, k2=2, proposal="local", generator=torch.Generator().manual_seed(5))
    identity = rdp.tree.entropy_from_log_partition(log_z, [em, tr])
    assert torch.allclose(identity, dp, atol=1e-10)


# ---------------------------------------------------------------- unbiasedness of the linear-space PCFG inside

@pytest.mark.parametrize("proposal,k1,k2", [("uniform", 1, 2), ("local", 0, 2), ("uniform", 0, 1)])
def test_linear_space_pcfg_inside_is_unbiased(proposal, k1, k2):
    """Mean of 2000 replicates of Z-hat / Z within 4 standard errors of 1 (Alg. 2 is unbiased by induction);
    the log-space mean is not above log Z beyond 4 SE (Jensen)."""
    reps = 2000
    rules, terminal, root = _pcfg(11, b=1, t=4, nt=4, scale=0.7)
    log_z = float(rdp.pcfg_log_partition(rules, terminal, root))
    ratio = rdp.randomized_pcfg_log_partition(rules, terminal.expand(reps, -1, -1), root, k1=k1, k2=k2,
                                              proposal=proposal, space="linear", log_scale=log_z,
                                              generator=torch.Generator().manual_seed(6))
    assert_close_in_se(ratio.mean(), 1.0, se=ratio.std() / math.sqrt(reps), k=4, what=f"mean Z-hat / Z ({proposal})")
    logs = ratio.log() + log_z
    assert float(logs.mean()) <= log_z + 4 * float(logs.std()) / math.sqrt(reps)


def test_negative_control_without_importance_weights_is_detected():
    """Dropping the 1 / (K2 q) weights of the sampled nonterminals biases Z-hat; the 4-SE check must fail."""
    reps = 2000
    rules, terminal, root = _pcfg(11, b=1, t=4, nt=4, scale=0.7)
    z_exact = float(rdp.pcfg_log_partition(rules, terminal, root).exp())
    term = terminal.expand(reps, -1, -1)
    q = torch.full((reps, 4, 4, 4), 0.25, dtype=torch.float64)
    sets = select_indices(q, 1, 2, torch.Generator().manual_seed(6))
    unweighted = pcfg_inside_on_sets(rules, term, root, IndexSets(sets.index, torch.zeros_like(sets.log_weight)))
    ratio = unweighted.exp() / z_exact
    with pytest.raises(AssertionError):
        assert_close_in_se(ratio.mean(), 1.0, se=ratio.std() / math.sqrt(reps), k=4, what="unweighted Z-hat / Z")
    weighted = pcfg_inside_on_sets(rules, term, root, sets).exp() / z_exact  # same sets with weights: passes
    assert_close_in_se(weighted.mean(), 1.0, se=weighted.std() / math.sqrt(reps), k=4, what="weighted Z-hat / Z")


def test_site_scores_hold_terminals_on_leaves_and_rule_mass_elsewhere():
    rules, terminal, _ = _pcfg(1)
    site = pcfg_site_scores(rules, terminal)
    assert torch.equal(site[:, 2, 2], terminal[:, 2])
    assert torch.allclose(site[1, 0, 3], torch.logsumexp(rules.reshape(5, -1), dim=-1))


# ---------------------------------------------------------------- gradients

def test_gradcheck_at_full_budget():
    spans = _spans(5, b=1, t=3, n=2).requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda s: rdp.randomized_tree_entropy(s, k1=1, k2=1, generator=torch.Generator().manual_seed(0)), (spans,))
    rules, terminal, root = (x.requires_grad_(True) for x in _pcfg(6, b=1, t=3, nt=2))
    for space in ("log", "linear"):
        assert torch.autograd.gradcheck(
            lambda r, t, o, space=space: rdp.randomized_pcfg_log_partition(r, t, o, k1=1, k2=1, space=space,
                                                                           generator=torch.Generator().manual_seed(0)),
            (rules, terminal, root))
    assert torch.autograd.gradcheck(
        lambda r, t, o: rdp.randomized_pcfg_entropy(r, t, o, k1=0, k2=2, generator=torch.Generator().manual_seed(0)),
        (rules, terminal, root))


def test_gradients_are_finite_below_full_budget():
    spans = _spans(7, t=4, n=6).requires_grad_(True)
    rdp.randomized_tree_entropy(spans, k1=1, k2=2, generator=torch.Generator().manual_seed(0)).sum().backward()
    assert bool(torch.isfinite(spans.grad).all())
    leaves = [x.requires_grad_(True) for x in _pcfg(8, t=5, nt=6)]
    for fn in (rdp.randomized_pcfg_log_partition, rdp.randomized_pcfg_entropy):
        for x in leaves:
            x.grad = None
        fn(*leaves, k1=1, k2=2, proposal="local", generator=torch.Generator().manual_seed(1)).sum().backward()
        assert all(bool(torch.isfinite(x.grad).all()) and bool(x.grad.abs().sum() > 0) for x in leaves)


# ---------------------------------------------------------------- bad input

PCFG = _pcfg(0, b=1, t=3, nt=4)


@pytest.mark.parametrize("k1,k2,match", [(4, 1, "k1 \\+ k2 must be <="), (-1, 2, "k1 must be >= 0"),
                                         (2, -1, "k2 must be >= 0"), (0, 0, "at least 1")])
def test_bad_budgets(k1, k2, match):
    for call in (lambda: rdp.randomized_tree_entropy(_spans(0, n=4), k1=k1, k2=k2),
                 lambda: rdp.randomized_pcfg_log_partition(*PCFG, k1=k1, k2=k2),
                 lambda: rdp.randomized_pcfg_entropy(*PCFG, k1=k1, k2=k2)):
        with pytest.raises(ValueError, match=match):
            call()


@pytest.mark.parametrize("args,kwargs,exc,match", [
    ((torch.randn(4, 4, 3), PCFG[1], PCFG[2]), {}, ValueError, "rule_scores"),
    ((PCFG[0], PCFG[1], torch.randn(3)), {}, ValueError, "root_scores"),
    ((PCFG[0], PCFG[1][0], PCFG[2]), {}, ValueError, "terminal_scores"),
    ((PCFG[0], PCFG[1] * float("nan"), PCFG[2]), {}, ValueError, "terminal_scores must be finite"),
    ((PCFG[0].clone().fill_(float("inf")), PCFG[1], PCFG[2]), {}, ValueError, "rule_scores must be finite"),
    (PCFG, {"space": "exp"}, ValueError, "space"),
    (PCFG, {"space": "linear", "log_scale": float("nan")}, ValueError, "log_scale"),
    (PCFG, {"proposal": "global"}, ValueError, "global prior"),
    (PCFG, {"proposal": -torch.ones(1, 3, 3, 4)}, ValueError, "non-negative"),
    (PCFG, {"proposal": torch.zeros(1, 3, 3, 4)}, ValueError, "all-zero"),
    (PCFG, {"proposal": torch.ones(1, 3, 3, 5)}, ValueError, "shape"),
    (PCFG, {"generator": 3}, TypeError, "generator"),
])
def test_bad_pcfg_input(args, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        rdp.randomized_pcfg_log_partition(*args, k1=1, k2=1, **kwargs)


def test_bad_tree_entropy_input():
    with pytest.raises(ValueError, match="span_potentials"):
        rdp.randomized_tree_entropy(torch.randn(1, 4, 3, 5), k1=1, k2=1)
    with pytest.raises(ValueError, match="finite"):
        rdp.randomized_tree_entropy(torch.full((1, 3, 3, 2), float("nan")), k1=1, k2=1)
    with pytest.raises(ValueError, match="proposal"):
        rdp.randomized_tree_entropy(_spans(0), k1=1, k2=1, proposal="global")


def test_tree_linear_space_log_scale_rescales_and_is_checked():
    spans = _spans(3)
    log_z = rdp.tree_log_partition(spans)
    scaled = rdp.randomized_tree_log_partition(spans, k1=4, k2=0, space="linear", log_scale=log_z)
    assert torch.allclose(scaled, torch.ones_like(scaled), atol=1e-12)
    with pytest.raises(ValueError, match="log_scale"):
        rdp.randomized_tree_log_partition(spans, k1=1, k2=1, space="linear", log_scale=float("inf"))
