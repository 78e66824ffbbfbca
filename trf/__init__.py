"""Trans-dimensional random fields (Wang, Ou & Tan, TPAMI 2017).

``trf.TRF`` is the word model (character n-gram features, exact evaluation), ``trf.augsa`` the
model-agnostic AugSA trainer, ``trf.transms`` the TransMS sampler for words.  ``trf.load(path)``
reads any trf model file and dispatches on its ``kind``.  Nothing here imports torch.
"""

from __future__ import annotations

from .data import Alphabet, WordData, encode_words, read_word_list
from .features import FeatureSet
from .model import TRF

__all__ = ["Alphabet", "WordData", "encode_words", "read_word_list", "FeatureSet", "TRF", "load"]


def load(path):
    """Load a model file written by any trf model: word TRF (``"trf-word"``) or ``"trf-lm"``."""
    from .io import read_header
    from .model import KIND

    kind = read_header(path).get("kind")
    if kind == KIND:
        return TRF.load(path)
    if kind == "trf-lm":
        from . import lm

        return lm.load(path)
    raise ValueError(f"file {str(path)!r} holds kind {kind!r}, which trf.load does not know")
