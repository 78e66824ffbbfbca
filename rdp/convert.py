"""Converters between the numpy problem kinds and rdp's torch tensors (exact, both directions).

* a :class:`samplers.problems.ChainCRF` becomes the ``(emissions (1, T, N), transitions (N, N))`` or
  ``state_embeddings (N, D)`` of :func:`rdp.chain_log_partition`;
* a :class:`samplers.models.Grammar` with a sentence becomes the ``(rule_scores (NT, NT, NT),
  terminal_scores (1, T, NT), root_scores (NT,))`` of :func:`rdp.pcfg_log_partition`, and dense rdp
  scores with a lexicon ``(NT, V)`` become a Grammar again (:meth:`Grammar.from_dense`).

Absent grammar rules are the finite score ``samplers.models.pcfg.MISSING_LOG_WEIGHT`` (-1e4) on
the torch side, since rdp requires finite potentials; ``exp(-1e4)`` is 0 in float64.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from samplers.models import Grammar
from samplers.problems import ChainCRF

from ._torch import torch


def chain_crf_tensors(crf: ChainCRF, *, dtype: "torch.dtype" = torch.float64, device: Any = None) -> dict:
    """``{"emissions": (1, T, N), "transitions": (N, N)}`` or ``{"emissions", "state_embeddings": (N, D)}``.

    Pass them as keyword arguments to :func:`rdp.chain_log_partition` and the randomized chain
    functions (``rdp.chain_log_partition(**chain_crf_tensors(crf))``).
    """
    if not isinstance(crf, ChainCRF):
        raise TypeError(f"crf must be a samplers.problems.ChainCRF, got {type(crf).__name__}")
    out = {"emissions": torch.tensor(np.array(crf.emissions), dtype=dtype, device=device).unsqueeze(0)}
    if crf.state_embeddings is not None:
        out["state_embeddings"] = torch.tensor(np.array(crf.state_embeddings), dtype=dtype, device=device)
    else:
        out["transitions"] = torch.tensor(np.array(crf.transitions), dtype=dtype, device=device)
    return out


def pcfg_tensors(grammar: Grammar, words: str | Sequence[str], *, dtype: "torch.dtype" = torch.float64,
                 device: Any = None) -> dict:
    """``{"rule_scores": (NT, NT, NT), "terminal_scores": (1, T, NT), "root_scores": (NT,)}`` of a sentence.

    ``rdp.pcfg_log_partition(**pcfg_tensors(g, words))`` equals ``samplers.models.log_inside(g, words)``.
    """
    if not isinstance(grammar, Grammar):
        raise TypeError(f"grammar must be a samplers.models.Grammar, got {type(grammar).__name__}")

    def tensor(a):
        return torch.tensor(np.array(a), dtype=dtype, device=device)

    return {"rule_scores": tensor(grammar.dense_rule_scores()),
            "terminal_scores": tensor(grammar.terminal_scores(words)).unsqueeze(0),
            "root_scores": tensor(grammar.root_scores())}


def grammar_from_tensors(rule_scores: Any, lexical_scores: Any, root_scores: Any, *,
                         nonterminals: Sequence[str] | None = None,
                         terminals: Sequence[str] | None = None) -> Grammar:
    """A :class:`~samplers.models.Grammar` from rdp's dense scores and a lexicon ``(NT, V)``
    (:meth:`Grammar.from_dense`); the rdp terminal scores of a sentence are ``lexical_scores[:, ids].T``."""

    def arr(x):
        return x.detach().cpu().double().numpy() if isinstance(x, torch.Tensor) else x

    return Grammar.from_dense(arr(rule_scores), arr(lexical_scores), arr(root_scores), nonterminals=nonterminals,
                              terminals=terminals)
