"""``mcsa trf train | eval | score``, ``trf.load`` dispatch, and the bad-input errors of the issue."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

import trf
from samplers.cli import main
from trf.lm.model import SentenceTRF
from trf.lm.smc import TRIM, TRIMMED

TEXT = "\n".join(["the cat sat", "the dog sat", "a cat ran", "the cat ran home", "a dog sat down", "", "the end"] * 6)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lm")
    train = folder / "train.txt"
    train.write_text(TEXT + "\n")
    model = folder / "model.npz"
    args = ["trf", "train", "--train", str(train), "--valid", str(train), "--out", str(model), "--classes", "3",
            "--features", "w+c+ws+cpw+tied", "--max-iterations", "30", "--samples", "20",
            "--t-c", "100", "--t0", "10", "--quiet", "--checkpoint", str(folder / "ckpt.npz"),
            "--checkpoint-every", "10"]
    assert main(args) == 0
    return folder, train, model


def test_train_eval_score_roundtrip(trained, capsys, monkeypatch):
    folder, train, model = trained
    lm = trf.load(model)  # trf.load dispatches on the file's kind
    assert isinstance(lm, SentenceTRF) and lm.meta["iterations"] == 30
    assert main(["trf", "eval", "--model", str(model), "--test", str(train), "--json", str(folder / "e.json")]) == 0
    result = json.loads((folder / "e.json").read_text())
    assert "one end-of-sentence per sentence" in result["convention"]
    assert result["predicted_tokens"] == 6 * (3 + 3 + 3 + 4 + 4 + 2) + 6 * 6
    lp = lm.log_prob(["the cat sat", "a dog ran"])
    assert np.isclose(np.exp(-(lm.log_prob(TEXT.split("\n")[:5])).sum() / 22),
                      lm.perplexity(TEXT.split("\n")[:5]))
    monkeypatch.setattr("sys.stdin", io.StringIO("the cat sat\n\na dog ran\n"))
    capsys.readouterr()
    assert main(["trf", "score", "--model", str(model)]) == 0
    printed = [float(x) for x in capsys.readouterr().out.splitlines()]
    np.testing.assert_allclose([printed[0], printed[2]], lp, atol=1e-5)
    assert np.isnan(printed[1])


def test_score_round_trips_blank_lines_and_unknown_words_line_by_line(trained, capsys, monkeypatch):
    folder, train, model = trained
    lm = trf.load(model)
    lines = ["the cat sat", "", "zebra cat sat", "   ", "the quokka ate zebra", "a dog ran"]
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(lines) + "\n"))
    capsys.readouterr()
    assert main(["trf", "score", "--model", str(model), "--unk"]) == 0
    captured = capsys.readouterr()
    rows = [line.split("\t") for line in captured.out.splitlines()]
    assert len(rows) == len(lines)
    assert [int(r[1]) for r in rows] == [0, 0, 1, 0, 3, 0]
    assert np.isnan(float(rows[1][0])) and np.isnan(float(rows[3][0]))
    for i in (0, 2, 4, 5):
        assert np.isclose(float(rows[i][0]), lm.log_prob([lines[i]])[0], atol=1e-5)
    assert captured.err.count("warning") == 1 and "2 line(s) not scored" in captured.err
    # an unknown word is scored as <unk>: same value as writing <unk> explicitly
    assert np.isclose(float(rows[2][0]), lm.log_prob(["<unk> cat sat"])[0], atol=1e-5)
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(lines) + "\n"))
    assert main(["trf", "score", "--model", str(model), "--jsonl"]) == 0
    records = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [r["line"] for r in records] == [1, 2, 3, 4, 5, 6]
    assert records[1]["log_prob"] is None and records[4]["unk"] == 3 and records[4]["words"] == 4
    assert np.isclose(records[5]["log_prob"], float(rows[5][0]), atol=1e-5)


def test_score_exits_quietly_on_a_closed_pipe(trained, tmp_path):
    import subprocess
    import sys

    folder, train, model = trained
    code = ("import sys; from samplers.cli import main; sys.exit(main(['trf', 'score', '--model', sys.argv[1]]))")
    proc = subprocess.Popen([sys.executable, "-c", code, str(model)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader goes away before anything is written
    _, err = proc.communicate(("the cat sat\n" * 20000).encode())
    assert proc.returncode == 141, err.decode()  # 128 + SIGPIPE, as Unix tools report it (samplers.cli)
    assert err == b""  # quiet: no traceback, no message


def test_eval_with_ais_reports_all_normaliser_estimates(trained, capsys):
    folder, train, model = trained
    out = folder / "ais.json"
    assert main(["trf", "eval", "--model", str(model), "--test", str(train), "--ais", "--ais-temperatures", "20",
                 "--ais-chains", "5", "--ais-max-length", "3", "--json", str(out)]) == 0
    ais = json.loads(out.read_text())["ais"]
    assert {"perplexity_augsa", "perplexity_separate", "perplexity_smoothed", "global"} <= set(ais)
    assert len(ais["per_length"]) == 3


def test_cli_resume_continues_from_the_checkpoint(trained, capsys):
    folder, train, model = trained
    again = folder / "again.npz"
    args = ["trf", "train", "--train", str(train), "--out", str(again), "--classes", "3", "--features",
            "w+c+ws+cpw+tied", "--max-iterations", "40", "--samples", "20", "--t-c", "100",
            "--t0", "10", "--quiet", "--checkpoint", str(folder / "ckpt.npz"), "--resume"]
    from trf.augsa import CHECKPOINT_KIND
    from trf.io import read_npz

    before = read_npz(folder / "ckpt.npz", CHECKPOINT_KIND)[1]["elapsed"]
    assert main(args) == 0
    resumed = SentenceTRF.load(again).meta
    assert resumed["iterations"] == 40  # 30 from the checkpoint + 10 more
    assert resumed["train_seconds"] > before > 0  # the training time sums over the runs (the check's budget)


def test_stop_rule_flags_and_the_printed_reason(trained, tmp_path, capsys):
    """``--stop-window``/``--stop-tol`` set the Appendix-E rule (second stage only), 0 turns it off, and the last
    line says what ended training."""
    folder, train, model = trained
    base = ["trf", "train", "--train", str(train), "--valid", str(train), "--classes", "3", "--features", "w+c",
            "--samples", "10", "--t-c", "100", "--t0", "10", "--quiet", "--max-iterations", "20"]
    out = tmp_path / "m.npz"
    assert main(base + ["--out", str(out), "--stop-window", "2", "--stop-every", "2", "--stop-tol", "1e9"]) == 0
    text = capsys.readouterr().out
    assert "trained 14 iterations (stopped by the Appendix-E stop rule (S_t = " in text  # gaps at t0 + H, t0 + 2H
    assert SentenceTRF.load(out).meta["iterations"] == 14
    assert main(base + ["--out", str(out), "--stop-window", "2", "--stop-every", "1", "--stop-tol", "1e9"]) == 0
    assert "trained 14 iterations (stopped by the Appendix-E stop rule" in capsys.readouterr().out  # 2H gaps
    out.unlink()
    assert main(base + ["--out", str(out), "--stop-window", "2", "--stop-tol", "1e9"]) == 2  # default --stop-every 10
    err = capsys.readouterr().err
    assert "--stop-window 2 is not a multiple of --stop-every 10" in err and "Traceback" not in err
    assert not out.exists()
    assert main(base + ["--out", str(out), "--stop-window", "0", "--stop-tol", "1e9"]) == 0
    assert "trained 20 iterations (reached t_max)" in capsys.readouterr().out
    assert main(base + ["--out", str(out), "--minutes", "1e-9"]) == 0
    assert "trained 1 iteration (stopped by the time limit (" in capsys.readouterr().out
    # out-of-range numbers are refused at parse time, naming the flag (argparse exits with status 2)
    for flag, value, expected in (("--stop-window", "-1", "an integer >= 0"), ("--stop-tol", "nan", "a number > 0"),
                                  ("--stop-tol", "-1", "a number > 0"),
                                  ("--samples", "0", "an integer >= 1"), ("--chains", "0", "an integer >= 1"),
                                  ("--minutes", "-1", "a number > 0"), ("--max-iterations", "0", "an integer >= 1"),
                                  ("--log-every", "-1", "an integer >= 0"), ("--seed", "-3", "an integer >= 0")):
        with pytest.raises(SystemExit) as exit_info:
            main(base + ["--out", str(out), flag, value])
        assert exit_info.value.code == 2
        assert f"argument {flag}: expected {expected}, got '{value}'" in capsys.readouterr().err


def test_bad_input_gives_clear_errors(trained, tmp_path, capsys):
    folder, train, model = trained
    base = ["trf", "train", "--train", str(train), "--out", str(tmp_path / "m.npz"), "--quiet",
            "--max-iterations", "1"]
    assert main(base + ["--features", "w+trigger"]) == 2
    assert "unknown template" in capsys.readouterr().err
    assert main(base + ["--classes", "500"]) == 2
    assert "classes must be <= the vocabulary size" in capsys.readouterr().err
    assert main(base + ["--features", "w+c+ws", "--base-features", "ws"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--base-features 'ws' must be the first feature types" in err
    assert main(base + ["--features", "w+c+ws", "--base-features", "w+c", "--base-share", "1.5"]) == 2
    assert "--base-share must lie in (0.0, 1.0), got 1.5" in capsys.readouterr().err
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    assert main(["trf", "train", "--train", str(empty), "--out", str(tmp_path / "m.npz")]) == 2
    assert "holds no sentence" in capsys.readouterr().err
    latin = tmp_path / "latin.txt"
    latin.write_bytes("caf\xe9 noir\n".encode("latin-1"))
    assert main(["trf", "train", "--train", str(latin), "--out", str(tmp_path / "m.npz")]) == 2
    assert "not valid utf-8" in capsys.readouterr().err
    cut = tmp_path / "cut.npz"
    cut.write_bytes(model.read_bytes()[:200])
    assert main(["trf", "eval", "--model", str(cut), "--test", str(train)]) == 2
    assert "truncated" in capsys.readouterr().err
    ngram = tmp_path / "kn.npz"
    assert main(["ngram", "train", "--train", str(train), "--out", str(ngram), "--order", "2"]) == 0
    assert main(["trf", "eval", "--model", str(ngram), "--test", str(train)]) == 2
    assert "expected 'trf-lm'" in capsys.readouterr().err
    # output paths are refused before any compute (no perplexity printed, no model trained)
    assert main(["trf", "eval", "--model", str(model), "--test", str(train), "--json", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert "--json" in captured.err and "is a folder" in captured.err and captured.out == ""
    assert main(["trf", "train", "--train", str(train), "--out", str(tmp_path), "--quiet"]) == 2
    assert "--out" in capsys.readouterr().err
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["ngram", "train", "--train", str(train), "--out", str(blocker / "kn.npz")]) == 2
    err = capsys.readouterr().err
    assert "--out" in err and "cannot create its folder" in err
    with pytest.raises(SystemExit):
        main(["ngram", "train", "--train", str(train), "--out", str(ngram), "--order", "7"])
    assert "argument --order: expected an integer >= 2 and <= 5, got '7'" in capsys.readouterr().err
    for flag, value, expected in (("--check-seconds", "-1", "a number > 0"), ("--check-chains", "1", "an integer >= 2"),
                                  ("--check-temperatures", "x", "an integer >= 2"),
                                  ("--check-margin", "-0.5", "a number >= 0"),
                                  ("--check-particles", "-1", "an integer >= 0"),
                                  ("--check-conditional-particles", "abc", "an integer >= 0")):
        with pytest.raises(SystemExit):
            main(["trf", "eval", "--model", str(model), "--test", str(train), flag, value])
        assert f"argument {flag}: expected {expected}, got '{value}'" in capsys.readouterr().err
        with pytest.raises(SystemExit):  # the same flags on train (the dev check after training)
            main(["trf", "train", "--train", str(train), "--out", str(tmp_path / "x.npz"), flag, value])
        assert f"argument {flag}: expected {expected}, got '{value}'" in capsys.readouterr().err


def test_eval_reports_checked_perplexity_and_warns_about_a_wrong_zeta(trained, tmp_path, capsys):
    folder, train, model = trained
    out = tmp_path / "e.json"
    lm = trf.load(model)
    # the 30-iteration toy model: AugSA's zeta is far from the exact log Z_j / Z_1, and eval says so
    assert main(["trf", "eval", "--model", str(model), "--test", str(train), "--json", str(out)]) == 0
    captured = capsys.readouterr()
    result = json.loads(out.read_text())
    check = result["normaliser_check"]
    assert check["which"] == "exact log Z_j"  # 14 words, lengths <= 4: V^j small enough to enumerate
    assert ", checked normalisers [exact log Z_j]" in captured.out and not check["inconclusive"]
    lo, hi = check["perplexity_interval"]
    assert np.isclose(lo, result["perplexity"]) and np.isclose(hi, result["perplexity"])
    rows = {r["j"]: r for r in check["per_length"]}
    exact_zeta = lm.zeta.copy()
    for j, r in rows.items():
        exact_zeta[j - 1] = r["forward"] - lm.log_z1()
    flagged = [j for j, r in rows.items() if abs(r["augsa"] - r["forward"]) > 0.5]
    assert check["flagged_lengths"] == flagged and (("warning" in captured.err) == bool(flagged))
    # the same lambda with the exact zeta: silent; then length 3 two nats off: one warning naming it
    good = SentenceTRF(lm.vocab, lm.features, lm.pi, lm.lam, exact_zeta, lm.meta)
    good.save(tmp_path / "good.npz")
    assert main(["trf", "eval", "--model", str(tmp_path / "good.npz"), "--test", str(train), "--json",
                 str(out)]) == 0
    assert "warning" not in capsys.readouterr().err
    clean = json.loads(out.read_text())
    assert np.isclose(clean["perplexity"], clean["perplexity_augsa"])
    assert np.isclose(clean["perplexity"], result["perplexity"])  # the checked value ignores AugSA's zeta
    shifted = exact_zeta.copy()
    shifted[2] += 2.0
    SentenceTRF(lm.vocab, lm.features, lm.pi, lm.lam, shifted, lm.meta).save(tmp_path / "wrong.npz")
    assert main(["trf", "eval", "--model", str(tmp_path / "wrong.npz"), "--test", str(train), "--json",
                 str(out)]) == 0
    err = capsys.readouterr().err
    assert err.count("warning") == 1 and "length 3" in err
    again = json.loads(out.read_text())
    assert again["normaliser_check"]["flagged_lengths"] == [3]
    assert np.isclose(again["perplexity"], clean["perplexity"])
    assert again["perplexity_augsa"] > clean["perplexity_augsa"]  # a too-high zeta_3 lowers p of 3-word lines


def test_a_directory_given_for_a_file_is_a_clear_error(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("the cat\n"))
    assert main(["trf", "score", "--model", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err
    assert main(["trf", "train", "--train", str(tmp_path), "--out", str(tmp_path / "m.npz")]) == 2
    err = capsys.readouterr().err
    assert "is a directory" in err and "Traceback" not in err


def test_a_wide_checked_interval_is_called_inconclusive_and_the_headline_is_its_high_end():
    from trf.lm.check import CONCLUSIVE, headline_perplexity, interval_is_inconclusive

    assert CONCLUSIVE == 0.05
    assert not interval_is_inconclusive(100.0, 100.0)            # exact normalisers: a point
    assert not interval_is_inconclusive(96.0, 104.0)             # +-4% around 100
    assert interval_is_inconclusive(94.0, 106.0)                 # +-6%
    assert interval_is_inconclusive(42.14, 75.94)                # the KJV run at the default effort
    assert interval_is_inconclusive(50.0, float("inf")) and interval_is_inconclusive(float("nan"), 60.0)
    assert headline_perplexity({"checked": 100.0, "low": 97.0, "high": 103.0}) == (100.0, "checked normalisers",
                                                                                  False)
    value, which, inconclusive = headline_perplexity({"checked": 56.6, "low": 42.1, "high": 75.9})
    assert (value, inconclusive) == (75.9, True) and "high end" in which


def test_ctrl_c_ends_with_a_message_and_status_130(trained, tmp_path, capsys, monkeypatch):
    """Ctrl-C mid-way: no traceback, status 130, and the checkpoint named when there is one."""
    import trf.lm.cli as lm_cli

    folder, train, model = trained

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(lm_cli, "_eval", interrupted)
    monkeypatch.setattr(lm_cli, "_train", interrupted)
    assert main(["trf", "eval", "--model", str(model), "--test", str(train)]) == 130
    assert capsys.readouterr().err == "mcsa: interrupted\n"
    checkpoint = tmp_path / "run.ckpt"
    checkpoint.write_bytes(b"x")
    assert main(["trf", "train", "--train", str(train), "--out", str(tmp_path / "m.npz"),
                 "--checkpoint", str(checkpoint)]) == 130
    assert f"the last checkpoint is kept in {checkpoint} (run the same command with --resume)" in capsys.readouterr().err


def test_sigterm_ends_like_ctrl_c_with_status_143(trained, tmp_path, capsys, monkeypatch):
    """SIGTERM while a command runs takes Ctrl-C's way out (a message naming the checkpoint, no traceback) with
    status 143; main leaves the process's SIGTERM handler as it found it."""
    import signal

    import trf.lm.cli as lm_cli

    folder, train, model = trained

    def terminated(args):
        signal.raise_signal(signal.SIGTERM)
        raise AssertionError("SIGTERM did not stop the command")

    monkeypatch.setattr(lm_cli, "_train", terminated)
    before = signal.getsignal(signal.SIGTERM)
    checkpoint = tmp_path / "run.ckpt"
    checkpoint.write_bytes(b"x")
    assert main(["trf", "train", "--train", str(train), "--out", str(tmp_path / "m.npz"),
                 "--checkpoint", str(checkpoint)]) == 143
    assert capsys.readouterr().err == (f"mcsa: terminated (SIGTERM); the last checkpoint is kept in {checkpoint} (run "
                                       "the same command with --resume)\n")
    assert signal.getsignal(signal.SIGTERM) is before

    def in_a_kernel(args):  # how a signal landing inside a Numba kernel comes back
        try:
            signal.raise_signal(signal.SIGTERM)
        except KeyboardInterrupt as exc:
            raise SystemError("CPUDispatcher(...) returned a result with an exception set") from exc

    monkeypatch.setattr(lm_cli, "_train", in_a_kernel)
    assert main(["trf", "train", "--train", str(train), "--out", str(tmp_path / "m.npz")]) == 143
    assert capsys.readouterr().err == "mcsa: terminated (SIGTERM)\n"

    def in_a_compile(signum):  # a signal landing in a ctypes callback while Numba compiles: swallowed there, and the
        def command(args):     # compilation fails later with an unrelated error whose chain does not hold it
            try:
                signal.raise_signal(signum)
            except KeyboardInterrupt:
                pass
            raise RuntimeError("no compiled object yet for weigh_particles")
        return command

    outer = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a shell (a pytest-xdist worker ignores it)
    try:
        for signum, status, message in ((signal.SIGTERM, 143, "terminated (SIGTERM)"),
                                        (signal.SIGINT, 130, "interrupted")):
            monkeypatch.setattr(lm_cli, "_train", in_a_compile(signum))
            assert main(["trf", "train", "--train", str(train), "--out", str(tmp_path / "m.npz")]) == status
            assert capsys.readouterr().err == f"mcsa: {message}\n"
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, outer)
    assert signal.getsignal(signal.SIGTERM) is before

    def broken(args):
        raise SystemError("a real bug, no signal")

    monkeypatch.setattr(lm_cli, "_train", broken)
    with pytest.raises(SystemError, match="a real bug"):  # the signals of an earlier command are forgotten
        main(["trf", "train", "--train", str(train), "--out", str(tmp_path / "m.npz")])
    monkeypatch.setattr(lm_cli, "_train", lambda args: int("x"))
    assert main(["trf", "train", "--train", str(train), "--out", str(tmp_path / "m.npz")]) == 2
    assert capsys.readouterr().err.startswith("mcsa: error: invalid literal for int()")


