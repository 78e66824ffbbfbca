"""Streaming, resume and output-folder checks: every finished run is on disk at once; an interrupted
study (Ctrl-C in process, SIGINT or SIGKILL of a subprocess) resumes to rows identical to an
uninterrupted run; a bad --out fails before anything runs."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from samplers.cli import main as mcsa_main
from samplers.harness import FunctionEstimator, FunctionProblem, RunStore, Study, Suite, register_suite
from samplers.harness.store import read_records

#: Columns that must be identical between a resumed and an uninterrupted run (not the timings).
STABLE = ("problem", "estimator", "budget", "budget_label", "replicate", "seed", "target", "estimate", "exact",
          "error", "sq_error", "evaluations")

CALLS: list[tuple] = []


def _draws(prob, n, s):
    CALLS.append((prob.name, n, s))
    x = np.random.default_rng(s).normal(prob.payload, 1.0, size=n)
    return {"mean": x.mean(), "moments": np.array([x.mean(), (x ** 2).mean()]), "evaluations": n}


def _toy_suite() -> Suite:
    problems = [FunctionProblem(f"gauss-{mu}", (lambda mu=mu: {"mean": mu, "moments": np.array([mu, mu * mu + 1])}),
                                payload=mu) for mu in (0.0, 1.5)]
    return Suite(problems=problems, estimators=[FunctionEstimator("mc", _draws, budget_label="draws")],
                 budgets=[10, 40], replicates=3)


register_suite("store-toy", _toy_suite, "toy suite of the store tests", replace=True)


def _stable_rows(folder: Path) -> list[tuple]:
    with (folder / "results.csv").open() as fh:
        return [tuple(r[c] for c in STABLE) for r in csv.DictReader(fh)]


def _run(folder: Path, *extra: str) -> int:
    return mcsa_main(["bench", "run", "--suite", "store-toy", "--out", str(folder), "--no-plots", *extra])


def test_streams_every_run_and_writes_a_manifest(tmp_path):
    assert _run(tmp_path / "a") == 0
    records = list(read_records(tmp_path / "a" / "runs.jsonl"))
    runs = [r for r in records if r["type"] == "run"]
    warm = [r for r in records if r["type"] == "warmup"]
    assert len(runs) == 2 * 2 * 3 and all(r["status"] == "ok" for r in runs)
    assert len(warm) == 2 and {w["budget"] for w in warm} == {10}  # one per (problem, estimator), smallest budget
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["suite"] == "store-toy" and manifest["seed"] == 0
    assert {"python", "numpy", "mcsa"} <= set(manifest["versions"])
    assert set(manifest["files"]) == {"results.csv", "summary.csv", "summary.md", "results.json"}
    assert not [p for p in (tmp_path / "a").iterdir() if p.name.startswith(".")]


def _register_interrupted(name: str, sigterm: bool = False) -> None:
    """Register ``name``: the toy suite whose estimator is interrupted (Ctrl-C, or SIGTERM) at its 8th call."""
    def interrupted(prob, n, s):
        if len(CALLS) >= 7:
            if sigterm:
                import signal

                signal.raise_signal(signal.SIGTERM)
            raise KeyboardInterrupt
        return _draws(prob, n, s)

    CALLS.clear()
    suite = _toy_suite()
    suite.estimators[0]._fn = interrupted
    register_suite(name, lambda: suite, "test only", replace=True)


def test_ctrl_c_then_resume_gives_identical_rows_and_repeats_no_run(tmp_path, capsys, monkeypatch):
    assert _run(tmp_path / "full") == 0
    full = _stable_rows(tmp_path / "full")
    capsys.readouterr()

    _register_interrupted("store-toy-interrupted")
    code = mcsa_main(["bench", "run", "--suite", "store-toy-interrupted", "--out", str(tmp_path / "cut"),
                      "--no-plots"])
    err = capsys.readouterr().err
    assert code == 130 and "Traceback" not in err
    assert err.strip().count("\n") == 0 and "--resume" in err, err
    assert json.loads((tmp_path / "cut" / "manifest.json").read_text())["status"] == "incomplete"
    assert not (tmp_path / "cut" / "results.csv").exists()
    done = [r for r in read_records(tmp_path / "cut" / "runs.jsonl") if r["type"] == "run"]
    assert 0 < len(done) < 12

    register_suite("store-toy-interrupted", _toy_suite, "test only", replace=True)
    CALLS.clear()
    assert mcsa_main(["bench", "run", "--suite", "store-toy-interrupted", "--out", str(tmp_path / "cut"),
                      "--no-plots", "--resume"]) == 0
    timed = [c for c in CALLS if c[1] != 10 or c[2] not in {w["seed"] for w in read_records(
        tmp_path / "cut" / "runs.jsonl") if w["type"] == "warmup"}]
    # each pending run is called once timed; replicate 0 of a cell once more, untimed, under the memory meter
    assert len(set(timed)) == len(timed) - sum(c == d for c, d in zip(timed, timed[1:])) == 12 - len(done), \
        "finished runs are not repeated"
    assert _stable_rows(tmp_path / "cut") == full
    assert json.loads((tmp_path / "cut" / "manifest.json").read_text())["status"] == "complete"


def test_sigterm_keeps_the_finished_runs_and_says_so(tmp_path, capsys):
    """``kill PID`` (SIGTERM) of ``mcsa bench run`` leaves as Ctrl-C does -- finished runs kept, the manifest
    incomplete, one line with the resume command -- naming SIGTERM, with status 143."""
    _register_interrupted("store-toy-terminated", sigterm=True)
    code = mcsa_main(["bench", "run", "--suite", "store-toy-terminated", "--out", str(tmp_path / "cut"),
                      "--no-plots"])
    err = capsys.readouterr().err
    assert code == 143 and "Traceback" not in err, err
    assert err.startswith("mcsa: terminated (SIGTERM); finished runs are kept in ") and "--resume" in err
    assert json.loads((tmp_path / "cut" / "manifest.json").read_text())["status"] == "incomplete"
    assert 0 < len([r for r in read_records(tmp_path / "cut" / "runs.jsonl") if r["type"] == "run"]) < 12


DRIVER = textwrap.dedent("""
    import sys, time
    import numpy as np
    from samplers.cli import main
    from samplers.harness import FunctionEstimator, FunctionProblem, Suite, register_suite

    def slow(prob, n, s):
        time.sleep(0.1)  # 48 runs take >= 2.4 s even with 2 jobs
        return {"mean": np.random.default_rng(s).normal(prob.payload, 1.0, size=n).mean()}

    def suite():
        problems = [FunctionProblem(f"p{mu}", (lambda mu=mu: {"mean": float(mu)}), payload=float(mu))
                    for mu in range(3)]
        return Suite(problems=problems, estimators=[FunctionEstimator("slow", slow)], budgets=[5, 50], replicates=8)

    register_suite("killable", suite, "test only")
    sys.exit(main(sys.argv[1:]))
