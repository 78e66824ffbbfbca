"""TRF language model vs Kneser-Ney / Witten-Bell on the English text of Debian's fortune packages.

The corpus is read from the installed Debian packages ``fortunes``, ``fortunes-min`` and
``fortune-anarchism`` (``apt-get install fortunes fortunes-min fortune-anarchism``; nothing is
downloaded at run time and no corpus is committed).  Fortunes are split 90/5/5 into train/valid/test
by index, lower-cased, split into sentences at ``.!?``, tokenised into words (numbers -> ``N``), and
sentences longer than ``--max-len`` words are dropped from every split (so the results stay
comparable with the first runs; ``trf.lm`` can pool longer sentences, Sec. 5.4, ``max_length``).  The vocabulary is the ``--vocab`` most frequent training words, the
rest ``<unk>`` (scored as a word by every model).  Perplexity counts one end-of-sentence per sentence.

It prints: corpus sizes; KN/WB perplexity for orders 2-5 with counting time; TRF training (time
budget ``--minutes``; by default the "fast" schedule: K = 100, constant first-stage rate 1/(t_c + 1)
with ``--t-c 1000``, ``--beta-lambda 0``; ``--sec7`` for the paper's Sec. 7 schedule) with perplexity
vs training time; lambda averaged over the second half (``--average-from``) and zeta re-estimated
for the final lambdas (``--zeta-minutes``, footnote 17), the candidate chosen on valid; AIS checks of
zeta; linear sentence-level interpolation TRF + KN5 (weight tuned on valid); TransMS sentences per
second; scoring sentences per second on one core; peak memory.  The documented run
(experiments/trf_lm/methods.md):

    NUMBA_NUM_THREADS=1 .venv/bin/python experiments/trf_lm/benchmark.py --features w+c --minutes 60 --t-c 500 \
        --beta-lambda 0 --t0 5000 --zeta-minutes 4 --eval-every 240 --ais-temperatures 300 --ais-lengths 12
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import sys
import time
from pathlib import Path

import numpy as np

from experiments.fortunes import FORTUNE_PACKAGES, SKIP_FILES  # noqa: E402, F401  (re-exported)
from experiments.fortunes import fortune_files as _fortune_files  # noqa: E402


def fortune_files() -> list[Path]:
    """The English fortune text files (:func:`experiments.fortunes.fortune_files`); exits with its message if absent."""
    try:
        return _fortune_files()
    except RuntimeError as exc:
        raise SystemExit(str(exc)) from None


def tokens_of(text: str) -> list[str]:
    """Lower-cased words (with inner apostrophes) of ``text``; numbers become ``N``; punctuation dropped."""
    return ["N" if w.isdigit() else w for w in re.findall(r"[a-z]+(?:'[a-z]+)?|\d+", text.lower())]


def sentences_of(text: str, max_len: int) -> list[str]:
    text = re.sub(r".\x08", "", text).lower()
    out = []
    for chunk in re.split(r"[.!?]+(?:\s|$)", text):
        words = tokens_of(chunk)
        if 1 <= len(words) <= max_len:
            out.append(" ".join(words))
    return out


def fortunes_by_split(max_len: int) -> dict[str, list[list[str]]]:
    """Every fortune as its list of sentences, in ``{"train", "valid", "test"}``: fortune ``i`` (counted over the
    sorted files) goes to test if ``i % 20 == 0``, valid if ``i % 20 == 1``, train otherwise."""
    splits: dict[str, list[list[str]]] = {"train": [], "valid": [], "test": []}
    index = 0
    for path in fortune_files():
        text = path.read_bytes().decode("utf-8", errors="replace")
        for fortune in re.split(r"^%\s*$", text, flags=re.M):
            split = "test" if index % 20 == 0 else "valid" if index % 20 == 1 else "train"
            splits[split].append(sentences_of(fortune, max_len))
            index += 1
    return splits


def copies_of_train_fortunes(split: str, max_len: int = 40) -> np.ndarray:
    """Per sentence of ``split``'s file (as :func:`prepare_corpus` writes it): does it come from a fortune whose
    sentences, all of them, are those of a training fortune?  Some fortunes occur in two files (e.g. ``cookie`` and
    ``linux``), and the split by index can put one copy in training and the other in ``split``."""
    splits = fortunes_by_split(max_len)
    in_train = {tuple(sentences) for sentences in splits["train"] if sentences}
    return np.array([tuple(sentences) in in_train for sentences in splits[split] for _ in sentences], dtype=bool)


def prepare_corpus(out_dir: Path, max_len: int) -> dict[str, Path]:
    """Write train/valid/test files (one sentence per line) under ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    splits = {name: [line for sentences in fortunes for line in sentences]
              for name, fortunes in fortunes_by_split(max_len).items()}
    paths = {}
    for name, lines in splits.items():
        paths[name] = out_dir / f"{name}.txt"
        paths[name].write_text("\n".join(lines) + "\n", encoding="utf-8")
    return paths


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default="/tmp/mcsa-fortunes")
    parser.add_argument("--max-len", type=int, default=40)
    parser.add_argument("--vocab", type=int, default=10000)
    parser.add_argument("--classes", type=int, default=200)
    parser.add_argument("--features", default="w+c+ws+cs+cpw")
    parser.add_argument("--minutes", type=float, default=15.0, help="AugSA training time (lambda and zeta)")
    parser.add_argument("--chains", type=int, default=20)
    parser.add_argument("--samples", type=int, default=100, help="K per AugSA iteration (Sec. 7: 300)")
    parser.add_argument("--t-c", dest="t_c", type=float, default=1000.0, help="Eq. 24 (Sec. 7: 3000; Sec. 8: 1000)")
    parser.add_argument("--beta-lambda", dest="beta_lambda", type=float, default=0.0,
                        help="Eq. 24 (Sec. 7: 0.8; Sec. 8: 0 = constant first-stage rate)")
    parser.add_argument("--t0", type=int, default=10**9, help="Eq. 24-25 end of the first stage (Sec. 7: 2000)")
    parser.add_argument("--l2", type=float, default=4e-5, help="mu of Eq. 38")
    parser.add_argument("--average-from", type=float, default=0.5,
                        help="also average lambda over the iterations after this fraction of --minutes (1: off)")
    parser.add_argument("--zeta-minutes", type=float, default=4.0,
                        help="zeta-only AugSA (footnote 17) per final lambda after training (0: off)")
    parser.add_argument("--sec7", action="store_true", help="the Sec. 7 schedule (K=300, t_c=3000, ...) instead")
    parser.add_argument("--eval-every", type=float, default=180.0, help="seconds between perplexity snapshots")
    parser.add_argument("--ais-temperatures", type=int, default=300)
    parser.add_argument("--ais-chains", type=int, default=10)
    parser.add_argument("--ais-lengths", type=int, default=12, help="AIS for lengths 1..this")
    parser.add_argument("--out", default="/tmp/mcsa-fortunes/trf-lm.npz")
    parser.add_argument("--json", default=None)
    parser.add_argument("--prepare-only", action="store_true",
                        help="write the train/valid/test split under --data-dir and stop (benchmarks/trf_*_speed.py read it)")
    return parser


