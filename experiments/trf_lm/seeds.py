"""Issue 27 item 3's protocol in one command: for each corpus and seed, one ``mcsa trf train --recipe full`` from
scratch, the checked test and valid perplexities (``mcsa trf eval --check-known train.txt``), KN5, and TRF + KN5;
then the table, the mean and spread over seeds, whether each mark of item 3 is met, and whether each seed's test
and valid checks (two runs of one check of the same normalisers) agree.

Every step is the command a user runs (printed before it runs, its output in a log beside its result) and is
skipped when its result exists, so a killed study resumes where it stopped: run the same command again (the
training then continues from its checkpoint with ``--resume``).  Ctrl-C, or ``kill PID`` (SIGTERM; the way to
stop a study in the background, which Ctrl-C does not reach), stops the running step too, the trainer
writing its checkpoint first.  ``--table`` prints the table of whatever has
finished without running anything.  Folders: ``OUT/<corpus>/{train,valid,test}.txt``, ``OUT/<corpus>/kn5.npz`` and
``OUT/<corpus>/seed<N>/{full.npz, full.ckpt, eval-test.json, eval-valid.json, *.log}``::

    python -m experiments.trf_lm.seeds --out /data/item3                      # fortunes and KJV, seeds 1-3, hours
    python -m experiments.trf_lm.seeds --out /data/item3 --corpora fortunes --seeds 1 --table

The corpora are prepared offline from Debian packages (``fortunes fortunes-min fortune-anarchism``;
``bible-kjv bible-kjv-text``); ``--corpus NAME=DIR`` adds a folder that already holds train / valid / test.txt.
KJV trains with ``--max-length 40`` and is checked on its held-out verses of at most 40 words
(:data:`KJV_MAX_LENGTH`), as every KJV row of experiments/trf_lm/README.md and runs.md.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import shlex
import signal
import statistics
import subprocess
import sys
from pathlib import Path

from samplers.cli import Terminated, interruption, signals_as_interrupts
from trf.io import make_output_folder, read_header

MARKS = {"ratio": 0.97, "width": 0.03, "mixture": 0.90}
"""Item 3: checked test PPL <= 0.97 x KN5, its interval at most 3% wide, TRF + KN5 <= 0.90 x KN5."""

TRAIN_FLAGS = ("--vocab-size", "10000", "--recipe", "full", "--smc-known", "1e-4", "--smc-remember", "--no-check",
               "--log-every", "200")
"""The training command's flags besides files, ``--minutes`` and ``--seed`` (the recipe of
experiments/trf_lm/runs.md's session-32 runs)."""


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "samplers.cli", *args]


KJV_MAX_LENGTH = 40
"""KJV's verses run to 90 words.  As in every KJV row of experiments/trf_lm/README.md and runs.md, the study pools the longer
training verses into one sub-model (``--max-length 40``, Sec. 5.4) and checks the valid and test verses of at most
40 words, the lengths that have a normaliser of their own; KN5 is scored on the same verses."""


def corpus_files(name: str, folder: Path, given: Path | None = None) -> dict[str, Path]:
    """The train / valid / test files the study uses for corpus ``name``: those of a ``--corpus NAME=DIR`` folder,
    ``given``, as they are; else those it prepares in ``folder`` (KJV: the held-out verses of at most
    :data:`KJV_MAX_LENGTH` words, ``valid40.txt`` and ``test40.txt``)."""
    held = f"{KJV_MAX_LENGTH}" if name == "kjv" and given is None else ""
    folder = folder if given is None else given
    return {"train": folder / "train.txt", "valid": folder / f"valid{held}.txt", "test": folder / f"test{held}.txt"}


def corpus_flags(name: str, given: Path | None = None) -> list[str]:
    """The training flags the built-in corpus ``name`` adds to :data:`TRAIN_FLAGS`, before the user's ``--extra``
    (none for a ``--corpus NAME=DIR`` folder, ``given``)."""
    return ["--max-length", str(KJV_MAX_LENGTH)] if name == "kjv" and given is None else []


