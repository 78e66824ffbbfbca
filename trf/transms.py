"""Trans-dimensional mixture sampling (TransMS, Table 1 / Sec. 4.3) for word TRFs: the dense-table backend.

Targets ``q(j, x^j) ∝ pi0_j exp(-zeta_j) exp(lambda . f(x^j))`` (Eq. 12).  Each step of a chain is a
Metropolis-Hastings local jump to ``j ± 1`` (jump law Eq. 19, acceptance Eq. 20-21 with the
"append a symbol" proposal g of Eq. 22) followed by a systematic Gibbs sweep over positions.  The
skeleton is the shared one of :mod:`trf.transms_core`; this module supplies the word features
(character n-grams read from dense tables, :mod:`trf._word_transms_kernels`) and the word-level API.

:class:`WordBackend` wraps the sampler and the training data's statistics into the
:class:`trf.augsa.AugSABackend` protocol.
"""

from __future__ import annotations

import numpy as np

from samplers.rng import as_generator
from samplers.validation import as_float_array, check_int

from . import transms_core
from ._word_transms_kernels import WordModel
from .augsa import SampleBatch
from .data import WordData
from .features import FeatureSet
from .transms_core import ChainState, TransMSInfo

__all__ = ["ChainState", "TransMSInfo", "WordBackend", "WordModel", "init_chains", "transms", "word_model"]


def word_model(features: FeatureSet, lam: np.ndarray, m: int) -> WordModel:
    """The dense-table model bundle of the TransMS kernels (lambda checked against ``features``)."""
    lam = features.check_lambda(lam)
    return WordModel(features.dense_weights(lam), int(features.V), check_int(m, "m", low=1))


def init_chains(n_chains: int, m: int, V: int, seed=None, length_probs: np.ndarray | None = None) -> ChainState:
    """``n_chains`` chains of uniform random symbols (tokens of shape (n_chains, m)).

    Lengths are 1, or drawn from ``length_probs`` (shape (m,)) when given: with ``length_probs = pi0``
    these are exact draws of q (Eq. 12) at lambda = 0 and the exact initial zeta.
    """
    n_chains = check_int(n_chains, "n_chains", low=1)
    m = check_int(m, "m", low=1)
    V = check_int(V, "V", low=1)
    rng = as_generator(seed)
    tokens = rng.integers(0, V, size=(n_chains, m)).astype(np.int64)
    if length_probs is None:
        lengths = np.ones(n_chains, dtype=np.int64)
    else:
        p = as_float_array(length_probs, "length_probs", ndim=1)
        if p.shape[0] != m:
            raise ValueError(f"length_probs must have length m = {m}, got {p.shape[0]}")
        lengths = rng.choice(m, size=n_chains, p=p / p.sum()).astype(np.int64) + 1
    return ChainState(tokens, lengths)


def _word_state(state, m: int) -> ChainState:
    """Tokens of width m (width m + 1, the layout of earlier checkpoints, is trimmed)."""
    tokens = np.asarray(state[0])
    if tokens.ndim == 2 and tokens.shape[1] == m + 1:
        tokens = tokens[:, :m]
    elif tokens.ndim != 2 or tokens.shape[1] != m:
        width = tokens.shape[1] if tokens.ndim == 2 else None
        raise ValueError(f"state was built for m = {width}, log_len_weight has m = {m}")
    return ChainState(tokens, state[1])


