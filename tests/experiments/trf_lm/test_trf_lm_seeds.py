"""experiments.trf_lm.seeds: item 3's protocol (train, check, KN5, mixture per corpus and seed) in one resumable
command, and its table."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time

import numpy as np
import pytest

import trf
from experiments.trf_lm import kjv
from experiments.trf_lm import seeds as study
from experiments.trf_lm.mixture import log_z_tables, mixture, read_eval_json
from experiments.trf_lm.seeds import disagreement, steps, table
from experiments.trf_lm.seeds import main as seeds
from trf.augsa import CHECKPOINT_KIND
from trf.io import atomic_write_npz, read_header
from trf.lm.check import log_prob_with_log_z
from trf.lm.corpus import encode_file
from trf.lm.ngram_cli import load_ngram
from trf.ngram import perplexity

TEXT = "\n".join(["the cat sat", "the dog sat", "a cat ran", "the cat ran home", "a dog sat down", "the end"] * 8)
HELD = "\n".join(["the cat sat down", "a dog ran", "the dog ran home", "a cat sat"] * 3)
# iterations bound the training, not the clock; a fixed check effort: nothing here depends on the machine's speed
FAST = ["--minutes", "60", "--check-effort", "20,200,50", "--extra", "--classes 3 --max-iterations 30"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("seeds")
    data = folder / "tiny"
    data.mkdir()
    (data / "train.txt").write_text(TEXT + "\n")
    (data / "valid.txt").write_text(HELD + "\n")
    (data / "test.txt").write_text(HELD + "\nthe end\n")  # one test sentence occurs in the training text
    return folder, data


def test_the_study_runs_every_step_once_and_its_table_carries_the_checks(corpus, capsys):
    """Two seeds: every step runs (printed as the mcsa command), the table's rows are the eval JSON's checked
    perplexity, interval and KN5 ratio, and the mixture's; a rerun runs nothing and prints the same table."""
    folder, data = corpus
    out = folder / "out"
    argv = ["--out", str(out), "--corpora", "--corpus", f"tiny={data}", "--seeds", "1", "2", *FAST]
    assert seeds(argv) == 0
    printed = capsys.readouterr().out
    assert printed.count("$ mcsa trf train ") == 2 and printed.count("$ mcsa trf eval ") == 4
    assert printed.count("$ mcsa ngram train ") == 1 and "--resume" not in printed
    for seed in (1, 2):
        run = out / "tiny" / f"seed{seed}"
        test = json.loads((run / "eval-test.json").read_text())
        low, high = test["normaliser_check"]["perplexity_interval"]
        mix = mixture(run / "full.npz", out / "tiny" / "kn5.npz", data / "valid.txt", data / "test.txt",
                      run / "eval-valid.json", run / "eval-test.json")
        assert not test["normaliser_check"]["inconclusive"]
        checked = test["perplexity_checked"]
        minutes = read_header(run / "full.npz")["meta"]["train_seconds"] / 60  # the clock's: not asserted as 0
        assert (f"| tiny | {seed} | 30 + 0 | {minutes:.0f} | {checked:.2f} [{low:.2f}, {high:.2f}] | {test['perplexity_augsa']:.2f} "
                f"| {mix['ngram']:.2f} | {checked / mix['ngram']:.3f} | {mix['mix']['checked']:.2f} [{mix['mix']['low']:.2f}, "
                f"{mix['mix']['high']:.2f}] ({mix['mix']['checked'] / mix['ngram']:.3f}), {mix['weight']:.2f} |") in printed
    assert "over seeds 1, 2; item 3: conclusive met" in printed and "three seeds NOT met" in printed
    ratios = {}  # TRF / KN5 on the test sentences in and not in the training text, from the check and KN5 directly
    for seed in (1, 2):
        run = out / "tiny" / f"seed{seed}"
        lm, (kn, _) = trf.load(run / "full.npz"), load_ngram(out / "tiny" / "kn5.npz")
        test = encode_file(data / "test.txt", lm.vocab)
        lp = log_prob_with_log_z(lm, test, log_z_tables(lm, read_eval_json(run / "eval-test.json"))["checked"])
        ng, seen = kn.log_prob(test), np.arange(len(test)) == 12
        for key, mask in (("not in", ~seen), ("in", seen)):
            n = int((test.lengths[mask] + 1).sum())
            ratios.setdefault(key, []).append(f"{perplexity(lp[mask], n) / perplexity(ng[mask], n):.3f}")
    assert (f"tiny: TRF / KN5 (checked midpoints) on the test sentences not in the training text (12 sentences) "
            f"{', '.join(ratios['not in'])}; in the training text (1 sentence) {', '.join(ratios['in'])}") in printed
    table = printed[printed.index("| corpus |"):]
    stamps = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}
    assert seeds(argv) == 0
    again = capsys.readouterr().out
    assert "$ mcsa" not in again and again == table
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()} == stamps
    assert seeds([*argv, "--table"]) == 0 and capsys.readouterr().out == table


