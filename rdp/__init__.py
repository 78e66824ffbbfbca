"""Randomized dynamic programming in torch (Fu, Cunningham, Lapata, "Scaling Structured Inference with
Randomization", ICML 2022), with the exact algorithms it approximates.

* exact chains (:mod:`rdp.chain`): log Z, marginals, entropy DP, Viterbi, Gumbel-FFBS, a chunked
  no-grad reference for large N; by default in scaled space as matrix products with a custom backward
  recursion (:mod:`rdp.fast_chain`, autograd memory O(N^2 + B T N));
* exact trees (:mod:`rdp.tree`, :mod:`rdp.pcfg`): span-labelled tree CRF and CNF PCFG inside on
  index sets, marginals, entropy, Viterbi, top-down Gumbel tree sampling;
* randomized chains, trees and PCFGs (:mod:`rdp.randomized_chain`, :mod:`rdp.randomized_tree`,
  :mod:`rdp.randomized_pcfg`): randomized Forward (Alg. 1), Inside (Alg. 2), entropy (Alg. 3), Gumbel
  backward sampling on chains (Alg. 4) and top-down on trees; Top-K is ``k2 = 0``;
* proposals (:mod:`rdp.proposals`), synthetic problems with controlled entropy (:mod:`rdp.synthetic`),
  a torch memory meter (:mod:`rdp.memory`) and harness suites (:mod:`rdp.bench`).

Everything is device-agnostic: tensors stay on the device of the potentials.
Needs torch: ``pip install "mcsa[rdp]"`` (or ``pip install torch``).
"""

from ._torch import torch  # noqa: F401  (raises an ImportError naming the extra when torch is missing)
from .chain import (
    GumbelSample,
    chain_entropy,
    chain_exact_reference,
    chain_gumbel_sample,
    chain_log_partition,
    chain_marginals,
    chain_viterbi,
)
from .pcfg import pcfg_entropy, pcfg_gumbel_sample, pcfg_log_partition, pcfg_marginals, pcfg_viterbi
from .proposals import resolve_proposal
from .randomized_chain import randomized_chain_entropy, randomized_chain_gumbel_sample, randomized_chain_log_partition
from .randomized_pcfg import randomized_pcfg_entropy, randomized_pcfg_gumbel_sample, randomized_pcfg_log_partition
from .randomized_tree import randomized_tree_entropy, randomized_tree_gumbel_sample, randomized_tree_log_partition
from .selection import IndexSets, select_indices
from .tree import (
    TreeSample,
    TreeViterbi,
    tree_entropy,
    tree_gumbel_sample,
    tree_log_partition,
    tree_marginals,
    tree_viterbi,
)

__all__ = ["GumbelSample", "IndexSets", "chain_entropy", "chain_exact_reference", "chain_gumbel_sample",
           "chain_log_partition", "chain_marginals", "chain_viterbi", "pcfg_entropy", "pcfg_gumbel_sample",
           "pcfg_log_partition", "pcfg_marginals", "pcfg_viterbi", "randomized_pcfg_gumbel_sample",
           "randomized_chain_entropy", "randomized_chain_gumbel_sample",
           "randomized_chain_log_partition", "randomized_pcfg_entropy", "randomized_pcfg_log_partition",
           "randomized_tree_entropy", "randomized_tree_gumbel_sample", "randomized_tree_log_partition", "resolve_proposal",
           "select_indices", "TreeSample", "tree_entropy", "tree_gumbel_sample", "tree_log_partition",
           "tree_marginals", "TreeViterbi", "tree_viterbi"]

# structured distributions in torch-struct's shape (helper G2; merge into the lazy table)
from .distributions import RDP, CFGParts, LinearChainCRF, SentCFG, TreeCRF  # noqa: E402

__all__ += ["CFGParts", "LinearChainCRF", "RDP", "SentCFG", "TreeCRF"]
