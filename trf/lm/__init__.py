"""Sentence-level trans-dimensional random field language models and their n-gram baselines.

Modules: :mod:`trf.lm.corpus` (streaming corpora and vocabularies), :mod:`trf.lm.cluster` (exchange
word classes), :mod:`trf.lm.features` (Table-2 templates, Numba hash tables), :mod:`trf.lm.transms`
(class-based TransMS), :mod:`trf.lm.backend` (the AugSA backend), :mod:`trf.lm.train`,
:mod:`trf.lm.model` (``SentenceTRF``), :mod:`trf.lm.check` (checked normalisers and perplexity, AIS),
:mod:`trf.lm.rescore` (interpolation, scoring speed), :mod:`trf.lm.cli` and :mod:`trf.lm.ngram_cli`.  The n-gram models live in
:mod:`trf.ngram` so the word-level TRF can reuse them.  ``trf.lm.load(path)`` reads a model file.
"""

from __future__ import annotations


def load(path):
    """Read a sentence TRF LM written by ``SentenceTRF.save`` (kind ``"trf-lm"``)."""
    from trf.lm.model import SentenceTRF

    return SentenceTRF.load(path)