def test_a_killed_training_resumes_and_a_failed_step_names_its_log(corpus, tmp_path, capsys):
    """The training step resumes from its checkpoint where one is left and no model (a killed run); a step that
    fails stops the study with its log named; an empty study says nothing has finished."""
    folder, data = corpus
    files = {k: data / f"{k}.txt" for k in ("train", "valid", "test")}
    run = tmp_path / "seed4"
    run.mkdir()
    (run / "full.ckpt").write_bytes(b"checkpoint")
    trainings = [c for c, result, _ in steps(files, tmp_path, [4, 5], 60.0, [], []) if result.name == "full.npz"]
    assert trainings[0][-1] == "--resume" and "--resume" not in trainings[1]
    assert seeds(["--out", str(tmp_path / "none"), "--corpora", "--table"]) == 0
    assert capsys.readouterr().out == "nothing has finished yet\n"
    binary = tmp_path / "binary"  # flags that read well, a training text that does not: the step fails
    binary.mkdir()
    for name in ("train", "valid", "test"):
        (binary / f"{name}.txt").write_bytes(b"\x00\x01 not text\n")
    argv = ["--out", str(tmp_path / "bad"), "--corpora", "--corpus", f"tiny={binary}", "--seeds", "1", *FAST]
    assert seeds(argv) == 1
    err = capsys.readouterr().err
    log = tmp_path / "bad" / "tiny" / "kn5.log"
    assert f"error: the step failed (exit 2); its output is in {log}" in err
    assert "NUL" in log.read_text()


def _check(intervals: dict[int, tuple[float, float]]) -> dict:
    """A normaliser check's JSON (the fields :func:`disagreement` reads) with these per-length intervals."""
    return {"margin": 0.5, "per_length": [{"j": j, "lower": lo, "upper": hi} for j, (lo, hi) in intervals.items()]}


def _row(**changes) -> dict:
    """A row of the study's table (as :func:`experiments.trf_lm.seeds.row` returns it), with ``changes``."""
    return {"corpus": "c", "seed": 1, "base_iterations": 10, "full_iterations": 5, "minutes": 1.0, "guard": None,
            "checked": 100.0, "midpoint": 100.0, "low": 99.0, "high": 101.0, "inconclusive": False, "augsa": 100.0,
            "kn5": 110.0, "ratio": 100 / 110, "width": 0.02, "mixture": 95.0, "mixture_ratio": 95 / 110,
            "mixture_low": 94.0, "mixture_high": 96.0, "weight": 0.5, "below": {"test": [], "valid": []}, **changes}


def test_two_checks_that_contradict_each_other_are_named_and_not_conclusive():
    """The test and valid checks bracket the same log Z_j: intervals apart by more than the margin are named on the
    side that lies below (its perplexity is too low), an overlap or a gap within the margin is not, a length one
    check lacks is skipped; the table marks the row, withholds 'conclusive' and says which check missed mass."""
    test = _check({1: (9.0, 9.0), 2: (20.0, 20.4), 3: (30.0, 30.2), 4: (40.0, 41.0), 5: (50.0, 50.1)})
    valid = _check({1: (9.0, 9.0), 2: (20.3, 21.0), 3: (30.65, 30.9), 4: (45.0, 46.0), 5: (49.0, 49.4), 6: (1, 2)})
    assert disagreement(test, valid) == {"test": [4], "valid": [5]}
    assert disagreement(valid, test) == {"test": [5], "valid": [4]}
    assert disagreement(test, test) == {"test": [], "valid": []}
    agreed = table([_row()])
    assert "conclusive met" in agreed and "disagree" not in agreed and "warning" not in agreed and "note" not in agreed
    noted = table([_row(valid_inconclusive="SMC unsettled at lengths [37, 38]")])
    assert "conclusive met" in noted and ("note: c seed 1: the valid check is inconclusive (SMC unsettled at lengths "
                                          "[37, 38]): the mixture's TRF weight was tuned on its midpoints") in noted
    below = list(range(26, 41))
    printed = table([_row(below={"test": [], "valid": below})])
    assert "| 100.00, the checks disagree [99.00, 101.00] |" in printed and "conclusive NOT met" in printed
    assert ("warning: c seed 1: the valid check's interval of log Z_j lies below the test check's at 15 length(s) "
            "(26, 27, 28, 29, 30 and 10 more): it most likely missed mass a run of the test check found") in printed


