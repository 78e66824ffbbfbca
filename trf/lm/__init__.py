"""Sentence-level trans-dimensional random field language models and their n-gram baselines.

Modules: :mod:`trf.lm.corpus` (streaming corpora and vocabularies), :mod:`trf.lm.cluster`
(exchange word classes), :mod:`trf.lm.ngram_cli` (``mcsa ngram train | eval``).  The n-gram models themselves live in
:mod:`trf.ngram` so the word-level TRF can reuse them.
"""