def _ngram_baselines(data: dict, vocab, report: dict) -> np.ndarray:
    """KN / WB perplexity for orders 2-5 with counting time; the KN5 test sentence log-probabilities."""
    from trf.ngram import KneserNey, WittenBell, perplexity

    print("\n## n-gram baselines (perplexity per token, one </s> per sentence)")
    print("| model | order | test PPL | valid PPL | count time s |")
    print("|---|---|---|---|---|")
    ngram_lp = {}
    for cls in (KneserNey, WittenBell):
        for order in (2, 3, 4, 5):
            t0 = time.perf_counter()
            model = cls(order).fit(data["train"], len(vocab))
            seconds = time.perf_counter() - t0
            test_lp = model.log_prob(data["test"])
            ppl = {k: perplexity(model.log_prob(data[k]) if k != "test" else test_lp, data[k].n_predicted)
                   for k in ("test", "valid")}
            ngram_lp[(cls.__name__, order)] = test_lp
            print(f"| {cls.__name__} | {order} | {ppl['test']:.2f} | {ppl['valid']:.2f} | {seconds:.2f} |")
            report[f"{cls.__name__}{order}"] = {**ppl, "seconds": seconds}
    return ngram_lp[("KneserNey", 5)]


def _train_trf(args: argparse.Namespace, config, paths: dict, data: dict, vocab) -> tuple:
    """AugSA training with valid-perplexity snapshots and a Polyak-Ruppert average of lambda over the second part of
    the budget; the model, the result, the snapshots, the average and the wall seconds."""
    from trf.lm.check.report import augsa_perplexity
    from trf.lm.model import SentenceTRF
    from trf.lm.train import train_lm

    print(f"\n## TRF training ({args.features}, {args.classes} classes, K={config.n_samples}, t_c={config.t_c}, "
          f"beta_lambda={config.beta_lambda}, t0={config.t0}, L2={config.l2}, stop rule "
          f"{'off' if config.stop_window is None else 'on'}; budget {args.minutes} min, "
          f"NUMBA_NUM_THREADS={os.environ.get('NUMBA_NUM_THREADS', 'all')}; load {os.getloadavg()[0]:.1f})")
    snapshots = []
    last = [time.perf_counter()]
    average = {"sum": None, "n": 0, "from_t": None}

    def snapshot(trainer, t, record):
        seconds = trainer.time_sampling + trainer.time_updates
        if seconds >= args.average_from * args.minutes * 60:        # Polyak-Ruppert average of lambda
            if average["sum"] is None:
                average["sum"], average["from_t"] = np.zeros_like(trainer.lam), t
            average["sum"] += trainer.lam
            average["n"] += 1
        if time.perf_counter() - last[0] >= args.eval_every:
            model = SentenceTRF(vocab, trainer.backend.features, trainer.backend.pi, trainer.lam, trainer.zeta)
            valid = augsa_perplexity(model.log_prob(data["valid"], allow_positive=True), data["valid"])
            ppl = None if valid.impossible else valid.perplexity
            snapshots.append({"t": t, "seconds": seconds, "valid_ppl": ppl, "load": os.getloadavg()[0]})
            shown = f"none ({valid.why_not})" if valid.impossible else f"{ppl:.2f}"
            print(f"  t={t} train {seconds:.0f}s valid PPL {shown} (AugSA zeta; load {os.getloadavg()[0]:.1f})",
                  flush=True)
            last[0] = time.perf_counter()
        return False

    t0 = time.perf_counter()
    cpu0 = time.process_time()
    model, result = train_lm(paths["train"], valid_path=paths["valid"], features=args.features, classes=args.classes,
                             vocab_size=args.vocab, n_chains=args.chains, time_limit=args.minutes * 60,
                             config=config, progress=False, callbacks=[snapshot], checkpoint=args.out + ".ckpt")
    total = time.perf_counter() - t0
    info = result.history[-1] if result.history else {}
    print(f"iterations {result.t}, {result.t / max(total - model.meta['prep_seconds'], 1e-9):.2f} it/s; "
          f"features {model.features.n_features} ({model.features.bytes_per_million() / 1e6:.1f} MB per million "
          f"incl. weights); preparation {model.meta['prep_seconds']:.1f}s; wall {total:.0f}s, CPU "
          f"{time.process_time() - cpu0:.0f}s; jump acceptance {info.get('jump_acceptance', float('nan')):.2f}")
    draws = result.n_draws
    print(f"TransMS: {draws / max(result.time_sampling, 1e-9):.1f} sentences/s sampled during training (wall)")
    return model, result, snapshots, average, total


