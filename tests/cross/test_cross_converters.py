"""Converters between problem kinds are exact: one chain CRF gives one log Z through the CRF forward,
the PairwiseMRF's exact methods and rdp's torch DP; one PCFG gives one log P (and one set of expected
rule counts) through samplers.models and rdp, in both directions."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

torch = pytest.importorskip("torch")
import rdp  # noqa: E402
from rdp.convert import chain_crf_tensors, grammar_from_tensors, pcfg_tensors  # noqa: E402
from samplers.models import Grammar, expected_counts, log_inside, log_probability  # noqa: E402
from samplers.problems import ChainCRF, ChainCRFProblem, PCFGProblem, span_vector  # noqa: E402


def brute_force_crf(crf: ChainCRF) -> tuple[float, np.ndarray, float]:
    ys = np.array(list(itertools.product(range(crf.n_states), repeat=crf.length)))
    s = crf.score(ys)
    log_z = float(logsumexp(s))
    p = np.exp(s - log_z)
    marg = np.stack([np.bincount(ys[:, t], weights=p, minlength=crf.n_states) for t in range(crf.length)])
    return log_z, marg, float(-np.sum(p * np.log(p)))


@pytest.mark.parametrize("embedding_dim", [None, 3])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_chain_crf_forward_mrf_and_torch_agree(seed, embedding_dim):
    crf = ChainCRF.random(5, 4, scale=1.3, embedding_dim=embedding_dim, seed=seed)
    log_z, marg, ent = brute_force_crf(crf)
    assert crf.log_partition() == pytest.approx(log_z, abs=1e-12)
    np.testing.assert_allclose(crf.marginals(), marg, atol=1e-12)
    assert crf.entropy() == pytest.approx(ent, abs=1e-10)
    mrf = crf.to_mrf()
    for method in ("enumeration", "elimination"):
        assert mrf.log_partition_exact(method=method) == pytest.approx(log_z, abs=1e-9)
        np.testing.assert_allclose(mrf.marginals_exact(method=method), marg, atol=1e-9)
    tensors = chain_crf_tensors(crf)
    assert ("state_embeddings" in tensors) == (embedding_dim is not None)
    assert float(rdp.chain_log_partition(**tensors)[0]) == pytest.approx(log_z, abs=1e-9)
    np.testing.assert_allclose(rdp.chain_marginals(**tensors)[0].numpy(), marg, atol=1e-9)
    assert float(rdp.chain_entropy(**tensors)[0]) == pytest.approx(ent, abs=1e-9)


def test_long_chain_crf_beyond_enumeration():
    crf = ChainCRF.random(60, 6, seed=3)
    tensors = chain_crf_tensors(crf)
    assert crf.to_mrf().log_partition_exact() == pytest.approx(crf.log_partition(), abs=1e-9)
    assert float(rdp.chain_log_partition(**tensors)[0]) == pytest.approx(crf.log_partition(), abs=1e-9)
    assert float(rdp.chain_entropy(**tensors)[0]) == pytest.approx(crf.entropy(), abs=1e-8)


def test_chain_crf_problem_exact_and_negative_control():
    crf = ChainCRF.random(4, 3, seed=5)
    problem = ChainCRFProblem("crf", crf)
    ex = problem.exact()
    assert problem.kind == "chain-crf" and set(ex) == set(problem.targets)
    other = ChainCRF(crf.emissions + np.eye(4, 3), crf.transitions)
    assert abs(other.log_partition() - ex["log_partition"]) > 0.1


def test_chain_crf_bad_input():
    with pytest.raises(ValueError, match="exactly one of transitions"):
        ChainCRF(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="transitions must have shape"):
        ChainCRF(np.zeros((3, 2)), np.zeros((3, 3)))
    with pytest.raises(ValueError, match="emissions must be finite"):
        ChainCRF(np.array([[0.0, np.nan]]), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="y must have shape"):
        ChainCRF(np.zeros((3, 2)), np.zeros((2, 2))).score([0, 1])


SENTENCE = "w0 w3 w1 w2 w4 w0"


@pytest.mark.parametrize("seed", [0, 1])
def test_pcfg_pruning_and_rdp_agree(seed):
    g = Grammar.random(5, 6, rule_density=0.7, seed=seed)
    e = expected_counts(g, SENTENCE)
    t = pcfg_tensors(g, SENTENCE)
    assert float(rdp.pcfg_log_partition(**t)[0]) == pytest.approx(log_probability(g, SENTENCE), abs=1e-9)
    grads = rdp.pcfg_marginals(**t)
    r = g.binary_rules
    np.testing.assert_allclose(grads["rules"].numpy()[r[:, 0], r[:, 1], r[:, 2]], e.binary_counts, atol=1e-9)
    np.testing.assert_allclose(grads["terminals"][0].numpy().T.sum(0), np.ones(6), atol=1e-9)
    assert float(grads["rules"].sum()) == pytest.approx(5.0, abs=1e-9)  # T - 1 binary rules per tree
    problem = PCFGProblem("p", g, SENTENCE)
    assert problem.exact()["log_probability"] == pytest.approx(e.log_z, abs=1e-12)
    np.testing.assert_allclose(problem.exact()["span_posteriors"], span_vector(e.span_posteriors))


def test_pcfg_from_rdp_tensors_to_grammar():
    gen = torch.Generator().manual_seed(0)
    nt, v = 4, 5
    rules = torch.randn(nt, nt, nt, generator=gen, dtype=torch.float64)
    lexical = torch.randn(nt, v, generator=gen, dtype=torch.float64)
    root = torch.randn(nt, generator=gen, dtype=torch.float64)
    g = grammar_from_tensors(rules, lexical, root)
    assert g.nonterminals[g.start] == "ROOT"
    for words in (["w2"], ["w0", "w4"], ["w1", "w3", "w3", "w0", "w2"]):
        ids = [int(w[1:]) for w in words]
        rdp_lp = float(rdp.pcfg_log_partition(rules, lexical[:, ids].T.unsqueeze(0), root)[0])
        assert log_inside(g, words) == pytest.approx(rdp_lp, abs=1e-9)
    # a one-hot root keeps its symbol as the start, and the round trip returns the same grammar
    onehot = torch.full((nt,), -1e4, dtype=torch.float64)
    onehot[2] = 0.0
    g2 = grammar_from_tensors(rules, lexical, onehot)
    assert g2.start == 2 and g2.n_nonterminals == nt
    words = ["w1", "w0", "w3", "w2"]
    back = pcfg_tensors(g2, words)
    np.testing.assert_allclose(back["rule_scores"].numpy(), rules.numpy(), atol=0)
    assert float(rdp.pcfg_log_partition(**back)[0]) == pytest.approx(log_inside(g2, words), abs=1e-9)


def test_grammar_dense_round_trip_with_missing_rules():
    g = Grammar.from_string("""
    S -> NP VP [1.0]
    NP -> 'she' [0.6]
    NP -> 'fish' [0.4]
    VP -> V NP [1.0]
    V -> 'eats' [1.0]
    """)
    dense = g.dense_rule_scores()
    assert np.sum(dense > -1e4) == g.n_binary
    g2 = Grammar.from_dense(dense, g.dense_lexical_scores(), g.root_scores(), nonterminals=g.nonterminals,
                            terminals=g.terminals)
    assert log_probability(g2, "she eats fish") == pytest.approx(np.log(0.24), abs=1e-12)
    t = pcfg_tensors(g, "she eats fish")
    assert float(rdp.pcfg_log_partition(**t)[0]) == pytest.approx(np.log(0.24), abs=1e-12)


def test_grammar_from_dense_bad_input():
    with pytest.raises(ValueError, match="rule_scores must have shape"):
        Grammar.from_dense(np.zeros((2, 2)), np.zeros((2, 3)), np.zeros(2))
    with pytest.raises(ValueError, match="root_scores holds no root"):
        Grammar.from_dense(np.zeros((2, 2, 2)), np.zeros((2, 3)), np.full(2, -np.inf))
    with pytest.raises(ValueError, match="lexical_scores must be finite"):
        Grammar.from_dense(np.zeros((2, 2, 2)), np.full((2, 3), np.nan), np.zeros(2))
    with pytest.raises(TypeError, match="grammar must be"):
        pcfg_tensors("S -> a", "a")
