"""The UAI formats (.uai MARKOV/BAYES, .evid, .PR, .MAR): hand-computed answers, round trips,
malformed files named by line, and ``mcsa uai solve`` end to end."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from samplers.cli import main
from samplers.models import (
    FactorGraph,
    UAIFormatError,
    parse_evid,
    parse_mar,
    parse_pr,
    parse_uai,
    read_evid,
    read_mar,
    read_pr,
    read_uai,
    write_evid,
    write_mar,
    write_pr,
    write_uai,
)

DATA = Path(__file__).parent / "data"

# x0 -> x1 <- x2 (binary), then x3 | x1 (ternary): a BAYES network; its joint table is the product of CPTs
BAYES = """BAYES
4
2 2 2 3
4
1 0
1 2
3 0 2 1
2 1 3

2
0.3 0.7
2
0.9 0.1
8
0.5 0.5
0.2 0.8
0.6 0.4
1e-1 9E-1
6
0.2 0.3 0.5
0.1 0.1 0.8
"""


def test_hand_written_markov_file_keeps_its_constant_factor():
    # x0 in {0,1}, x1 in {0,1}, x2 in {0,1,2}; f0(x0) = (1, 2), f01 = [[3, 1], [1, 3]], f12 = [[1, 2, 4],
    # [.5, .5, 1]], constant 10: Z = 10 * (1 * (3*7 + 1*2) + 2 * (1*7 + 3*2)) = 490 (49 without the constant)
    fg = read_uai(DATA / "two_spins.uai")
    assert list(fg.cards) == [2, 2, 3] and fg.max_arity == 2
    assert fg.log_constant == pytest.approx(math.log(10))
    assert fg.log_partition_exact() == pytest.approx(math.log(490.0), abs=1e-12)
    assert fg.log_partition_enumerate() == pytest.approx(math.log(490.0), abs=1e-12)


def test_constant_factor_of_a_file_is_not_dropped():
    # one binary variable with factor (7, 10) and a constant factor 10: ln Z = ln 170 = 5.136, where
    # dropping the constant (as PairwiseMRFProblem did, issue 28) gives ln 17 = 2.833
    fg = parse_uai("MARKOV\n1\n2\n2\n1 0\n0\n2\n7 10\n1\n10\n")
    assert fg.log_partition_exact() == pytest.approx(math.log(170), abs=1e-12)
    assert round(fg.log_partition_exact(), 3) == 5.136


def test_bayes_file_against_its_joint_table():
    fg = parse_uai(BAYES)
    p0, p2 = np.array([0.3, 0.7]), np.array([0.9, 0.1])
    p1 = np.array([[[0.5, 0.5], [0.2, 0.8]], [[0.6, 0.4], [0.1, 0.9]]])   # [x0, x2, x1]
    p3 = np.array([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]])                       # [x1, x3]
    joint = np.einsum("a,c,acb,bd->abcd", p0, p2, p1, p3)
    assert joint.sum() == pytest.approx(1.0)
    assert fg.log_partition_exact() == pytest.approx(0.0, abs=1e-12)
    x = np.stack(np.unravel_index(np.arange(24), (2, 2, 2, 3)), axis=1)
    np.testing.assert_allclose(np.exp(fg.log_unnormalized(x)), joint.ravel(), rtol=1e-12)
    cond = fg.condition({3: 2})   # evidence: P(x3 = 2) and the posterior of x0
    assert cond.graph.log_partition_exact() == pytest.approx(math.log(joint[..., 2].sum()), abs=1e-12)
    post = cond.expand_marginals(cond.graph.marginals_exact(), fg.max_states)
    np.testing.assert_allclose(post[0, :2], joint[..., 2].sum(axis=(1, 2)) / joint[..., 2].sum(), atol=1e-12)


@pytest.mark.parametrize("network", ["MARKOV", "BAYES"])
def test_uai_round_trip(tmp_path, network):
    fg = parse_uai(BAYES)
    write_uai(fg, tmp_path / "m.uai", network=network)
    back = read_uai(tmp_path / "m.uai")
    assert back.scopes == fg.scopes
    for a, b in zip(back.log_tables, fg.log_tables):
        np.testing.assert_allclose(a, b, atol=1e-15)
    assert (tmp_path / "m.uai").read_text().split()[0] == network


def test_markov_round_trip_with_zeros_constants_and_high_arity(tmp_path):
    rng = np.random.default_rng(2)
    tables = [rng.normal(size=(2, 3, 2, 2)), np.array(0.7), rng.normal(size=3)]
    tables[0][0, 1, 0, 1] = -np.inf
    fg = FactorGraph([2, 3, 2, 2], [(3, 1, 0, 2), (), (1,)], tables)
    write_uai(fg, tmp_path / "m.uai")
    back = read_uai(tmp_path / "m.uai")
    assert back.scopes == fg.scopes and back.log_constant == pytest.approx(0.7, abs=1e-15)
    assert back.log_tables[0][0, 1, 0, 1] == -np.inf
    assert back.log_partition_exact() == pytest.approx(fg.log_partition_enumerate(), abs=1e-12)
    with pytest.raises(ValueError, match="BAYES"):
        write_uai(fg, tmp_path / "b.uai", network="BAYES")
    with pytest.raises(ValueError, match="above 709"):
        write_uai(FactorGraph([2], [(0,)], [np.array([0.0, 800.0])]), tmp_path / "o.uai")


def test_comments_exponents_and_whitespace_variants():
    text = "c a comment\nMARKOV\r\n2\n2\t2\n  1\n2 0 1\nc another\n4 1E0 2.0e+00\n3 4\n"
    fg = parse_uai(text)
    assert fg.log_partition_exact() == pytest.approx(math.log(10), abs=1e-12)


@pytest.mark.parametrize("text, message", [
    ("FACTOR\n1\n2\n0\n", r"line 1: the preamble must be MARKOV or BAYES \(token 'FACTOR'\)"),
    ("MARKOV\n2\n2 x\n", r"line 3: expected an integer for the cardinality of variable 1 \(token 'x'\)"),
    ("MARKOV\n2\n2 2\n1\n2 0 5\n", r"line 5: variable 1 of factor 0 must be in 0..1, got 5"),
    ("MARKOV\n2\n2 2\n1\n2 0 0\n", "line 5: factor 0 names a variable twice"),
    ("MARKOV\n2\n2 2\n1\n2 0 1\n3\n1 1 1\n", "line 6: factor 0 over variables .* must have 4 entries, got 3"),
    ("MARKOV\n2\n2 2\n1\n2 0 1\n4\n1 1\n1 zz\n", r"line 8: entry 3 of factor 0 is not a number \(token 'zz'\)"),
    ("MARKOV\n2\n2 2\n1\n2 0 1\n4\n1 1\n-1 1\n", r"line 8: entry 2 of factor 0 must be finite and >= 0"),
    ("MARKOV\n2\n2 2\n1\n2 0 1\n4\n1 1 1 inf\n", r"entry 3 of factor 0 must be finite"),
    ("MARKOV\n2\n2 2\n1\n2 0 1\n4\n1 1", "file ends early"),
    ("MARKOV\n1\n2\n0\n7\n", r"line 5: 1 unexpected tokens after the end \(token '7'\)"),
    ("BAYES\n1\n2\n1\n1 0\n2\n0.5 0.6\n", r"line 7: factor 0 of a BAYES network must sum to 1 over its child"),
    ("BAYES\n2\n2 2\n1\n1 0\n2\n0.5 0.5\n", "variables without a table: \\[1\\]"),
])
def test_malformed_uai_files_name_the_line(text, message):
    with pytest.raises(UAIFormatError, match=message):
        parse_uai(text, source="bad.uai")


def test_binary_and_wrong_encoding_files_are_refused_naming_the_file(tmp_path):
    (tmp_path / "bin.uai").write_bytes(b"MARKOV\n\x00\x01\x02")
    with pytest.raises(UAIFormatError, match=r"bin.uai: is a binary file"):
        read_uai(tmp_path / "bin.uai")
    (tmp_path / "latin.uai").write_bytes("MARKOV\nc caf\u00e9\n".encode("latin-1"))
    with pytest.raises(UAIFormatError, match=r"latin.uai: is not a UTF-8"):
        read_uai(tmp_path / "latin.uai")
    with pytest.raises(UAIFormatError, match="is a directory"):
        read_uai(tmp_path)
    with pytest.raises(FileNotFoundError, match="missing.uai"):
        read_uai(tmp_path / "missing.uai")


# -- .evid, .PR, .MAR ------------------------------------------------------------------------------
def test_evid_both_forms_and_round_trip(tmp_path):
    assert parse_evid("2 0 1 3 0\n") == [{0: 1, 3: 0}]                 # 2014+: one line
    assert parse_evid("1\n2 0 1 3 0\n") == [{0: 1, 3: 0}]              # older: sample count first
    assert parse_evid("2\n1 0 1\n1 2 0\n") == [{0: 1}, {2: 0}]
    assert parse_evid("0\n") == [{}] and parse_evid("") == [{}]
    for multi in (False, True):
        write_evid(tmp_path / "e.evid", {4: 2, 1: 0}, multi_sample=multi)
        assert read_evid(tmp_path / "e.evid") == [{1: 0, 4: 2}]
    with pytest.raises(UAIFormatError, match="line 2: variable 0 is observed twice"):
        parse_evid("1\n2 0 1 0 1\n")
    with pytest.raises(UAIFormatError, match=r"line 1: .*\(token 'x'\)"):
        parse_evid("x 1\n")


def test_pr_round_trip_and_older_block_form(tmp_path):
    write_pr(tmp_path / "m.PR", 12.5)
    assert (tmp_path / "m.PR").read_text().split()[0] == "PR"
    assert read_pr(tmp_path / "m.PR") == pytest.approx(12.5, abs=1e-13)
    assert parse_pr("PR\n-5.86181\n") == pytest.approx(-5.86181 * math.log(10))
    assert parse_pr("PR\n1\n-BEGIN-\n1\n-2.5e1\n") == pytest.approx(-25 * math.log(10))
    with pytest.raises(UAIFormatError, match="line 1: a .PR file starts with 'PR'"):
        parse_pr("MAR\n1.0\n")
    with pytest.raises(UAIFormatError, match=r"line 2: entry 0 of log10 Z is not a number"):
        parse_pr("PR\nabc\n")
    with pytest.raises(ValueError, match="log_partition must be a number"):
        write_pr(tmp_path / "n.PR", float("nan"))


def test_mar_round_trip(tmp_path):
    marg = np.array([[0.25, 0.75, 0.0], [0.1, 0.2, 0.7]])
    write_mar(tmp_path / "m.MAR", marg, [2, 3])
    back = read_mar(tmp_path / "m.MAR")
    np.testing.assert_allclose(back[0], [0.25, 0.75])
    np.testing.assert_allclose(back[1], [0.1, 0.2, 0.7])
    assert [len(m) for m in parse_mar("MAR\n2 2 0.5 0.5 1 1\n")] == [2, 1]
    with pytest.raises(UAIFormatError, match=r"line 2: .*marginal of variable 0 must hold"):
        parse_mar("MAR\n1 2 -0.5 1.5\n")
    with pytest.raises(UAIFormatError, match="file ends early"):
        parse_mar("MAR\n2 2 0.5 0.5\n")


# -- mcsa uai solve --------------------------------------------------------------------------------
def test_solve_writes_pr_and_mar_with_evidence(tmp_path, capsys):
    (tmp_path / "net.uai").write_text(BAYES)
    (tmp_path / "net.uai.evid").write_text("1 3 2\n")
    assert main(["uai", "solve", str(tmp_path / "net.uai"), "--out", str(tmp_path)]) == 0
    fg = parse_uai(BAYES)
    p_evidence = np.exp(fg.condition({3: 2}).graph.log_partition_enumerate())
    assert read_pr(tmp_path / "net.uai.PR") == pytest.approx(math.log(p_evidence), abs=1e-12)
    assert main(["uai", "solve", str(tmp_path / "net.uai"), "--task", "MAR", "--out", str(tmp_path)]) == 0
    mar = read_mar(tmp_path / "net.uai.MAR")
    assert mar[3].tolist() == [0.0, 0.0, 1.0]
    clamped = FactorGraph(fg.cards, list(fg.scopes) + [(3,)], list(fg.log_tables) + [np.array([-np.inf, -np.inf, 0.0])])
    np.testing.assert_allclose(mar[0], clamped.marginals_enumerate()[0, :2], atol=1e-12)
    out = capsys.readouterr().out
    assert "net.uai.MAR" in out and "induced width" in out


def test_solve_refuses_before_work(tmp_path, capsys):
    (tmp_path / "m.uai").write_text(BAYES)
    (tmp_path / "m.uai.PR").write_text("PR\n0\n")
    cases = [
        (["uai", "solve", str(tmp_path / "nope.uai")], "nope.uai: no such file"),
        (["uai", "solve", str(tmp_path / "m.uai"), "--out", str(tmp_path)], r"m.uai.PR exists \(pass --force"),
        (["uai", "solve", str(tmp_path / "m.uai"), "--out", str(tmp_path / "m.uai")], "--out .*: is not a folder"),
        (["uai", "solve", str(tmp_path / "m.uai"), "--out", str(tmp_path / "m.uai" / "x")],
         "--out .*: does not exist and cannot be created"),
        (["uai", "solve", str(tmp_path / "m.uai"), "--out", str(tmp_path), "--force", "--evid", "x.evid"],
         "--evid x.evid: no such file"),
        (["uai", "solve", str(tmp_path), "--out", str(tmp_path), "--force"], "is a directory"),
    ]
    for argv, message in cases:
        assert main(argv) == 2
        assert re.search(message, capsys.readouterr().err), message
    # a new --out folder is made when the answer is written, not before (a refused model leaves none behind)
    assert main(["uai", "solve", str(tmp_path / "nope.uai"), "--out", str(tmp_path / "new")]) == 2
    assert not (tmp_path / "new").exists()
    assert main(["uai", "solve", str(tmp_path / "m.uai"), "--out", str(tmp_path / "new" / "answers")]) == 0
    assert (tmp_path / "new" / "answers" / "m.uai.PR").is_file()
    capsys.readouterr()
    (tmp_path / "bin.uai").write_bytes(b"\x00\xff")
    assert main(["uai", "solve", str(tmp_path / "bin.uai"), "--out", str(tmp_path)]) == 2
    assert "bin.uai: is a binary file" in capsys.readouterr().err
    (tmp_path / "bad.uai").write_text("MARKOV\n1\n2\n1\n1 0\n2\n1 x\n")
    assert main(["uai", "solve", str(tmp_path / "bad.uai"), "--out", str(tmp_path)]) == 2
    assert "bad.uai: line 7: entry 1 of factor 0 is not a number (token 'x')" in capsys.readouterr().err
    (tmp_path / "ev.evid").write_text("1 9 0\n")
    assert main(["uai", "solve", str(tmp_path / "m.uai"), "--out", str(tmp_path), "--force", "--evid",
                 str(tmp_path / "ev.evid")]) == 2
    assert "ev.evid: evidence names variable 9" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["uai", "solve", str(tmp_path / "m.uai"), "--memory-cap", "lots"])
    assert "--memory-cap: expected a size such as 512M" in capsys.readouterr().err


def test_solve_says_so_when_evidence_is_impossible_and_when_too_wide(tmp_path, capsys):
    (tmp_path / "z.uai").write_text("MARKOV\n2\n2 2\n1\n2 0 1\n4\n1 0 0 1\n")
    (tmp_path / "z.uai.evid").write_text("2 0 0 1 1\n")
    assert main(["uai", "solve", str(tmp_path / "z.uai"), "--out", str(tmp_path)]) == 2
    assert "Z = 0 (the evidence has probability zero)" in capsys.readouterr().err
    assert not (tmp_path / "z.uai.PR").exists()
    (tmp_path / "c.uai").write_text("MARKOV\n1\n2\n2\n1 0\n0\n2\n1 1\n1\n0\n")   # a constant factor 0
    assert main(["uai", "solve", str(tmp_path / "c.uai"), "--out", str(tmp_path)]) == 2
    assert "Z = 0 (it has constant (arity-0) factors of value 0)" in capsys.readouterr().err
    grid = FactorGraph([2] * 64, [(i, j) for i in range(64) for j in range(i + 1, 64) if j - i in (1, 8)],
                       [np.zeros((2, 2))] * sum(1 for i in range(64) for j in range(i + 1, 64) if j - i in (1, 8)))
    write_uai(grid, tmp_path / "g.uai")
    assert main(["uai", "solve", str(tmp_path / "g.uai"), "--out", str(tmp_path), "--memory-cap", "1K"]) == 2
    err = capsys.readouterr().err
    assert "induced width" in err and "memory cap of 1 KiB" in err and "--memory-cap" in err
    assert main(["uai", "solve", str(tmp_path / "g.uai"), "--out", str(tmp_path), "--memory-cap", "64M"]) == 0
    assert read_pr(tmp_path / "g.uai.PR") == pytest.approx(64 * math.log(2), abs=1e-9)
