"""Estimators of the per-length normalisers ``log Z_j`` used by the check, all returning :class:`LogZEstimate`.

* :func:`exact_estimate` -- the exact sum over all ``V^j`` sentences (:func:`exact_log_z`), where that is small;
* :func:`forward_estimate` -- forward AIS at fixed length (a stochastic lower bound, Neal 2001) from the model's
  unigram part (:func:`trf.lm.model.unigram_base`) or the uniform law over ``V^j``;
* :func:`bidirectional_estimates` -- forward and reverse AIS (the reverse run an approximate stochastic upper
  bound, Grosse et al. 2015 / RAISE);
* :func:`smc_estimate` / :func:`conditional_smc_estimate` -- sequential Monte Carlo over all lengths at once
  (:func:`trf.lm.smc.smc_log_z`, unbiased for ``Z_j`` like forward AIS) and conditional SMC pinned to its draws
  (:func:`trf.lm.smc.conditional_smc_log_z`, the matching upper side);
* :func:`known_floor` -- an exact lower bound from sentences at hand (the test text, the training text): ``Z_j`` is
  at least the sum of ``exp(lambda . f(x))`` over any distinct sentences ``x`` of length ``j``.

The AIS runs share one :class:`AISSetup` (model, sampler, chains, base law) instead of a row of positional
arguments.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import logsumexp

from samplers.ais import AISResult, run_ais, run_bidirectional_ais, t_multiplier
from samplers.rng import kernel_seed
from samplers.validation import as_float_array, check_int
from trf.lm.corpus import EncodedCorpus
from trf.lm.known import NEIGHBOUR_SHARE, DistinctSentences, Neighbours
from trf.lm.model import SentenceTRF, unigram_base
from trf.lm.smc import ConditionalSMCResult, SMCResult, conditional_smc_log_z, smc_log_z
from trf.lm.transms import ChainState, SentenceSampler

__all__ = ["LogZEstimate", "AISSetup", "AIS_BASES", "EXACT_LIMIT", "exact_log_z", "ais_log_z", "exact_estimate",
           "forward_estimate", "bidirectional_estimates", "smc_estimate", "conditional_smc_estimate",
           "log_prob_with_log_z", "KnownFloor", "known_floor", "known_sentences"]

AIS_BASES = ("unigram", "uniform")
EXACT_LIMIT = 200_000  # enumerate V^j sentences for the exact log Z_j up to this many


class LogZEstimate(NamedTuple):
    """Estimates of ``log Z_j`` at some lengths, by one estimator.

    Attributes
    ----------
    method : str
        ``"exact"``, ``"forward AIS"``, ``"reverse AIS"``, ``"SMC"`` or ``"conditional SMC"``.
    lengths : ndarray of int, shape (n,)
    log_z : ndarray, shape (n,)
        The estimates of ``log Z_j``.
    stderr : ndarray, shape (n,)
        Delta-method standard errors (0 where exact).
    effort : ndarray of int, shape (n,)
        Temperatures (AIS) or particles per run (SMC) at each length (0 where exact).
    spread : ndarray, shape (n,), optional
        Standard deviation of ``log Z-hat_j`` over independent runs (SMC), the convergence measure.
    ess : ndarray, shape (n,), optional
        Effective sample size of the AIS weights.
    runs : int
        Independent runs or chains behind each estimate.
    seconds : float
    """

    method: str
    lengths: np.ndarray
    log_z: np.ndarray
    stderr: np.ndarray
    effort: np.ndarray
    spread: np.ndarray | None = None
    ess: np.ndarray | None = None
    runs: int = 0
    seconds: float = 0.0

    def half_width(self, z: float) -> np.ndarray:
        """The interval half-width at the level of ``z`` normal standard errors, ``P(N(0, 1) > z)`` per side: the
        standard error times Student's t quantile with ``runs - 1`` degrees of freedom at that tail
        (:func:`samplers.ais.t_multiplier`; ``z`` itself with fewer than 2 runs, where the error is 0: exact).  Each
        standard error is estimated from ``runs`` runs or chains, so the normal ``z`` would be too narrow: with 4
        SMC runs the ``z = 3`` tail is 9.22 standard errors, with 8 runs 4.53, with 10 AIS chains 4.09 (the needle
        model of the check's tests, 100 checks with 4 SMC runs: ``z`` errors left the exact ``log Z_j`` out of the
        interval at some length in 14 of them, the quantile in none)."""
        return t_multiplier(z, self.runs) * np.asarray(self.stderr, dtype=float)

    def low(self, z: float) -> np.ndarray:
        """The interval's low end at the level of ``z``: ``log_z`` less :meth:`half_width`."""
        return np.asarray(self.log_z, dtype=float) - self.half_width(z)

    def high(self, z: float) -> np.ndarray:
        """The interval's high end at the level of ``z``: ``log_z`` plus :meth:`half_width`."""
        return np.asarray(self.log_z, dtype=float) + self.half_width(z)

    @classmethod
    def from_ais(cls, method: str, j: int, result: AISResult, n_temperatures: int) -> "LogZEstimate":
        """One length's AIS run (:class:`samplers.ais.AISResult`) as an estimate."""
        return cls(method, np.array([j]), np.array([result.log_partition]), np.array([result.stderr]),
                   np.array([n_temperatures]), ess=np.array([result.ess]), runs=int(result.log_weights.size))

    @classmethod
    def concat(cls, method: str, parts: list["LogZEstimate"]) -> "LogZEstimate":
        """The estimates of ``parts`` side by side, in their order, as ``method``'s (e.g. AIS runs per length with
        the exact values where exact); spread and ESS only when every part has them."""
        def join(name):
            values = [getattr(p, name) for p in parts]
            return None if any(v is None for v in values) else np.concatenate(values)
        return cls(method, join("lengths"), join("log_z"), join("stderr"), join("effort"), join("spread"),
                   join("ess"), max(p.runs for p in parts), sum(p.seconds for p in parts))