def prepare(name: str, folder: Path) -> dict[str, Path]:
    """:func:`corpus_files` of corpus ``name`` (``fortunes`` or ``kjv``), written once in ``folder``."""
    paths = corpus_files(name, folder)
    if all(p.is_file() for p in paths.values()):
        return paths
    folder.mkdir(parents=True, exist_ok=True)
    if name == "fortunes":
        from experiments.trf_lm.benchmark import prepare_corpus

        return prepare_corpus(folder, 40)
    if name == "kjv":
        from experiments.trf_lm.kjv import prepare as prepare_kjv

        whole = prepare_kjv(folder)
        for split in ("valid", "test"):
            lines = whole[split].read_text(encoding="utf-8").splitlines()
            paths[split].write_text("".join(f"{line}\n" for line in lines if len(line.split()) <= KJV_MAX_LENGTH),
                                    encoding="utf-8")
        return paths
    raise ValueError(f"unknown corpus {name!r}: fortunes, kjv, or --corpus {name}=DIR")


def steps(files: dict[str, Path], folder: Path, seeds: list[int], minutes: float, check: list[str],
          extra: list[str]) -> list[tuple[list[str], Path, Path]]:
    """``(command, result, log)`` of every step for one corpus, in order: KN5, then per seed the training (with
    ``extra`` flags, and ``--resume`` where its checkpoint exists), the test check and the valid check."""
    kn5 = folder / "kn5.npz"
    out = [(_cli("ngram", "train", "--train", str(files["train"]), "--out", str(kn5), "--order", "5", "--method",
                 "kn", "--vocab-size", "10000"), kn5, folder / "kn5.log")]
    for seed in seeds:
        run = folder / f"seed{seed}"
        model, checkpoint = run / "full.npz", run / "full.ckpt"
        train = _cli("trf", "train", "--train", str(files["train"]), "--valid", str(files["valid"]), *TRAIN_FLAGS,
                     "--minutes", f"{minutes:g}", "--out", str(model), "--checkpoint", str(checkpoint), "--seed",
                     str(seed), *extra, *(["--resume"] if checkpoint.is_file() and not model.is_file() else []))
        out.append((train, model, run / "train.log"))
        for split in ("test", "valid"):
            out.append((_cli("trf", "eval", "--model", str(model), "--test", str(files[split]), "--check-known",
                             str(files["train"]), *check, "--json", str(run / f"eval-{split}.json")),
                        run / f"eval-{split}.json", run / f"eval-{split}.log"))
    return out


def refused(argv: list[str]) -> str | None:
    """The error line ``mcsa`` gives ``argv`` when it reads its command line (before any work), None if it reads
    it."""
    from samplers.cli import build_parser

    caught = io.StringIO()
    try:
        with contextlib.redirect_stderr(caught):
            build_parser().parse_args(argv)
    except SystemExit:
        return (caught.getvalue().strip().splitlines() or ["refused"])[-1]
    return None


def run_step(command: list[str], result: Path, log: Path) -> None:
    """Run ``command`` unless ``result`` exists, its output to ``log``; a failure stops the study, naming the
    log."""
    if result.is_file():
        return
    log.parent.mkdir(parents=True, exist_ok=True)
    print("$ mcsa " + shlex.join(command[3:]), flush=True)
    with open(log, "a", encoding="utf-8") as handle:
        process = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT)
        try:
            status = process.wait()
        except KeyboardInterrupt as exc:  # let the step leave its own way (the trainer writes its checkpoint)
            _stop(process, told=not isinstance(exc, Terminated))
            raise
    if status != 0 or not result.is_file():
        raise RuntimeError(f"the step failed (exit {status}); its output is in {log}")


def _stop(process: subprocess.Popen, told: bool) -> None:
    """End ``process`` after a Ctrl-C or SIGTERM of this script.  After a Ctrl-C (``told``) a terminal sent it the
    Ctrl-C too, so give it a few seconds to leave by itself; else (a ``kill PID`` or ``kill -INT`` of this script
    alone) send it SIGTERM, which ``mcsa`` handles as Ctrl-C (the trainer writes its checkpoint); kill it only if it
    has not left two minutes later."""
    ladder: list[tuple[signal.Signals | None, float | None]] = [(signal.SIGTERM, 120.0), (signal.SIGKILL, None)]
    if told:
        ladder.insert(0, (None, 5.0))
    for send, grace in ladder:
        if send is not None:
            process.send_signal(send)
        try:
            process.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def disagreement(test_check: dict, valid_check: dict) -> dict[str, list[int]]:
    """The lengths at which two checks of the same model's normalisers contradict each other.

    The test and valid checks (``mcsa trf eval --json``'s ``normaliser_check``) are two independent runs of one
    randomised check of the same ``log Z_j``: at each length their intervals should overlap.  Where one check's lower
    side lies above the other's upper side by more than the checks' margin, a run of the first found mass that the
    second missed (the lower sides, SMC and forward AIS, estimate ``Z_j`` without bias, so a much higher estimate is
    evidence of the mass; experiments/trf_lm/methods.md, "Fewer word classes").  Returns, under ``"test"`` and ``"valid"``, the
    lengths at which that check's interval lies below the other's: there its perplexity is too low.
    """
    margin = max(float(test_check.get("margin") or 0.0), float(valid_check.get("margin") or 0.0))
    other = {r["j"]: r for r in valid_check["per_length"]}
    below: dict[str, list[int]] = {"test": [], "valid": []}
    for r in test_check["per_length"]:
        v = other.get(r["j"])
        if v is None or None in (r.get("lower"), r.get("upper"), v.get("lower"), v.get("upper")):
            continue
        if v["lower"] > r["upper"] + margin:
            below["test"].append(r["j"])
        elif r["lower"] > v["upper"] + margin:
            below["valid"].append(r["j"])
    return below