def test_a_bad_out_or_corpus_is_refused_before_any_work(corpus, tmp_path, capsys):
    """An --out that is a file or cannot be made, a --corpus folder without its three files (the second of two
    corpora too), a seed given twice (it would count twice), and flags that `mcsa` would refuse (which before
    surfaced only when the study reached that step: a check, after hours of training) stop the study at once with
    status 2 and the flag named; nothing is trained or written, not even the --out folder."""
    _, data = corpus
    afile = tmp_path / "afile"
    afile.write_text("x")
    empty = tmp_path / "empty"
    empty.mkdir()
    for argv, message in (
            (["--out", str(afile)], f"--out: {str(afile)!r} exists and is not a folder"),
            (["--out", str(afile / "sub")], f"--out: cannot create the folder {str(afile / 'sub')!r}"),
            (["--out", str(tmp_path / "o"), "--corpus", f"more={empty}"],
             f"--corpus more={empty}: no train.txt, valid.txt, test.txt in that folder"),
            (["--out", str(tmp_path / "o"), "--extra", "--classes 0"],
             "`mcsa trf train` would refuse the command the study gives it: mcsa trf train: error: "
             "argument --classes: expected an integer >= 1, got '0'"),
            (["--out", str(tmp_path / "o"), "--extra", "--classes '3"], "--extra \"--classes '3\": No closing quotation"),
            (["--out", str(tmp_path / "o"), "--check-effort", "abc"],
             "`mcsa trf eval` would refuse the command the study gives it: mcsa trf eval: error: "
             "argument --check-effort: expected"),
            (["--out", str(tmp_path / "o"), "--seeds", "2", "-1"], "argument --seed: expected an integer >= 0, got '-1'"),
            (["--out", str(tmp_path / "o"), "--seeds", "1", "2", "1"], "--seeds: 1 given more than once")):
        with pytest.raises(SystemExit) as stop:
            seeds(["--corpora", "--corpus", f"tiny={data}", *FAST, *argv])
        assert stop.value.code == 2 and message in capsys.readouterr().err
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == ["afile", "empty"]


def test_kjv_pools_long_verses_and_is_checked_on_the_verses_of_at_most_40_words(tmp_path, monkeypatch, capsys):
    """The built-in KJV corpus trains with --max-length 40 (before the user's --extra) and is checked, with KN5, on
    the valid and test verses of at most 40 words, as every KJV row of the README; a --corpus folder named kjv is
    taken as it is."""
    verse = " ".join(["word"] * 20)  # every 20th verse goes to test, the next to valid: long ones land in both
    text = "".join(f"Ge1:{v} {verse if v % 3 else verse + ' ' + verse + ' more'} {v}\n" for v in range(1, 121))
    monkeypatch.setattr(kjv, "bible_text", lambda: text)
    ran: list[list[str]] = []
    monkeypatch.setattr(study, "run_step", lambda command, result, log: ran.append(command))
    assert seeds(["--out", str(tmp_path / "o"), "--corpora", "kjv", "--seeds", "1", "--extra", "--classes 3"]) == 0
    folder = tmp_path / "o" / "kjv"
    for split in ("valid", "test"):
        whole = (folder / f"{split}.txt").read_text().splitlines()
        kept = (folder / f"{split}40.txt").read_text().splitlines()
        assert any(len(line.split()) > 40 for line in whole) and kept == [x for x in whole if len(x.split()) <= 40]
    train = next(c for c in ran if c[3:5] == ["trf", "train"])
    assert train[train.index("--seed") + 2:] == ["--max-length", "40", "--classes", "3"]
    assert [c[c.index("--test") + 1] for c in ran if c[3:5] == ["trf", "eval"]] == [str(folder / "test40.txt"),
                                                                                    str(folder / "valid40.txt")]
    assert "nothing has finished yet" in capsys.readouterr().out
    assert study.corpus_flags("kjv", given=tmp_path) == [] and study.corpus_flags("fortunes") == []
    assert study.corpus_files("kjv", folder, given=tmp_path)["test"] == tmp_path / "test.txt"