""")


def _start(tmp_path: Path, out: Path, *extra: str) -> subprocess.Popen:
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    # a test run started in the background (``nohup ... &``) hands SIGINT down ignored, and Python then installs
    # no KeyboardInterrupt handler: the driver gets the default disposition back, as from a terminal
    return subprocess.Popen([sys.executable, str(script), "bench", "run", "--suite", "killable", "--out", str(out),
                             "--no-plots", *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _wait_for_runs(out: Path, n: int, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        path = out / "runs.jsonl"
        if path.exists() and path.read_text().count('"type":"run"') >= n:
            return
        if proc.poll() is not None:
            raise AssertionError(f"driver exited early: {proc.communicate()}")
        time.sleep(0.02)
    raise AssertionError("no runs appeared")


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> list[tuple]:
    folder = tmp_path_factory.mktemp("uninterrupted")
    full = _start(folder, folder / "full")
    assert full.wait(timeout=300) == 0, full.communicate()
    return _stable_rows(folder / "full")


@pytest.mark.slow
@pytest.mark.parametrize("sig, jobs", [(signal.SIGINT, "1"), (signal.SIGKILL, "1"), (signal.SIGINT, "2")])
def test_killed_study_resumes_to_identical_rows(tmp_path, uninterrupted, sig, jobs):
    cut = tmp_path / "cut"
    proc = _start(tmp_path, cut, "--jobs", jobs)
    _wait_for_runs(cut, 6, proc)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    if sig == signal.SIGINT:
        assert proc.returncode == 130, err
        assert "Traceback" not in err and "--resume" in err and err.strip().count("\n") == 0, err
    else:
        assert proc.returncode == -signal.SIGKILL
    assert json.loads((cut / "manifest.json").read_text())["status"] == "incomplete"
    n_done = sum(r["type"] == "run" for r in read_records(cut / "runs.jsonl"))
    assert 6 <= n_done < 48
    again = _start(tmp_path, cut, "--jobs", jobs)  # without --resume: refused, nothing runs
    _, err = again.communicate(timeout=120)
    assert again.returncode == 2 and "--resume" in err
    resumed = _start(tmp_path, cut, "--resume", "--jobs", jobs)
    _, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    assert _stable_rows(cut) == uninterrupted
    runs = [r for r in read_records(cut / "runs.jsonl") if r["type"] == "run"]
    assert len(runs) == 48, "every run exactly once"


def test_partial_last_line_is_ignored_and_repaired(tmp_path):
    study = Study(_toy_suite().problems, _toy_suite().estimators, budgets=[10], replicates=2, seed=1)
    store_path = tmp_path / "runs.jsonl"
    whole = study.run(progress=False, store=store_path)
    lines = store_path.read_text().splitlines(keepends=True)
    store_path.write_text("".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])  # a write cut by a kill
    assert len(list(read_records(store_path))) == len(lines) - 1
    CALLS.clear()
    again = study.run(progress=False, store=store_path)
    assert [{k: r[k] for k in STABLE} for r in again.rows] == [{k: r[k] for k in STABLE} for r in whole.rows]
    assert len(CALLS) == 2  # the cut run and its pair's warm-up
    with RunStore(store_path) as store:
        assert len(store.records()) == len(lines) + 1


@pytest.mark.parametrize("setup, extra, message", [
    ("file", (), "exists and is not a directory"),
    ("under-file", (), "cannot write to"),
    ("other-suite", (), "holds a study of suite 'other'"),
    ("same-suite", (), "pass --resume"),
    ("foreign", (), "not empty and holds no mcsa study"),
    ("same-suite", ("--seed", "3"), "with seed 0"),
])
def test_bad_out_fails_before_any_run(tmp_path, capsys, setup, extra, message):
    out = tmp_path / "out"
    if setup == "file":
        out.write_text("x")
    elif setup == "under-file":
        (tmp_path / "f").write_text("x")
        out = tmp_path / "f" / "out"
    elif setup in ("other-suite", "same-suite"):
        out.mkdir()
        suite = "other" if setup == "other-suite" else "store-toy"
        (out / "manifest.json").write_text(json.dumps({"suite": suite, "seed": 0, "status": "complete"}))
    elif setup == "foreign":
        out.mkdir()
        (out / "notes.txt").write_text("mine")
    CALLS.clear()
    assert _run(out, *extra) == 2
    err = capsys.readouterr().err
    assert err.startswith("mcsa: error: --out:") and message in err, err
    assert CALLS == [], "nothing ran"
    assert not (out / "runs.jsonl").exists()


def test_force_replaces_an_old_study_and_keeps_foreign_files(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "stale__plot.png").write_bytes(b"old")
    (out / "notes.txt").write_text("mine")
    (out / "manifest.json").write_text(json.dumps({"suite": "other", "seed": 0, "status": "complete",
                                                   "files": ["stale__plot.png"]}))
    assert _run(out, "--force") == 0
    assert not (out / "stale__plot.png").exists() and (out / "notes.txt").read_text() == "mine"
    assert json.loads((out / "manifest.json").read_text())["suite"] == "store-toy"
    assert _run(out, "--resume") == 0  # complete study: nothing to do, same files
    with pytest.raises(SystemExit):
        mcsa_main(["bench", "run", "--suite", "store-toy", "--out", str(out), "--resume", "--force"])


def test_read_results_of_a_partial_then_resumed_folder_and_to_pandas(tmp_path, capsys):
    """read_results rebuilds a folder's rows from its run store alone: on an interrupted study it gives
    the finished runs (exactly the rows an uninterrupted study has for them), after --resume all of
    them; to_pandas gives the tidy rows and the summary as DataFrames."""
    pd = pytest.importorskip("pandas")
    from samplers.harness import read_results

    assert _run(tmp_path / "full") == 0
    full = read_results(tmp_path / "full")
    assert full.meta["status"] == "complete" and len(full.rows) == 2 * 2 * 3 * 2
    assert _stable_rows(tmp_path / "full") == [tuple("" if r[c] is None else str(r[c]) for c in STABLE)
                                               for r in full.rows]

    _register_interrupted("store-toy-read")
    assert mcsa_main(["bench", "run", "--suite", "store-toy-read", "--out", str(tmp_path / "cut"), "--no-plots"]) \
        == 130
    partial = read_results(tmp_path / "cut")
    assert partial.meta["status"] == "incomplete" and 0 < len(partial.rows) < len(full.rows)
    key = ("problem", "estimator", "budget", "replicate", "target")
    by_key = {tuple(r[k] for k in key): r for r in full.rows}
    for r in partial.rows:  # every finished run's rows, as the full study has them (timings apart)
        assert {c: r[c] for c in STABLE} == {c: by_key[tuple(r[k] for k in key)][c] for c in STABLE}
    register_suite("store-toy-read", _toy_suite, "test only", replace=True)
    capsys.readouterr()
    assert mcsa_main(["bench", "run", "--suite", "store-toy-read", "--out", str(tmp_path / "cut"), "--no-plots",
                      "--resume"]) == 0
    resumed = read_results(tmp_path / "cut")
    assert resumed.meta["status"] == "complete"
    assert sorted(tuple(r[c] for c in STABLE) for r in resumed.rows) == \
        sorted(tuple(r[c] for c in STABLE) for r in full.rows)

    rows, summary = resumed.to_pandas(), resumed.to_pandas("summary")
    assert isinstance(rows, pd.DataFrame) and len(rows) == len(full.rows)
    assert set(rows["target"]) == {"mean", "moments"} and rows["estimate_array"].notna().sum() == len(rows) // 2
    assert len(summary) == len(resumed.summary()) and {"bias", "rmse_lo", "rmse_hi"} <= set(summary.columns)
    np.testing.assert_allclose(summary["rmse"].to_numpy(dtype=float),
                               [c["rmse"] for c in full.summary()], rtol=0, atol=0)
    with pytest.raises(ValueError, match="which must be"):
        resumed.to_pandas("cells")
    with pytest.raises(ValueError, match="no run store"):
        read_results(tmp_path)


def test_to_pandas_without_pandas_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    res = Study([FunctionProblem("c", lambda: {"m": 0.5})], [FunctionEstimator("e", lambda p, n, s: {"m": 0.5})],
                [1]).run(progress=False)
    with pytest.raises(ImportError, match=r"mcsa\[analysis\]"):
        res.to_pandas()