def transms(features: FeatureSet, lam: np.ndarray, log_len_weight: np.ndarray, state: ChainState,
            n_samples: int, seed=None, *, jump: bool = True, schedule: np.ndarray | None = None,
            parallel: bool = False) -> tuple[ChainState, WordData, TransMSInfo]:
    """Draw ``n_samples`` states by TransMS from persistent chains.

    Parameters
    ----------
    features : FeatureSet
        The word features ``f`` (``d`` of them).
    lam : ndarray, shape (d,)
        Feature weights ``lambda``.
    log_len_weight : ndarray, shape (m,)
        ``log pi0_j - zeta_j`` (the length part of Eq. 12).
    state : ChainState
        Chains to advance (copied, not modified).
    n_samples : int
        Number of recorded steps; chain ``r % n_chains`` moves at step r unless ``schedule`` says.
    seed : int, Generator or None
        Randomness of the moves (SPEC 7).
    jump : bool
        False keeps every chain's length (Gibbs sweeps only; the IIS baseline samples this way).
    schedule : ndarray of int, optional
        Chain index of every recorded step.
    parallel : bool
        Advance the chains in parallel (blocks of chains on threads), each with its own seed spawned from
        ``seed``; record ``s * n_chains + c`` is chain c's state after step s+1 (chains make
        ``ceil(n_samples / n_chains)`` steps).  Results do not depend on the number of threads.
        Not combinable with ``schedule``.

    Returns
    -------
    (ChainState, WordData, TransMSInfo)
        New chain states, the recorded words and the jump statistics.
    """
    lw = as_float_array(log_len_weight, "log_len_weight", ndim=1, finite=False)
    m = lw.shape[0]
    model = word_model(features, lam, m)
    n_samples = check_int(n_samples, "n_samples", low=1)
    state = _word_state(state, m)
    if parallel:
        if schedule is not None:
            raise ValueError("schedule cannot be combined with parallel=True")
        n_chains = np.asarray(state[1]).shape[0]
        n_steps = -(-n_samples // n_chains)
        state, visits, info = transms_core.step(model, state, n_steps, lw, seed, jump=jump, parallel=True)
        order = np.arange(n_steps * n_chains).reshape(n_chains, n_steps).T.ravel()[:n_samples]   # step-major
        out_tokens, out_len = visits.tokens[order], visits.lengths[order]
    else:
        if schedule is None:
            schedule = np.arange(n_samples, dtype=np.int64) % np.asarray(state[1]).shape[0]
        schedule = np.asarray(schedule)
        if schedule.ndim != 1 or schedule.shape[0] != n_samples:
            raise ValueError(f"schedule must have n_samples = {n_samples} entries, got shape {schedule.shape}")
        state, (out_tokens, out_len), info = transms_core.step_schedule(model, state, schedule, lw, seed, jump=jump)
    mask = np.arange(m)[None, :] < out_len[:, None]
    offsets = np.zeros(n_samples + 1, dtype=np.int64)
    offsets[1:] = np.cumsum(out_len)
    words = WordData(out_tokens[mask].astype(np.int32), offsets, features.alphabet, m)
    return state, words, info


class WordBackend:
    """Word TRF backend for :class:`trf.augsa.AugSA` (implements ``AugSABackend``).

    Parameters
    ----------
    train : WordData
        Training words (defines features, ``pi = n_j / n``, p~[f] and the stratified variances).
    features : FeatureSet, optional
        Defaults to the n-grams seen in ``train``.
    dev : WordData, optional
        Development words for ``log_likelihood(..., "dev")`` (Appendix-E stop rule).
    n_chains : int
        Persistent TransMS chains (advanced round-robin, one step per recorded draw); they start
        as exact draws of q at lambda = 0 (lengths from pi0, uniform symbols).
    seed : int
        Seed of the initial chain states.
    parallel : bool
        Advance chains with the parallel kernel (see :func:`transms`).
    """

    def __init__(self, train: WordData, features: FeatureSet | None = None, dev: WordData | None = None,
                 n_chains: int = 100, seed: int = 0, parallel: bool = False) -> None:
        self.features = FeatureSet.from_words(train) if features is None else features
        self.train, self.dev = train, dev
        self.m = train.m
        self.n_features = self.features.d
        n_j = train.length_counts()
        self.pi = n_j / n_j.sum()
        self.empirical_mean = self.features.counts(train) / len(train)
        self.feature_variance = self.features.stratified_variance(train)
        self.n_chains, self.seed, self.parallel = check_int(n_chains, "n_chains", low=1), seed, bool(parallel)
        self.state: ChainState | None = None  # drawn from q at lambda = 0 on the first sample()

    def initial_zeta(self) -> np.ndarray:
        """Exact zeta at lambda = 0: ``log Z_j = j log V``, so ``zeta_j = (j - 1) log V``."""
        return np.arange(self.m) * np.log(self.features.V)

    def sample(self, lam, zeta, pi0, n_samples, length_weight, seed) -> SampleBatch:
        """K TransMS draws from q (Eq. 12) and their weighted feature sum (the sum in Eq. 16)."""
        with np.errstate(divide="ignore"):
            log_len_weight = np.log(pi0) - zeta
        if self.state is None:
            self.state = init_chains(self.n_chains, self.m, self.features.V, self.seed, length_probs=pi0)
        self.state, words, info = transms(self.features, lam, log_len_weight, self.state, n_samples, seed,
                                          parallel=self.parallel)
        lengths = words.lengths
        feature_sum = self.features.counts(words, np.asarray(length_weight)[lengths - 1])
        return SampleBatch(lengths, feature_sum, {"jump_acceptance": info.jump_acceptance})

    def sentence_log_probs(self, lam, zeta, split: str) -> np.ndarray | None:
        """``log p(j, x^j; lambda, zeta)`` of every word of ``split`` (divergence guard)."""
        data = {"train": self.train, "dev": self.dev}.get(split)
        if data is None:
            return None
        from .model import TRF

        return np.asarray(TRF(self.features, self.pi, lam, zeta).log_prob(data), dtype=np.float64)

    def log_likelihood(self, lam, zeta, split: str) -> float | None:
        """Mean log p(j, x^j; lambda, zeta) per word on ``split`` ("train" or "dev"), estimated zeta."""
        data = {"train": self.train, "dev": self.dev}.get(split)
        if data is None:
            return None
        from .model import TRF

        return float(np.mean(TRF(self.features, self.pi, lam, zeta).log_prob(data)))

    def get_state(self) -> dict[str, np.ndarray]:
        """The persistent chains' state for a checkpoint (an empty dict before the first draw).

        Returns
        -------
        dict of str -> ndarray
            ``tokens``, int64 (n_chains, m), and ``lengths``, int64 (n_chains,).
        """
        if self.state is None:
            return {}
        return {"tokens": self.state.tokens, "lengths": self.state.lengths}

    def set_state(self, state: dict[str, np.ndarray]) -> None:
        """Restore the chains from :meth:`get_state` (also the earlier ``(n_chains, m + 1)`` token layout).

        Raises
        ------
        ValueError
            If the token array does not have the shape ``(n_chains, m)``.
        """
        tokens = np.asarray(state["tokens"], dtype=np.int64)
        if tokens.ndim == 2 and tokens.shape[1] == self.m + 1:
            tokens = tokens[:, :self.m]                 # checkpoints of the earlier (m + 1)-wide layout
        if tokens.ndim != 2 or tokens.shape[1] != self.m:
            raise ValueError(f"chain state has shape {tokens.shape}, expected (n_chains, {self.m})")
        self.state = ChainState(tokens.copy(), np.asarray(state["lengths"], dtype=np.int64).copy())
