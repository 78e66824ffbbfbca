"""Auxiliary-variable randomized pruning for chart dynamic programs (Bouchard-Cote, Petrov & Klein 2009).

The grammar and its exact chart are models (:mod:`samplers.models`); this package holds the pruning family:
masks, the randomized-pruning chain, ITG and its estimators.

>>> from samplers.models import Grammar, expected_counts
>>> from samplers.pruning import randomized_pruning
>>> g = Grammar.random(4, 5, seed=0)
>>> exact = expected_counts(g, "w0 w1 w2 w3 w4")
>>> approx = randomized_pruning(g, "w0 w1 w2 w3 w4", n_masks=50, seed=1).expectations
"""

from .itg import ITG, ITGExpectations, itg_expectations, itg_randomized_pruning, tic_tac_toe_mask
from .masks import create_mask, figure_of_merit_mask, threshold_mask
from .randomized import RandomizedPruningResult, randomized_pruning

__all__ = ["ITG", "ITGExpectations", "RandomizedPruningResult", "create_mask", "figure_of_merit_mask",
           "itg_expectations", "itg_randomized_pruning", "randomized_pruning", "threshold_mask", "tic_tac_toe_mask"]
