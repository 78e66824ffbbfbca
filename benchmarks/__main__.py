"""Run every benchmark script of ``benchmarks/`` in one command and print each one's table.

Usage (from the repository root)::

    python -m benchmarks                 # every script at its default sizes (tens of minutes)
    python -m benchmarks --smoke         # every script at tiny sizes: do they still run? (CI, < ~2 min)
    python -m benchmarks rdp_tree_speed  # some scripts only
    python -m benchmarks --list          # the table below

Each script runs in its own process exactly as ``python benchmarks/<name>.py [args]`` (so timings are
taken in a clean interpreter, and running one script by hand keeps working). ``SUITE`` states, per script,
the arguments of its smoke run and the optional peers it needs; a script without an entry makes the runner
fail before anything runs, so a new benchmark cannot be forgotten. A script whose optional peer is
missing is skipped with the reason printed; a script with no size flag is imported, not run, in the smoke
run (its imports and module-level code are checked; the reason is printed). The exit status is 1 when a
script failed or is unregistered.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

FOLDER = Path(__file__).resolve().parent
ROOT = FOLDER.parent


@dataclass(frozen=True)
class Entry:
    """How the runner treats one benchmark script.

    Parameters
    ----------
    smoke : tuple of str or None
        Command-line arguments of the smoke run (tiny sizes); ``None``: the script has no size flag, so the
        smoke run imports it without running ``main`` and prints ``why``.
    needs : tuple of str
        Importable modules the script cannot run without (optional peers); missing ones skip the script.
    why : str
        Why the smoke run only imports the script (required when ``smoke`` is None).
    """

    smoke: tuple[str, ...] | None
    needs: tuple[str, ...] = ()
    why: str = ""


TORCH = ("torch",)
TORCH_STRUCT = ("torch", "torch_struct")

SUITE: dict[str, Entry] = {
    "arpa_speed": Entry(("--sentences", "300", "--test", "50", "--vocab", "200", "--order", "3", "--repeats", "1")),
    "doeblin_core_speed": Entry(("--repeats", "1", "--scale", "0.02")),
    "harness_overhead": Entry(None, why="no size flag (main(replicates=7) over fixed problems)"),
    "pruning_speed": Entry(None, why="no size flag (fixed sentence lengths 10-40 and ITG pairs up to 24 x 24)"),
    "rdp_chain_sample": Entry(("--states", "50", "--length", "5", "--samples", "10", "--repeats", "1"), needs=TORCH),
    "rdp_distributions_speed": Entry(("--batch", "2", "--chain", "6", "4", "--tree", "5", "4", "--cfg", "4", "3", "4",
                                      "--repeats", "1", "--warmup", "1"), needs=TORCH_STRUCT),
    "rdp_roofline": Entry(("--quick",), needs=TORCH_STRUCT),
    "rdp_scaling": Entry(("--sizes", "20", "--length", "5", "--repeats", "1", "--max-struct-n", "20"),
                         needs=TORCH_STRUCT),
    "rdp_tree_speed": Entry(("--sizes", "5x20", "--repeats", "1", "--warmup", "1", "--mse-reps", "2"),
                            needs=TORCH_STRUCT),
    "trf_score_speed": Entry(None, why="reads a corpus prepared from the system's fortune files; no tiny size"),
    "trf_smc_work": Entry(None, why="reads a trained model (--model), which the repository does not ship"),
    "trf_train_speed": Entry(None, why="reads a training corpus (--train; the fortunes split), no tiny built-in one"),
    "trf_transms_speed": Entry(None, why="no size flag (~1.9M features), and it needs the git history of its "
                                         "reference revision"),
    "uai_exact_speed": Entry(None, why="reads UAI competition instances (PR_DIR), which the repository does not ship"),
}


def scripts() -> list[str]:
    """Names of the benchmark scripts in ``benchmarks/`` (every ``*.py`` not starting with ``_``)."""
    return sorted(p.stem for p in FOLDER.glob("*.py") if not p.name.startswith("_"))


def unregistered(names: list[str]) -> list[str]:
    """Scripts present in ``benchmarks/`` that have no ``SUITE`` entry."""
    return [n for n in names if n not in SUITE]


def missing_peers(entry: Entry) -> list[str]:
    """The modules of ``entry.needs`` that cannot be imported here."""
    return [m for m in entry.needs if importlib.util.find_spec(m) is None]


def command(name: str, entry: Entry, smoke: bool) -> list[str]:
    """The command line running one script (its smoke run, or its default sizes)."""
    path = str(FOLDER / f"{name}.py")
    if not smoke:
        return [sys.executable, path]
    if entry.smoke is None:  # import without running main(): __name__ is not "__main__"
        code = f"import runpy, sys; sys.path.insert(0, {str(FOLDER)!r}); runpy.run_path({path!r}, run_name='smoke')"
        return [sys.executable, "-c", code]
    return [sys.executable, path, *entry.smoke]


def run(names: list[str], smoke: bool) -> int:
    """Run ``names`` one after another, streaming their tables; return the number that failed."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    failed: list[str] = []
    summary: list[tuple[str, str, float]] = []
    for name in names:
        entry = SUITE[name]
        print(f"\n## {name}", flush=True)
        missing = missing_peers(entry)
        if missing:
            print(f"skipped: optional peer {', '.join(missing)} not installed (pip install -e '.[bench,rdp]')")
            summary.append((name, "skipped (no " + ", ".join(missing) + ")", 0.0))
            continue
        if smoke and entry.smoke is None:
            print(f"smoke: imported only, not run: {entry.why}")
        start = time.perf_counter()
        status = subprocess.run(command(name, entry, smoke), cwd=ROOT, env=env).returncode
        seconds = time.perf_counter() - start
        if status != 0:
            failed.append(name)
        outcome = "imported" if smoke and entry.smoke is None else "ran"
        summary.append((name, outcome if status == 0 else f"FAILED (exit {status})", seconds))
    print("\n| benchmark | outcome | seconds |\n|---|---|---:|")
    for name, outcome, seconds in summary:
        print(f"| {name} | {outcome} | {seconds:.1f} |")
    if failed:
        print(f"benchmarks failed: {', '.join(failed)}", file=sys.stderr)
    return len(failed)


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, check that every script is registered, run the selection."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="scripts to run (default: all)")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: check that every script still runs")
    parser.add_argument("--list", action="store_true", help="print each script's smoke arguments and peers")
    args = parser.parse_args(argv)
    present = scripts()
    stray = unregistered(present)
    if stray:
        print(f"benchmarks without an entry in benchmarks/__main__.py SUITE: {', '.join(stray)} "
              "(add their smoke arguments)", file=sys.stderr)
        return 1
    gone = [n for n in SUITE if n not in present]
    unknown = [n for n in args.names if n not in SUITE]
    if gone or unknown:
        print(f"no such benchmark script: {', '.join(gone + unknown)}", file=sys.stderr)
        return 1
    if args.list:
        for name in present:
            entry = SUITE[name]
            smoke = " ".join(entry.smoke) if entry.smoke is not None else f"(import only: {entry.why})"
            print(f"{name}: smoke {smoke}" + (f"; needs {', '.join(entry.needs)}" if entry.needs else ""))
        return 0
    return 1 if run(args.names or present, args.smoke) else 0


if __name__ == "__main__":
    sys.exit(main())
