"""Train a sentence TRF LM from text files: vocabulary -> exchange classes -> features -> AugSA.

Every step is deterministic given the files and the seed, so a run interrupted at any point resumes
from its checkpoint (``resume=True``) with the same features, the same iteration count, the same
chain states and the same per-iteration seeds as if it had not stopped.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from samplers.validation import check_float, check_int
from trf.augsa import AugSA, AugSAConfig, AugSAResult
from trf.lm.backend import SentenceBackend, lm_config
from trf.lm.cluster import exchange_clustering
from trf.lm.corpus import EncodedCorpus, ReadStats, Vocabulary, encode_file
from trf.lm.features import SentenceFeatures, parse_feature_spec
from trf.lm.model import SentenceTRF

__all__ = ["train_lm", "refine_zeta", "DEFAULT_FEATURES"]

DEFAULT_FEATURES = "w+c+ws+cs+wsh+csh+tied"


def train_lm(train_path, *, valid_path=None, features: str = DEFAULT_FEATURES, classes: int = 200,
             vocab_size: int | None = None, min_count: int = 1, max_length: int | None = None,
             config: AugSAConfig | None = None,
             n_chains: int = 30, seed: int = 0, checkpoint=None, checkpoint_every: int = 50, resume: bool = False,
             time_limit: float | None = None, cluster_passes: int = 5, parallel: bool = True,
             progress: bool = True, log_every: int = 0, encoding: str = "utf-8", callbacks=(),
             step_rule: str = "data", refine: float = 0.1, sampler: str = "smc",
             smc_particles: int = 300) -> tuple[SentenceTRF, AugSAResult]:
    """Train a TRF LM on ``train_path`` (one sentence per line).

    Parameters
    ----------
    train_path, valid_path : path
        Training and (optional) development text.
    features : str
        Feature types of Table 2 joined by ``+``.
    classes : int
        Number of exchange word classes (<= vocabulary size).
    vocab_size, min_count : int
        Vocabulary limits (the rest maps to ``<unk>``).
    max_length : int, optional
        Pooled sub-model of Sec. 5.4 (Eq. 27) for sentences longer than this (default: none, every
        training length gets its own ``zeta_j`` and longer test sentences cannot be scored).
    config : AugSAConfig, optional
        Defaults to :func:`trf.lm.backend.lm_config` (the Sec. 7 settings).
    checkpoint : path, optional
        Checkpoint file, written every ``checkpoint_every`` iterations; with ``resume=True`` an existing
        checkpoint is loaded first.
    time_limit : float, optional
        Stop after this many seconds of training (checked after each iteration).
    log_every : int
        Print iteration, rate and dev log-likelihood to stderr every this many iterations (0: never).
    step_rule : {"data", "fixed"}
        ``"data"`` (default) censors the stratified feature variances ``sigma`` of Eq. (16)/(38) from below
        at ``1/n`` for ``n`` training sentences -- the variance of a count feature seen in one sentence,
        the smallest non-zero value the data can give -- so no lambda step exceeds ``n gamma_lambda``
        times its gradient (features with zero empirical variance otherwise get steps of 1e15 x the
        gradient and the toy corpus of docs/trf-lm.md diverges); ``"fixed"`` keeps ``config.variance_floor``.
    refine : float
        Footnote 17: after training, re-estimate zeta for the final lambda (:func:`refine_zeta`) for
        ``max(100, refine * t)`` zeta-only iterations (about this fraction of the training time: an
        iteration without the lambda update costs a little less); deterministic given the seed; 0 skips.
    sampler : {"smc", "transms"}
        How AugSA draws its K samples per iteration (:class:`trf.lm.backend.SentenceBackend`): SMC over all
        lengths with ``smc_particles`` particles per run (one run per Numba thread; the default), or the paper's
        TransMS chains.  SMC is the default because TransMS failed where SMC did not: on Debian fortunes the
        TransMS-trained model put most of ``Z_2`` on sentences its chains never visited (test PPL >= ~13,700 once
        checked), and on the toy corpus of docs/trf-lm.md with ``t_max`` 100 or 300 it ended at the divergence
        guard while SMC trained to a checked perplexity of 1.41-1.51 (docs/trf-lm.md).

    Returns
    -------
    (SentenceTRF, AugSAResult)
    """
    parse_feature_spec(features)
    classes = check_int(classes, "classes", low=1)
    if time_limit is not None:
        time_limit = check_float(time_limit, "time_limit", low=0.0, low_open=True)
    started = time.perf_counter()
    stats = ReadStats()
    vocab = Vocabulary.build(train_path, max_size=vocab_size, min_count=min_count, encoding=encoding)
    train = encode_file(train_path, vocab, encoding=encoding, stats=stats)
    if max_length is None and sampler == "smc":
        _refuse_unpooled_long_sentences(train, (config if config is not None else lm_config()).n_samples)
    if classes > len(vocab):
        raise ValueError(f"classes must be <= the vocabulary size ({len(vocab)}), got {classes}")
    dev = encode_file(valid_path, vocab, encoding=encoding) if valid_path is not None else None
    clustering = exchange_clustering(train, len(vocab), classes, seed=seed, max_passes=cluster_passes)
    feats = SentenceFeatures.build(train, len(vocab), features, word_class=clustering.classes)
    prep_seconds = time.perf_counter() - started
    backend = SentenceBackend(train, feats, dev, max_length=max_length, n_chains=n_chains, seed=seed,
                              parallel=parallel, sampler=sampler, smc_particles=smc_particles)
    if step_rule not in ("data", "fixed"):
        raise ValueError(f"step_rule must be 'data' or 'fixed', got {step_rule!r}")
    refine = check_float(refine, "refine", low=0.0)
    cfg = replace(config if config is not None else lm_config(), seed=seed,
                  checkpoint_every=checkpoint_every if checkpoint is not None else 0)
    if step_rule == "data":
        cfg = replace(cfg, variance_floor=max(cfg.variance_floor, 1.0 / stats.sentences))
    train_start = time.perf_counter()
    hooks = list(callbacks)
    if time_limit is not None:
        hooks.append(lambda trainer, t, record: time.perf_counter() - train_start > time_limit
                     and f"the time limit ({time_limit / 60:.3g} minutes)")
    if log_every:
        hooks.append(_progress_logger(backend, log_every, train_start))
    trainer = AugSA(backend, cfg, callbacks=hooks, checkpoint_path=checkpoint, progress=progress)
    resume_from = checkpoint if (resume and checkpoint is not None and Path(checkpoint).is_file()) else None
    result = trainer.fit(resume=resume_from)
    if checkpoint is not None:
        trainer.save_checkpoint(checkpoint)
    train_seconds = time.perf_counter() - train_start
    zeta, refined = result.zeta, 0
    if refine > 0 and result.guard_message is None and result.t > 0:
        draft = SentenceTRF(vocab, feats, backend.pi, result.lam, result.zeta, {}, pooled=backend.pooled)
        zeta, refined = refine_zeta(draft, train, max_iterations=max(100, int(refine * result.t)),
                                    n_samples=cfg.n_samples,
                                    n_chains=n_chains, start_t=10, seed=seed + 1, parallel=parallel,
                                    sampler=sampler, smc_particles=smc_particles)
    meta = {"features_spec": features, "classes": classes, "iterations": result.t, "seed": seed,
            "train_sentences": stats.sentences, "train_tokens": stats.tokens, "n_features": feats.n_features,
            "clustering_log_likelihood": clustering.log_likelihood.tolist(), "prep_seconds": prep_seconds,
            "train_seconds": trainer.elapsed, "time_sampling": result.time_sampling,
            "n_chains": n_chains, "n_samples": cfg.n_samples, "max_length": max_length,
            "variance_floor": cfg.variance_floor, "zeta_refinement_iterations": refined,
            "refine_seconds": time.perf_counter() - train_start - train_seconds,
            "guard_message": result.guard_message, "step_scale": result.step_scale, "sampler": sampler,
            "smc_particles": smc_particles if sampler == "smc" else None}
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


def refine_zeta(model: SentenceTRF, train: EncodedCorpus, *, seconds: float | None = None,
                max_iterations: int = 100000, n_samples: int = 100, n_chains: int = 20, start_t: int = 100,
                seed: int = 0, parallel: bool = True, sampler: str = "smc",
                smc_particles: int = 300) -> tuple[np.ndarray, int]:
    """Re-estimate ``zeta`` for the model's fixed ``lambda`` by the AugSA recursion (17)-(18) alone.

    This is how the paper estimates zeta for a fixed lambda (footnote 17).  While lambda moves, the
    zeta of AugSA lag behind it; a short run with lambda frozen, started from the model's zeta with
    the rate ``gamma_zeta,t = 1 / t`` from ``t = start_t`` (so the start is not forgotten at once),
    removes the lag.  Chains start at training sentences.

    Parameters
    ----------
    model : SentenceTRF
    train : EncodedCorpus
        Training sentences (length law and chain starts).
    seconds : float, optional
        Time limit; ``max_iterations`` bounds the iterations.
    n_samples, n_chains : int
        K per iteration and persistent TransMS chains.
    start_t : int
        Iteration count the rate starts from.
    sampler, smc_particles :
        As in :func:`train_lm`.

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
                              sampler=sampler, smc_particles=smc_particles)
    # no divergence guards: lambda is frozen, and zeta lagging behind it (log p > 0) is what the refinement
    # corrects -- a guard would roll zeta back to the trainer's initial (lambda = 0) zeta and restart t at 0
    cfg = lm_config(n_samples=n_samples, t_max=start_t + max_iterations, t0=0, stop_window=None,
                    learn_lambda=False, seed=seed, guard_every=0)
    started = time.perf_counter()
    hooks = [] if seconds is None else [lambda trainer, t, record: time.perf_counter() - started > seconds]
    trainer = AugSA(backend, cfg, callbacks=hooks, progress=False)
    trainer.lam, trainer.zeta, trainer.t = model.lam.copy(), model.zeta.copy(), start_t
    result = trainer.fit()
    return result.zeta, result.t - start_t


def _progress_logger(backend: SentenceBackend, every: int, start: float):
    def log(trainer, t, record):
        if t % every == 0:
            dev = backend.log_likelihood(trainer.lam, trainer.zeta, "dev")
            rate = t / max(time.perf_counter() - start, 1e-9)
            dev_text = "n/a" if dev is None else f"{dev:.3f}"
            moves = (f"smallest SMC end-of-sentence ESS {record['smc_min_ess']:.1f}" if "smc_min_ess" in record
                     else f"jump acceptance {record.get('jump_acceptance', float('nan')):.2f}")
            print(f"iteration {t}: {rate:.2f} it/s, dev log-likelihood per sentence {dev_text}, {moves}",
                  file=sys.stderr)
        return False

    return log
