"""Plug-in suites and commands through entry points, registry replace rules, and CLI polish
(--version, defaults in help, quiet BrokenPipe, --progress)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import textwrap
from importlib import metadata
from pathlib import Path

import pytest

from samplers.cli import build_parser
from samplers.cli import main as mcsa_main
from samplers.harness import Suite, list_suites, register_suite, registry

PLUGIN_FILES = {
    "mcsa_plugin_demo/__init__.py": """
        from samplers.harness import register_suite

        def register():
            register_suite("plugin-demo", "mcsa_plugin_demo.suite:make", "a suite from a package outside mcsa")
    """,
    "mcsa_plugin_demo/suite.py": """
        import numpy as np
        from samplers.harness import FunctionEstimator, FunctionProblem, Suite

        def make():
            p = FunctionProblem("coin", lambda: {"mean": 0.5})
            e = FunctionEstimator("mc", lambda prob, n, s: {"mean": np.random.default_rng(s).random(n).mean()})
            return Suite(problems=[p], estimators=[e], budgets=[10, 100], replicates=3)
    """,
    "mcsa_plugin_demo/commands.py": """
        def register(subparsers):
            p = subparsers.add_parser("hello", help="greet (a command group from a plug-in)")
            p.add_argument("--name", default="world", help="who to greet")
            p.set_defaults(func=lambda args: print(f"hello {args.name}") or 0)
    """,
    "mcsa_plugin_demo-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: mcsa-plugin-demo\nVersion: 0.1\n",
    "mcsa_plugin_demo-0.1.dist-info/entry_points.txt": """
        [mcsa.suites]
        demo = mcsa_plugin_demo:register

        [mcsa.commands]
        hello = mcsa_plugin_demo.commands:register
    """,
}


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory) -> Path:
    """A tiny installed package outside mcsa: its modules plus a *.dist-info with entry_points.txt,
    on a directory that subprocesses get through PYTHONPATH (as `pip install --target` would leave it)."""
    root = tmp_path_factory.mktemp("site")
    for rel, text in PLUGIN_FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    return root


def _mcsa(args: list[str], plugin: Path | None = None, **kw) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if plugin is not None:
        env["PYTHONPATH"] = str(plugin) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "samplers.cli", *args], capture_output=True, text=True, env=env,
                          timeout=300, **kw)


@pytest.mark.slow
def test_a_package_outside_mcsa_registers_a_suite_and_a_command(plugin_path, tmp_path):
    listed = _mcsa(["bench", "list"], plugin_path)
    assert listed.returncode == 0, listed.stderr
    assert "plugin-demo" in listed.stdout and "a suite from a package outside mcsa" in listed.stdout
    assert "mrf-quick" in listed.stdout and "rdp-table2" in listed.stdout  # mcsa's own, same mechanism
    without = _mcsa(["bench", "list"])
    assert "plugin-demo" not in without.stdout  # negative control: not installed, not listed
    ran = _mcsa(["bench", "run", "--suite", "plugin-demo", "--out", str(tmp_path / "out"), "--no-plots"], plugin_path)
    assert ran.returncode == 0, ran.stderr
    assert "| coin | mean | mc | 100 | budget | 3 |" in ran.stdout
    hello = _mcsa(["hello", "--name", "plug-ins"], plugin_path)
    assert hello.returncode == 0 and hello.stdout.strip() == "hello plug-ins"
    # listing imports neither the plug-in's suite module nor torch nor any family's suites module
    code = ("import sys\nfrom samplers.cli import main\nmain(['bench', 'list'])\n"
            "bad = {'torch', 'mcsa_plugin_demo.suite', 'rdp.suites', 'rdp.chain', 'trf.suites', 'doeblin.suites', 'samplers.suites'} & "
            "set(sys.modules)\nassert not bad, bad\n")
    env = {**os.environ, "PYTHONPATH": str(plugin_path)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr


def test_mcsa_registers_its_own_suites_and_commands_through_entry_points():
    suites = {ep.name: ep.value for ep in metadata.entry_points(group="mcsa.suites")}
    assert suites["samplers"] == "samplers._register:suites" and suites["rdp"] == "rdp._register:suites"
    for group in ("mcsa.estimators", "mcsa.problems"):
        eps = {ep.name: ep.value for ep in metadata.entry_points(group=group)}
        assert eps["samplers"] == f"samplers._register:{group.split('.')[1]}" and "trf" in eps
    commands = {ep.name: ep.value for ep in metadata.entry_points(group="mcsa.commands")}
    assert commands["bench"] == "samplers.harness.cli:register" and commands["trf"] == "trf.cli:register"
    assert {"quick", "mrf-quick", "rdp-quick", "doeblin-quick", "pruning-quick", "trf-quick"} <= set(list_suites())


def test_register_suite_needs_replace_to_change_a_name():
    register_suite("replace-test", "x.y:one", "first")
    register_suite("replace-test", "x.y:one", "first")  # the same entry again (an entry point loaded twice): fine
    with pytest.raises(ValueError, match="already registered.*replace=True"):
        register_suite("replace-test", "x.y:two", "second")
    with pytest.raises(ValueError, match="already registered"):
        register_suite("mrf-quick", "elsewhere:suite")
    register_suite("replace-test", "x.y:two", "second", replace=True)
    assert list_suites()["replace-test"] == "second"


def test_a_broken_or_conflicting_plugin_warns_and_listing_still_works(monkeypatch, tmp_path):
    (tmp_path / "mcsa_bad_plugin.py").write_text(
        "from samplers.harness import register_suite\n"
        "def broken():\n    raise RuntimeError('plugin bug')\n"
        "def conflicting():\n    register_suite('mrf-quick', 'mcsa_bad_plugin:other')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    fake = [metadata.EntryPoint("broken", "mcsa_bad_plugin:broken", "mcsa.suites"),
            metadata.EntryPoint("conflicting", "mcsa_bad_plugin:conflicting", "mcsa.suites")]
    real = registry._entry_points("mcsa.suites")
    monkeypatch.setattr(registry, "_entry_points", lambda group: real + fake)
    with pytest.warns(RuntimeWarning) as caught:
        registry.load_plugins(force=True)
    messages = [str(w.message) for w in caught]
    assert any("'broken'" in m and "plugin bug" in m for m in messages)
    assert any("'conflicting'" in m and "already registered" in m for m in messages)
    assert "mrf-quick" in list_suites() and registry._SUITES["mrf-quick"][0].startswith("samplers.suites")


#: Commands whose options must all have help text (mcsa's own groups are added as they comply).
HELP_SCOPE = ("mcsa bench", "mcsa hello")


def test_version_and_every_option_has_help_with_its_default(capsys):
    with pytest.raises(SystemExit) as exc:
        mcsa_main(["--version"])
    assert exc.value.code == 0 and capsys.readouterr().out.strip() == f"mcsa {metadata.version('mcsa')}"

    def parsers(parser, path):
        yield path, parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield from parsers(sub, f"{path} {name}")

    missing = []
    for path, parser in parsers(build_parser(), "mcsa"):
        if HELP_SCOPE and not path.startswith(HELP_SCOPE):
            continue
        text = parser.format_help()
        for action in parser._actions:
            if not action.option_strings or action.dest in ("help", "version"):
                continue
            if not action.help:
                missing.append(f"{path} {action.option_strings[0]}")
            elif not action.required and "default" not in text:
                missing.append(f"{path} {action.option_strings[0]} (no default shown)")
    assert not missing, missing
    run_help = build_parser()._subparsers._group_actions[0].choices["bench"]
    text = run_help._subparsers._group_actions[0].choices["run"].format_help()
    assert "--jobs JOBS" in text and "(default: 1)" in text and "--progress" in text


def test_broken_pipe_exits_quietly():
    """`mcsa bench list | head -0`: the reader is gone before we write; no traceback, exit 141.
    The control shows what plain Python prints in the same situation."""
    for args, quiet in ((["-m", "samplers.cli", "bench", "list"], True), (["-c", "print('x' * 100)"], False)):
        read, write = os.pipe()
        os.close(read)
        try:
            proc = subprocess.run([sys.executable, *args], stdout=write, stderr=subprocess.PIPE, text=True,
                                  timeout=300)
        finally:
            os.close(write)
        if quiet:
            assert proc.returncode == 141 and proc.stderr == "", proc.stderr
        else:
            assert "BrokenPipeError" in proc.stderr


def test_progress_flag_forces_a_bar_on_a_non_terminal(tmp_path, capsys):
    register_suite("progress-test", lambda: Suite(problems=[_coin()], estimators=[_flat()], budgets=[1],
                                                  replicates=2), "test only", replace=True)
    assert mcsa_main(["bench", "run", "--suite", "progress-test", "--out", str(tmp_path / "a"), "--no-plots",
                      "--progress"]) == 0
    assert "mcsa study" in capsys.readouterr().err
    assert mcsa_main(["bench", "run", "--suite", "progress-test", "--out", str(tmp_path / "b"), "--no-plots"]) == 0
    assert "mcsa study" not in capsys.readouterr().err  # stderr is not a terminal here: no bar by default


def _coin():
    from samplers.harness import FunctionProblem

    return FunctionProblem("coin", lambda: {"mean": 0.5})


def _flat():
    from samplers.harness import FunctionEstimator

    return FunctionEstimator("flat", lambda p, n, s: {"mean": 0.5})


