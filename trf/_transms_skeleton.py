"""The one TransMS skeleton in Numba (Table 1, Eq. 19-21): a local jump, then a move within the length.

Private; :mod:`trf.transms_core` validates input and calls these kernels.  A **model** is a
NamedTuple of arrays (a feature backend's parameters, bundled, with an ``m`` field: the largest
length); a **workspace** is a NamedTuple of arrays that holds one chain's current sentence (the
backend's own layout) and scratch space.  A backend plugs in by implementing, with
:func:`implements`, the operations

``new_workspace(model)``
    allocate a workspace (once per chain or per run);
``load_chain(model, work, tokens_row, length)`` / ``store_chain(model, work, length, out_row)``
    copy a chain's symbols ``tokens_row[:length]`` into / out of the workspace;
``propose_append(model, work, k)``
    draw the appended symbol ``u ~ g(. | x^k)`` (Eq. 22 / Eq. 35-36), place it at position ``k + 1``
    and return ``log p~(x^k, u) - log p~(x^k) - log g(u | x^k)`` (the feature part of Eq. 20);
``reject_append(model, work, k)``
    undo :func:`propose_append` (the chain keeps length ``k``);
``removal_log_ratio(model, work, k)``
    ``log p~(x^{k-1}) - log p~(x^k) + log g(x_k | x^{k-1})`` (the feature part of Eq. 21), no change;
``remove_last(model, work, k)``
    drop position ``k`` (the removal was accepted);
``within_length_move(model, work, j, stats)``
    one sweep of a move that leaves ``p(x^j | j)`` invariant (Table 1 step II; Eq. 34 for classes),
    adding class-move counts to ``stats[4:6]``;

where ``p~(x^j) = exp(lambda . f(x^j))``.  The jump law ``Gamma`` of Eq. (19) (uniform over the
neighbours ``j - 1, j, j + 1`` in ``1..m``), the acceptance of Eq. (20)-(21) with the length weights
``log pi0_j - zeta_j`` (Eq. 12), the counting and the chain loops (all chains, a block of chains, or a
schedule) are written once below.  ``stats`` per chain: [up proposed, up accepted, down
proposed, down accepted, class proposed, class accepted].  The chain loops take the chains as one
``state`` bundle (:class:`trf.transms_core.ChainState`: ``tokens`` (n_chains, m), ``lengths``
(n_chains,)) and write the visited states and the counts into one :class:`Trace`.

The skeleton is compiled once per backend (the operations are resolved from the model's type at
compile time: direct calls, no function pointers in the inner loop).  The operations' overloads
are compiled with the project's jit options; without them (Numba's overload defaults) the sentence
backend ran about 2x slower.  Numba's on-disk cache does not track the backend modules: after editing
a backend's kernels, touch this file or clear ``NUMBA_CACHE_DIR``.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

from samplers._dispatch import implements as _implements
from samplers._dispatch import numba_operation
from samplers._jit import jit

N_STATS = 6


class Trace(NamedTuple):
    """What the chain loops write: visited states (row ``r`` is ``tokens[r, :lengths[r]]``) and the move
    counts ``stats`` ((n_chains, N_STATS) per chain, or (N_STATS,) for a schedule), all int64."""

    tokens: np.ndarray
    lengths: np.ndarray
    stats: np.ndarray


# --------------------------------------------------------------------------- the backend's operations


new_workspace = numba_operation("new_workspace", "Allocate a workspace (once per chain or per run).")
load_chain = numba_operation("load_chain", "Copy a chain's symbols ``tokens_row[:length]`` into the workspace.")
store_chain = numba_operation("store_chain", "Copy the workspace's sentence out into ``out_row``.")
propose_append = numba_operation("propose_append", "Draw and place the appended symbol; return its log ratio.")
reject_append = numba_operation("reject_append", "Undo :func:`propose_append`.")
removal_log_ratio = numba_operation("removal_log_ratio", "The feature part of Eq. 21 for removing position k.")
remove_last = numba_operation("remove_last", "Drop position k (the removal was accepted).")
within_length_move = numba_operation("within_length_move", "One sweep of a move that leaves p(x^j | j) invariant.")

OPERATIONS = {op.__name__: op for op in (new_workspace, load_chain, store_chain, propose_append, reject_append,
                                         removal_log_ratio, remove_last, within_length_move)}


def implements(operation: Callable, model_class: type) -> Callable:
    """Decorator: the jitted function becomes ``operation`` for models of NamedTuple class ``model_class``
    (:func:`samplers._dispatch.implements` over :data:`OPERATIONS`)."""
    return _implements(operation, model_class, OPERATIONS.values())


# --------------------------------------------------------------------------- the jump law (Eq. 19)


@jit
def jump_probability(k, j, m):
    """``Gamma(k, j)`` of Eq. (19): uniform over the neighbours ``k - 1, k, k + 1`` that lie in ``1..m``."""
    if m == 1:
        return 1.0 if j == 1 else 0.0
    if abs(j - k) > 1 or j < 1 or j > m:
        return 0.0
    if k == 1 or k == m:
        return 0.5
    return 1.0 / 3.0


@jit
def draw_jump(k, m):
    """``j ~ Gamma(k, .)`` (Eq. 19); no random number is drawn when ``m == 1``."""
    if m == 1:
        return 1
    u = np.random.random()
    if k == 1:
        return 1 if u < 0.5 else 2
    if k == m:
        return m - 1 if u < 0.5 else m
    if u < 1.0 / 3.0:
        return k - 1
    if u < 2.0 / 3.0:
        return k
    return k + 1


@jit
def log_jump_ratio(k, j, m):
    """``log Gamma(j, k) - log Gamma(k, j)``: the jump-law part of Eq. (20)-(21)."""
    return np.log(jump_probability(j, k, m)) - np.log(jump_probability(k, j, m))


# --------------------------------------------------------------------------- one step, written once


@jit
def transms_step(model, work, length, log_len_weight, jump, stats):
    """One TransMS step (Table 1) from a chain of length ``length``; returns the new length.

    I. unless ``jump`` is False: draw ``j ~ Gamma(k, .)`` (Eq. 19); for ``j = k + 1`` propose the
    appended symbol from ``g`` and accept with Eq. (20), for ``j = k - 1`` accept the removal of the
    last symbol with Eq. (21) (``log_len_weight[j-1] = log pi0_j - zeta_j``, Eq. 12);
    II. a move within the (new) length.
    """
    k = length
    target = draw_jump(k, model.m) if jump else k
    if target == k + 1:
        stats[0] += 1
        log_ratio = (log_jump_ratio(k, k + 1, model.m) + log_len_weight[k] - log_len_weight[k - 1]
                     + propose_append(model, work, k))                           # Eq. (20)
        if np.log(np.random.random()) < log_ratio:
            length = k + 1
            stats[1] += 1
        else:
            reject_append(model, work, k)
    elif target == k - 1:
        stats[2] += 1
        log_ratio = (log_jump_ratio(k, k - 1, model.m) + log_len_weight[k - 2] - log_len_weight[k - 1]
                     + removal_log_ratio(model, work, k))                        # Eq. (21)
        if np.log(np.random.random()) < log_ratio:
            remove_last(model, work, k)
            length = k - 1
            stats[3] += 1
    within_length_move(model, work, length, stats)
    return length


@jit
def _run_one_chain(model, state, chain, seed, n_steps, log_len_weight, jump, trace):
    """Chain ``chain`` of ``state`` makes ``n_steps`` steps with its own ``seed``; trace record
    ``chain * n_steps + s`` is its state after step s+1, its counts go to ``trace.stats[chain]``."""
    np.random.seed(seed)                   # one stream per chain: same draws for any thread count
    tokens, lengths = state.tokens, state.lengths
    out_tokens, out_len, stats = trace.tokens, trace.lengths, trace.stats[chain]
    work = new_workspace(model)
    length = lengths[chain]
    load_chain(model, work, tokens[chain], length)
    for s in range(n_steps):
        length = transms_step(model, work, length, log_len_weight, jump, stats)
        row = chain * n_steps + s
        store_chain(model, work, length, out_tokens[row])
        out_len[row] = length
    lengths[chain] = length
    store_chain(model, work, length, tokens[chain])


@jit
def run_chains_serial(model, state, n_steps, log_len_weight, jump, seeds, trace):
    """Every chain makes ``n_steps`` steps from ``state`` (updated in place), seeded by ``seeds[chain]``;
    ``trace`` record ``chain * n_steps + s`` is its state after step s+1.  Compiled ``nogil``: the
    parallel path (:func:`trf.transms_core.step`) runs it on blocks of chains in threads."""
    for chain in range(state.lengths.shape[0]):
        _run_one_chain(model, state, chain, seeds[chain], n_steps, log_len_weight, jump, trace)


@jit
def run_schedule(model, state, schedule, log_len_weight, jump, seed, trace):
    """For record r, chain ``schedule[r]`` of ``state`` makes one step and its state is written to
    ``trace`` row r.

    One seed, one random stream.  ``trace.stats`` has shape (6,).
    """
    np.random.seed(seed)
    tokens, lengths = state.tokens, state.lengths
    out_tokens, out_len, stats = trace.tokens, trace.lengths, trace.stats
    work = new_workspace(model)
    for r in range(schedule.shape[0]):
        chain = schedule[r]
        load_chain(model, work, tokens[chain], lengths[chain])
        length = transms_step(model, work, lengths[chain], log_len_weight, jump, stats)
        lengths[chain] = length
        store_chain(model, work, length, tokens[chain])
        store_chain(model, work, length, out_tokens[r])
        out_len[r] = length