def row(corpus: str, seed: int, folder: Path, files: dict[str, Path]) -> dict | None:
    """One seed's numbers, or None until its checks have run."""
    from experiments.trf_lm.mixture import breakdown, in_text, mixture, read_eval_json

    run = folder / f"seed{seed}"
    checks = {k: run / f"eval-{k}.json" for k in ("test", "valid")}
    if not all(p.is_file() for p in checks.values()):
        return None
    meta = read_header(run / "full.npz")["meta"]
    test = read_eval_json(checks["test"])
    below = disagreement(test["normaliser_check"], read_eval_json(checks["valid"])["normaliser_check"])
    low, high = test["normaliser_check"]["perplexity_interval"]
    mix = mixture(run / "full.npz", folder / "kn5.npz", files["valid"], files["test"], checks["valid"],
                  checks["test"])
    inconclusive = bool(test["normaliser_check"]["inconclusive"])
    checked = high if inconclusive else test["perplexity_checked"]
    mixed = mix["mix"]["high"] if inconclusive else mix["mix"]["checked"]
    base, full = iterations_split(meta, run / "full.ckpt")
    seen = in_text(mix["test_corpus"], files["train"], mix["vocab"])
    groups = {g["group"]: g for g in breakdown(mix["per_sentence"], mix["test_corpus"].lengths, {"seen": seen})}
    return {"corpus": corpus, "seed": seed, "base_iterations": base, "full_iterations": full,
            "minutes": meta["train_seconds"] / 60, "guard": meta.get("guard_message"), "checked": checked,
            "midpoint": test["perplexity_checked"], "low": low, "high": high, "inconclusive": inconclusive,
            "augsa": test.get("perplexity_augsa"), "kn5": mix["ngram"], "ratio": checked / mix["ngram"],
            "width": (high - low) / test["perplexity_checked"], "mixture": mixed, "mixture_ratio": mixed / mix["ngram"],
            "mixture_low": mix["mix"]["low"], "mixture_high": mix["mix"]["high"],
            "weight": mix["weight"], "below": below, "valid_inconclusive": mix["inconclusive"]["valid"],
            "by_seen": {k: {"sentences": groups[k]["sentences"], "ratio": groups[k]["trf"]["checked"] / groups[k]["ngram"]}
                        for k in ("seen", "not seen") if k in groups}}


def iterations_split(meta: dict, checkpoint: Path) -> tuple[int | None, int]:
    """``(base-set iterations, full-set iterations)`` of a trained model from its ``meta``.

    The base stage's end is ``meta["base_iterations"]``; a run that resumed after the switch recorded None there
    before session 39, and then the switch is read from the trainer state in its ``checkpoint`` (``t_start``).
    None where neither says (the full count is then all iterations).
    """
    base = meta.get("base_iterations")
    if base is None and checkpoint.is_file():
        base = read_header(checkpoint)["meta"].get("t_start") or None
    total = int(meta["iterations"])
    return (None, total) if base is None else (int(base), total - int(base))