def test_train_with_the_smc_sampler(trained, tmp_path, capsys):
    """--sampler smc trains with SMC draws (recorded in the model), and bad values are refused by flag."""
    folder, train, model = trained
    out = tmp_path / "smc.npz"
    assert main(["trf", "train", "--train", str(train), "--out", str(out), "--quiet", "--max-iterations", "5",
                 "--sampler", "smc", "--smc-particles", "50", "--classes", "2", "--log-every", "5"]) == 0
    assert "smallest SMC end-of-sentence ESS" in capsys.readouterr().err
    lm = trf.load(out)
    assert lm.meta["sampler"] == "smc" and lm.meta["smc_particles"] == 50 and lm.meta["iterations"] == 5
    for flag, value, expected in (("--smc-particles", "0", "expected an integer >= 1"),
                                  ("--sampler", "gibbs", "invalid choice"), ("--smc-proposal", "local", "invalid choice"),
                                  ("--smc-runs", "0", "expected an integer >= 1"),
                                  ("--smc-trim", "0", "expected a number > 0"), ("--smc-trim", "nan", "expected a number > 0")):
        with pytest.raises(SystemExit):
            main(["trf", "train", "--train", str(train), "--out", str(out), flag, value])
        assert f"argument {flag}: {expected}" in capsys.readouterr().err


