"""SMC against AIS and AugSA on a trained sentence TRF, with the exact ``log Z_1`` and ``log Z_2`` as referees.

For every length ``j <= m`` this prints the SMC estimate of ``log Z_j`` (:func:`trf.lm.smc.smc_log_z`, the mean of
``--runs`` independent runs of ``--particles`` particles) and the spread of the runs, AugSA's ``zeta_j + log Z_1``,
and, when ``--check-json`` files of ``mcsa trf eval --json`` are given, their forward AIS estimates.  ``log Z_1``
is a sum over the vocabulary; ``--exact-z2`` also sums ``exp(lambda . f)`` over all ``V^2`` two-word sentences
(through the local tables of the SMC kernels: for each first word, every second word's score plus its
end-of-sentence score; about 75 s for V = 10,000 on 2 cores) and lists the two-word sentences that carry it.
``--conditional-particles N`` adds the upper side: one conditional SMC run per SMC run and length
(:func:`trf.lm.smc.conditional_smc_log_z`, pinned to that run's draws; ``E[1 / Z-hat] = 1 / Z`` for exact draws, so
its log errs high).  Finally, with ``--test``, the test perplexity with the SMC normalisers (and the conditional
ones) beside the AugSA one.

The column ``SMC-AugSA`` is (in expectation) a lower bound of how far AugSA's normaliser lies below the true
``log Z_j``, and a spread of several nats between runs means a rare run found mass the others missed: the probe of a
model for mass its sampler misses (issue 27).  ``--checkpoint`` swaps in the lambda and zeta of a training checkpoint
(``mcsa trf train --checkpoint``) of the model's feature set, to probe a run while it trains; ``--proposal partial``
runs the partial proposal of :data:`trf.lm.smc.PROPOSALS`; ``--show J`` prints the heaviest run's kept sentences at
length ``J``.

    .venv/bin/python -m experiments.trf_lm.smc_check --model fast.npz --test test.txt --particles 100000 \\
        --runs 4 --exact-z2 --check-json eval-test-900.json
    .venv/bin/python -m experiments.trf_lm.smc_check --model full.npz --checkpoint full.ckpt --particles 3000 \\
        --runs 4 --show 20
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time

import numpy as np
from scipy.special import logsumexp

from samplers._jit import jit
from samplers.argtypes import nonnegative_int, positive_int
from trf.lm import _smc_kernels as sk


@jit
def _two_word_log_z(bundle, first_lo, first_hi, out):
    """``out[w1] = log sum_{w2} exp(s_1(w1) + s_2(w1, w2) + end(w1, w2))`` (relative to ``2 * shift``)."""
    V = bundle.n_words
    C = bundle.n_classes
    work = sk.new_work(bundle)
    w = np.zeros(4, dtype=np.int64)
    c = np.zeros(4, dtype=np.int64)
    w[0] = V + 1
    c[0] = C + 1
    _, n_touched, _ = sk.local_tables(bundle, w, c, 1, work)
    first = np.empty(V)
    for v in range(V):
        first[v] = bundle.u[v] + sk.class_score(work, bundle.word_class[v]) + np.log(work.factor[bundle.word_position[v]])
    sk.clear_tables(work, n_touched)
    scores = np.empty(V)
    for w1 in range(first_lo, first_hi):
        w[1] = w1
        c[1] = bundle.word_class[w1]
        _, n_touched, _ = sk.local_tables(bundle, w, c, 2, work)
        for w2 in range(V):
            w[2] = w2
            c[2] = bundle.word_class[w2]
            scores[w2] = bundle.u[w2] + sk.class_score(work, c[2]) + np.log(work.factor[bundle.word_position[w2]]) + sk.end_score(bundle, w, c, 2)
        sk.clear_tables(work, n_touched)
        top = scores.max()
        out[w1] = first[w1] + top + np.log(np.exp(scores - top).sum())


def exact_two_word(model, threads: int = 2) -> np.ndarray:
    """Per first word ``w1``: ``log sum_{w2} exp(lambda . f(w1 w2))``; their log-sum-exp is the exact ``log Z_2``."""
    from trf.lm.smc import _smc_model

    bundle, shift = _smc_model(model)
    V = bundle.n_words
    out = np.zeros(V)
    _two_word_log_z(bundle, 0, 1, out)  # compile
    edges = np.linspace(0, V, threads + 1).astype(int)
    pool = [threading.Thread(target=_two_word_log_z, args=(bundle, int(a), int(b), out))
            for a, b in zip(edges[:-1], edges[1:])]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return out + 2 * shift


def _load(model_path: str, checkpoint: str | None):
    """The model, with a training checkpoint's lambda and zeta when ``checkpoint`` is given (None, with one error line
    naming the flag, when either cannot be read)."""
    from trf.lm.model import SentenceTRF

    try:
        model = SentenceTRF.load(model_path)
    except (OSError, ValueError) as exc:
        print(f"smc_check: error: --model: {exc}", file=sys.stderr)
        return None
    if checkpoint is None:
        return model
    try:
        with np.load(checkpoint, allow_pickle=False) as state:
            lam, zeta = state["lam"], state["zeta"]
        return SentenceTRF(model.vocab, model.features, model.pi, lam, zeta, model.meta, pooled=model.pooled)
    except (OSError, ValueError, KeyError, EOFError) as exc:
        print(f"smc_check: error: --checkpoint {checkpoint!r} is not a training checkpoint of --model's feature set "
              f"(mcsa trf train --checkpoint): {exc}", file=sys.stderr)
        return None


def main(argv=None) -> int:
    from trf.lm.check import log_prob_with_log_z
    from trf.lm.check.report import augsa_perplexity
    from trf.lm.corpus import encode_file
    from trf.lm.smc import PROPOSALS, conditional_smc_log_z, smc_log_z

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="model written by mcsa trf train")
    parser.add_argument("--checkpoint", default=None, help="training checkpoint whose lambda and zeta to use")
    parser.add_argument("--test", default=None, help="test text, one sentence per line (perplexities; optional)")
    parser.add_argument("--proposal", choices=PROPOSALS, default="exact", help="the SMC particles' proposal")
    parser.add_argument("--show", type=nonnegative_int, default=0, metavar="J",
                        help="print the heaviest run's kept sentences at length J (0: none)")
    parser.add_argument("--particles", type=positive_int, default=20000, help="particles per SMC run")
    parser.add_argument("--runs", type=positive_int, default=4, help="independent SMC runs (2 or more)")
    parser.add_argument("--seed", type=nonnegative_int, default=1)
    parser.add_argument("--exact-z2", action="store_true", help="also sum over all V^2 two-word sentences")
    parser.add_argument("--check-json", nargs="*", default=[], help="mcsa trf eval --json files (AIS columns)")
    parser.add_argument("--conditional-particles", type=nonnegative_int, default=0,
                        help="particles per conditional SMC run (the upper side; 0: none)")
    args = parser.parse_args(argv)
    if args.runs < 2:
        parser.error("--runs must be at least 2 (their spread is the measure)")
    model = _load(args.model, args.checkpoint)
    if model is None:
        return 2
    if args.show > model.m:
        parser.error(f"--show must be a length in 1..{model.m} (or 0)")
    ais = []
    for path in args.check_json:
        rows = json.loads(open(path, encoding="utf-8").read())["normaliser_check"]["per_length"]
        ais.append({r["j"]: r["forward"] for r in rows})
    res = smc_log_z(model, model.m, n_particles=args.particles, n_replicates=args.runs, seed=args.seed,
                    n_keep=4 if args.show else 1 if args.conditional_particles else 0, proposal=args.proposal)
    augsa = (model.zeta + model.log_z1())[:model.m]
    print(f"SMC ({args.proposal} proposal): {args.runs} runs x {args.particles} particles, lengths 1-{model.m}, "
          f"{res.seconds:.1f} s; max |lambda| {np.abs(model.lam).max():.2f}")
    upper = None
    if args.conditional_particles:
        rng = np.random.default_rng(args.seed + 1)
        refs = {int(j): res.kept[:, j - 1, 0, :j] for j in res.lengths}  # one draw of each run
        upper = conditional_smc_log_z(model, refs, n_particles=args.conditional_particles, seed=rng)
        print(f"conditional SMC: {args.runs} runs x {args.conditional_particles} particles per length, "
              f"{upper.seconds:.1f} s")
    print(f"exact log Z_1 = {model.log_z1():.3f}")
    if args.exact_z2:
        start = time.perf_counter()
        per_word = exact_two_word(model)
        words = model.vocab.words
        print(f"exact log Z_2 = {logsumexp(per_word):.3f} ({time.perf_counter() - start:.0f} s); first words carrying "
              "it: " + ", ".join(f"{words[i]} {per_word[i]:.2f}" for i in np.argsort(per_word)[::-1][:5]))
    head = ("   j      SMC  spread" + ("     CSMC  spread" if upper is not None else "") + "   AugSA SMC-AugSA"
            + "".join(f"  AIS[{k}]" for k in range(len(ais))))
    print(head)
    for i, j in enumerate(res.lengths):
        cols = "".join(f" {a.get(int(j), float('nan')):8.2f}" for a in ais)
        csmc = f" {upper.log_z[i]:8.2f} {upper.spread[i]:7.2f}" if upper is not None else ""
        print(f"{j:4d} {res.log_z[i]:8.2f} {res.spread[i]:7.2f}{csmc} {augsa[i]:7.2f} {res.log_z[i] - augsa[i]:+9.2f}"
              f"{cols}")
    if args.show:
        heavy = int(np.argmax(res.replicates[:, args.show - 1]))
        print(f"sentences of length {args.show} kept by the heaviest run ({heavy + 1}):")
        for sentence in res.kept[heavy, args.show - 1, :, :args.show]:
            print("    " + " ".join(model.vocab.words[w] for w in sentence))
    if args.test is None:
        return 0
    corpus = encode_file(args.test, model.vocab)
    if corpus.lengths.max() > model.m:
        raise SystemExit(f"--test has sentences longer than m={model.m} words; this script scores lengths <= m only")
    augsa_check = augsa_perplexity(model.log_prob(corpus, allow_positive=True), corpus)
    augsa_ppl = f"none ({augsa_check.why_not})" if augsa_check.impossible else f"{augsa_check.perplexity:.2f}"
    smc_ppl = float(np.exp(-log_prob_with_log_z(model, corpus, res.log_z).sum() / corpus.n_predicted))
    print(f"test PPL ({len(corpus)} sentences of <= {model.m} words): AugSA zeta {augsa_ppl}, SMC normalisers "
          f"{smc_ppl:.2f} (SMC errs low in log Z, so this errs low too; {int(np.sum(res.spread > 1))} lengths "
          "with a spread over 1 nat)")
    if upper is not None:
        up_ppl = float(np.exp(-log_prob_with_log_z(model, corpus, upper.log_z).sum() / corpus.n_predicted))
        mid_ppl = float(np.exp(-log_prob_with_log_z(model, corpus, 0.5 * (res.log_z + upper.log_z)).sum()
                               / corpus.n_predicted))
        print(f"with the conditional SMC normalisers (errs high in log Z for exact draws, so this errs high) "
              f"{up_ppl:.2f}; midpoint {mid_ppl:.2f}")
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except KeyboardInterrupt:  # the runs stop at their next position (trf.lm.smc); nothing is written
        print("smc_check: interrupted", file=sys.stderr)
        raise SystemExit(130) from None