def table(rows: list[dict]) -> str:
    """The rows as a markdown table, then per corpus the mean and spread of the ratios and item 3's marks, then a
    warning for each row whose test and valid checks contradict each other (:func:`disagreement`)."""
    lines = ["| corpus | seed | `w+c` + full-set iterations | minutes | checked test PPL [interval] | AugSA PPL | KN5 "
             "| / KN5 | TRF + KN5 [interval] (/ KN5), TRF weight |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        head = (f"{r['checked']:.2f} (high end; midpoint {r['midpoint']:.2f}), inconclusive" if r["inconclusive"]
                else f"{r['checked']:.2f}")
        if _contradicted(r):
            head += ", the checks disagree"
        augsa = "-" if r["augsa"] is None else f"{r['augsa']:.2f}"
        split = (f"{r['full_iterations']:,} in all (the split is not recorded)" if r["base_iterations"] is None
                 else f"{r['base_iterations']:,} + {r['full_iterations']:,}")
        lines.append(f"| {r['corpus']} | {r['seed']} | {split}"
                     f"{' (guard fired)' if r['guard'] else ''} | {r['minutes']:.0f} | {head} [{r['low']:.2f}, "
                     f"{r['high']:.2f}] | {augsa} | {r['kn5']:.2f} | {r['ratio']:.3f} | {r['mixture']:.2f} "
                     f"[{r['mixture_low']:.2f}, {r['mixture_high']:.2f}] ({r['mixture_ratio']:.3f}), {r['weight']:.2f} |")
    for corpus in dict.fromkeys(r["corpus"] for r in rows):
        mine = [r for r in rows if r["corpus"] == corpus]
        ratios, mixed = [r["ratio"] for r in mine], [r["mixture_ratio"] for r in mine]
        spread = (lambda v: f" +- {statistics.stdev(v):.3f} (sd)" if len(v) > 1 else " (one seed)")
        met = {"conclusive": all(not r["inconclusive"] and not _contradicted(r) for r in mine),
               f"width <= {MARKS['width']:.0%}": all(r["width"] <= MARKS["width"] for r in mine),
               f"<= {MARKS['ratio']} x KN5": all(r["ratio"] <= MARKS["ratio"] for r in mine),
               f"TRF + KN5 <= {MARKS['mixture']} x KN5": all(r["mixture_ratio"] <= MARKS["mixture"] for r in mine),
               "three seeds": len(mine) >= 3}
        lines.append(f"\n{corpus}: TRF / KN5 {statistics.mean(ratios):.3f}{spread(ratios)}, TRF + KN5 / KN5 "
                     f"{statistics.mean(mixed):.3f}{spread(mixed)} over seeds {', '.join(str(r['seed']) for r in mine)}"
                     "; item 3: " + ", ".join(f"{k} {'met' if v else 'NOT met'}" for k, v in met.items()))
        parts = []
        for key, where in (("not seen", "not in"), ("seen", "in")):
            got = [r["by_seen"][key] for r in mine if key in r.get("by_seen", {})]
            if got:
                n = got[0]["sentences"]
                parts.append(f"{where} the training text ({n:,} sentence{'s' if n != 1 else ''}) "
                             + ", ".join(f"{g['ratio']:.3f}" for g in got))
        if parts:
            lines.append(f"{corpus}: TRF / KN5 (checked midpoints) on the test sentences " + "; ".join(parts)
                         + " (by length too: `python -m experiments.trf_lm.mixture --breakdown TRAIN`)")
    for r in rows:
        if r.get("valid_inconclusive"):
            lines.append(f"\nnote: {r['corpus']} seed {r['seed']}: the valid check is inconclusive "
                         f"({r['valid_inconclusive']}): the mixture's TRF weight was tuned on its midpoints; the row's "
                         "test perplexities rest on the test check alone")
        for which, lengths in r["below"].items():
            if lengths:
                other = "valid" if which == "test" else "test"
                lines.append(f"\nwarning: {r['corpus']} seed {r['seed']}: the {which} check's interval of log Z_j lies "
                             f"below the {other} check's at {len(lengths)} length(s) ({_lengths(lengths)}): it most "
                             f"likely missed mass a run of the {other} check found, so its perplexity is too low "
                             "there; the two cannot both be right, so the row is not conclusive (raise --check-seconds)")
    return "\n".join(lines)


def _contradicted(r: dict) -> bool:
    """Whether the row's test and valid checks disagree about a normaliser (:func:`disagreement`)."""
    return any(r["below"].values())