def states_corpus(state: ChainState) -> EncodedCorpus:
    lengths = state.lengths
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    mask = np.arange(state.tokens.shape[1])[None, :] < lengths[:, None]
    return EncodedCorpus(state.tokens[mask].astype(np.int32), offsets.astype(np.int64))


def exact_log_z(model: SentenceTRF, j: int, limit: int = EXACT_LIMIT) -> float:
    """Exact ``log Z_j(lambda)`` by summing ``exp(lambda . f)`` over all ``V^j`` sentences (ValueError when
    ``V^j > limit``)."""
    j = check_int(j, "j", low=1)
    V = model.features.n_words
    if V ** j > limit:
        raise ValueError(f"V^j = {V}^{j} sentences exceed the enumeration limit {limit}")
    total = V ** j
    tokens = np.stack(np.unravel_index(np.arange(total), (V,) * j), axis=1).astype(np.int32).ravel()
    corpus = EncodedCorpus(tokens, np.arange(0, total * j + 1, j, dtype=np.int64))
    return float(logsumexp(model.features.scores(corpus, model.lam)))


def exact_estimate(model: SentenceTRF, lengths: np.ndarray, limit: int = EXACT_LIMIT) -> LogZEstimate:
    """:func:`exact_log_z` at each of ``lengths`` as an estimate with zero error."""
    values = np.array([exact_log_z(model, int(j), limit) for j in lengths], dtype=float)
    zero = np.zeros(len(values))
    return LogZEstimate("exact", np.asarray(lengths, dtype=np.int64), values, zero, zero.astype(np.int64),
                        spread=zero, ess=np.full(len(values), np.nan))


class AISSetup(NamedTuple):
    """What every fixed-length AIS run of one check shares."""

    model: SentenceTRF
    sampler: SentenceSampler
    n_chains: int
    parallel: bool = False
    base: str = "unigram"

    @classmethod
    def build(cls, model: SentenceTRF, n_chains: int, parallel: bool = False, base: str = "unigram",
              longest: int | None = None) -> "AISSetup":
        """A setup with its own sampler over sentences of up to ``max(m, longest)`` words."""
        if base not in AIS_BASES:
            raise ValueError(f"base must be one of {AIS_BASES}, got {base!r}")
        return cls(model, SentenceSampler(model.features, max(model.m, longest or 0)), n_chains, parallel, base)


