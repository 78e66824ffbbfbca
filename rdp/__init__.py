"""Randomized dynamic programming in torch (Fu, Cunningham, Lapata, "Scaling Structured Inference with
Randomization", ICML 2022), with the exact algorithms it approximates.

* exact chains (:mod:`rdp.chain`): log Z, marginals, entropy DP, Viterbi, Gumbel-FFBS, many exact
  posterior samples from one forward pass (:func:`rdp.chain.chain_sample`), path scores, a chunked
  no-grad reference for large N; by default in scaled space as matrix products with a custom backward
  recursion (:mod:`rdp.fast_chain`, autograd memory O(N^2 + B T N));
* exact trees (:mod:`rdp.tree`, :mod:`rdp.pcfg`): span-labelled tree CRF and CNF PCFG inside on
  index sets, marginals, entropy, Viterbi, top-down Gumbel tree sampling;
* randomized chains, trees and PCFGs (:mod:`rdp.randomized_chain`, :mod:`rdp.randomized_tree`,
  :mod:`rdp.randomized_pcfg`): randomized Forward (Alg. 1), Inside (Alg. 2), entropy (Alg. 3), Gumbel
  backward sampling on chains (Alg. 4) and top-down on trees; Top-K is ``k2 = 0``;
* proposals (:mod:`rdp.proposals`), synthetic problems with controlled entropy (:mod:`rdp.synthetic`),
  a torch memory meter (:mod:`rdp.memory`), harness problems, estimators and suites (:mod:`rdp.problems`,
  :mod:`rdp.estimators`, :mod:`rdp.suites`).

Start from the distribution objects in torch-struct's shape (:mod:`rdp.distributions`):
``rdp.LinearChainCRF``, ``rdp.TreeCRF``, ``rdp.SentCFG`` with ``lengths`` for ragged batches and
``method=rdp.RDP(k1, k2)`` for the randomized estimators; the functions above are the layer below.

Everything is device-agnostic: tensors stay on the device of the potentials.
Needs torch: ``pip install "mcsa[rdp]"`` (or ``pip install torch``).  ``import rdp`` itself does not
import torch (so rdp can register its suites and estimators with the harness cheaply); the first
use of a function (``rdp.chain_log_partition`` ...) imports it, and raises an ImportError naming
the extra when torch is missing.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Public name -> the submodule that defines it (imported on first access, with torch).
_EXPORTS = {
    "distributions": ("CFGParts", "LinearChainCRF", "RDP", "SentCFG", "TreeCRF"),
    "chain": ("ChainSamples", "GumbelSample", "chain_entropy", "chain_exact_reference", "chain_forward",
              "chain_gumbel_sample", "chain_log_partition", "chain_marginals", "chain_sample", "chain_score",
              "chain_viterbi"),
    "pcfg": ("pcfg_entropy", "pcfg_gumbel_sample", "pcfg_log_partition", "pcfg_marginals", "pcfg_viterbi"),
    "proposals": ("resolve_proposal",),
    "randomized_chain": ("randomized_chain_entropy", "randomized_chain_gumbel_sample",
                         "randomized_chain_log_partition"),
    "randomized_pcfg": ("randomized_pcfg_entropy", "randomized_pcfg_gumbel_sample", "randomized_pcfg_log_partition"),
    "randomized_tree": ("randomized_tree_entropy", "randomized_tree_gumbel_sample", "randomized_tree_log_partition"),
    "selection": ("IndexSets", "select_indices"),
    "tree": ("TreeSample", "TreeViterbi", "tree_entropy", "tree_gumbel_sample", "tree_log_partition",
             "tree_marginals", "tree_viterbi"),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    """Import the submodule defining ``name`` (and torch) on first access (PEP 562)."""
    module = _WHERE.get(name)
    if module is None:
        if name == "torch":
            from ._torch import torch

            return torch
        raise AttributeError(f"module 'rdp' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