def test_the_stage_split_comes_from_the_model_or_its_checkpoint(tmp_path):
    """The `w+c` + full-set split: the model's ``base_iterations``; for a model whose run resumed after the switch
    before session 39 (None there), the checkpoint's ``t_start``; where neither says, the table says so instead of
    printing the whole run as full-set iterations."""
    ckpt = tmp_path / "full.ckpt"
    assert study.iterations_split({"iterations": 30, "base_iterations": 12}, ckpt) == (12, 18)
    assert study.iterations_split({"iterations": 30, "base_iterations": None}, ckpt) == (None, 30)
    atomic_write_npz(ckpt, {}, {"t": 30, "t_start": 21}, kind=CHECKPOINT_KIND)
    assert study.iterations_split({"iterations": 30, "base_iterations": None}, ckpt) == (21, 9)
    assert study.iterations_split({"iterations": 30, "base_iterations": 0}, ckpt) == (0, 30)  # no base stage
    assert "| c | 1 | 30 in all (the split is not recorded) | 1 |" in table([_row(base_iterations=None,
                                                                                 full_iterations=30)])


def test_an_unreadable_check_file_is_named(tmp_path):
    """A check JSON that is binary, not JSON, or has no normaliser check stops with its path named, not a traceback."""
    from experiments.trf_lm.mixture import read_eval_json
    for name, content in (("binary.json", b"\x00\xff"), ("text.json", b"perplexity 3"), ("nocheck.json", b"{}")):
        path = tmp_path / name
        path.write_bytes(content)
        with pytest.raises(ValueError, match=f"^{path}: "):
            read_eval_json(path)
    with pytest.raises(ValueError, match="not a readable"):
        read_eval_json(tmp_path / "missing.json")


@pytest.mark.parametrize("signum, status, how", [(signal.SIGTERM, 143, "terminated (SIGTERM)"),
                                                  (signal.SIGINT, 130, "interrupted")])
def test_a_kill_of_the_study_stops_the_step_it_waits_for(tmp_path, capsys, monkeypatch, request, signum, status, how):
    """``kill PID`` (SIGTERM) of the study while a step runs: the step is sent SIGTERM (a trainer then writes its
    checkpoint) and has left, not orphaned to run on beside a resumed study; one line, status 143, and the
    process's SIGTERM handler is put back.  ``kill -INT`` of the study alone (no terminal sent the step a Ctrl-C):
    the step gets SIGTERM after its grace, status 130."""
    log = tmp_path / "step.log"
    child = ("import os, signal, sys, time\n"
             "signal.signal(signal.SIGTERM, lambda *a: (print('step: SIGTERM', flush=True), sys.exit(143)))\n"
             "print(os.getpid(), flush=True)\n"
             "time.sleep(120)\n")  # the bound on a failure: the study waits for it
    command = [sys.executable, "-c", child, "trf", "train"]

    def kill_when_started():
        deadline = time.monotonic() + 300  # a bound on a hung start only: nothing below depends on speed
        while time.monotonic() < deadline:
            if log.is_file() and log.read_text().strip():
                os.kill(os.getpid(), signum)
                return
            time.sleep(0.05)

    monkeypatch.setattr(study, "_study", lambda *a: study.run_step(command, tmp_path / "never.npz", log))
    # a foreground run's SIGINT handler: a test runner started in the background (CI) inherits SIGINT ignored
    default = signal.signal(signal.SIGINT, signal.default_int_handler)
    request.addfinalizer(lambda: signal.signal(signal.SIGINT, default))
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    threading.Thread(target=kill_when_started, daemon=True).start()
    assert study.main(["--out", str(tmp_path / "out"), "--corpora"]) == status
    captured = capsys.readouterr()
    assert captured.out == "$ mcsa trf train\n"
    assert captured.err == f"{how}: run the same command to resume (the training continues from its checkpoint)\n"
    pid, said = log.read_text().split("\n")[:2]
    assert said == "step: SIGTERM"
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid), 0)
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before
