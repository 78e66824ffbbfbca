"""Train a sentence TRF LM from text files: vocabulary -> exchange classes -> features -> AugSA.

Every step is deterministic given the files and the seed, so a run interrupted at any point resumes
from its checkpoint (``resume=True``) with the same features, the same iteration count, the same
chain states and the same per-iteration seeds as if it had not stopped.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, NamedTuple

import numpy as np

from samplers.validation import check_float, check_int
from trf.augsa import CHECKPOINT_KIND, STOP_RULE, AugSA, AugSAConfig, AugSAResult
from trf.io import read_npz
from trf.lm.backend import SentenceBackend, lm_config
from trf.lm.cluster import exchange_clustering
from trf.lm.corpus import EncodedCorpus, ReadStats, Vocabulary, encode_file
from trf.lm.cycles import MAX_PERIOD, loops_of
from trf.lm.features import SentenceFeatures, parse_feature_spec
from trf.lm.known import DistinctSentences, LengthFloor
from trf.lm.model import SentenceTRF
from trf.lm.smc import TRIM, TRIMMED

if TYPE_CHECKING:
    from trf.lm.check import CheckedPerplexity

__all__ = ["train_lm", "train_and_check", "check_growth", "TrainedLM", "refine_zeta", "group_preconditioner", "l2_ranges", "DEFAULT_FEATURES", "DEFAULT_CLASSES",
           "training_floor_excess", "raise_to_training_floor",
           "FIRST_STAGE_SHARE", "BASE_SHARE", "STEP_RULES",
           "feature_step_scale", "step_rule_config"]

_log = logging.getLogger("trf.lm.train")

DEFAULT_FEATURES = "w+c"
"""The feature set trained without ``features`` (``--features`` or ``--recipe``): the small set, the fastest to train
(its rows: experiments/trf_lm/runs.md); the paper's full set ``w+c+ws+cs+wsh+csh+tied`` is selected by name, or grown
from this one by ``mcsa trf train --recipe full`` (experiments/trf_lm/README.md, "Item 3's protocol on two
threads")."""
DEFAULT_CLASSES = 200
"""Exchange word classes by default (capped at the vocabulary size)."""
STEP_RULES = ("features", "groups", "data", "fixed")
FIRST_STAGE_SHARE = 0.5
"""With a time limit and ``first_stage_share``, the share of the time spent in the first stage of Eq. (24)-(25)."""
BASE_SHARE = 0.5
"""With ``base_features``, the share of the time limit (or of ``t_max``) spent training the base set."""


def train_lm(train_path, *, valid_path=None, features: str = DEFAULT_FEATURES, classes: int | None = None,
             vocab_size: int | None = None, min_count: int = 1, max_length: int | None = None,
             config: AugSAConfig | None = None,
             n_chains: int = 30, seed: int = 0, checkpoint=None, checkpoint_every: int = 50, resume: bool = False,
             time_limit: float | None = None, cluster_passes: int = 5, parallel: bool = True,
             progress: bool = True, log_every: int = 0, encoding: str = "utf-8", callbacks=(),
             step_rule: str = "features", refine: float = 0.1, sampler: str = "smc",
             smc_particles: int = 300, first_stage_share: float | None = None,
             valid_flag: str | None = None, smc_proposal: str = "exact", base_features: str | None = None,
             base_share: float = BASE_SHARE, base_step_rule: str | None = None,
             smc_runs: int | None = None, smc_lengths: str = "drawn",
             smc_known: float | None = None, smc_remember: bool = False, smc_trim: float = TRIM,
             smc_cycles: int = MAX_PERIOD, l2_by_type: dict[str, float] | None = None,
             clock: Callable[[], float] = time.perf_counter) -> tuple[SentenceTRF, AugSAResult]:
    """Train a TRF LM on ``train_path`` (one sentence per line).

    Parameters
    ----------
    train_path, valid_path : path
        Training and (optional) development text.
    features : str
        Feature types of Table 2 joined by ``+``.
    classes : int, optional
        Number of exchange word classes (<= vocabulary size); default ``DEFAULT_CLASSES`` (200) or the vocabulary
        size if that is smaller.
    vocab_size, min_count : int
        Vocabulary limits (the rest maps to ``<unk>``).
    max_length : int, optional
        Pooled sub-model of Sec. 5.4 (Eq. 27) for sentences longer than this (default: none, every
        training length gets its own ``zeta_j`` and longer test sentences cannot be scored).
    config : AugSAConfig, optional
        Defaults to :func:`trf.lm.backend.lm_config` (the Sec. 7 settings).
    n_chains : int
        Persistent TransMS chains of the sampler (``sampler="transms"``; the refinement uses them too).
    seed : int
        Seed of the word clustering, the sampler and the zeta refinement: a fixed seed repeats the training.
    checkpoint : path, optional
        Checkpoint file, written every ``checkpoint_every`` iterations; with ``resume=True`` it is loaded first
        (``resume=True`` without a checkpoint file is a ValueError: nothing is silently trained from scratch).
    checkpoint_every : int
        Iterations between checkpoints (with ``checkpoint``).
    resume : bool
        Continue the training saved in ``checkpoint``.
    time_limit : float, optional
        Stop after this many seconds of training (:attr:`trf.augsa.AugSA.elapsed`, checked after each iteration).
        A resumed run counts the checkpoint's training time too: the same call with ``resume=True`` after an
        interruption trains up to the same limit in all, and its stages end where the uninterrupted run's would.
    cluster_passes : int
        Passes of the exchange word clustering at most.
    parallel : bool
        Run the sampler's chains or particle filters on all cores; False runs them serially.
    progress : bool
        Show a progress bar on stderr.
    encoding : str
        Text encoding of ``train_path`` and ``valid_path``.
    callbacks : iterable of callable
        ``callback(trainer, t, record)`` after every iteration (:class:`~trf.augsa.AugSA`); True stops training.
    first_stage_share : float, optional
        With ``time_limit``: the stages of Eq. (24)-(25) follow the time instead of ``config.t0``: the first stage
        ends (``t_0`` is set to the iteration then) once this share of ``time_limit`` has passed, so a slow machine
        still reaches the second stage (the rates are continuous at ``t_0``).  ``None`` keeps ``config.t0``.
    valid_flag : str, optional
        When given, the dev text will be checked after training (:func:`train_and_check`): a dev text with no
        sentence of at most ``m`` words, which no check can score, is refused before training, the error naming
        ``valid_flag``.
    log_every : int
        Log iteration, rate and dev log-likelihood (logger ``trf.lm.train``, level INFO) every this many
        iterations (0: never).
    step_rule : {"features", "groups", "data", "fixed"}
        ``"features"`` (default): ``"data"``, and the lambda rate scaled by :func:`feature_step_scale` (1 for
        ``w+c``, smaller for richer sets, so that one step moves a sentence's score about as much whatever the
        feature set).  ``"groups"``: ``"features"``, each feature's variance times the size of its support group
        (:func:`group_preconditioner`: features firing in exactly the same training sentences share one step; a
        feature with no variance within any length takes none).  ``"data"`` censors the stratified feature variances ``sigma`` of Eq. (16)/(38) from below
        at ``1/n`` for ``n`` training sentences -- the variance of a count feature seen in one sentence,
        the smallest non-zero value the data can give -- so no lambda step exceeds ``n gamma_lambda``
        times its gradient (features with zero empirical variance otherwise get steps of 1e15 x the
        gradient and the toy corpus of docs/trf-lm.md diverges); ``"fixed"`` keeps ``config.variance_floor``.
    refine : float
        Footnote 17: after training, re-estimate zeta for the final lambda (:func:`refine_zeta`) for
        ``max(100, refine * n)`` zeta-only iterations, ``n`` the iterations that trained the final feature set (all
        of them, or those after the switch of a grown set: a refinement iteration costs what a training iteration
        of the final set costs, a little less, so this is about ``refine`` of that set's training time);
        deterministic given the seed; 0 skips.
    sampler : {"smc", "transms"}
        How AugSA draws its K samples per iteration (:class:`trf.lm.backend.SentenceBackend`): SMC over all
        lengths with ``smc_particles`` particles per run (one run per Numba thread; the default), or the paper's
        TransMS chains.  SMC is the default because TransMS failed where SMC did not: on Debian fortunes the
        TransMS-trained model put most of ``Z_2`` on sentences its chains never visited (test PPL >= ~13,700 once
        checked), and on the toy corpus of docs/trf-lm.md with ``t_max`` 100 or 300 it ended at the divergence
        guard while SMC trained to a checked perplexity of 1.41-1.51 (experiments/trf_lm/methods.md).
    smc_particles : int
        Particles per SMC run (``sampler="smc"``).
    smc_runs : int, optional
        Independent SMC runs per iteration (``sampler="smc"``), shared by the threads; default one per Numba
        thread (one if not ``parallel``), so that the draws, and the trained model, depend on the thread count;
        a fixed number makes them independent of it.  (More runs of fewer particles at the same total did not
        make the batches more diverse: experiments/trf_lm/methods.md, "Why the guard fires".)
    smc_lengths : {"drawn", "stratified"}
        How an SMC batch gets its lengths (:class:`trf.lm.backend.SentenceBackend`): drawn with the sentences
        (Eq. 12, the default), or allotted in proportion to ``pi0`` with the runs' length law entering Eq. (17)
        (an experiment's setting: it trained a worse model, experiments/trf_lm/methods.md "Stratified lengths").
    smc_known : float, optional
        Weigh the training sentences whose share of their length's normaliser is at least this exactly in every
        SMC batch (:mod:`trf.lm.known`; default off).
    smc_remember : bool
        With ``smc_known``: also weigh exactly the sentences outside the training text that earlier batches drew
        holding at least that share (``KnownSentences(remember=True)``; ``--smc-remember``; default off).
    smc_cycles : int
        With ``smc_known``: the loops of the training text's word cycles of up to this many words are known
        candidates too (``--smc-cycles``; :mod:`trf.lm.cycles`; 0: none); the floor under ``zeta`` after training
        holds them either way.  Default :data:`trf.lm.cycles.MAX_PERIOD`.
    smc_proposal : {"exact", "partial", "trimmed", "trimmed-skips"}
        The SMC particles' proposal (:data:`trf.lm.smc.PROPOSALS`): the model's local law (default), or the local
        law of the unigram, class-final and previous-symbol rows, the other rows weighing the drawn word, or the
        local law without the word-final features (``"trimmed-skips"``: those of the skip rows) whose ``|lambda|``
        is below ``smc_trim``, their weights weighing the drawn word (all faster with the full feature set;
        docs/trf-lm.md "Training speed").
    smc_trim : float
        The trimmed proposals' threshold (default :data:`trf.lm.smc.TRIM`; ``--smc-trim``), kept in
        ``meta["smc_trim"]`` when one of them trains.
    base_features : str, optional
        Grow the feature set: train these feature types first (they must open ``features``, e.g. ``"w+c"`` for
        ``"w+c+ws+cs+wsh+csh+tied"``) for ``base_share`` of ``time_limit`` (of ``config.t_max`` iterations without
        one), then ``features`` from there: the base weights carry over and every new weight starts at 0, so the
        model is the same distribution at the switch and ``zeta``, the iteration count (the rates of Eq. 24-25)
        and the stage carry over exactly.  Why: the base set trains about four times more iterations per second
        with SMC, and its weights learn at the full rate (the full set's rate factor, :func:`feature_step_scale`,
        slows every weight three-fold); the richer rows then only learn what the base rows leave (measured in
        experiments/trf_lm/methods.md, "Growing the feature set").  A checkpoint holds whichever stage was running; ``resume``
        continues it.
    base_share : float
        The base stage's share of the time limit or of ``t_max``, in (0, 1).
    base_step_rule : {"features", "groups", "data", "fixed"}, optional
        The base stage's ``step_rule`` (default: ``step_rule``).  ``"features"`` for a ``w+c`` base and ``"groups"``
        for the full set is the pairing measured in experiments/trf_lm/methods.md ("Growing the feature set"): under ``"groups"``
        the ``w+c`` stage of a 40-minute fortunes run fired the divergence guard twice.
    l2_by_type : dict, optional
        Eq. (38)'s ``mu`` for the features of some types (``{"w": 2e-5}``; ``mcsa trf train --l2-by-type``), the
        config's ``l2`` for the rest (:func:`l2_ranges`); each type must be among ``features``.  Kept in
        ``meta["l2_by_type"]``.
    clock : callable, optional
        Seconds of a monotonic clock (default :func:`time.perf_counter`) that the time limit and the stages read
        (through :class:`trf.augsa.AugSA`): tests inject one.

    Returns
    -------
    (SentenceTRF, AugSAResult)
    """
    classes, time_limit, first_stage_share, base_share = _check_schedule(
        features, base_features, base_share, classes, time_limit, first_stage_share, resume, checkpoint)
    started = time.perf_counter()
    stats = ReadStats()
    vocab = Vocabulary.build(train_path, max_size=vocab_size, min_count=min_count, encoding=encoding)
    train = encode_file(train_path, vocab, encoding=encoding, stats=stats)
    if max_length is None and sampler == "smc":
        _refuse_unpooled_long_sentences(train, (config if config is not None else lm_config()).n_samples)
    if classes is None:
        classes = min(DEFAULT_CLASSES, len(vocab))
    if classes > len(vocab):
        raise ValueError(f"classes must be <= the vocabulary size ({len(vocab)}), got {classes}")
    dev = encode_file(valid_path, vocab, encoding=encoding) if valid_path is not None else None
    clustering = exchange_clustering(train, len(vocab), classes, seed=seed, max_passes=cluster_passes)
    feats = SentenceFeatures.build(train, len(vocab), features, word_class=clustering.classes)
    base = (None if base_features is None
            else SentenceFeatures.build(train, len(vocab), base_features, word_class=clustering.classes))
    prep_seconds = time.perf_counter() - started
    # the sampler's settings, the same for the training backends and the zeta refinement
    draws: dict[str, Any] = dict(sampler=sampler, smc_particles=smc_particles, smc_proposal=smc_proposal,
                                 smc_runs=smc_runs, smc_lengths=smc_lengths, smc_known=smc_known,
                                 smc_remember=smc_remember, smc_trim=smc_trim, smc_cycles=smc_cycles)
    backend = SentenceBackend(train, feats, dev, max_length=max_length, n_chains=n_chains, seed=seed,
                              parallel=parallel, words=vocab.words, **draws)
    m = max_length if max_length is not None else backend.m
    # exact floors under log Z_j: the training sentences and the loops of their cycles
    known = DistinctSentences([train, loops_of([train], backend.max_length)], np.arange(1, backend.max_length + 1))
    if valid_flag is not None and dev is not None and (len(dev) == 0 or int(dev.lengths.min()) > m):
        raise ValueError(f"{valid_flag}: none of its {len(dev)} sentences has at most m={m} words (the longest "
                         "training sentence, or --max-length), so the check after training could score none; give "
                         "shorter dev sentences, or skip the check")
    for name, rule in (("step_rule", step_rule), ("base_step_rule", base_step_rule)):
        if rule is not None and rule not in STEP_RULES:
            raise ValueError(f"{name} must be one of {STEP_RULES}, got {rule!r}")
    refine = check_float(refine, "refine", low=0.0)
    l2_by_type = check_l2_by_type(l2_by_type, features)
    cfg = replace(config if config is not None else lm_config(), seed=seed,
                  checkpoint_every=checkpoint_every if checkpoint is not None else 0)
    if first_stage_share is not None:
        cfg = replace(cfg, t0=cfg.t_max)  # the first stage lasts until the share of the time has passed
    train_start = clock()
    hooks = list(callbacks)
    if time_limit is not None:  # the trainer's elapsed time sums the runs of a resumed training
        hooks.append(lambda trainer, t, record: trainer.elapsed > time_limit
                     and f"the time limit ({time_limit / 60:.3g} minutes)")
    stages = []
    if first_stage_share is not None:
        assert time_limit is not None  # checked above: a share needs a time limit
        stages.append(_time_stages(first_stage_share * time_limit))

    def trainer_for(f: SentenceFeatures, b: SentenceBackend, rule: str, extra=()) -> AugSA:
        """AugSA for feature set ``f`` and its backend ``b``: the step ``rule``'s variance floor, preconditioner and
        rate, the hooks."""
        c = step_rule_config(rule, cfg, b, train)
        if l2_by_type:
            c = replace(c, l2_ranges=l2_ranges(f, l2_by_type))
        logger = [_progress_logger(b, log_every, known)] if log_every else []
        return AugSA(b, c, callbacks=[*hooks, *logger, *stages, *extra], checkpoint_path=checkpoint,
                     progress=progress, clock=clock)

    resume_from = checkpoint if resume else None
    base_iterations: int | None = 0  # of the base set; a grown run resumed after its switch reads them below
    if base is not None and not (resume and _checkpoint_features(checkpoint) == feats.n_features):
        base_backend = SentenceBackend(train, base, dev, max_length=max_length, n_chains=n_chains, seed=seed,
                                       parallel=parallel, words=vocab.words, **draws)
        switch = _BaseStageEnd(base_share, time_limit, cfg.t_max)
        first = trainer_for(base, base_backend, step_rule if base_step_rule is None else base_step_rule, [switch])
        first_result = first.fit(resume=resume_from)
        resume_from, base_iterations = None, first_result.t
        lam = np.zeros(feats.n_features)
        lam[feats.positions_of(base)] = first_result.lam  # the same distribution: zeta and t carry over exactly
        if first_result.stop_reason == switch.reason or first_result.stop_reason.startswith(STOP_RULE):
            why = (f"its share ({base_share:g}) of the schedule" if first_result.stop_reason == switch.reason
                   else first_result.stop_reason)
            _log.info("iteration %d: the base stage (%s) ended: %s; training %s from here", first_result.t,
                      base_features, why, features)
            trainer = trainer_for(feats, backend, step_rule)
            # the stage, the guard's halvings and the time spent carry over; the guard's reference is the switch
            halvings = first.state.step_scale / first.config.lambda_step  # the guard's, times this set's factor
            trainer.state = trainer.init(lam, first_result.zeta, first_result.t)._replace(
                t0=first.state.t0, step_scale=trainer.config.lambda_step * halvings, elapsed=first.state.elapsed,
                time_sampling=first.state.time_sampling, time_updates=first.state.time_updates,
                t_start=first_result.t, sentence_bound_iterations=first.state.sentence_bound_iterations)
            result = trainer.fit()
        else:  # the guard, the time limit or a callback ended the base stage: its checkpoint resumes it
            trainer, result = first, replace(first_result, lam=lam)
    else:
        trainer = trainer_for(feats, backend, step_rule)
        result = trainer.fit(resume=resume_from)
        if base is not None:  # resumed after the switch: the checkpoint's state holds the switch's iteration
            base_iterations = trainer.state.t_start or None  # 0: a checkpoint from before t_start, not known
    if checkpoint is not None:
        trainer.save_checkpoint(checkpoint)
    train_seconds = clock() - train_start
    zeta, refined = result.zeta, 0
    if refine > 0 and result.guard_message is None and result.t > 0:
        draft = SentenceTRF(vocab, feats, backend.pi, result.lam, result.zeta, {}, pooled=backend.pooled)
        final_iterations = result.t - trainer.state.t_start  # a grown set: its own iterations, not the base set's
        zeta, refined = refine_zeta(draft, train, max_iterations=max(100, int(refine * final_iterations)),
                                    n_samples=cfg.n_samples,
                                    n_chains=n_chains, start_t=10, seed=seed + 1, parallel=parallel, **draws)
    zeta, raised = raise_to_training_floor(known, backend, result.lam, zeta, hint=smc_known is None)
    meta = {"features_spec": features, "classes": classes, "iterations": result.t, "seed": seed,
            "train_sentences": stats.sentences, "train_tokens": stats.tokens, "n_features": feats.n_features,
            "clustering_log_likelihood": clustering.log_likelihood.tolist(), "prep_seconds": prep_seconds,
            "train_seconds": trainer.elapsed, "time_sampling": result.time_sampling,
            "n_chains": n_chains, "n_samples": cfg.n_samples, "max_length": max_length,
            "variance_floor": trainer.config.variance_floor, "lambda_step": trainer.config.lambda_step,
            "moment_bound": trainer.config.moment_bound, "max_sentence_move": trainer.config.max_sentence_move,
            "sentence_bound_iterations": (trainer.state.sentence_bound_iterations
                                          if trainer.config.max_sentence_move is not None else None),
            "l2": cfg.l2, "l2_by_type": l2_by_type or None,
            "step_rule": step_rule, "base_step_rule": base_step_rule,
            "zeta_refinement_iterations": refined, "base_features": base_features,
            "base_iterations": base_iterations,
            "refine_seconds": clock() - train_start - train_seconds,
            "guard_message": result.guard_message, "step_scale": result.step_scale, "sampler": sampler,
            "smc_particles": smc_particles if sampler == "smc" else None,
            "smc_proposal": smc_proposal if sampler == "smc" else None,
            "smc_trim": float(smc_trim) if sampler == "smc" and smc_proposal in TRIMMED else None,
            "smc_runs": (backend.smc.n_runs if backend.smc is not None else None),
            "smc_lengths": smc_lengths if sampler == "smc" else None,
            "smc_known": smc_known if sampler == "smc" else None,
            "smc_remember": bool(smc_remember) if sampler == "smc" else None,
            "smc_cycles": int(smc_cycles) if sampler == "smc" and smc_known is not None else None,
            "zeta_raised_to_training_floor": raised}
    return SentenceTRF(vocab, feats, backend.pi, result.lam, zeta, meta, pooled=backend.pooled), result


def _physical_memory() -> int:
    """Bytes of physical memory (0 where the platform does not say)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return 0


def _refuse_unpooled_long_sentences(train: EncodedCorpus, n_samples: int) -> None:
    """Refuse, before any work, a corpus whose longest sentence would size the SMC sampler's tables beyond memory.

    Without ``max_length`` every training length up to the longest sentence ``m`` gets a sub-model, and each SMC
    draw keeps ``runs x m x K x m`` token ids (:class:`trf.lm.smc.SMCSampler`): one 200,000-word line asks for
    5.8 TiB.  Above half the physical memory the error names ``--max-length`` (pooling, Sec. 5.4) instead.
    """
    import numba

    longest = int(train.lengths.max())
    needed = numba.get_num_threads() * longest * n_samples * longest * np.dtype(np.int64).itemsize
    memory = _physical_memory()
    if memory and needed > memory / 2:
        sentence = int(np.argmax(train.lengths)) + 1
        typical = int(np.percentile(train.lengths, 99))
        raise ValueError(f"training sentence {sentence} has {longest} words: without max_length (--max-length) "
                         f"every length up to {longest} gets its own sub-model, whose SMC "
                         f"draws need {needed / 2**30:,.1f} GiB (this machine has {memory / 2**30:,.1f} GiB); pool "
                         f"the longer sentences into one sub-model (Sec. 5.4), e.g. --max-length {typical} (the "
                         "99th percentile of the training lengths), or split the over-long lines into sentences")
class TrainedLM(NamedTuple):
    """What :func:`train_and_check` returns: the model, the training's outcome and the dev check (None without a
    dev text) with the number of dev sentences it left out (longer than ``m``, no pooled sub-model)."""

    model: SentenceTRF
    result: AugSAResult
    dev_check: CheckedPerplexity | None
    dev_left_out: int


def train_and_check(train_path, *, valid_path=None, check: dict | None = None, valid_flag: str = "valid_path",
                    out=None, save: Callable[[SentenceTRF], object] | None = None, **train_kw) -> TrainedLM:
    """:func:`train_lm`, then the dev perplexity with checked normalisers (:func:`trf.lm.check.check_dev`, kept in
    ``model.meta["dev_check"]``).

    Parameters
    ----------
    train_path, valid_path : path
        As in :func:`train_lm`; without ``valid_path`` there is no check.
    check : dict, optional
        Keywords of :func:`trf.lm.check.check_normalisers` (effort, seed ...); None: no check (the dev text still
        serves the stop rule).  The training text's sentences bound the check's normalisers from below
        (:func:`trf.lm.check.estimates.known_floor`).
    valid_flag : str
        How errors name the dev text (``"--valid"`` from the command line); a dev text the check could not score is
        refused before training.
    out : path, optional
        Write the model here as soon as training ends (so a failed or interrupted check loses no training) and
        again with the check's summary.
    save : callable, optional
        ``save(model)`` instead of ``model.save(out)`` (the command line writes with a fallback file when the disk
        is full).
    **train_kw
        The other keywords of :func:`train_lm`.

    Returns
    -------
    TrainedLM
    """
    from trf.lm.check import check_dev

    checking = valid_path is not None and check is not None
    model, result = train_lm(train_path, valid_path=valid_path, valid_flag=valid_flag if checking else None,
                             **train_kw)
    write = (lambda m: m.save(out)) if save is None and out is not None else save
    if write is not None:
        write(model)
    if not checking or check is None:
        return TrainedLM(model, result, None, 0)
    dev = encode_file(valid_path, model.vocab, encoding=train_kw.get("encoding", "utf-8"))
    train = encode_file(train_path, model.vocab, encoding=train_kw.get("encoding", "utf-8"))
    checked, left_out = check_dev(model, dev, flag=valid_flag, known=[train], **check)  # the training text's bound
    if write is not None:
        write(model)
    return TrainedLM(model, result, checked, left_out)


def step_rule_config(rule: str, config: AugSAConfig, backend: SentenceBackend, train: EncodedCorpus) -> AugSAConfig:
    """``config`` under the lambda step ``rule`` (:data:`STEP_RULES`, ``mcsa trf train --step-rule``) for the
    backend's feature set: every rule but ``"fixed"`` floors the variances at ``1 / n`` (``n`` training sentences),
    ``"features"`` and ``"groups"`` scale the step by :func:`feature_step_scale`, and ``"groups"`` sets the backend's
    preconditioner to :func:`group_preconditioner`'s (docs/trf-lm.md, "Training the full feature set (`--recipe
    full`)")."""
    if rule not in STEP_RULES:
        raise ValueError(f"rule must be one of {STEP_RULES}, got {rule!r}")
    if rule == "fixed":
        return config
    config = replace(config, variance_floor=max(config.variance_floor, 1.0 / len(train)))
    features = backend.features
    if rule == "groups":
        backend.feature_variance = group_preconditioner(backend.feature_variance, features.support_groups(train))
    if rule in ("features", "groups"):
        config = replace(config, lambda_step=config.lambda_step * feature_step_scale(train, features))
    return config


def check_l2_by_type(l2_by_type: dict[str, float] | None, features: str,
                     flag: str = "l2_by_type") -> dict[str, float]:
    """``l2_by_type`` checked against the feature types of ``features`` (ValueError naming ``flag``)."""
    if not l2_by_type:
        return {}
    types = parse_feature_spec(features)
    out = {}
    for name, mu in l2_by_type.items():
        if name not in types:
            raise ValueError(f"{flag} names {name!r}, which is not among the feature types {'+'.join(types)}")
        out[name] = check_float(mu, f"{flag} {name}", low=0.0)
    return out


def l2_ranges(features: SentenceFeatures, l2_by_type: dict[str, float]) -> tuple[tuple[int, int, float], ...]:
    """:attr:`trf.augsa.AugSAConfig.l2_ranges` giving the features of each type in ``l2_by_type`` its ``mu`` (Eq.
    38); types of ``l2_by_type`` that ``features`` lacks (a grown run's base set) are skipped."""
    ranges = features.type_ranges()
    return tuple(sorted((*ranges[t], float(mu)) for t, mu in l2_by_type.items() if t in ranges))


def group_preconditioner(variance: np.ndarray, group_size: np.ndarray) -> np.ndarray:
    """The preconditioner of ``step_rule="groups"``: each feature's variance ``sigma_i`` (Eq. 16, Sec. 5.2) times the
    size ``g_i`` of its support group (:meth:`trf.lm.features.SentenceFeatures.support_groups`).

    Why: Eq. (16) divides each feature's gradient by its own variance, as if the features were independent.  The
    ``g`` features of a group fire in exactly the same training sentences, so their empirical covariance block is
    ``sigma 1 1^T`` (rank one) and the gradient ``p~ - p`` is (nearly) the same on each of them.  The diagonal step
    moves every one of them by ``gamma delta / sigma``, which moves the score of a sentence holding the group by
    ``g`` times that: a sentence of the full feature set holds about a hundred n-grams no other sentence has, so its
    score rose a hundred times faster than any single feature's Newton step while the sampler had not yet drawn it
    (fortunes: "no not richard stallman or linus torvalds but god", 124 features of count <= 9 with lambda summing
    to 72 after 2,452 iterations, log p = +3.1 with AugSA's zeta).  The pseudo-inverse of the block,
    ``(sigma 1 1^T)^+ = 1 1^T / (sigma g^2)``, applied to the gradient ``delta 1`` gives ``delta / (sigma g)`` per
    feature: the diagonal step divided by ``g``, so the group's sentence moves by one Newton step.  Features no
    other one shadows (``g = 1``: the frequent ones) keep Eq. (16).

    A feature with ``sigma_i = 0`` fires equally often in every training sentence of a length (the skip rows
    reaching from ``<s>`` to ``</s>`` fire exactly when a sentence has that length): the data hold no information
    on its weight apart from the length normaliser ``zeta_j``, the block's pseudo-inverse is 0, and its variance
    becomes ``+inf`` so that its weight never moves (with the censoring at ``1/n`` instead, such weights took steps
    of ``n gamma`` times their noisy gradients and passed the guard's ``|lambda| <= 50`` within 300 iterations on
    fortunes)."""
    variance = np.asarray(variance, dtype=np.float64)
    return np.where(variance > 0, variance * np.asarray(group_size, dtype=np.float64), np.inf)


def feature_step_scale(train: EncodedCorpus, features: SentenceFeatures) -> float:
    """The lambda-rate factor of ``step_rule="features"``: ``min(1, a(w+c) / a(features))``, where ``a(S) = sum_i
    p~[f_i]`` is the mean number of features of set ``S`` that fire in a training sentence (tied rows count once
    per row).

    Why: with the preconditioning of Sec. 5.2 each weight's step ``gamma sigma_i^-1 (p~[f_i] - p[f_i])`` is of order
    ``gamma`` whatever the feature, so one step changes a sentence's score ``lambda . f(x)`` by about ``gamma``
    times the number of features firing in it.  The schedules here were measured with ``w+c`` (8 template rows per
    position); the paper's full set fires about three times as many, so the same rate moved scores three times as
    far per step and the divergence guard fired (experiments/trf_lm/methods.md).  Dividing by the ratio keeps the step in score
    space that of ``w+c``; ``w+c`` itself is unchanged."""
    active = float(features.counts.sum())
    if set(features.types) <= {"w", "c"} or active <= 0:
        return 1.0
    reference = SentenceFeatures.build(train, features.n_words, "w+c", word_class=features.word_class)
    return min(1.0, float(reference.counts.sum()) / active)


def refine_zeta(model: SentenceTRF, train: EncodedCorpus, *, seconds: float | None = None,
                max_iterations: int = 100000, n_samples: int = 100, n_chains: int = 20, start_t: int = 100,
                seed: int = 0, parallel: bool = True, sampler: str = "smc",
                smc_particles: int = 300, smc_proposal: str = "exact",
                smc_runs: int | None = None, smc_lengths: str = "drawn",
                smc_known: float | None = None, smc_remember: bool = False, smc_trim: float = TRIM,
                smc_cycles: int = MAX_PERIOD, clock: Callable[[], float] = time.perf_counter) -> tuple[np.ndarray, int]:
    """Re-estimate ``zeta`` for the model's fixed ``lambda`` by the AugSA recursion (17)-(18) alone.

    This is how the paper estimates zeta for a fixed lambda (footnote 17).  While lambda moves, the
    zeta of AugSA lag behind it; a short run with lambda frozen, started from the model's zeta with
    the rate ``gamma_zeta,t = 1 / t`` from ``t = start_t`` (so the start is not forgotten at once),
    removes the lag.  Chains start at training sentences.

    Parameters
    ----------
    model : SentenceTRF
        The trained model; its ``lambda`` is kept and its ``zeta`` is the starting point.
    train : EncodedCorpus
        Training sentences (length law and chain starts).
    seconds : float, optional
        Time limit; ``max_iterations`` bounds the iterations.
    max_iterations : int
        Iterations at most.
    n_samples, n_chains : int
        K per iteration and persistent TransMS chains.
    start_t : int
        Iteration count the rate starts from.
    seed : int
        Seed of the sampler.
    parallel : bool
        Run the sampler's chains or particle filters on all cores; False runs them serially.
    sampler, smc_particles, smc_proposal, smc_runs, smc_lengths, smc_known, smc_remember, smc_trim, smc_cycles :
        As in :func:`train_lm`.
    clock : callable, optional
        Seconds of a monotonic clock (default :func:`time.perf_counter`) that ``seconds`` is measured with: tests
        inject one.

    Returns
    -------
    (zeta, iterations)
    """
    start_t = check_int(start_t, "start_t", low=1)
    max_iterations = check_int(max_iterations, "max_iterations", low=1)
    if seconds is not None:
        seconds = check_float(seconds, "seconds", low=0.0, low_open=True)
    max_length = model.m if model.pooled else None
    backend = SentenceBackend(train, model.features, None, m=None if model.pooled else model.m,
                              max_length=max_length, n_chains=n_chains, seed=seed, parallel=parallel,
                              sampler=sampler, smc_particles=smc_particles, smc_proposal=smc_proposal,
                              smc_runs=smc_runs, smc_lengths=smc_lengths, smc_known=smc_known,
                              smc_remember=smc_remember, smc_trim=smc_trim, smc_cycles=smc_cycles)
    # no divergence guards: lambda is frozen, and zeta lagging behind it (log p > 0) is what the refinement
    # corrects -- a guard would roll zeta back to the trainer's initial (lambda = 0) zeta and restart t at 0
    cfg = lm_config(n_samples=n_samples, t_max=start_t + max_iterations, t0=0, stop_window=None,
                    learn_lambda=False, seed=seed, guard_every=0)
    started = clock()
    hooks = [] if seconds is None else [lambda trainer, t, record: clock() - started > seconds]
    trainer = AugSA(backend, cfg, callbacks=hooks, progress=False)
    trainer.state = trainer.init(model.lam, model.zeta, start_t)
    result = trainer.fit()
    return result.zeta, result.t - start_t


def _time_stages(first_stage_seconds: float):
    """A callback that ends AugSA's first stage (Eq. 24-25) once the trainer has spent ``first_stage_seconds``
    (:attr:`trf.augsa.AugSA.elapsed`: summed over the runs of a resumed training)."""
    def switch(trainer, t, record):
        if trainer.t0 >= trainer.config.t_max and trainer.elapsed >= first_stage_seconds:
            trainer.end_first_stage()
        return False

    return switch


def check_growth(features: str, base_features: str | None) -> None:
    """Check the feature types and that ``base_features`` (when given) are the first types of ``features`` and fewer
    (:func:`train_lm`'s ``base_features``); ValueError otherwise."""
    types = parse_feature_spec(features)
    if base_features is not None:
        base_types = parse_feature_spec(base_features)
        if len(base_types) >= len(types) or types[:len(base_types)] != base_types:
            raise ValueError(f"base_features {base_features!r} must be the first feature types of the features "
                             f"{features!r} and fewer (e.g. 'w+c' for 'w+c+ws+cs+wsh+csh+tied')")


def _check_schedule(features, base_features, base_share, classes, time_limit, first_stage_share, resume,
                    checkpoint) -> tuple[int | None, float | None, float | None, float]:
    """:func:`train_lm`'s checks of the feature sets, the time schedule and the checkpoint, before any work."""
    check_growth(features, base_features)
    if base_features is not None:
        base_share = check_float(base_share, "base_share", low=0.0, high=1.0, low_open=True, high_open=True)
    if classes is not None:
        classes = check_int(classes, "classes", low=1)
    if time_limit is not None:
        time_limit = check_float(time_limit, "time_limit", low=0.0, low_open=True)
    if first_stage_share is not None:
        first_stage_share = check_float(first_stage_share, "first_stage_share", low=0.0, high=1.0)
        if time_limit is None:
            raise ValueError("first_stage_share needs a time_limit")
    if resume and (checkpoint is None or not Path(checkpoint).is_file()):
        raise ValueError("resume=True needs an existing checkpoint file" + (
            "" if checkpoint is None else f"; {str(checkpoint)!r} does not exist"))
    return classes, time_limit, first_stage_share, base_share


class _BaseStageEnd:
    """A callback that ends the base stage of ``train_lm(base_features=...)`` after ``share`` of the time limit (of
    the trainer's elapsed time, summed over resumed runs), or without one, at ``share`` of ``t_max`` iterations."""

    reason = "the end of the base stage"

    def __init__(self, share: float, time_limit: float | None, t_max: int) -> None:
        self.seconds = None if time_limit is None else share * time_limit
        self.iterations = max(1, int(round(share * t_max)))

    def __call__(self, trainer, t, record) -> str | bool:
        done = t >= self.iterations if self.seconds is None else trainer.elapsed >= self.seconds
        return done and self.reason


def _checkpoint_features(path) -> int:
    """The number of weights in an AugSA checkpoint (which stage of a grown feature set wrote it)."""
    arrays, _ = read_npz(path, CHECKPOINT_KIND)
    return int(np.asarray(arrays["lam"]).size)


def training_floor_excess(known: DistinctSentences, backend: SentenceBackend, lam,
                          zeta) -> tuple[np.ndarray, LengthFloor]:
    """By how many nats the training sentences' exact floor under ``log Z_j`` (:meth:`DistinctSentences.floor`) lies
    above AugSA's estimate ``zeta_j + log Z_1`` at each length ``j = 1..len(known.wanted)`` (negative: below it, as
    it should; -inf: no training sentence of that length), and the floor itself.

    ``sum_x exp(lambda . f(x))`` over the distinct training sentences of length ``j`` is at most ``Z_j``, so a
    positive excess proves ``zeta_j`` too low: the model gives its own training sentences more than ``pi_j`` in all,
    and the sampler has missed mass at that length (on fortunes, seed 3: the three training sentences ``X shore leave
    stardate N N``, experiments/trf_lm/methods.md)."""
    floor = known.floor(backend.features, lam)
    return floor.log_z - (np.asarray(zeta, dtype=np.float64)[:floor.log_z.size] + backend.log_z1(lam)), floor


def _excess_text(excess: np.ndarray, most: int = 3) -> str:
    """``length 6 (+0.65 nats)``-style list of the lengths where ``excess > 0``, the largest first."""
    over = np.flatnonzero(excess > _FLOOR_TOLERANCE)
    over = over[np.argsort(-excess[over])]
    listed = ", ".join(f"{j + 1} (+{excess[j]:.2f} nats)" for j in over[:most])
    more = f" and {over.size - most} more" if over.size > most else ""
    return f"length{'s' if over.size > 1 else ''} {listed}{more}"


_FLOOR_TOLERANCE = 1e-9
"""Nats of rounding allowed between a floor and an estimate that equals it (length 1's is exact)."""


def raise_to_training_floor(known: DistinctSentences, backend: SentenceBackend, lam, zeta,
                            hint: bool = True) -> tuple[np.ndarray, dict[str, float]]:
    """``zeta`` raised to the training sentences' exact floor (:func:`training_floor_excess`) where it lies below
    it, with a warning naming the lengths, the amounts and each one's heaviest training sentence (logger
    ``trf.lm.train``); returns the raised ``zeta`` and ``{str(j): nats raised}``.

    The raised value is still an estimate (the true ``log Z_j`` is at least the floor), but never one that the
    training text refutes; the checked perplexity (``mcsa trf eval --check-known TRAIN``) says how far off it is.
    With ``hint``, the warning names ``--smc-known``, which weighs heavy training sentences exactly while training."""
    excess, floor = training_floor_excess(known, backend, lam, zeta)
    over = np.flatnonzero(excess > _FLOOR_TOLERANCE)
    zeta = np.array(zeta, dtype=np.float64)
    if over.size == 0:
        return zeta, {}
    zeta[over] += excess[over]
    words = backend.words or [str(i) for i in range(backend.features.n_words)]
    heaviest = "; ".join(f"{j + 1}: '{known.text(int(floor.heaviest[j]), words)}'" for j in over[:3])
    _log.warning("AugSA's zeta lies below the training sentences' exact floor at %s: raised to it (the heaviest "
                 "training sentence at %s).  The sampler missed model mass there, so the perplexity to trust is "
                 "the checked one (mcsa trf eval --check-known TRAIN)%s", _excess_text(excess), heaviest,
                 "; --smc-known SHARE weighs heavy training sentences exactly while training" if hint else "")
    return zeta, {str(j + 1): float(excess[j]) for j in over}


def _progress_logger(backend: SentenceBackend, every: int, known: DistinctSentences | None = None):
    def log(trainer, t, record):
        if t % every == 0:
            dev = backend.log_likelihood(trainer.lam, trainer.zeta, "dev")
            rate = t / max(trainer.elapsed, 1e-9)
            dev_text = "n/a" if dev is None else f"{dev:.3f}"
            moves = (f"smallest SMC end-of-sentence ESS {record['smc_min_ess']:.1f}" if "smc_min_ess" in record
                     else f"jump acceptance {record.get('jump_acceptance', float('nan')):.2f}")
            floor = ""
            if known is not None:
                excess, _ = training_floor_excess(known, backend, trainer.lam, trainer.zeta)
                if (excess > _FLOOR_TOLERANCE).any():
                    floor = f"; the training sentences outweigh zeta at {_excess_text(excess)}"
            _log.info("iteration %d: %.2f it/s, dev log-likelihood per sentence %s, %s%s", t, rate, dev_text, moves,
                      floor)
        return False

    return log
