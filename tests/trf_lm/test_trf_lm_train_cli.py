"""``mcsa trf train`` refuses what it cannot honour before any training, and its defaults work on a small corpus."""

from __future__ import annotations

import json

import pytest

from samplers.cli import main
from trf.io import read_npz

TEXT = "\n".join(["the cat sat", "the dog sat", "a cat ran", "the cat ran home", "a dog sat down", "the end"] * 6)
FAST = ["--samples", "10", "--t-c", "100", "--t0", "2", "--quiet", "--refine", "0"]


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "train.txt"
    path.write_text(TEXT + "\n")
    return path


def test_resume_needs_an_existing_readable_checkpoint(corpus, tmp_path, capsys):
    """--resume never trains from scratch in silence: no --checkpoint, a missing one and a damaged one are refused
    naming the flag (and no numpy advice to load a file with allow_pickle)."""
    out = tmp_path / "m.npz"
    base = ["trf", "train", "--train", str(corpus), "--out", str(out), "--max-iterations", "3", *FAST, "--resume"]
    assert main(base) == 2
    assert "--resume needs --checkpoint" in capsys.readouterr().err
    assert main(base + ["--checkpoint", str(tmp_path / "none.ckpt")]) == 2
    err = capsys.readouterr().err
    assert "--resume: the --checkpoint file" in err and "does not exist" in err
    damaged = tmp_path / "bad.ckpt"
    damaged.write_bytes(b"\x80\x04 not a checkpoint at all")
    assert main(base + ["--checkpoint", str(damaged)]) == 2
    err = capsys.readouterr().err
    assert "--checkpoint" in err and "cannot be resumed from" in err and "damaged" in err
    assert "allow_pickle" not in err and "Traceback" not in err
    assert not out.exists()  # refused before any training


def test_a_valid_text_too_long_for_the_model_is_refused_before_training(corpus, tmp_path, capsys):
    """Every dev sentence longer than the model's m (4 here): the check after training could score none, so the
    command stops before training, naming --valid (it used to fail after training with numpy's 'zero-size array
    to reduction operation minimum'); --no-check trains and keeps --valid for the stop rule."""
    valid = tmp_path / "valid.txt"
    valid.write_text("the cat sat on the mat\nthe dog ran home to the end\n")
    out = tmp_path / "m.npz"
    args = ["trf", "train", "--train", str(corpus), "--valid", str(valid), "--out", str(out), "--max-iterations", "3",
            *FAST]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "--valid: none of its 2 sentences has at most m=4 words" in err and "zero-size" not in err
    assert not out.exists()
    assert main(args + ["--no-check"]) == 0 and out.exists()


def test_stop_tol_must_be_positive(corpus, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["trf", "train", "--train", str(corpus), "--out", str(tmp_path / "m.npz"), "--stop-tol", "-1"])
    assert exit_info.value.code == 2
    assert "argument --stop-tol: expected a number > 0, got '-1'" in capsys.readouterr().err


def test_defaults_train_on_a_small_corpus(corpus, tmp_path, capsys):
    """No --classes on a 10-word vocabulary (nine words and <unk>): the default 200 is capped to the vocabulary,
    with a note; the default features are w+c; the dev check's summary is kept in the model; --log-every's progress
    (the library logs it) reaches stderr; a bad --check-effort is refused naming the flag."""
    out = tmp_path / "m.npz"
    assert main(["trf", "train", "--train", str(corpus), "--valid", str(corpus), "--out", str(out),
                 "--max-iterations", "4", *FAST, "--check-effort", "10,100", "--log-every", "2"]) == 0
    captured = capsys.readouterr()
    assert "iteration 2: " in captured.err and "iteration 4: " in captured.err  # the library's log, on stderr
    assert "--classes defaults to 200; the vocabulary has 10 words, so 10 classes" in captured.err
    assert "dev perplexity" in captured.out
    meta = read_npz(out, "trf-lm")[1]
    assert meta["features_spec"] == "w+c" and meta["classes"] == 10 and meta["dev_check"]["perplexity"] > 1
    with pytest.raises(SystemExit) as exit_info:
        main(["trf", "eval", "--model", str(out), "--test", str(corpus), "--check-effort", "1,100"])
    assert exit_info.value.code == 2 and "argument --check-effort:" in capsys.readouterr().err