def test_smc_runs_fix_the_draws_whatever_the_thread_count(trained, tmp_path):
    """--smc-runs fixes the number of SMC runs per iteration: the trained lambda is the same on one thread and on
    two (the runs share the threads), and the model records the runs.  Without it there is one run per thread, so
    the two thread counts train different models (the dependence the flag removes)."""
    import numba

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs two Numba threads")
    folder, train, model = trained
    before = numba.get_num_threads()

    def lam(threads: int, *flags: str) -> tuple[np.ndarray, dict]:
        out = tmp_path / f"runs{threads}{len(flags)}.npz"
        numba.set_num_threads(threads)
        try:
            assert main(["trf", "train", "--train", str(train), "--out", str(out), "--quiet", "--max-iterations",
                         "6", "--smc-particles", "40", "--no-check", "--seed", "3", *flags]) == 0
        finally:
            numba.set_num_threads(before)
        lm = trf.load(out)
        return lm.lam, lm.meta

    (one, meta), (two, _) = lam(1, "--smc-runs", "3"), lam(2, "--smc-runs", "3")
    assert meta["smc_runs"] == 3 and np.any(one != 0)
    np.testing.assert_array_equal(one, two)
    (one, meta), (two, _) = lam(1), lam(2)
    assert meta["smc_runs"] == 1 and not np.array_equal(one, two)


