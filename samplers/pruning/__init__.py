"""Auxiliary-variable randomized pruning for chart dynamic programs (Bouchard-Cote, Petrov & Klein 2009).

>>> from samplers.pruning import Grammar, expected_counts, randomized_pruning
>>> g = Grammar.random(4, 5, seed=0)
>>> exact = expected_counts(g, "w0 w1 w2 w3 w4")
>>> approx = randomized_pruning(g, "w0 w1 w2 w3 w4", n_masks=50, seed=1).expectations
"""

from .chart import Expectations, expected_counts, inside_chart, sample_trees, viterbi
from .grammar import Grammar
from .itg import ITG, ITGExpectations, itg_expectations, itg_randomized_pruning, tic_tac_toe_mask
from .masks import create_mask, figure_of_merit_mask, threshold_mask
from .randomized import RandomizedPruningResult, randomized_pruning

__all__ = ["Expectations", "Grammar", "ITG", "ITGExpectations", "RandomizedPruningResult", "create_mask",
           "expected_counts", "figure_of_merit_mask", "inside_chart", "itg_expectations", "itg_randomized_pruning",
           "randomized_pruning", "sample_trees", "threshold_mask", "tic_tac_toe_mask", "viterbi"]
