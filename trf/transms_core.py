"""Trans-dimensional mixture sampling (TransMS, Table 1, Eq. 19-21), stated once for every TRF backend.

TransMS targets ``q(j, x^j) ∝ pi0_j exp(-zeta_j + lambda . f(x^j))`` (Eq. 12) over sequences of
length ``1..m``: each step is a local jump ``j -> j ± 1`` accepted by Eq. (20)-(21), then a move
within the length.  The skeleton (jump law, acceptance, counting, the chain loops) lives in
:mod:`trf._transms_skeleton`; a **feature backend** supplies the model-specific parts as Numba
operations on its model bundle (a NamedTuple of arrays with a field ``m``):

* dense word tables (:mod:`trf.transms`, character n-grams, proposal ``g`` of Eq. 22, Gibbs sweeps);
* hashed sentence n-grams with word classes (:mod:`trf.lm.transms`, Eq. 34-37, Appendix C).

The API is BlackJAX-style: a backend's ``init`` returns a :class:`ChainState`; :func:`step` advances
it and returns the new state, the visited states and a :class:`TransMSInfo`.  Chains are persistent
and independent; each has its own seed, so the parallel path (blocks of chains on threads, Appendix D)
gives the same draws as the serial one.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from samplers._blocks import thread_map
from samplers.rng import kernel_seed, kernel_seeds
from samplers.validation import as_float_array, as_int_array, check_int

from . import _transms_skeleton as skeleton

__all__ = ["ChainState", "TransMSInfo", "Visits", "check_log_len_weight", "check_state", "step", "step_schedule"]


class ChainState(NamedTuple):
    """Persistent chains: chain ``r`` holds the sequence ``tokens[r, :lengths[r]]`` (1 <= length <= m).

    ``tokens`` is int64 of shape (n_chains, m); ``lengths`` int64 of shape (n_chains,).
    """

    tokens: np.ndarray
    lengths: np.ndarray


class TransMSInfo(NamedTuple):
    """Move counts summed over chains: up (j+1) and down (j-1) jumps, class moves (Eq. 34; 0 for words)."""

    up_proposed: int
    up_accepted: int
    down_proposed: int
    down_accepted: int
    class_proposed: int = 0
    class_accepted: int = 0

    @property
    def jump_acceptance(self) -> float:
        """Accepted over proposed jumps, up and down together (NaN when none was proposed)."""
        n = self.up_proposed + self.down_proposed
        return (self.up_accepted + self.down_accepted) / n if n else float("nan")

    @property
    def class_acceptance(self) -> float:
        """Accepted over proposed class moves of Eq. (34) (NaN when none was proposed)."""
        return self.class_accepted / self.class_proposed if self.class_proposed else float("nan")


class Visits(NamedTuple):
    """Recorded states: row ``r`` is ``tokens[r, :lengths[r]]`` (order documented by the caller)."""

    tokens: np.ndarray
    lengths: np.ndarray


def check_log_len_weight(log_len_weight, m: int) -> np.ndarray:
    """``log pi0_j - zeta_j`` for ``j = 1..m``: finite or -inf (a length of zero weight), never NaN or +inf."""
    lw = as_float_array(log_len_weight, "log_len_weight", ndim=1, finite=False)
    if lw.size != m:
        raise ValueError(f"log_len_weight must have m = {m} entries, got {lw.size}")
    if np.any(np.isnan(lw)) or np.any(lw == np.inf):
        raise ValueError("log_len_weight must not hold NaN or +inf")
    return lw


def check_state(state, m: int) -> ChainState:
    """A validated copy of ``state`` (tokens int64 (n_chains, m), lengths int64 in 1..m)."""
    if not isinstance(state, tuple) or len(state) != 2:
        raise TypeError("state must be a ChainState(tokens, lengths)")
    tokens = np.asarray(state[0])
    lengths = as_int_array(state[1], "state.lengths", ndim=1, low=1, high=m + 1)
    if tokens.ndim != 2 or tokens.shape != (lengths.size, m) or not np.issubdtype(tokens.dtype, np.integer):
        raise ValueError(f"state.tokens must be an integer array of shape (n_chains, m) = ({lengths.size}, {m}), "
                         f"got {tokens.shape}")
    return ChainState(np.array(tokens, dtype=np.int64), np.array(lengths, dtype=np.int64))


def step(model, state: ChainState, n_steps: int, log_len_weight, seed=None, *, jump: bool = True,
         parallel: bool = False) -> tuple[ChainState, Visits, TransMSInfo]:
    """Advance every chain ``n_steps`` TransMS steps (Table 1) under ``model`` (a backend bundle).

    Parameters
    ----------
    model : NamedTuple
        A backend's model bundle (``trf.transms.WordModel``, ``trf.lm.transms.SentenceModel``).
    state : ChainState
        Not modified; the new state is returned.
    n_steps : int
        Steps per chain (each a local jump, unless ``jump`` is False, and a Markov move).
    log_len_weight : ndarray, shape (m,)
        ``log pi0_j - zeta_j`` (the length part of Eq. 12).
    seed : int, Generator or None
        One kernel seed per chain is spawned from it.
    jump : bool
        False keeps every chain's length (moves within the length only).
    parallel : bool
        Chains on all Numba threads (blocks of chains, one thread each); identical draws to the serial path.

    Returns
    -------
    (ChainState, Visits, TransMSInfo)
        Visit row ``chain * n_steps + s`` is the chain's state after step ``s + 1``.
    """
    m = int(model.m)
    state = check_state(state, m)
    lw = check_log_len_weight(log_len_weight, m)
    n_steps = check_int(n_steps, "n_steps", low=1)
    n_chains = state.lengths.size
    out_tokens = np.zeros((n_chains * n_steps, m), dtype=np.int64)
    out_len = np.zeros(n_chains * n_steps, dtype=np.int64)
    stats = np.zeros((n_chains, skeleton.N_STATS), dtype=np.int64)
    args = (model, state, n_steps, lw, bool(jump), kernel_seeds(seed, n_chains).astype(np.int64),
            skeleton.Trace(out_tokens, out_len, stats))
    _run_chains(args, parallel)
    return state, Visits(out_tokens, out_len), TransMSInfo(*map(int, stats.sum(axis=0)))


def _run_chains(args: tuple, parallel: bool) -> None:
    """The serial build, or on threads when ``parallel`` (the same draws either way).

    The chains are independent and each seeds its own stream (Numba's random state is per thread), so
    the ``nogil`` serial build runs on blocks of chains in threads, one per Numba thread.  This replaced
    a ``prange`` build of the same loop: for the sentence backend's bundle (nested ``HashedFeatures``
    NamedTuple) parfor lowering fails ("scalar type ... given for non scalar argument") on a cold cache,
    and ``cache=True`` keys the on-disk index by signature, not by the ``parallel`` flag, so on a warm
    cache the prange dispatcher silently loaded the serial build (one core at "parallel" for every
    training run).
    """
    if parallel:
        _run_chains_threaded(args)
    else:
        skeleton.run_chains_serial(*args)


def _run_chains_threaded(args: tuple) -> None:
    """The serial build on ``numba.get_num_threads()`` blocks of chains in threads (it releases the GIL)."""
    import numba

    model, state, n_steps, lw, jump, seeds, trace = args
    n_chains = state.lengths.size
    n_blocks = min(numba.get_num_threads(), n_chains)
    if n_blocks <= 1:
        skeleton.run_chains_serial(*args)
        return
    edges = np.linspace(0, n_chains, n_blocks + 1).astype(np.int64)

    def block(b: int) -> None:
        lo, hi = edges[b], edges[b + 1]
        rows = slice(lo * n_steps, hi * n_steps)
        skeleton.run_chains_serial(model, ChainState(state.tokens[lo:hi], state.lengths[lo:hi]), n_steps, lw, jump,
                                   seeds[lo:hi], skeleton.Trace(trace.tokens[rows], trace.lengths[rows],
                                                                trace.stats[lo:hi]))

    thread_map(block, range(n_blocks), n_blocks)


def step_schedule(model, state: ChainState, schedule, log_len_weight, seed=None, *,
                  jump: bool = True) -> tuple[ChainState, Visits, TransMSInfo]:
    """One step of chain ``schedule[r]`` for every r, in order, from one random stream; visit r is its new state."""
    m = int(model.m)
    state = check_state(state, m)
    lw = check_log_len_weight(log_len_weight, m)
    schedule = as_int_array(schedule, "schedule", ndim=1, low=0, high=state.lengths.size)
    out_tokens = np.zeros((schedule.size, m), dtype=np.int64)
    out_len = np.zeros(schedule.size, dtype=np.int64)
    stats = np.zeros(skeleton.N_STATS, dtype=np.int64)
    skeleton.run_schedule(model, state, schedule.astype(np.int64), lw, bool(jump), kernel_seed(seed),
                          skeleton.Trace(out_tokens, out_len, stats))
    return state, Visits(out_tokens, out_len), TransMSInfo(*map(int, stats))