def test_train_with_known_sentences(trained, tmp_path, capsys):
    """--smc-known weighs the heavy training sentences exactly (trf.lm.known); recorded in the model."""
    folder, train, model = trained
    out = tmp_path / "known.npz"
    assert main(["trf", "train", "--train", str(train), "--out", str(out), "--quiet", "--max-iterations", "60",
                 "--smc-known", "1e-3", "--smc-particles", "50", "--classes", "2", "--no-check"]) == 0
    lm = trf.load(out)
    assert lm.meta["smc_known"] == 1e-3 and lm.meta["iterations"] == 60
    assert np.isfinite(lm.lam).all() and trf.load(model).meta["smc_known"] is None
    never = tmp_path / "never.npz"
    assert main(["trf", "train", "--train", str(train), "--out", str(never), "--quiet", "--max-iterations", "2",
                 "--smc-known", "2"]) == 2
    err = capsys.readouterr().err
    assert "--smc-known is a share of a length's normaliser, in (0, 1]" in err and "Traceback" not in err
    assert not never.exists()
    remembered = tmp_path / "remembered.npz"
    assert main(["trf", "train", "--train", str(train), "--out", str(remembered), "--quiet", "--max-iterations", "20",
                 "--smc-known", "1e-3", "--smc-remember", "--smc-particles", "50", "--classes", "2",
                 "--no-check"]) == 0
    assert trf.load(remembered).meta["smc_remember"] is True and lm.meta["smc_remember"] is False
    assert main(["trf", "train", "--train", str(train), "--out", str(never), "--quiet", "--max-iterations", "2",
                 "--smc-remember"]) == 2
    err = capsys.readouterr().err
    assert "--smc-remember needs --smc-known SHARE" in err and "Traceback" not in err
    assert not never.exists()
    assert lm.meta["smc_cycles"] == 8  # the loops of the training text's cycles are known candidates by default
    plain = tmp_path / "plain.npz"
    assert main(["trf", "train", "--train", str(train), "--out", str(plain), "--quiet", "--max-iterations", "20",
                 "--smc-known", "1e-3", "--smc-cycles", "0", "--smc-particles", "50", "--classes", "2",
                 "--no-check"]) == 0
    assert trf.load(plain).meta["smc_cycles"] == 0
    assert main(["trf", "train", "--train", str(train), "--out", str(never), "--quiet", "--max-iterations", "2",
                 "--smc-cycles", "4"]) == 2
    err = capsys.readouterr().err
    assert "--smc-cycles needs --smc-known SHARE" in err and "Traceback" not in err
    assert not never.exists()


