"""``mcsa experiments trf-morph``: a tiny run end to end, the table's refusal to rank, and bad flags refused by name
(usage errors exit 2 before any work)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from experiments.trf_morph.morph import length_warnings, metrics_table, rankable
from samplers.cli import main

COMMAND = ["experiments", "trf-morph"]


@pytest.mark.slow
def test_morph_cli_on_tiny_lists(tmp_path, capsys):
    rng = np.random.default_rng(0)
    words = ["".join(rng.choice(list("abcde"), size=rng.integers(1, 6))) for _ in range(400)]
    (tmp_path / "train.txt").write_text("\n".join(words[:300] + ["Bad", "x-y"]))
    (tmp_path / "test.txt").write_text("\n".join(w for w in words[300:] if len(w) > 0))
    code = main(COMMAND + ["--train", str(tmp_path / "train.txt"), "--test", str(tmp_path / "test.txt"),
                           "--out", str(tmp_path / "out"), "--iters", "120", "--samples", "20", "--max-length", "5",
                           "--eval-every", "20", "--qn-iters", "50", "--replicates", "2", "--no-progress"])
    assert code == 0
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    for key in ("augsa_empirical_pi0", "augsa_eq26_pi0", "iis", "quasi_newton", "wb3"):
        assert np.isfinite(metrics[key]["test_nll_exact"])
    assert metrics["quasi_newton"]["train_nll_exact"] <= metrics["augsa_eq26_pi0"]["train_nll_exact"] + 1e-9
    assert len(list((tmp_path / "out").glob("fig3*.png"))) == 4

    reps = metrics["augsa_empirical_pi0"]["replicates"]
    assert len(reps) == 2 and reps[0]["test_nll_exact"] != reps[1]["test_nll_exact"]   # two seeds
    assert reps[0]["test_nll_exact"] == metrics["augsa_empirical_pi0"]["test_nll_exact"]
    assert 0 <= reps[0]["pi_abs_zeta_error_end"] <= max(  # a pi-weighted mean is at most the largest error
        abs(a - b) for a, b in zip(*metrics["augsa_empirical_pi0"]["zeta_snapshots"]["120"]))
    captured = capsys.readouterr()
    assert "skipped 2 words" in captured.err and "Quasi-Newton" in captured.out and " ± " in captured.out


def test_morph_length_warnings_and_refusal_to_rank():
    assert length_warnings(np.array([0, 50, 40, 30])) == []
    warned = length_warnings(np.array([3, 50, 0, 30, 0, 2]))
    assert any("no training words of length 3, 5" in w for w in warned)
    assert any("fewer than 10 training words at length 1, 6" in w for w in warned)
    good = {"train_nll_exact": 5.0, "test_nll_exact": 5.2, "test_nll_estimated_zeta": 5.3, "wall_seconds": 1.0}
    assert rankable(good) is None
    assert "not finite and positive" in rankable({**good, "test_nll_exact": -0.6})
    assert "not finite and positive" in rankable({**good, "train_nll_exact": float("nan")})
    assert rankable({**good, "guard_message": "training stopped: x"}) == "training stopped: x"
    metrics = {"quasi_newton": dict(good), "iis": dict(good), "wb3": dict(good), "warnings": ["gappy"],
               "augsa_empirical_pi0": {**good, "test_nll_estimated_zeta": -30.2},
               "augsa_eq26_pi0": {**good, "test_nll_exact": 3.3e10 * float("inf")}}
    table = metrics_table(metrics)
    assert "| AugSA (pi0 Eq. 26) | not ranked |" in table and "warning: gappy" in table
    assert "AugSA (pi0 = n_j/n): NLL with AugSA's estimated zeta is not finite and positive" in table
    bad_qn = {**metrics, "quasi_newton": {**good, "test_nll_exact": -1.0}}
    assert metrics_table(bad_qn).count("| not ranked | not ranked |") == 5  # no reference: no ranking at all


def test_morph_cli_refuses_out_of_range_numbers_by_flag(tmp_path, capsys):
    for flag, shown, value in (("--max-iterations", "--max-iterations", "0"), ("--max-length", "--max-length", "-2"),
                               ("--seed", "--seed", "-1"), ("--samples", "--samples", "x")):
        with pytest.raises(SystemExit) as exit_info:
            main(COMMAND + ["--out", str(tmp_path / "bad"), flag, value])
        assert exit_info.value.code == 2
        assert f"argument {shown}: expected an integer >= " in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()


def _usage_error(argv, capsys) -> str:
    """Run the command; it must stop with exit status 2 and no traceback; return its stderr."""
    with pytest.raises(SystemExit) as exit_info:
        main(COMMAND + argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def test_morph_cli_refuses_bad_paths_by_flag_before_any_work(tmp_path, capsys):
    words = tmp_path / "words.txt"
    words.write_text("ab\nba\n")
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    lists = ["--train", str(words), "--test", str(words)]
    # --out is an existing file (was a FileExistsError traceback)
    assert "argument --out:" in _usage_error(lists + ["--out", str(a_file)], capsys)
    assert "is not a folder" in _usage_error(lists + ["--out", str(a_file)], capsys)
    # --out cannot be created (was "[Errno 2] ..."): under a file, so no permission tricks are needed
    err = _usage_error(lists + ["--out", str(a_file / "sub")], capsys)
    assert "argument --out: cannot create the folder" in err
    # --train / --test a folder, or missing (the folder was reported as "does not exist")
    err = _usage_error(["--train", str(tmp_path), "--test", str(words), "--out", str(tmp_path / "o1")], capsys)
    assert "argument --train:" in err and "is a folder, not a word list" in err
    err = _usage_error(["--train", str(words), "--test", str(tmp_path / "nope.txt"), "--out", str(tmp_path / "o2")],
                       capsys)
    assert "argument --test:" in err and "does not exist" in err
    # one list without the other is a usage error too (it exited 1)
    assert "give both --train and --test" in _usage_error(["--train", str(words), "--out", str(tmp_path / "o3")],
                                                          capsys)
    assert not any((tmp_path / name).exists() for name in ("o1", "o2", "o3"))  # refused before any work


def test_the_old_trf_morph_command_is_gone(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["trf", "morph", "--out", "x"])
    assert exit_info.value.code == 2 and "invalid choice: 'morph'" in capsys.readouterr().err
