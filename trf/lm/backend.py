"""The sentence-LM backend of the core AugSA trainer (implements :class:`trf.augsa.AugSABackend`).

It supplies the training statistics (``pi``, ``p~[f]``, stratified variances of Sec. 5.2, exact
``zeta`` at ``lambda = 0``), draws the K samples of each iteration with class-based TransMS
(:mod:`trf.lm.transms`, chains on all cores) or by SMC (:class:`trf.lm.smc.SMCSampler`), and reports train/dev log-likelihoods for the
Appendix-E stop rule.  The update equations stay in :mod:`trf.augsa`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from samplers._kernels import logsumexp_1d
from samplers.validation import check_int
from trf.augsa import AugSAConfig, SampleBatch
from trf.lm.corpus import EncodedCorpus
from trf.lm.cycles import MAX_PERIOD
from trf.lm.features import SentenceFeatures
from trf.lm.known import KnownSentences
from trf.lm.model import smoothed_length_law
from trf.lm.smc import TRIM, SMCSampler
from trf.lm.transms import ChainState, SentenceSampler

SAMPLERS = ("transms", "smc")
SMC_LENGTHS = ("drawn", "stratified")
"""How an SMC batch gets its lengths: drawn from the runs' ``q-hat(j) ∝ pi0_j e^-zeta_j Z-hat_j`` (Eq. 12, the
paper's joint draw), or allotted in proportion to ``pi0`` with ``q-hat`` entering Eq. (17) as
:attr:`trf.augsa.SampleBatch.length_share` (:meth:`SentenceBackend.sample`)."""

__all__ = ["SentenceBackend", "lm_config"]


def lm_config(**overrides: Any) -> AugSAConfig:
    """AugSA settings of Sec. 7 (PTB): K = 300, t_c = 3000, beta = 0.8 / 0.6, t_0 = 2000, pi0 by
    Eq. (26), L2 mu = 4e-5 (Eq. 38), stop rule H = 100, S_t < 1e-4 (Appendix E, second stage only), and
    divergence guards every 50 iterations (on a violation: back to the last passing parameters with half
    the lambda step, at most 6 times, then stop with a message).  One departure: the stop rule's train-dev gap
    is taken at every 10th iteration (``stop_every=10``; the paper: every one), since each gap scored the
    whole training set -- at every iteration that cost as much as the full feature set's sampling
    (experiments/trf_lm/methods.md, "The stop rule's cost").  Since session 55 a gap is a sum over the features
    (:meth:`SentenceBackend.log_likelihood`, about 6 ms with the fortunes full set); the measured runs' 10 is kept."""
    paper = AugSAConfig(n_samples=300, t_max=100000, t_c=3000.0, beta_lambda=0.8, beta_zeta=0.6, t0=2000,
                        pi0="eq26", l2=4e-5, stop_window=100, stop_tol=1e-4, stop_every=10, guard_every=50,
                        on_violation="halve")
    return replace(paper, **overrides)