@pytest.mark.parametrize("proposal", ["partial", "trimmed", "trimmed-skips"])
def test_train_with_the_partial_or_trimmed_smc_proposal(trained, tmp_path, capsys, proposal):
    """--smc-proposal partial / trimmed / trimmed-skips trains the full feature set with that proposal, recorded in the model; the
    default is the exact one."""
    folder, train, model = trained
    out = tmp_path / f"{proposal}.npz"
    assert main(["trf", "train", "--train", str(train), "--out", str(out), "--quiet", "--max-iterations", "5",
                 "--features", "w+c+ws+cs+wsh+csh+tied", "--smc-proposal", proposal, "--smc-particles", "50",
                 "--classes", "2", "--no-check"]) == 0
    lm = trf.load(out)
    assert lm.meta["sampler"] == "smc" and lm.meta["smc_proposal"] == proposal and lm.meta["iterations"] == 5
    assert np.isfinite(lm.lam).all() and np.any(lm.lam != 0)
    assert lm.meta["smc_trim"] == (TRIM if proposal in TRIMMED else None)
    assert trf.load(model).meta["smc_proposal"] == "exact" and trf.load(model).meta["smc_trim"] is None


@pytest.mark.parametrize("proposal", TRIMMED)
def test_smc_trim_sets_the_trimmed_proposals_threshold(trained, tmp_path, proposal):
    """--smc-trim T reaches the sampler: at one seed, a threshold below the weights that training reaches keeps
    them in the proposal and one above every weight leaves them all out, so the draws and the trained models
    differ; the model records T (both trimmed proposals)."""
    folder, train, _ = trained
    lams = {}
    for trim in ("1e-4", "5"):
        out = tmp_path / f"trim-{trim}.npz"
        assert main(["trf", "train", "--train", str(train), "--out", str(out), "--quiet", "--max-iterations", "30",
                     "--samples", "20", "--t-c", "100", "--t0", "10", "--features", "w+c+ws+cs+wsh+csh+tied",
                     "--smc-proposal", proposal, "--smc-particles", "50", "--classes", "2", "--no-check",
                     "--seed", "4", "--smc-trim", trim]) == 0
        lm = trf.load(out)
        assert lm.meta["smc_trim"] == float(trim)
        assert np.isfinite(lm.lam).all()
        lams[trim] = lm.lam
    assert np.abs(lams["1e-4"]).max() > 0.3  # weights that change the low threshold's draws
    assert not np.array_equal(lams["1e-4"], lams["5"])


