"""Grammar reader, CNF conversion (unary closure, binarisation) and bad input."""

import itertools
from functools import lru_cache

import numpy as np
import pytest

from samplers.models import Grammar, expected_counts, log_inside, log_probability
from samplers.pruning import randomized_pruning

TEXTBOOK = """
# a textbook PCFG with unary, mixed and long rules
S -> NP VP [0.8]
S -> VP [0.2]
NP -> Det Nominal [0.6]
NP -> 'she' [0.2]
NP -> Nominal [0.2]
Nominal -> Noun [0.7]
Nominal -> Nominal Noun [0.2]
Nominal -> Nominal PP [0.1]
VP -> Verb [0.3]
VP -> Verb NP [0.4]
VP -> VP PP [0.2]
VP -> Verb NP PP [0.1]
PP -> 'with' NP [1.0]
Det -> 'the' [0.6]
Det -> 'a' [0.4]
Noun -> 'fish' [0.4]
Noun -> 'telescope' [0.3]
Noun -> 'man' [0.3]
Verb -> 'saw' [0.5]
Verb -> 'fish' [0.5]
"""


def _parse_rules(text):
    rules = []
    for line in text.splitlines():
        line = line.split("#")[0].strip()
        if line:
            lhs, rest = line.split("->")
            rhs, w = rest.rsplit("[", 1)
            rules.append((lhs.strip(), tuple(rhs.split()), float(w.rstrip("]"))))
    return rules


def _brute_force_probability(rules, words):
    """Sum over all derivations of the ORIGINAL (non-CNF, acyclic-unary) grammar by recursion."""
    words = tuple(words)

    @lru_cache(maxsize=None)
    def weight(sym, i, k):
        if sym.startswith("'"):
            return 1.0 if k - i == 1 and words[i] == sym[1:-1] else 0.0
        total = 0.0
        for lhs, rhs, w in rules:
            if lhs != sym:
                continue
            for cuts in itertools.combinations(range(i + 1, k), len(rhs) - 1):
                bounds = (i,) + cuts + (k,)
                prod = w
                for child, a, b in zip(rhs, bounds[:-1], bounds[1:]):
                    prod *= weight(child, a, b)
                total += prod
        return total

    return weight("S", 0, len(words))


@pytest.mark.parametrize("sentence", ["she saw fish", "she saw the man with a telescope", "fish",
                                      "saw the fish with the telescope with a man", "the man fish fish"])
def test_textbook_grammar_with_unary_rules_matches_enumeration(sentence):
    g = Grammar.from_string(TEXTBOOK)
    expected = _brute_force_probability(_parse_rules(TEXTBOOK), sentence.split())
    assert expected > 0
    assert np.exp(log_probability(g, sentence)) == pytest.approx(expected, rel=1e-10)


def test_conversion_control_detects_a_changed_rule():
    # negative control: perturbing one unary weight changes the oracle's answer, so the match is informative
    rules = _parse_rules(TEXTBOOK)
    altered = [(l, r, 0.05 if (l, r) == ("Nominal", ("Noun",)) else w) for l, r, w in rules]
    g = Grammar.from_string(TEXTBOOK)
    words = "she saw the man with a telescope".split()
    assert np.exp(log_probability(g, words)) != pytest.approx(_brute_force_probability(altered, words), rel=1e-3)


def test_from_string_cnf_and_start_symbol():
    g = Grammar.from_string("TOP -> A B [1]\nA -> 'x' [1]\nB -> 'y' [0.5]\nB -> A A [0.5]", start="TOP")
    assert g.nonterminals[g.start] == "TOP"
    assert np.exp(log_probability(g, "x y")) == pytest.approx(0.5)
    assert np.exp(log_probability(g, "x x x")) == pytest.approx(0.5)
    assert log_probability(g, "y y") == -np.inf


