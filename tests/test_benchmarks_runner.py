"""The benchmark runner (``python -m benchmarks``): every script is registered, a new one is not forgotten."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _runner():
    spec = importlib.util.spec_from_file_location("benchmarks_runner", ROOT / "benchmarks" / "__main__.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve the module by name
    spec.loader.exec_module(module)
    return module


def test_every_script_has_an_entry_and_every_entry_a_script():
    runner = _runner()
    assert runner.unregistered(runner.scripts()) == []
    assert sorted(runner.SUITE) == runner.scripts()
    for name, entry in runner.SUITE.items():
        assert entry.smoke is not None or entry.why, f"{name}: an import-only smoke run must say why"


def test_an_unregistered_script_fails_the_runner(monkeypatch, capsys):
    runner = _runner()
    monkeypatch.setattr(runner, "scripts", lambda: [*runner.SUITE, "new_speed"])
    assert runner.main(["--list"]) == 1
    assert "new_speed" in capsys.readouterr().err


def test_a_missing_peer_skips_with_its_name(monkeypatch, capsys):
    runner = _runner()
    monkeypatch.setattr(runner, "SUITE", {"x": runner.Entry(("--quick",), needs=("no_such_peer_module",))})
    assert runner.run(["x"], smoke=True) == 0
    out = capsys.readouterr().out
    assert "skipped: optional peer no_such_peer_module not installed" in out


def test_smoke_commands():
    runner = _runner()
    entry = runner.Entry(("--quick",))
    assert runner.command("rdp_roofline", entry, smoke=True)[-2:] == [str(ROOT / "benchmarks" / "rdp_roofline.py"),
                                                                        "--quick"]
    assert runner.command("rdp_roofline", entry, smoke=False)[1:] == [str(ROOT / "benchmarks" / "rdp_roofline.py")]
    imported = runner.command("pruning_speed", runner.Entry(None, why="fixed sizes"), smoke=True)
    assert imported[1] == "-c" and "run_name='smoke'" in imported[2]


def _train_speed():
    spec = importlib.util.spec_from_file_location("trf_train_speed", ROOT / "benchmarks" / "trf_train_speed.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_training_benchmarks_text_flags_fail_in_one_line_naming_the_flag(tmp_path):
    """An unknown --encoding, a --train that is not in it, an empty --valid: SystemExit naming the flag (before any
    model is built); with --encoding latin-1 the same --train passes and the next flag is the one named."""
    bench = _train_speed()
    latin = tmp_path / "latin.txt"
    latin.write_bytes("caf\xe9 au lait\n".encode("latin-1"))
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    for argv, words in (
            (["--train", str(latin), "--encoding", "no-such-codec"], ("no-such-codec", "--encoding")),
            (["--train", str(latin)], ("--train", "utf-8", "--encoding")),
            (["--train", str(latin), "--encoding", "latin-1", "--valid", str(empty), "--stop-every", "5"],
             ("--valid",))):
        with pytest.raises(SystemExit) as caught:
            bench.main(argv)
        message = str(caught.value)
        assert all(word in message for word in words), (argv, message)
        assert "\n" not in message