@pytest.mark.parametrize("flags, named", [(["--smc-trim", "0.3"], "--smc-trim is the threshold of --smc-proposal trimmed"),
                                          (["--smc-proposal", "partial", "--smc-trim", "0.3"], "the proposal is partial")])
def test_smc_trim_without_the_trimmed_proposal_is_refused(trained, tmp_path, capsys, flags, named):
    """--smc-trim with another proposal would do nothing: refused before training (0 or nan: at parsing,
    :func:`test_train_with_the_smc_sampler`)."""
    folder, train, _ = trained
    out = tmp_path / "never.npz"
    assert main(["trf", "train", "--train", str(train), "--out", str(out), "--quiet", "--max-iterations", "2",
                 *flags]) == 2
    err = capsys.readouterr().err
    assert named in err and "Traceback" not in err
    assert not out.exists()


def test_l2_by_type_gives_some_types_their_own_mu(trained, tmp_path, capsys):
    """--l2-by-type TYPE=MU,... trains with that mu for those types (recorded in the model; a grown run's base set
    skips the types it lacks) and changes the weights of those types; bad values are refused at parsing and a
    type outside --features before training, each naming the flag."""
    folder, train, _ = trained
    common = ["trf", "train", "--train", str(train), "--quiet", "--max-iterations", "12", "--samples", "20",
              "--t-c", "100", "--t0", "4", "--smc-particles", "50", "--classes", "2", "--no-check", "--seed", "2"]
    lams = {}
    for name, flags in (("plain", []), ("typed", ["--l2-by-type", "w=0.5"])):
        out = tmp_path / f"{name}.npz"
        assert main([*common, "--out", str(out), *flags]) == 0
        lm = trf.load(out)
        assert lm.meta["l2"] == 4e-5 and lm.meta["l2_by_type"] == (None if name == "plain" else {"w": 0.5})
        lams[name] = (lm.lam, lm.features.type_ranges())
    (plain, ranges), (typed, _) = lams["plain"], lams["typed"]
    w, c = slice(*ranges["w"]), slice(*ranges["c"])
    assert not np.allclose(plain[w], typed[w]) and np.abs(typed[w]).sum() < np.abs(plain[w]).sum()
    assert not np.array_equal(plain[c], typed[c])  # the draws differ once the w weights do
    grown = tmp_path / "grown.npz"
    assert main([*common, "--out", str(grown), "--features", "w+c+ws+cs", "--base-features", "w+c",
                 "--l2-by-type", "ws=1e-3, c=2e-5"]) == 0
    assert trf.load(grown).meta["l2_by_type"] == {"ws": 1e-3, "c": 2e-5}
    never = tmp_path / "never.npz"
    for value, expected in (("w", "'w' is not TYPE=MU"), ("x=1", "'x=1' is not TYPE=MU"), ("w=-1", "expected a number >= 0"),
                            ("w=1,w=2", "'w=2' repeats"), ("w=nan", "expected a number >= 0")):
        with pytest.raises(SystemExit):
            main([*common, "--out", str(never), "--l2-by-type", value])
        assert f"argument --l2-by-type: {expected}" in capsys.readouterr().err
    assert main([*common, "--out", str(never), "--l2-by-type", "tied=1e-3"]) == 2
    err = capsys.readouterr().err
    assert "--l2-by-type names 'tied', which is not among the feature types w+c" in err and "Traceback" not in err
    assert not never.exists()


