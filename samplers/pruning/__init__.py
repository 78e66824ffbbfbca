"""Auxiliary-variable randomized pruning for chart dynamic programs (Bouchard-Cote, Petrov & Klein 2009)."""

from .chart import Expectations, expected_counts, inside_chart, sample_trees, viterbi
from .grammar import Grammar

__all__ = ["Expectations", "Grammar", "expected_counts", "inside_chart", "sample_trees", "viterbi"]