class SentenceBackend:
    """Sentence TRF backend for :class:`trf.augsa.AugSA`.

    Parameters
    ----------
    train : EncodedCorpus
    features : SentenceFeatures
        Built on ``train``; its word classes drive the class-based sampler.
    dev : EncodedCorpus, optional
        For ``log_likelihood(..., "dev")`` (stop rule, progress).
    m : int, optional
        Longest sentence length modelled (default: longest training sentence); at least that.
    max_length : int, optional
        Use the pooled sub-model of Sec. 5.4 (Eq. 27): lengths ``1..max_length`` have their own
        ``zeta_j`` and every longer sentence belongs to one sub-model ``m+`` with ``pi_{m+} = n_{m+}/n``
        (smoothed) and one ``zeta_{m+}``; TransMS samples lengths up to ``max_length + 2``, and
        ``delta_{m+}`` (the share of draws longer than ``max_length``) drives ``zeta_{m+}`` in Eq. (17).
        The trainer then sees ``m = max_length + 1`` dimensions (the last one pooled).
    n_chains : int
        Persistent TransMS chains; each iteration advances every chain ``ceil(K / n_chains)`` steps.
    ll_sentences : int, optional
        Train/dev log-likelihoods and the divergence guard's ``log p <= 0`` check use at most this many sentences
        (the first ones) per split; default all (scoring all 34,607 fortunes training sentences with a full-set
        model takes about 0.07 s on two threads; with the first 2,000 only, the guard never saw the 832 training
        sentences that a TransMS-trained model gave ``log p > 0``).
    parallel : bool
        Run chains on all cores (Appendix D), and score the splits in blocks on them.
    sampler : {"transms", "smc"}
        How the K draws of each iteration are made: the paper's persistent TransMS chains (Algorithm 2), or
        sequential Monte Carlo over all lengths (:class:`trf.lm.smc.SMCSampler`: whole sentences word by word
        from the model's local law, resampled; reaches high-weight sentences that the chains miss).
    smc_particles : int
        Particles per SMC run when ``sampler="smc"``.
    smc_lengths : {"drawn", "stratified"}
        How an SMC batch gets its lengths (:data:`SMC_LENGTHS`): ``"drawn"`` from the runs' ``q-hat(j)``, as Eq.
        (12) has them; ``"stratified"``: ``K pi0_j`` draws of each length ``j`` (rounded, in expectation exactly),
        the sentences of a length drawn as before, and Eq. (17)'s share ``delta_j`` replaced by ``q-hat(j)``, its
        expectation given the runs.  Both updates keep their roots: the lambda step's batch mean then estimates
        the model's ``sum_j pi_j p_j[f]`` (Eq. 6) for any zeta, and zeta still moves to ``log Z_j / Z_1``.  It
        halves the largest lambda steps but trained a model holding more mass that its runs miss (experiments/trf_lm/methods.md,
        "Stratified lengths"): an experiment's setting, not in ``mcsa trf train``.
    smc_runs : int, optional
        Independent SMC runs per iteration (``sampler="smc"``; :class:`trf.lm.smc.SMCSampler`'s ``n_runs``),
        shared by the threads.  Default: one per Numba thread (one if not ``parallel``), so the draws depend on
        the thread count; a fixed number does not.
    smc_known : float, optional
        Weigh the distinct training sentences whose share of their length's normaliser is at least this exactly in
        each SMC batch instead of leaving them to be found (:class:`trf.lm.known.KnownSentences`, re-chosen every
        :data:`trf.lm.known.KNOWN_REFRESH` draws; ``sampler="smc"``, not with ``smc_lengths="stratified"``).
        Default: off.
    smc_remember : bool
        With ``smc_known``: also weigh exactly the sentences outside the training text that earlier batches drew
        with at least that share (``KnownSentences(remember=True)``).  Default: off.
    smc_cycles : int
        With ``smc_known``: the known candidates also hold the loops of the training text's word cycles of up to
        this many words (``KnownSentences(cycles=...)``, :mod:`trf.lm.cycles`; 0: none).  Default
        :data:`trf.lm.cycles.MAX_PERIOD`.
    smc_proposal : {"exact", "partial", "trimmed", "trimmed-skips"}
        The SMC particles' proposal (:data:`trf.lm.smc.PROPOSALS`): the model's local law, or the local law of the
        unigram, class-final and previous-symbol rows with the other rows as importance weights, or the local law
        without the word-final features (``"trimmed-skips"``: those of the skip rows) whose ``|lambda|`` is below
        ``smc_trim``, their weights as importance weights.
    smc_trim : float
        The trimmed proposals' threshold on ``|lambda|`` (default :data:`trf.lm.smc.TRIM`; not read by the other
        proposals).
    """

    def __init__(self, train: EncodedCorpus, features: SentenceFeatures, dev: EncodedCorpus | None = None, *,
                 m: int | None = None, max_length: int | None = None, n_chains: int = 30, seed: int = 0,
                 ll_sentences: int | None = None, parallel: bool = True, sampler: str = "transms",
                 smc_particles: int = 300, smc_proposal: str = "exact", words: list[str] | None = None,
                 smc_runs: int | None = None, smc_lengths: str = "drawn", smc_known: float | None = None,
                 smc_remember: bool = False, smc_trim: float = TRIM, smc_cycles: int = MAX_PERIOD) -> None:
        lengths = train.lengths
        if lengths.size == 0 or lengths.min() < 1:
            raise ValueError("train must hold at least one sentence and no empty sentence")
        if m is not None and max_length is not None:
            raise ValueError("give m (no pooling) or max_length (pooled sub-model), not both")
        self.pooled = max_length is not None
        if self.pooled:
            self.max_length = check_int(max_length, "max_length", low=1)
            self.m = self.max_length + 1                 # dimensions 1..max_length and the pooled m+
            sample_max = self.max_length + 2             # Sec. 5.4: "m + 2 in our experiments"
        else:
            self.m = int(lengths.max()) if m is None else check_int(m, "m", low=int(lengths.max()))
            self.max_length = sample_max = self.m
        self.features = features
        self.n_features = features.n_features
        self.words = words
        self.pi = smoothed_length_law(self.dimension(lengths), self.m)
        self.empirical_mean = features.counts / len(train)
        self.feature_variance = features.stratified_variance(train)
        self.sampler = SentenceSampler(features, sample_max)
        if sampler not in SAMPLERS:
            raise ValueError(f"sampler must be one of {SAMPLERS}, got {sampler!r}")
        runs = (None if parallel else 1) if smc_runs is None else check_int(smc_runs, "smc_runs", low=1)
        if smc_lengths not in SMC_LENGTHS:
            raise ValueError(f"smc_lengths must be one of {SMC_LENGTHS}, got {smc_lengths!r}")
        if smc_lengths != "drawn" and sampler != "smc":
            raise ValueError(f"smc_lengths={smc_lengths!r} needs sampler='smc'")
        self.smc_lengths = smc_lengths
        if smc_known is not None and (sampler != "smc" or smc_lengths != "drawn"):
            raise ValueError("smc_known needs sampler='smc' with smc_lengths='drawn'")
        if smc_remember and smc_known is None:
            raise ValueError("smc_remember needs smc_known (the share a found sentence must hold)")
        self.known = (None if smc_known is None
                      else KnownSentences(train, features, sample_max, smc_known, remember=smc_remember,
                                          threads=None if parallel else 1, cycles=smc_cycles))
        self.smc = (SMCSampler(features, sample_max, check_int(smc_particles, "smc_particles", low=1), runs,
                               smc_proposal, threads=None if parallel else 1, trim=smc_trim)
                    if sampler == "smc" else None)
        # chains start at random training sentences (shorter burn-in than single words)
        self.state = self.sampler.init_chains(check_int(n_chains, "n_chains", low=1), seed, start=train)
        self.parallel = parallel
        if ll_sentences is not None:
            ll_sentences = check_int(ll_sentences, "ll_sentences", low=1)
        self.splits = {"train": _head(train, ll_sentences), "dev": None if dev is None else _head(dev, ll_sentences)}
        if self.splits["dev"] is not None and not self.pooled and self.splits["dev"].lengths.max() > self.m:
            self.splits["dev"] = _keep_short(self.splits["dev"], self.m)
        self._train = train
        self._totals: dict[str, tuple | None] = {}

    def dimension(self, lengths) -> np.ndarray:
        """Sub-model index (1-based) of each sentence length: ``j``, or ``max_length + 1`` (the pooled
        ``m+`` of Eq. 27) for longer sentences when pooling."""
        lengths = np.asarray(lengths, dtype=np.int64)
        return np.minimum(lengths, self.m) if self.pooled else lengths

    def initial_zeta(self) -> np.ndarray:
        """Exact zeta at lambda = 0: ``Z_j = V^j``, so ``zeta_j = (j - 1) log V``; the pooled sub-model
        covers the sampled lengths ``m+1, m+2``: ``zeta_{m+} = log(V^{m+1} + V^{m+2}) - log V``."""
        log_v = np.log(self.features.n_words)
        zeta = np.arange(self.m) * log_v
        if self.pooled:
            zeta[-1] = self.max_length * log_v + np.log1p(self.features.n_words)
        return zeta

    def sampler_log_weights(self, pi0, zeta) -> np.ndarray:
        """``log pi0 - zeta`` of each sampled length ``1..sampler.m`` (Eq. 12 / Eq. 27 when pooling)."""
        with np.errstate(divide="ignore"):
            per_dimension = np.log(np.asarray(pi0, dtype=np.float64)) - np.asarray(zeta, dtype=np.float64)
        return per_dimension[self.dimension(np.arange(1, self.sampler.m + 1)) - 1]

    def sample(self, lam, zeta, pi0, n_samples, length_weight, seed) -> SampleBatch:
        """K draws from q (Eq. 12) and ``sum_k (pi_j / pi0_j) f(x_k)`` (the sum in Eq. 16/38); with
        ``smc_lengths="stratified"`` the lengths are allotted by ``pi0`` and the batch carries ``q-hat`` as its
        ``length_share``.

        The returned ``lengths`` are sub-model indices (:meth:`dimension`), so the trainer's
        ``delta_j`` of Eq. (17) includes ``delta_{m+}`` of Sec. 5.4 when pooling.
        """
        share = known = known_hits = None
        if self.smc is not None:
            strata = None
            if self.smc_lengths == "stratified":
                group = self.dimension(np.arange(1, self.sampler.m + 1)) - 1
                strata = (group, np.asarray(pi0, dtype=np.float64))
            if self.known is not None:
                known = self.known.before_draw(lam)
                known_hits = None if known is None else self.known.hits()  # before after_draw can change the set
            tokens, lengths, smc_info = self.smc.draw(lam, self.sampler_log_weights(pi0, zeta), int(n_samples), seed,
                                                      strata, known)
            info = {"smc_min_ess": smc_info["smc_min_ess"], "smc_seconds": smc_info["smc_seconds"]}
            if self.known is not None:
                self.known.after_draw(smc_info["log_z"], lam, (tokens, lengths))
                info["known_sentences"] = 0 if known is None else known[1].size
            if strata is not None:
                share = np.bincount(strata[0], weights=smc_info["length_law"], minlength=self.m)
        else:
            n_chains = self.state.lengths.size
            steps = -(-int(n_samples) // n_chains)
            self.state, tokens, lengths, moves = self.sampler.run(lam, self.sampler_log_weights(pi0, zeta),
                                                                  self.state, steps, seed, parallel=self.parallel)
            # step-major order, so every chain contributes to the first K draws
            order = (np.arange(n_chains)[None, :] * steps + np.arange(steps)[:, None]).ravel()[:n_samples]
            tokens, lengths = tokens[order], lengths[order]
            info = {"jump_acceptance": moves.jump_acceptance, "class_acceptance": moves.class_acceptance}
        dims = self.dimension(lengths)
        weights = np.asarray(length_weight)[dims - 1]
        draw, feature = self.feature_hits(tokens, lengths)
        # with a known set: the draws outside it, then the set itself Rao-Blackwellised (weighed exactly)
        if known is not None and known_hits is not None:
            k_tokens, k_lengths, _ = known
            weights = np.concatenate([weights * smc_info["weight"],
                                      np.asarray(length_weight)[self.dimension(k_lengths) - 1] * smc_info["known_weight"]])
            k_draw, k_feature = known_hits
            draw, feature = np.concatenate([draw, k_draw + lengths.size]), np.concatenate([feature, k_feature])
            tokens, lengths = np.concatenate([tokens, k_tokens]), np.concatenate([lengths, k_lengths])
        # sum_r weights[r] f(x_r), firing by firing in the order of the draws (the sum of Eq. 16 / 38)
        feature_sum = np.bincount(feature, weights=weights[draw], minlength=self.n_features)
        return SampleBatch(dims, feature_sum, info, share, draws=(tokens, lengths), hits=(draw, feature))

    def feature_hits(self, tokens: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(draw, feature)`` of every firing of every draw ``tokens[r, :lengths[r]]`` (a feature that fires twice
        in a draw appears twice): what :attr:`trf.augsa.AugSAConfig.max_sentence_move` bounds the step with."""
        return self.features.feature_hits(EncodedCorpus.from_sentences(s[:j] for s, j in zip(tokens, lengths)))

    def describe_feature(self, index: int) -> str:
        """Feature ``index`` as text (:meth:`SentenceFeatures.feature_text`, with the words when the backend was
        given them): the divergence guard names the feature behind ``max |lambda|``."""
        return self.features.feature_text(index, self.words)

    def sentence_log_probs(self, lam, zeta, split: str) -> np.ndarray | None:
        """``log p(j, x^j; lambda, zeta)`` of each sentence of (the head of) ``split`` (divergence guard)."""
        corpus = self.splits.get(split)
        if corpus is None:
            return None
        dims = self.dimension(corpus.lengths)
        scores = self.features.scores(corpus, lam, threads=None if self.parallel else 1)
        return np.log(self.pi[dims - 1]) + scores - np.asarray(zeta)[dims - 1] - self.log_z1(lam)

    def log_z1(self, lam) -> float:
        """Exact ``log Z_1(lambda)`` (a sum over the vocabulary): ``zeta_j + log Z_1`` estimates ``log Z_j``."""
        V = self.features.n_words
        one_word = EncodedCorpus(np.arange(V, dtype=np.int32), np.arange(V + 1, dtype=np.int64))
        return float(logsumexp_1d(self.features.scores(one_word, lam)))

    def log_likelihood(self, lam, zeta, split: str) -> float | None:
        """Mean ``log p(j, x^j; lambda, zeta)`` per sentence on (the head of) ``split`` (None when it holds no
        sentence the model can score, e.g. a dev text longer than ``m``): the mean of :meth:`sentence_log_probs`
        to rounding, from the split's feature counts ``N_f`` and length counts ``n_j`` (found once),
        ``(sum_f lambda_f N_f + sum_j n_j (log pi_j - zeta_j)) / n - log Z_1`` -- a sum over the features instead of
        scoring the text at each of the stop rule's gaps (fortunes' training text with the full feature set: 68 ms
        on two threads; experiments/trf_lm/methods.md, "The stop rule's gaps from feature counts")."""
        totals = self._split_totals(split)
        if totals is None:
            return None
        feature, count, dims, n_dims = totals
        lam, zeta = np.asarray(lam, dtype=np.float64), np.asarray(zeta, dtype=np.float64)
        weights = lam if feature is None else lam[feature]
        lengths = np.dot(n_dims, np.log(self.pi[dims - 1]) - zeta[dims - 1])
        return float((np.dot(weights, count) + lengths) / n_dims.sum() - self.log_z1(lam))

    def _split_totals(self, split: str) -> tuple[np.ndarray | None, np.ndarray, np.ndarray, np.ndarray] | None:
        """``(feature, count, dims, n_dims)`` of (the head of) ``split``, kept: how often each feature fires in it
        (``feature`` None: ``count`` is dense, one per feature -- for the whole training text the features' own
        ``counts``, which the empirical means read too; else the features that fire), the sub-models its
        sentences belong to and how many are in each (None: no such split, or no sentence)."""
        if split not in self._totals:
            corpus = self.splits.get(split)
            if corpus is None or len(corpus) == 0:
                self._totals[split] = None
            else:
                if corpus is self._train:  # the whole training text: the counts the features were built with
                    count = np.asarray(self.features.counts, dtype=np.float64)
                else:
                    _, fired = self.features.feature_hits(corpus)
                    count = np.bincount(fired, minlength=self.n_features).astype(np.float64)
                feature = None
                if np.count_nonzero(count) < self.n_features // 4:  # few fire (a dev text): keep those
                    feature = np.flatnonzero(count)
                    count = count[feature]
                dims, n_dims = np.unique(self.dimension(corpus.lengths), return_counts=True)
                self._totals[split] = (feature, count, dims, n_dims.astype(np.float64))
        return self._totals[split]

    def get_state(self) -> dict[str, np.ndarray]:
        """The chains' state (tokens (n_chains, m) and lengths (n_chains,)), and the known set's
        (:meth:`KnownSentences.get_state`) when there is one, for a checkpoint."""
        known = {} if self.known is None else self.known.get_state()
        return {"tokens": self.state.tokens, "lengths": self.state.lengths, **known}

    def set_state(self, state: dict[str, np.ndarray]) -> None:
        """Restore the chains from :meth:`get_state`'s output, checking its shapes."""
        tokens = np.asarray(state["tokens"], dtype=np.int64)
        if tokens.ndim != 2 or tokens.shape[1] != self.sampler.m:
            raise ValueError(f"chain state has shape {tokens.shape}, expected (n_chains, {self.sampler.m})")
        self.state = ChainState(tokens.copy(), np.asarray(state["lengths"], dtype=np.int64).copy())
        if self.known is not None:
            self.known.set_state(state)


def _head(corpus: EncodedCorpus, n: int | None) -> EncodedCorpus:
    if n is None or n >= len(corpus):
        return corpus
    n = min(n, len(corpus))
    offsets = corpus.offsets[:n + 1]
    return EncodedCorpus(corpus.tokens[:offsets[-1]], offsets)


def _keep_short(corpus: EncodedCorpus, m: int) -> EncodedCorpus:
    return EncodedCorpus.from_sentences([s for s in corpus if s.size <= m])