@pytest.mark.parametrize("flags, named", [(["--sampler", "transms", "--smc-particles", "50"], "--smc-particles"),
                                          (["--sampler", "transms", "--smc-proposal", "partial"], "--smc-proposal"),
                                          (["--sampler", "transms", "--smc-runs", "4"], "--smc-runs"),
                                          (["--sampler", "transms", "--smc-known", "1e-4"], "--smc-known"),
                                          (["--sampler", "transms", "--smc-remember"], "--smc-remember"),
                                          (["--sampler", "transms", "--smc-cycles", "3"], "--smc-cycles"),
                                          (["--sampler", "transms", "--smc-trim", "0.3"], "--smc-trim"),
                                          (["--chains", "5"], "--chains")])
def test_a_flag_of_the_other_sampler_is_refused_not_ignored(trained, tmp_path, capsys, flags, named):
    """--smc-particles / --smc-proposal / --smc-runs / --smc-known with --sampler transms, or --chains with the default SMC sampler, did nothing
    silently; now the command stops before training, naming the flag and the sampler."""
    folder, train, model = trained
    out = tmp_path / "never.npz"
    assert main(["trf", "train", "--train", str(train), "--out", str(out), "--quiet", "--max-iterations", "2",
                 *flags]) == 2
    err = capsys.readouterr().err
    assert f"{named} does not apply to --sampler" in err and "Traceback" not in err
    assert not out.exists()


def test_a_zeta_that_gives_positive_log_probabilities_gives_no_augsa_perplexity(trained, tmp_path, capsys):
    """zeta far below log Z_j / Z_1 makes log p(j, x) > 0 for some sentences -- impossible for a discrete sentence:
    with --no-check that is an error naming the count, with the check the AugSA value is withheld and named."""
    folder, train, model = trained
    lm = trf.load(model)
    low = tmp_path / "low.npz"
    SentenceTRF(lm.vocab, lm.features, lm.pi, lm.lam, lm.zeta - 40.0, lm.meta).save(low)
    assert main(["trf", "eval", "--model", str(low), "--test", str(train), "--no-check"]) == 2
    captured = capsys.readouterr()
    assert "no perplexity with the AugSA zeta" in captured.err and "positive log-probability" in captured.err
    assert captured.out == ""
    out = tmp_path / "low.json"
    assert main(["trf", "eval", "--model", str(low), "--test", str(train), "--json", str(out)]) == 0
    captured = capsys.readouterr()
    assert "with the AugSA zeta none (see the warning)" in captured.out
    assert "AugSA's zeta gives no perplexity" in captured.err
    result = json.loads(out.read_text())
    assert result["perplexity_augsa"] is None and result["augsa_positive_log_probs"] > 0 and result["perplexity"] > 1