def _choose_candidate(args: argparse.Namespace, config, model, result, average: dict, data: dict, vocab) -> tuple:
    """The candidates (final / averaged lambda, AugSA / refined zeta) and the one best on valid: the chosen model
    (saved to ``--out``), its name and every candidate's (valid, test) perplexity."""
    from trf.lm.check.report import augsa_perplexity
    from trf.lm.model import SentenceTRF
    from trf.lm.train import refine_zeta

    candidates = {"final lambda, AugSA zeta": model}
    if average["n"]:
        candidates["averaged lambda, AugSA zeta"] = SentenceTRF(vocab, model.features, model.pi,
                                                                average["sum"] / average["n"], model.zeta)
        print(f"lambda averaged over iterations {average['from_t']}..{result.t} ({average['n']} iterates)")
    if args.zeta_minutes > 0:
        for name in list(candidates):
            t1 = time.perf_counter()
            zeta, its = refine_zeta(candidates[name], data["train"], seconds=args.zeta_minutes * 60,
                                    n_samples=config.n_samples, n_chains=args.chains, seed=1)
            refined = SentenceTRF(vocab, model.features, model.pi, candidates[name].lam, zeta)
            candidates[name.replace("AugSA zeta", "refined zeta")] = refined
            print(f"zeta refinement for {name.split(',')[0]}: {its} iterations in {time.perf_counter() - t1:.0f}s, "
                  f"max |change| {np.abs(zeta - candidates[name].zeta).max():.2f}")
    print("\n## TRF candidates (chosen on valid)")
    print("| TRF | valid PPL | test PPL |")
    print("|---|---|---|")
    scores = {}
    for name, cand in candidates.items():  # a candidate with log p > 0 somewhere has no perplexity: never chosen
        ppl = [augsa_perplexity(cand.log_prob(data[k], allow_positive=True), data[k]) for k in ("valid", "test")]
        scores[name] = tuple(None if p.impossible else p.perplexity for p in ppl)
        print(f"| {name} | " + " | ".join(f"none ({p.impossible} sentences log p > 0)" if p.impossible
                                          else f"{p.perplexity:.2f}" for p in ppl) + " |")
    possible = {k: valid for k, (valid, _) in scores.items() if valid is not None}
    if not possible:
        raise ValueError("every TRF candidate gives some valid sentence log p > 0 (AugSA's zeta too low): no "
                         "perplexity to choose by; check the model with `mcsa trf eval`")
    chosen = min(possible, key=possible.__getitem__)
    model = SentenceTRF(vocab, model.features, model.pi, candidates[chosen].lam, candidates[chosen].zeta, model.meta)
    model.meta["chosen"] = chosen
    model.save(args.out)
    return model, chosen, scores