def _fixed_length_ais(setup: AISSetup, j: int, sweeps: int):
    """The AIS pieces for ``log Z_j``: the base law, the log ratio ``lambda . f - log f_0`` and ``sweeps``
    TransMS sweeps at fixed length under the intermediate parameters; also ``log Z_0``.

    ``base="uniform"``: uniform sentences of length ``j`` (``log Z_0 = j log V``), intermediate parameters
    ``beta lambda``.  ``base="unigram"`` (:func:`unigram_base`): independent words from ``softmax(u)``,
    intermediate parameters ``lambda`` on the unigram features and ``beta lambda`` elsewhere (the geometric
    path between the two, since ``log f_0 = u . f``)."""
    model, sampler = setup.model, setup.sampler
    feats = model.features
    V = feats.n_words
    flat = np.zeros(sampler.m)
    if setup.base == "uniform":
        u, is_unigram = np.zeros(V), np.zeros(feats.n_features, dtype=bool)
    else:
        u, is_unigram = unigram_base(model)
    log_z_word = float(logsumexp(u))
    cdf = np.cumsum(np.exp(u - log_z_word))
    cdf /= cdf[-1]
    held = np.where(is_unigram, model.lam, 0.0)
    annealed = np.where(is_unigram, 0.0, model.lam)

    def initial(n, rng):
        tokens = np.zeros((n, sampler.m), dtype=np.int64)
        tokens[:, :j] = np.minimum(np.searchsorted(cdf, rng.random((n, j)), side="right"), V - 1)
        return ChainState(tokens, np.full(n, j, dtype=np.int64))

    def log_ratio(state):
        return feats.scores(states_corpus(state), model.lam) - u[state.tokens[:, :j]].sum(axis=1)

    def transition(state, beta, rng):
        new, _, _, _ = sampler.run(held + beta * annealed, flat, state, sweeps, kernel_seed(rng),
                                   parallel=setup.parallel, jump=False)
        return new

    return initial, log_ratio, transition, j * log_z_word


def _forward_ais(setup: AISSetup, j: int, n_temperatures: int, rng, sweeps: int = 1) -> AISResult:
    initial, log_ratio, transition, log_z0 = _fixed_length_ais(setup, j, sweeps)
    return run_ais(initial, log_ratio, transition, n_temperatures=n_temperatures, n_chains=setup.n_chains,
                   seed=rng, log_partition_start=log_z0)


def ais_log_z(model: SentenceTRF, j: int, *, n_temperatures: int = 1000, n_chains: int = 10, seed=None,
              sweeps: int = 1, parallel: bool = False, base: str = "unigram") -> AISResult:
    """AIS estimate of ``log Z_j(lambda)`` from ``base`` ("unigram": :func:`unigram_base`, or "uniform"): the
    separate AIS of Sec. 7, with class-based Markov moves without jumps at the intermediate parameters.

    Returns the core's :class:`samplers.ais.AISResult` (its weights and base normaliser included);
    :meth:`LogZEstimate.from_ais` turns it into an estimate."""
    j = check_int(j, "j", low=1, high=model.m)
    sweeps = check_int(sweeps, "sweeps", low=1)
    setup = AISSetup.build(model, n_chains, parallel, base, longest=j)
    return _forward_ais(setup, j, n_temperatures, seed, sweeps)


def forward_estimate(setup: AISSetup, j: int, n_temperatures: int, rng) -> LogZEstimate:
    """Forward AIS alone for ``log Z_j`` (the check's half run)."""
    return LogZEstimate.from_ais("forward AIS", j, _forward_ais(setup, j, n_temperatures, rng), n_temperatures)


