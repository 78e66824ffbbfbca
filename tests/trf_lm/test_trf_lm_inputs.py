"""Issue 29 on the real ``mcsa`` entry: every command reading text goes through one input layer (--encoding,
NUL/binary input, line separators, empty files, over-long lines), late writes keep their results, messages name
flags, and flag spellings are consistent (old ones kept as hidden aliases)."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

import samplers.textio
from samplers.cli import build_parser, main

TEXT = "\n".join(["the cat sat", "the dog sat", "a cat ran", "the cat ran home", "a dog sat down", "the end"] * 6)
ODD = ["the cat\u2028sat", "a dog\x0cran", "the\x0bend", "the cat\u2029ran home", "a\x1cdog\x85sat"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("inputs")
    train = folder / "train.txt"
    train.write_text(TEXT + "\n")
    model = folder / "trf.npz"
    assert main(["trf", "train", "--train", str(train), "-o", str(model), "--classes", "3", "--features", "w+c",
                 "--max-iterations", "5", "--samples", "10", "--refine", "0", "-q"]) == 0
    ngram = folder / "kn.npz"
    assert main(["ngram", "train", "--train", str(train), "-o", str(ngram), "--order", "3"]) == 0
    nul = folder / "nul.bin"
    nul.write_bytes(b"\x00" * 256)
    empty = folder / "empty.txt"
    empty.write_bytes(b"")
    latin = folder / "latin.txt"
    latin.write_bytes("the caf\u00e9 sat\n".encode("latin-1"))
    return {"folder": folder, "train": train, "trf": model, "ngram": ngram, "nul": nul, "empty": empty,
            "latin": latin}


def _usage_error(argv, capsys) -> str:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    return capsys.readouterr().err


def _error(argv, capsys) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def _commands(files, text_file):
    """Every command reading a text file, with that file as its text input."""
    out = str(files["folder"] / "out.npz")
    return [["ngram", "train", "--train", str(text_file), "--out", out],
            ["ngram", "eval", "--model", str(files["ngram"]), "--test", str(text_file)],
            ["trf", "train", "--train", str(text_file), "--out", out, "--classes", "2", "--max-iterations", "1"],
            ["trf", "eval", "--model", str(files["trf"]), "--test", str(text_file), "--no-check"]]


def test_a_bogus_encoding_is_a_usage_error_naming_the_flag_everywhere(files, capsys):
    for argv in [*_commands(files, files["train"]), ["trf", "score", "--model", str(files["trf"])]]:
        err = _usage_error(argv + ["--encoding", "bogus-enc"], capsys)
        assert "argument --encoding: unknown text encoding 'bogus-enc'" in err


def _text_flag(argv) -> str:
    return "--train" if "--train" in argv else "--test"


def test_nul_empty_and_wrong_encoding_files_are_refused_naming_the_flag_and_file(files, capsys):
    for argv in _commands(files, files["nul"]):
        assert (f"{_text_flag(argv)} {str(files['nul'])!r} line 1 holds a NUL character: it is binary data"
                in _error(argv, capsys))
    for argv in _commands(files, files["empty"]):
        assert f"{_text_flag(argv)} {str(files['empty'])!r} is empty" in _error(argv, capsys)
    for argv in _commands(files, files["latin"]):
        err = _error(argv, capsys)
        assert f"{_text_flag(argv)} {str(files['latin'])!r} line 1 is not valid utf-8" in err and "--encoding" in err
    assert main(_commands(files, files["latin"])[1] + ["--encoding", "latin-1"]) == 0


def test_missing_and_folder_inputs_name_their_flag_before_any_compute(files, capsys):
    """A text input that is missing or a folder, a bad --valid beside a good --train, and a model file that is
    missing or no model: each refusal names the flag the user typed (not "corpus file"), and trf train refuses its
    --valid before it trains (no output file)."""
    missing, folder = files["folder"] / "missing.txt", files["folder"]
    for argv in _commands(files, missing):
        assert f"{_text_flag(argv)} {str(missing)!r} does not exist" in _error(argv, capsys)
    for argv in _commands(files, folder):
        assert f"{_text_flag(argv)} {str(folder)!r} is a directory" in _error(argv, capsys)
    out = files["folder"] / "valid-refused.npz"
    err = _error(["trf", "train", "--train", str(files["train"]), "--valid", str(files["nul"]), "--out", str(out),
                  "--classes", "2", "--max-iterations", "1"], capsys)
    assert f"--valid {str(files['nul'])!r} line 1 holds a NUL character" in err and not out.exists()
    for command in (["trf", "eval", "--no-check"], ["ngram", "eval"]):
        argv = [*command, "--model", str(missing), "--test", str(files["train"])]
        assert f"--model: file {str(missing)!r} does not exist" in _error(argv, capsys)
        argv = [*command, "--model", str(files["empty"]), "--test", str(files["train"])]
        assert _error(argv, capsys).startswith("mcsa: error: --model: ")
        # a missing model or a folder beside a wrongly encoded test file: the model, the first flag, is named first
        argv = [*command, "--model", str(missing), "--test", str(files["latin"])]
        assert f"--model: file {str(missing)!r} does not exist" in _error(argv, capsys)
        argv = [*command, "--model", str(folder), "--test", str(files["latin"])]
        assert f"--model: {str(folder)!r} is a directory, not a model file" in _error(argv, capsys)
    argv = ["trf", "eval", "--no-check", "--model", str(files["ngram"]), "--test", str(files["train"])]
    assert f"--model: file {str(files['ngram'])!r} holds kind" in _error(argv, capsys)


def _score(model, data: bytes, monkeypatch, capsys, *extra) -> tuple[int, str, str]:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))
    code = main(["trf", "score", "--model", str(model), *extra])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_score_writes_exactly_one_line_per_input_line(files, monkeypatch, capsys):
    # issue 29: a Unicode line separator, form feed or vertical tab gave more scores than lines (3 in, 6 out)
    data = ("\r\n".join(ODD) + "\r\n").encode()
    code, out, _ = _score(files["trf"], data, monkeypatch, capsys)
    assert code == 0 and len(out.splitlines()) == len(ODD)
    code, plain, _ = _score(files["trf"], ("\n".join(ODD)).encode(), monkeypatch, capsys)  # no final newline
    assert plain == out
    # the separators are word boundaries inside the line: the same scores as with plain spaces
    code, spaced, _ = _score(files["trf"], "\n".join(" ".join(line.split()) for line in ODD).encode(),
                             monkeypatch, capsys)
    np.testing.assert_allclose(np.array(out.split(), float), np.array(spaced.split(), float))


def test_score_refuses_binary_stdin(files, monkeypatch, capsys):
    code, out, err = _score(files["trf"], bytes(range(256)) * 4, monkeypatch, capsys)
    assert code == 2 and out == "" and "stdin line 1" in err and "Traceback" not in err
    code, out, err = _score(files["trf"], "the cat sat\n".encode("utf-16"), monkeypatch, capsys)
    assert code == 2 and "--encoding" in err
    code, out, _ = _score(files["trf"], "the cat sat\n".encode("utf-16"), monkeypatch, capsys, "--encoding", "utf-16")
    assert code == 0 and len(out.splitlines()) == 1


def test_one_over_long_line_is_refused_before_any_dense_array(files, capsys, tmp_path):
    # issue 29: one 200,000-word line sized (2, 200000, 10, 200000) arrays ("Unable to allocate 5.82 TiB")
    corpus = tmp_path / "long.txt"
    corpus.write_text(TEXT + "\n" + " ".join(["the cat sat"] * 66_667) + "\n")
    argv = ["trf", "train", "--train", str(corpus), "--out", str(tmp_path / "m.npz"), "--classes", "3",
            "--max-iterations", "1", "-q"]
    err = _error(argv, capsys)
    assert "training sentence 37 has 200001 words" in err and "--max-length" in err and "GiB" in err
    assert not (tmp_path / "m.npz").exists()


def test_messages_name_the_flag_not_the_python_argument(files, capsys):
    for command in (["trf", "train"], ["ngram", "train"]):
        argv = [*command, "--train", str(files["train"]), "--out", str(files["folder"] / "x.npz"), "--vocab-size", "1"]
        assert "argument --vocab-size: expected an integer >= 2, got '1'" in _usage_error(argv, capsys)
    err = _error(["trf", "train", "--train", str(files["train"]), "--out", str(files["folder"] / "x.npz"),
                  "--classes", "500", "-q"], capsys)
    assert "--classes must be <= the vocabulary size" in err


def test_a_failed_json_write_prints_the_result_and_keeps_it_in_a_named_file(files, capsys, monkeypatch):
    real = samplers.textio._atomic_write_text

    def full_disk(path, text):
        if path.name == "result.json":
            raise OSError(28, "No space left on device")
        real(path, text)

    monkeypatch.setattr(samplers.textio, "_atomic_write_text", full_disk)
    target = files["folder"] / "result.json"
    for argv in (["ngram", "eval", "--model", str(files["ngram"]), "--test", str(files["train"])],
                 ["trf", "eval", "--model", str(files["trf"]), "--test", str(files["train"]), "--no-check"]):
        assert main([*argv, "--json", str(target)]) == 2
        captured = capsys.readouterr()
        printed = json.loads(captured.out[captured.out.index("{"):])  # the whole result, after the headline
        assert "No space left on device" in captured.err and "--json" in captured.err
        fallback = captured.err.rsplit("kept in ", 1)[1].strip()
        with open(fallback) as handle:
            assert json.load(handle) == printed
        assert printed["perplexity"] > 1 and not target.exists()


def test_flag_spellings_are_consistent_and_old_ones_are_hidden_aliases(tmp_path, capsys):
    parser = build_parser()
    morph = parser.parse_args(["experiments", "trf-morph", "-o", "x", "--max-iterations", "7", "--max-length", "9", "-q", "-s", "3"])
    old = parser.parse_args(["experiments", "trf-morph", "--out", "x", "--iters", "7", "--m", "9", "--no-progress", "--seed", "3"])
    for args in (morph, old):
        assert (args.iters, args.m, args.no_progress, args.seed, args.out) == (7, 9, True, 3, "x")
    assert parser.parse_args(["experiments", "trf-morph", "-o", "x"]).iters == 1000
    bench = parser.parse_args(["bench", "run", "--suite", "quick", "-o", "d", "-j", "2", "-s", "4", "-q"])
    assert (bench.jobs, bench.seed, bench.progress) == (2, 4, False)
    assert parser.parse_args(["bench", "run", "--suite", "quick", "-o", "d", "--no-progress"]).progress is False
    train = parser.parse_args(["trf", "train", "--train", "t", "-o", "m", "--no-progress"])
    assert train.quiet is True
    for argv in (["experiments", "trf-morph", "--help"], ["trf", "train", "--help"], ["bench", "run", "--help"]):
        with pytest.raises(SystemExit):
            main(argv)
        text = capsys.readouterr().out
        assert "--no-progress" not in text and "--iters " not in text and "--m " not in text and "--quiet" in text
    with pytest.raises(SystemExit):
        main(["ngram", "eval", "--help"])
    assert "stdout" not in capsys.readouterr().out  # it never wrote the JSON there
    # a usage error exits 2 in every command (trf morph exited 1)
    with pytest.raises(SystemExit) as exit_info:
        main(["experiments", "trf-morph", "--out", str(tmp_path / "m"), "--train", str(tmp_path / "w.txt")])
    assert exit_info.value.code == 2
    assert "give both --train and --test" in capsys.readouterr().err