def _test_perplexity(model, chosen: str, kn5: np.ndarray, data: dict, vocab) -> tuple:
    """Test perplexity of the TRF, KN5 and their linear interpolation (weight tuned on valid): the numbers and the
    fitted KN5."""
    from trf.lm.rescore import interpolate_linear, tune_linear_weight
    from trf.ngram import KneserNey, perplexity

    trf_lp = model.log_prob(data["test"])
    trf_ppl = perplexity(trf_lp, data["test"].n_predicted)
    kn5_ppl = perplexity(kn5, data["test"].n_predicted)
    print(f"\n## test perplexity (TRF = {chosen}, the best on valid)")
    print("| model | test PPL | vs KN5 |")
    print("|---|---|---|")
    print(f"| KN5 | {kn5_ppl:.2f} | 1.000 |")
    print(f"| TRF | {trf_ppl:.2f} | {trf_ppl / kn5_ppl:.3f} |")
    kn5_model = KneserNey(5).fit(data["train"], len(vocab))
    valid_trf, valid_kn = model.log_prob(data["valid"]), kn5_model.log_prob(data["valid"])
    w_valid = tune_linear_weight(valid_trf, valid_kn, data["valid"].n_predicted)
    interp_ppl = perplexity(interpolate_linear(trf_lp, kn5, w_valid), data["test"].n_predicted)
    print(f"| TRF + KN5 (linear, sentence level, TRF weight {w_valid:.2f} tuned on valid) | {interp_ppl:.2f} | "
          f"{interp_ppl / kn5_ppl:.3f} |")
    print("(log-linear interpolation, trf.lm.rescore.interpolate_loglinear, is unnormalised: for n-best "
          "rescoring, not perplexity)")
    return trf_ppl, kn5_ppl, interp_ppl, float(w_valid), kn5_model


def _ais_section(args: argparse.Namespace, model, kn5_model, data: dict) -> dict:
    """AIS check of zeta on short lengths, and test perplexity on the short sentences with each log Z."""
    from trf.lm.check import ais_check
    from trf.lm.corpus import EncodedCorpus
    from trf.ngram import perplexity

    print(f"\n## AIS check of zeta (lengths 1..{args.ais_lengths}, {args.ais_chains} chains, "
          f"{args.ais_temperatures} temperatures)")
    t0 = time.perf_counter()
    ais = ais_check(model, lengths=range(1, args.ais_lengths + 1), n_temperatures=args.ais_temperatures,
                    n_chains=args.ais_chains, seed=0)
    short = np.array([s.size <= args.ais_lengths for s in data["test"]])
    print("| j | AugSA log Z_j | AIS separate | AIS smoothed | stderr |")
    print("|---|---|---|---|---|")
    for row in ais["per_length"]:
        print(f"| {row['j']} | {row['augsa']:.2f} | {row['separate']:.2f} | {row['smoothed']:.2f} | {row['stderr']:.2f} |")
    print(f"global AIS log normaliser {ais['global']:.3f} (0 = AugSA zeta self-consistent); "
          f"{time.perf_counter() - t0:.0f}s")
    sub = EncodedCorpus.from_sentences([s for s, keep in zip(data["test"], short) if keep])
    for name in ("augsa", "separate", "smoothed"):
        lp = ais["log_prob"](sub, name)
        print(f"test PPL on sentences of <= {args.ais_lengths} words with {name} log Z: "
              f"{perplexity(lp, sub.n_predicted):.2f}")
    print(f"  (KN5 on the same sentences: "
          f"{perplexity(kn5_model.log_prob(sub), sub.n_predicted):.2f})")
    return {k: v for k, v in ais.items() if k != "log_prob"}