def test_train_checks_the_normalisers_on_the_dev_text(trained, tmp_path, capsys):
    """After training with --valid, ``mcsa trf train`` prints the dev perplexity with the checked normalisers (exact
    here) beside AugSA's, and keeps it in the model; dev sentences longer than m are left out and counted;
    --no-check skips it."""
    folder, train, model = trained
    lm = SentenceTRF.load(model)
    summary = lm.meta["dev_check"]
    corpus_ppl = np.exp(-lm.log_prob([s for s in TEXT.splitlines() if s]).sum() / (6 * 25))
    assert summary["perplexity_augsa"] == pytest.approx(corpus_ppl)
    assert summary["headline"] == "checked normalisers" and summary["which"] == "exact log Z_j"
    assert summary["perplexity"] == summary["perplexity_checked"] >= 1.0
    dev = tmp_path / "dev.txt"
    dev.write_text("the cat sat\nthe cat sat on the mat and the dog ran home\n")
    base = ["trf", "train", "--train", str(train), "--valid", str(dev), "--classes", "3", "--features", "w+c",
            "--samples", "10", "--t-c", "100", "--t0", "10", "--quiet", "--max-iterations", "5"]
    assert main(base + ["--out", str(tmp_path / "m.npz")]) == 0
    captured = capsys.readouterr()
    assert "dev perplexity " in captured.out and "1 sentences" in captured.out
    assert "1 dev sentences longer than m=4 words are left out" in captured.err
    assert main(base + ["--out", str(tmp_path / "n.npz"), "--no-check"]) == 0
    assert "dev perplexity" not in capsys.readouterr().out
    assert "dev_check" not in SentenceTRF.load(tmp_path / "n.npz").meta


def test_score_refuses_a_positive_log_probability_naming_the_length(trained, capsys, monkeypatch, tmp_path):
    """A normaliser estimate far too low at one length gives sentences of that length p > 1: those lines are
    written as nan, one error names the length and the least excess, every other line keeps its value, exit 1."""
    folder, train, model = trained
    lm = trf.load(model)
    lines = ["the cat sat", "the cat ran home", "a dog ran"]
    before = lm.log_prob(lines)
    lm.zeta[2] -= 60.0  # length 3 now believes its normaliser e^60 times smaller than it is
    broken = tmp_path / "broken.npz"
    lm.save(broken)
    after = trf.load(broken).log_prob(lines, allow_positive=True)
    assert after[0] > 0 and after[2] > 0 and after[1] < 0  # the premise: lengths 3 impossible, length 4 fine
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(lines) + "\n"))
    capsys.readouterr()
    assert main(["trf", "score", "--model", str(broken)]) == 1
    captured = capsys.readouterr()
    out = [float(x) for x in captured.out.splitlines()]
    assert len(out) == 3 and np.isnan(out[0]) and np.isnan(out[2])
    assert np.isclose(out[1], before[1], atol=1e-5)
    assert captured.err.count("error") == 1 and "2 line(s) got a positive log-probability" in captured.err
    assert f"length(s) 3 (>= {max(after[0], after[2]):.2f} nats)" in captured.err and "mcsa trf eval" in captured.err


def test_eval_check_known_bounds_the_normalisers_and_names_a_bad_file(trained, tmp_path, capsys):
    """``--check-known FILE``: the file's sentences (and --test's) give an exact lower bound of every checked log Z_j,
    at most the exact value (nothing refuted on the toy model, whose check is exact), kept per length in the JSON;
    a missing or binary file is refused naming the flag, before any work."""
    folder, train, model = trained
    out = tmp_path / "e.json"
    assert main(["trf", "eval", "--model", str(model), "--test", str(train), "--check-known", str(train),
                 "--json", str(out)]) == 0
    check = json.loads(out.read_text())["normaliser_check"]
    assert check["known_floor_refuted_lengths"] == []
    rows = [r for r in check["per_length"] if r["known_floor"] is not None]
    assert rows and all(r["known_floor"] <= r["checked"] + 1e-9 for r in rows)
    capsys.readouterr()
    assert main(["trf", "eval", "--model", str(model), "--test", str(train), "--check-known",
                 str(tmp_path / "missing.txt")]) == 2
    assert "--check-known" in capsys.readouterr().err
    binary = tmp_path / "binary.bin"
    binary.write_bytes(bytes(range(256)) * 4)
    assert main(["trf", "eval", "--model", str(model), "--test", str(train), "--check-known", str(binary)]) == 2
    assert "--check-known" in capsys.readouterr().err