def test_random_grammar_is_a_pcfg():
    g = Grammar.random(4, 6, rule_density=0.5, seed=3)
    total = np.zeros(4)
    np.add.at(total, g.binary_rules[:, 0], np.exp(g.binary_log_weights))
    total += np.exp(g.lexical_log_weights).sum(axis=1)
    np.testing.assert_allclose(total, 1.0, atol=1e-9)
    again = Grammar.random(4, 6, rule_density=0.5, seed=3)
    np.testing.assert_array_equal(g.binary_log_weights, again.binary_log_weights)


@pytest.mark.parametrize("text, fragment", [
    ("S -> A B [-0.1]\nA -> 'a' [1]\nB -> 'b' [1]", "non-negative"),
    ("S -> A B [nan]\nA -> 'a' [1]\nB -> 'b' [1]", "finite"),
    ("S -> A B [inf]\nA -> 'a' [1]\nB -> 'b' [1]", "finite"),
    ("S -> A B [1]\nA -> [1]\nB -> 'b' [1]", "epsilon"),
    ("S -> A [1]\nA -> S [1]\nA -> 'a' [0.5]", "unary"),
    ("S -> A B 0.3", "line 1"),
    ("A -> 'a' [1]", "start symbol"),
])
def test_bad_grammars_raise(text, fragment):
    with pytest.raises(ValueError, match=fragment):
        Grammar.from_string(text)


def test_bad_sentences_raise():
    g = Grammar.from_string(TEXTBOOK)
    with pytest.raises(ValueError, match="'unicorn'"):
        log_probability(g, "she saw the unicorn")
    with pytest.raises(ValueError, match="empty"):
        log_probability(g, "")
    with pytest.raises(ValueError, match="empty"):
        expected_counts(g, [])
    with pytest.raises(ValueError, match="no parse"):
        expected_counts(g, "with with")
    with pytest.raises(ValueError, match="mask must have shape"):
        expected_counts(g, "she saw fish", mask=np.ones((3, 3), bool))
    with pytest.raises(ValueError, match="n_masks"):
        randomized_pruning(g, "she saw fish", 0)
    with pytest.raises(TypeError, match="grammar"):
        expected_counts("S -> A", "she")


def test_weighted_grammar_is_refused_by_log_probability_and_scored_by_log_inside():
    # rule weights of S sum to 3 and of A to 2: the inside score is a weight (log 3*2*2*1 = log 12), not a probability
    g = Grammar.from_string("S -> A B [3]\nA -> 'x' [1]\nA -> 'z' [1]\nB -> 'y' [1]")
    assert g.unnormalised_nonterminals() == ["S", "A"]
    np.testing.assert_allclose(g.rule_totals(), [3.0, 2.0, 1.0])
    assert log_inside(g, "x y") == pytest.approx(np.log(3.0), abs=1e-12)
    with pytest.raises(ValueError, match=r"not a PCFG.*'S', 'A'.*log_inside"):
        log_probability(g, "x y")
    # a PCFG is accepted, and its log probability is its inside score
    pcfg = Grammar.from_string("S -> A B [1]\nA -> 'x' [0.5]\nA -> 'z' [0.5]\nB -> 'y' [1]")
    assert pcfg.unnormalised_nonterminals() == []
    assert log_probability(pcfg, "x y") == pytest.approx(np.log(0.5), abs=1e-12) == log_inside(pcfg, "x y")


def test_conversions_keep_a_pcfg_normalised():
    # the unary closure, binarisation helpers, projections and random grammars all stay PCFGs
    g = Grammar.from_string(TEXTBOOK)
    assert g.unnormalised_nonterminals() == []
    for grammar in (Grammar.random(4, 6, rule_density=0.5, seed=3), Grammar.random_split(3, 2, 5, seed=1)):
        assert grammar.unnormalised_nonterminals() == []
        assert grammar.project(grammar.coarse_mapping or [i % 2 for i in range(grammar.n_nonterminals)]
                               ).unnormalised_nonterminals() == []