def bidirectional_estimates(setup: AISSetup, j: int, n_temperatures: int, rng, *, burn_in: int,
                            reverse_starts: np.ndarray | None = None) -> tuple[LogZEstimate, LogZEstimate]:
    """Forward and reverse AIS for ``log Z_j`` (:func:`samplers.ais.run_bidirectional_ais`); the reverse chains
    start from ``reverse_starts`` (``(n_chains, j)`` sentences) when given, else from the forward end states after
    ``burn_in`` sweeps at the model."""
    initial, log_ratio, transition, log_z0 = _fixed_length_ais(setup, j, 1)
    target = None
    if reverse_starts is not None:
        tokens = np.zeros((reverse_starts.shape[0], setup.sampler.m), dtype=np.int64)
        tokens[:, :j] = reverse_starts
        target = ChainState(tokens, np.full(reverse_starts.shape[0], j, dtype=np.int64))
    res = run_bidirectional_ais(initial, log_ratio, transition, n_temperatures=n_temperatures,
                                n_chains=setup.n_chains, seed=rng, log_partition_start=log_z0, burn_in=burn_in,
                                target_states=target)
    return (LogZEstimate.from_ais("forward AIS", j, res.forward, n_temperatures),
            LogZEstimate.from_ais("reverse AIS", j, res.reverse, n_temperatures))


def smc_estimate(result: SMCResult, lengths: np.ndarray) -> LogZEstimate:
    """An SMC run's (:func:`trf.lm.smc.smc_log_z`) estimates at ``lengths``."""
    at = np.asarray(lengths) - 1
    return LogZEstimate("SMC", np.asarray(lengths), result.log_z[at], result.stderr[at],
                        np.full(at.size, result.n_particles, dtype=np.int64), spread=result.spread[at],
                        runs=int(result.replicates.shape[0]), seconds=result.seconds)


def conditional_smc_estimate(result: ConditionalSMCResult) -> LogZEstimate:
    """Conditional SMC's (:func:`trf.lm.smc.conditional_smc_log_z`) estimates at its lengths."""
    return LogZEstimate("conditional SMC", np.asarray(result.lengths), result.log_z, result.stderr,
                        np.asarray(result.n_particles, dtype=np.int64), spread=result.spread,
                        runs=int(result.runs.shape[0]), seconds=result.seconds)


def run_smc(model: SentenceTRF, lengths: np.ndarray, n_particles: int, n_replicates: int, rng,
            n_keep: int = 0, known=None) -> SMCResult | None:
    """The check's SMC runs over ``1..max(lengths)`` (None when there is nothing to run), weighing the ``known``
    sentences exactly (:func:`known_sentences`; :func:`trf.lm.smc.smc_log_z`)."""
    if lengths.size == 0 or n_particles == 0:
        return None
    return smc_log_z(model, int(lengths.max()), n_particles=n_particles, n_replicates=n_replicates, seed=rng,
                     n_keep=n_keep, known=known)


def run_conditional_smc(model: SentenceTRF, smc: SMCResult, settled: np.ndarray, per_length: np.ndarray,
                        rng, known=None) -> ConditionalSMCResult | None:
    """One conditional SMC run per SMC replicate at each ``settled`` length, pinned to an SMC draw, with
    ``per_length`` particles; with ``known`` sentences (as :func:`run_smc`'s), pinned to a draw outside them and
    weighing them exactly, at the lengths where SMC kept such a draw (None when there is none)."""
    n_runs = smc.replicates.shape[0]
    outside = known is not None
    can = np.array([smc.can_draw_outside_known(int(j)) for j in settled], dtype=bool)
    settled, per_length = settled[can], per_length[can]
    if settled.size == 0:
        return None
    references = {int(j): smc.draws(int(j), n_runs, rng, outside_known=outside) for j in settled}
    return conditional_smc_log_z(model, references, n_particles=dict(zip(settled.tolist(), per_length.tolist())),
                                 seed=rng, known=known)


def log_prob_with_log_z(model: SentenceTRF, corpus: EncodedCorpus, log_z) -> np.ndarray:
    """Sentence log-probabilities with ``log Z_j = log_z[j - 1]`` in place of the AugSA ``zeta_j + log Z_1``
    (e.g. AIS estimates); ``log_z`` has shape (m,)."""
    log_z = as_float_array(log_z, "log_z", ndim=1, finite=False)
    if log_z.shape != (model.m,):
        raise ValueError(f"log_z must have shape ({model.m},), got {log_z.shape}")
    j = corpus.lengths - 1
    return model.log_prob(corpus, allow_positive=True) + (model.zeta + model.log_z1())[j] - log_z[j]