def _speed_section(args: argparse.Namespace, model, data: dict, report: dict) -> None:
    """TransMS sentences per second with the trained model and scoring speed, one core each; peak memory."""
    from trf.lm.rescore import scoring_speed
    from trf.lm.transms import SentenceSampler

    print("\n## TransMS speed with the trained model (serial build, one core)")
    sampler = SentenceSampler(model.features, model.m)
    state = sampler.init_chains(args.chains, 0, start=data["train"])
    log_w = np.log(model.pi) - model.zeta
    sampler.run(model.lam, log_w, state, 1, 0, parallel=False)          # compile / warm up
    t1, c1 = time.perf_counter(), time.process_time()
    _, _, lengths, info = sampler.run(model.lam, log_w, state, 20, 1, parallel=False)
    wall, cpu = time.perf_counter() - t1, time.process_time() - c1
    print(f"{lengths.size / wall:.1f} sentences/s wall, {lengths.size / cpu:.1f} per CPU second (load "
          f"{os.getloadavg()[0]:.1f}); mean length {lengths.mean():.1f}, jump acceptance {info.jump_acceptance:.2f}, "
          f"class acceptance {info.class_acceptance:.2f}")
    report["transms_sentences_per_cpu_second"] = lengths.size / cpu

    print("\n## scoring speed (one core)")
    speed = scoring_speed(model, data["test"], repeats=3)
    print(f"TRF: {speed:.0f} sentences/s on {len(data['test'])} test sentences")
    print(f"peak RSS {peak_rss_mb():.0f} MB")
    report.update({"score_sentences_per_second": speed, "peak_rss_mb": peak_rss_mb()})


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    if args.prepare_only:
        for name, path in prepare_corpus(Path(args.data_dir), args.max_len).items():
            print(f"{name}: {path}")
        return 0

    from trf.augsa import AugSA  # noqa: F401  (imported here so --help works without numba)
    from trf.lm.backend import lm_config
    from trf.lm.corpus import Vocabulary, encode_file

    report: dict = {"settings": vars(args)}
    paths = prepare_corpus(Path(args.data_dir), args.max_len)
    vocab = Vocabulary.build(paths["train"], max_size=args.vocab)
    data = {k: encode_file(p, vocab) for k, p in paths.items()}
    print("## corpus (Debian fortunes, fortunes-min, fortune-anarchism)")
    for k, c in data.items():
        print(f"{k:5s}: {len(c):7d} sentences {c.tokens.size:8d} words  <unk> {np.mean(c.tokens == 0):.3%}")
    report["corpus"] = {k: {"sentences": len(c), "words": int(c.tokens.size)} for k, c in data.items()}
    kn5 = _ngram_baselines(data, vocab, report)

    if args.sec7:
        config = lm_config()
        args.average_from, args.zeta_minutes = 1.0, 0.0
    else:
        config = lm_config(n_samples=args.samples, t_c=args.t_c, beta_lambda=args.beta_lambda, t0=args.t0,
                           l2=args.l2, stop_window=None)
    model, result, snapshots, average, total = _train_trf(args, config, paths, data, vocab)
    model, chosen, scores = _choose_candidate(args, config, model, result, average, data, vocab)
    trf_ppl, kn5_ppl, interp_ppl, w_valid, kn5_model = _test_perplexity(model, chosen, kn5, data, vocab)
    report.update({"trf": {"test_ppl": trf_ppl, "iterations": result.t, "snapshots": snapshots, "chosen": chosen,
                           "candidates": scores, "n_features": model.features.n_features, "train_seconds": total},
                   "kn5_test_ppl": kn5_ppl, "interpolated_test_ppl": interp_ppl, "interp_weight": w_valid})
    report["ais"] = _ais_section(args, model, kn5_model, data)
    _speed_section(args, model, data, report)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2, default=float))
    return 0

if __name__ == "__main__":
    sys.exit(main())