def test_eval_with_a_fixed_effort_states_it(corpus, tmp_path, capsys):
    """(Also: ``--moment-bound`` and ``--max-sentence-move`` reach the trainer and the model says it trained with
    them; off by default; a negative bound is refused naming the flag (0 is no bound, tested with the recipe).)"""
    out = tmp_path / "m.npz"
    assert main(["trf", "train", "--train", str(corpus), "--out", str(out), "--max-iterations", "4", *FAST,
                 "--classes", "3"]) == 0
    assert read_npz(out, "trf-lm")[1]["moment_bound"] is False
    assert read_npz(out, "trf-lm")[1]["max_sentence_move"] is None
    bounded = tmp_path / "b.npz"
    assert main(["trf", "train", "--train", str(corpus), "--out", str(bounded), "--max-iterations", "4", *FAST,
                 "--classes", "3", "--moment-bound", "--max-sentence-move", "25"]) == 0
    assert read_npz(bounded, "trf-lm")[1]["moment_bound"] is True
    assert read_npz(bounded, "trf-lm")[1]["max_sentence_move"] == 25.0
    assert read_npz(out, "trf-lm")[1]["sentence_bound_iterations"] is None
    capsys.readouterr()
    tight = tmp_path / "t.npz"  # a bound below any draw's move shortens every step, and the run says how often
    assert main(["trf", "train", "--train", str(corpus), "--out", str(tight), "--max-iterations", "4", *FAST,
                 "--classes", "3", "--max-sentence-move", "1e-9"]) == 0
    assert read_npz(tight, "trf-lm")[1]["sentence_bound_iterations"] == 4
    assert "note: the sentence-move bound (--max-sentence-move 1e-09) shortened the step in 4 of 4 iterations" in \
        capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main(["trf", "train", "--train", str(corpus), "--out", str(bounded), "--max-sentence-move", "-1"])
    assert exit_info.value.code == 2 and "argument --max-sentence-move: expected a number >= 0, got '-1'" in \
        capsys.readouterr().err
    result = tmp_path / "e.json"
    assert main(["trf", "eval", "--model", str(out), "--test", str(corpus), "--check-effort", "10,100,50",
                 "--json", str(result)]) == 0
    check = json.loads(result.read_text())["normaliser_check"]
    assert check["effort"]["chains"] == 10 and check["effort"]["smc_particles"] in (0, 100)


def test_a_time_limit_sets_the_stages(corpus, tmp_path):
    """With a time limit and ``first_stage_share`` the first stage ends when that share of the time has passed,
    whatever the iteration count: share 0 ends it after the first iteration, share 1 never (t0 = t_max)."""
    from trf.lm.backend import lm_config
    from trf.lm.train import train_lm

    for share, t0 in ((0.0, 1), (1.0, 6)):
        ckpt = tmp_path / f"c{share}.npz"
        train_lm(corpus, classes=3, config=lm_config(n_samples=10, t_max=6, t0=2), n_chains=2, progress=False,
                 refine=0, time_limit=600.0, first_stage_share=share, checkpoint=ckpt, checkpoint_every=100)
        assert read_npz(ckpt, "augsa-checkpoint")[1]["t0"] == t0
    with pytest.raises(ValueError, match="first_stage_share needs a time_limit"):
        train_lm(corpus, first_stage_share=0.5)


def test_the_full_recipe_is_the_measured_command_and_given_flags_win(corpus, tmp_path, capsys):
    """``--recipe full`` fills exactly the flags of the measured one-command run (experiments/trf_lm/runs.md,
    "Two hours, one command"), a flag given on the command line wins over the recipe, the note names what the recipe
    set, and the recipe trains a grown full-feature model on the toy corpus."""
    from samplers.cli import build_parser
    from trf.lm.cli import _config, apply_recipe

    parser = build_parser()
    common = ["trf", "train", "--train", "t.txt", "--out", "m.npz", "--minutes", "105"]
    measured = parser.parse_args(common + "--features w+c+ws+cs+wsh+csh+tied --base-features w+c --base-step-rule "
                                          "features --samples 100 --t-c 500 --beta-lambda 0 --smc-particles 400 "
                                          "--step-rule groups --max-sentence-move 500 --first-stage-share 0.25".split())
    recipe = parser.parse_args(common + ["--recipe", "full"])
    apply_recipe(measured)
    assert len(apply_recipe(recipe)) == 10
    assert {k: v for k, v in vars(recipe).items() if k != "recipe"} == \
        {k: v for k, v in vars(measured).items() if k != "recipe"}
    with pytest.raises(SystemExit):  # the help lists the recipe's flags as they are (wrapped: compare unspaced)
        main(["trf", "train", "--help"])
    helped = "".join(capsys.readouterr().out.split())
    assert "".join(" ".join(apply_recipe(parser.parse_args(common + ["--recipe", "full"]))).split()) in helped
    plain = parser.parse_args(common)
    assert apply_recipe(plain) == [] and (plain.features, plain.step_rule) == ("w+c", "features")
    mine = parser.parse_args(common + ["--recipe", "full", "--step-rule", "features", "--samples", "7"])
    applied = apply_recipe(mine)
    assert (mine.step_rule, mine.samples, mine.features) == ("features", 7, "w+c+ws+cs+wsh+csh+tied")
    assert "--step-rule groups" not in applied and "--t-c 500" in applied
    transms = parser.parse_args(common + ["--recipe", "full", "--sampler", "transms"])
    apply_recipe(transms)
    assert transms.smc_particles is None  # refused with --sampler transms otherwise
    for flags in (["--t0", "50"], ["--max-iterations", "50"]):  # the share conflicts with both: not filled
        given = parser.parse_args(["trf", "train", "--train", "t.txt", "--out", "m.npz", "--recipe", "full"] + flags)
        assert "--first-stage-share 0.25" not in apply_recipe(given) and given.first_stage_share is None
    unbound = parser.parse_args(common + ["--recipe", "full", "--max-sentence-move", "0"])  # the recipe's bound off
    assert "--max-sentence-move 500" not in apply_recipe(unbound) and _config(unbound).max_sentence_move is None
    assert _config(recipe).max_sentence_move == 500.0
    timed = parser.parse_args(["trf", "train", "--train", "t.txt", "--out", "m.npz", "--recipe", "full",
                               "--max-iterations", "50", "--minutes", "3"])
    assert "--first-stage-share 0.25" in apply_recipe(timed)

    out = tmp_path / "m.npz"
    assert main(["trf", "train", "--train", str(corpus), "--out", str(out), "--recipe", "full", "--features", "w+c"]) == 2
    assert "--recipe full grows --features from w+c: --features 'w+c' must begin" in capsys.readouterr().err
    assert not out.exists()
    assert main(["trf", "train", "--train", str(corpus), "--out", str(out), "--recipe", "full", "--max-iterations",
                 "6", "--samples", "10", "--t-c", "100", "--quiet", "--refine", "0", "--classes", "3"]) == 0
    err = capsys.readouterr().err
    assert "--recipe full: --features w+c+ws+cs+wsh+csh+tied --base-features w+c" in err and "--samples 100" not in err
    meta = read_npz(out, "trf-lm")[1]
    assert meta["features_spec"] == "w+c+ws+cs+wsh+csh+tied" and meta["base_features"] == "w+c"
    assert meta["step_rule"] == "groups" and meta["base_step_rule"] == "features" and meta["n_samples"] == 10