def _lengths(lengths: list[int]) -> str:
    """``1, 2, 5`` or, for more than six, the first five and a count."""
    shown = ", ".join(str(j) for j in lengths[:5])
    return shown if len(lengths) <= 6 else f"{shown} and {len(lengths) - 5} more"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="folder of the study (created; rerun to resume)")
    parser.add_argument("--corpora", nargs="*", default=["fortunes", "kjv"],
                        help="fortunes and/or kjv (none: only the --corpus folders)")
    parser.add_argument("--corpus", action="append", default=[], metavar="NAME=DIR",
                        help="another corpus: a folder holding train.txt, valid.txt and test.txt (repeatable)")
    parser.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3])
    parser.add_argument("--minutes", type=float, default=105.0, help="--minutes of each training (default 105)")
    parser.add_argument("--check-seconds", type=float, default=600.0, help="each check's time budget (default 600)")
    parser.add_argument("--check-effort", default=None, help="a fixed effort for every check instead (as mcsa trf "
                        "eval's --check-effort)")
    parser.add_argument("--extra", default="", help="more `mcsa trf train` flags, one string (e.g. "
                        "\"--smc-proposal trimmed\")")
    parser.add_argument("--table", action="store_true", help="print the table of what has finished; run nothing")
    args = parser.parse_args(argv)
    if args.minutes <= 0 or args.check_seconds <= 0:
        parser.error("--minutes and --check-seconds must be positive")
    twice = sorted({seed for seed in args.seeds if args.seeds.count(seed) > 1})
    if twice:  # one run per seed: a repeated seed would count as another seed in the table's "three seeds"
        parser.error(f"--seeds: {', '.join(map(str, twice))} given more than once")
    corpora: dict[str, Path | None] = {name: None for name in args.corpora}
    for spec in args.corpus:
        name, _, folder = spec.partition("=")
        if not name or not folder:
            parser.error(f"--corpus takes NAME=DIR, got {spec!r}")
        corpora[name] = Path(folder)
    out = Path(args.out)
    check = ["--check-effort", args.check_effort] if args.check_effort else ["--check-seconds", f"{args.check_seconds:g}"]
    if not args.table:
        _refuse_before_work(parser, args, corpora, out, check)
    try:
        with signals_as_interrupts():  # `kill PID` stops the running step too, not only this script
            rows = _study(corpora, out, args, check)
    except KeyboardInterrupt as exc:
        how, status = interruption(exc) or ("interrupted", 130)
        print(f"{how}: run the same command to resume (the training continues from its checkpoint)",
              file=sys.stderr)
        return status
    except (RuntimeError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(table(rows) if rows else "nothing has finished yet")
    return 0


def _refuse_before_work(parser: argparse.ArgumentParser, args: argparse.Namespace, corpora: dict[str, Path | None],
                        out: Path, check: list[str]) -> None:
    """Stop with ``parser.error`` (status 2, the flag named) before any work where the study would fail later: a
    ``--corpus`` folder without its files, an ``--out`` it cannot write, flags that ``mcsa`` would refuse (a study of
    hours must not fail at its second corpus or at its first check); the ``--out`` folder is made last."""
    for name, given in corpora.items():
        missing = [p.name for p in corpus_files(name, out, given).values() if given and not p.is_file()]
        if missing:
            parser.error(f"--corpus {name}={given}: no {', '.join(missing)} in that folder")
    try:
        extra = shlex.split(args.extra)
    except ValueError as exc:
        parser.error(f"--extra {args.extra!r}: {exc}")
    # the flags of every kind of step, read by mcsa's own parser: a bad --check-effort fails now, not after the
    # first training's hours
    probe = [step for name, given in corpora.items()
             for step in steps(corpus_files(name, out, given), out, args.seeds, args.minutes, check,
                               [*corpus_flags(name, given), *extra])]
    for command, _, _ in probe:
        why = refused(command[3:])
        if why is not None:
            parser.error(f"`mcsa {' '.join(command[3:5])}` would refuse the command the study gives it: {why}")
    try:
        make_output_folder(out, "--out")
    except ValueError as exc:
        parser.error(str(exc))


def _study(corpora: dict[str, Path | None], out: Path, args: argparse.Namespace, check: list[str]) -> list[dict]:
    """Run (unless ``args.table``) every corpus's steps; the rows of the seeds whose checks have run."""
    rows = []
    for name, given in corpora.items():
        folder = out / name
        files = corpus_files(name, folder, given) if given is not None or args.table else prepare(name, folder)
        missing = [str(p) for p in files.values() if not p.is_file()]
        if missing:
            print(f"{name}: no {', '.join(missing)}", file=sys.stderr)
            continue
        if not args.table:
            for command, result, log in steps(files, folder, args.seeds, args.minutes, check,
                                              [*corpus_flags(name, given), *shlex.split(args.extra)]):
                run_step(command, result, log)
        rows += [r for r in (row(name, seed, folder, files) for seed in args.seeds) if r is not None]
    return rows


if __name__ == "__main__":
    raise SystemExit(main())