class KnownFloor(NamedTuple):
    """An exact lower bound of ``log Z_j`` at some lengths from known sentences (:func:`known_floor`).

    Attributes
    ----------
    log_z : ndarray, shape (n,)
        ``log sum_x exp(lambda . f(x))`` over the distinct known sentences of each length (-inf: none).
    sentences : ndarray of int, shape (n,)
        How many distinct sentences of each length entered.
    heaviest : list of str
        The known sentence of most weight at each length (words joined by spaces; "" where none).
    neighbours : Neighbours or None
        Whose class neighbours joined (None: none were looked for).
    """

    log_z: np.ndarray
    sentences: np.ndarray
    heaviest: list[str]
    neighbours: Neighbours | None = None


def known_floor(model: SentenceTRF, corpora, lengths: np.ndarray,
                neighbours: float | None = NEIGHBOUR_SHARE) -> KnownFloor:
    """The exact lower bound of ``log Z_j`` that known sentences give: ``Z_j = sum_x exp(lambda . f(x))`` over
    all ``V^j`` sentences of length ``j``, so the same sum over any distinct ones of them is at most ``Z_j``.  No
    estimator's error enters; where a check's interval lies below it, every estimator missed sentences that the
    model weighs heavily (on fortunes, the model gave one training sentence, ``kirk shore leave stardate N N``, more
    weight than four SMC runs of 23,769 particles put on all sentences of six words).

    Parameters
    ----------
    model : SentenceTRF
        The model whose ``log Z_j`` is bounded.
    corpora : iterable of EncodedCorpus
        Sentences encoded with the model's vocabulary (duplicates, within and across corpora, count once; lengths
        outside ``lengths`` are ignored).
    lengths : ndarray of int
        The lengths to bound.
    neighbours : float, optional
        The class neighbours of every known sentence holding at least this share of its length's floor enter too
        (:meth:`trf.lm.known.DistinctSentences.with_neighbours`: one word replaced by a word of its class, each
        scored exactly); None: the known sentences only.  On fortunes' test text (1,694 distinct sentences, seed
        3's full-set model) they raise the floor by up to 3.1 nats (length 10) in about a second.  The heaviest
        sentences' neighbours come first, :data:`trf.lm.known.NEIGHBOUR_LIMIT` rows at most
        (:attr:`KnownFloor.neighbours` says whose joined).

    Returns
    -------
    KnownFloor
    """
    return known_sentences(model, corpora, lengths, neighbours)[0]


def known_sentences(model: SentenceTRF, corpora, lengths: np.ndarray, neighbours: float | None = NEIGHBOUR_SHARE
                    ) -> tuple[KnownFloor, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """:func:`known_floor` and the sentences behind it: ``(tokens (n, max(lengths)), lengths (n,), scores (n,))``,
    distinct, each with its exact ``lambda . f(x)`` -- the ``known`` of :func:`trf.lm.smc.smc_log_z` and
    :func:`trf.lm.smc.conditional_smc_log_z`, which weigh them exactly."""
    lengths = np.asarray(lengths, dtype=np.int64)
    distinct = DistinctSentences(corpora, lengths)
    if neighbours is not None:
        distinct = distinct.with_neighbours(model.features, model.lam, neighbours)
    scores = model.features.scores(distinct.corpus, model.lam) if len(distinct) else np.zeros(0)
    floor = distinct.floor_of(scores)
    at = np.searchsorted(distinct.wanted, lengths)  # the wanted lengths, in the caller's order
    heaviest = [distinct.text(int(i), model.vocab.words) if i >= 0 else "" for i in floor.heaviest[at]]
    tokens = distinct.tokens if distinct.tokens.shape[1] else np.zeros((len(distinct), 1), dtype=np.int64)
    return (KnownFloor(floor.log_z[at], floor.sentences[at], heaviest, distinct.neighbours),
            (tokens, distinct.lengths, scores))