def test_a_resume_whose_minutes_are_spent_says_so(corpus, tmp_path, capsys):
    """--minutes counts the time before --resume: a checkpoint that has trained for all of it gets one more
    iteration and a note saying why (and that a larger --minutes trains on); one within its --minutes, no note."""
    ckpt = tmp_path / "run.ckpt"
    base = ["trf", "train", "--train", str(corpus), "--out", str(tmp_path / "m.npz"), "--checkpoint", str(ckpt), *FAST]
    assert main(base + ["--max-iterations", "5"]) == 0
    capsys.readouterr()
    assert main(base + ["--max-iterations", "100", "--minutes", "1e-9", "--resume"]) == 0
    captured = capsys.readouterr()
    assert "note: the --checkpoint has trained for " in captured.err and "all of --minutes 1e-09 (it counts the time " \
        "before --resume): one more iteration, then the model; a larger --minutes trains on" in captured.err
    assert "trained 6 iterations (stopped by the time limit (" in captured.out
    assert main(base + ["--max-iterations", "8", "--minutes", "1000", "--resume"]) == 0
    captured = capsys.readouterr()
    assert "has trained for" not in captured.err and "trained 8 iterations (reached t_max)" in captured.out


def test_first_stage_share_sets_where_the_constant_rate_ends(corpus, tmp_path, capsys, monkeypatch):
    """``--first-stage-share`` reaches ``train_lm``'s ``first_stage_share`` with ``--minutes`` (0.5 without it, none
    with ``--t0``); with ``--t0`` or without a time limit it is refused naming the flags, and out-of-range values
    are usage errors."""
    import trf.lm.train

    seen = []

    def record(*args, **kwargs):
        seen.append(kwargs["first_stage_share"])
        raise KeyboardInterrupt  # stop before any training: the schedule is all this test reads

    monkeypatch.setattr(trf.lm.train, "train_and_check", record)
    base = ["trf", "train", "--train", str(corpus), "--out", str(tmp_path / "m.npz"), "-q"]
    for extra in (["--minutes", "10", "--first-stage-share", "0.25"], ["--minutes", "10"],
                  ["--minutes", "10", "--t0", "5"], ["--minutes", "10", "--first-stage-share", "1"]):
        main(base + extra)
    assert seen == [0.25, 0.5, None, 1.0]
    capsys.readouterr()
    assert main(base + ["--minutes", "10", "--t0", "5", "--first-stage-share", "0.25"]) == 2
    assert "--first-stage-share and --t0 both set where the first stage ends" in capsys.readouterr().err
    assert main(base + ["--max-iterations", "10", "--first-stage-share", "0.25"]) == 2
    assert "--first-stage-share needs a time limit (--minutes)" in capsys.readouterr().err
    for bad in ("0", "1.5"):
        with pytest.raises(SystemExit) as info:
            main(base + ["--minutes", "10", "--first-stage-share", bad])
        assert info.value.code == 2 and "argument --first-stage-share" in capsys.readouterr().err
    assert seen == [0.25, 0.5, None, 1.0] and not (tmp_path / "m.npz").exists()
