"""A study's output folder is locked while it runs (a second run or resume is refused at once, a lock
left by a killed process is taken over); Ctrl-C inside a Numba kernel (a SystemError chained to a
KeyboardInterrupt) stops the study without a bogus failure; the resume hint and the manifest keep
every flag that shapes the study."""

from __future__ import annotations

import json
import os
import platform
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from samplers.cli import main as mcsa_main
from samplers.harness import FunctionEstimator, FunctionProblem, OutputDirError, Study, Suite, register_suite
from samplers.harness.store import LOCK, OutputLock, read_records

CALLS: list[int] = []


def _coin(prob, n, s):
    CALLS.append(s)
    return {"mean": np.random.default_rng(s).random(n).mean()}


def _suite() -> Suite:
    problems = [FunctionProblem(f"coin-{i}", lambda: {"mean": 0.5}) for i in range(2)]
    estimators = [FunctionEstimator("mc", _coin, warmup=False),
                  FunctionEstimator("half", lambda p, n, s: {"mean": 0.4}, warmup=False)]
    return Suite(problems=problems, estimators=estimators, budgets=[10, 40], replicates=3, baseline="half")


register_suite("lock-toy", _suite, "toy suite of the lock tests", replace=True)


def _run(folder, *extra):
    return mcsa_main(["bench", "run", "--suite", "lock-toy", "--out", str(folder), "--no-plots", *extra])


def test_lock_api_refuses_a_second_holder_and_releases(tmp_path):
    with OutputLock(tmp_path / "out") as lock:
        holder = json.loads(lock.path.read_text())
        assert holder["pid"] == os.getpid() and holder["host"] == platform.node()
        with pytest.raises(OutputDirError, match=rf"in use by another mcsa run \(pid {os.getpid()}"):
            OutputLock(tmp_path / "out").acquire()
    assert not (tmp_path / "out" / LOCK).exists()
    with OutputLock(tmp_path / "out"):  # free again
        pass


def test_a_lock_of_another_host_is_respected_and_a_garbled_one_is_stale(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / LOCK).write_text(json.dumps({"pid": 1, "host": "elsewhere", "started": "t"}))
    with pytest.raises(OutputDirError, match="elsewhere"):
        OutputLock(folder).acquire()
    (folder / LOCK).write_text('{"pid": ')  # cut short by a kill while being written
    with OutputLock(folder):
        assert json.loads((folder / LOCK).read_text())["pid"] == os.getpid()


HOLD = ("import sys, time\nfrom samplers.harness.store import OutputLock\n"
        "lock = OutputLock(sys.argv[1]).acquire()\nprint('locked', flush=True)\ntime.sleep(600)\n")


def test_a_second_process_is_refused_at_once_and_a_killed_holder_is_taken_over(tmp_path, capsys):
    folder = tmp_path / "out"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(folder)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        start = time.monotonic()
        assert _run(folder) == 2
        err = capsys.readouterr().err
        assert f"in use by another mcsa run (pid {holder.pid}" in err and "Traceback" not in err
        assert time.monotonic() - start < 30  # refused at once, not after running
        assert not (folder / "runs.jsonl").exists()
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=60)
    assert (folder / LOCK).exists()  # left behind by the killed holder: stale, taken over by pid
    assert _run(folder) == 0
    assert not (folder / LOCK).exists() and (folder / "results.csv").exists()


def _interrupting(chain: str):
    """An estimator whose 5th call is interrupted inside a 'kernel': a SystemError chained (by
    ``raise ... from`` or implicitly) to a KeyboardInterrupt, as Numba's dispatcher reports it."""
    def fn(prob, n, s):
        if len(CALLS) >= 4:
            try:
                raise KeyboardInterrupt
            except KeyboardInterrupt as ki:
                if chain == "cause":
                    raise SystemError("CPUDispatcher(<function outside_kernel>) returned a result with an "
                                      "exception set") from ki
                raise SystemError("CPUDispatcher(<function outside_kernel>) returned a result with an exception set")  # noqa: B904 (the implicit __context__ is what is tested)
        return _coin(prob, n, s)
    return fn


@pytest.mark.parametrize("chain", ["cause", "context"])
def test_ctrl_c_inside_a_kernel_stops_the_study_and_is_no_failure(tmp_path, capsys, chain):
    suite = _suite()
    suite.estimators[0]._fn = _interrupting(chain)
    register_suite("lock-toy-cut", lambda: suite, "test only", replace=True)
    CALLS.clear()
    code = mcsa_main(["bench", "run", "--suite", "lock-toy-cut", "--out", str(tmp_path / "o"), "--no-plots",
                      "--baseline", "half", "--replicates", "3"])
    err = capsys.readouterr().err
    assert code == 130 and "Traceback" not in err, err
    assert "--baseline half" in err and "--replicates 3" in err and "--no-plots" in err and "--resume" in err
    records = [r for r in read_records(tmp_path / "o" / "runs.jsonl") if r["type"] == "run"]
    assert records and all(r["status"] == "ok" for r in records), "an interrupt was recorded as a failure"
    assert len(CALLS) == 4  # stopped at once: no run after the interrupted one
    manifest = json.loads((tmp_path / "o" / "manifest.json").read_text())
    assert manifest["status"] == "incomplete" and manifest["baseline"] == "half" and manifest["replicates"] == 3
    assert not (tmp_path / "o" / LOCK).exists()


def test_study_run_reraises_a_chained_interrupt():
    est = FunctionEstimator("k", _interrupting("context"), warmup=False)
    CALLS.clear()
    CALLS.extend([0, 0, 0, 0])
    with pytest.raises(KeyboardInterrupt):
        Study([FunctionProblem("coin", lambda: {"mean": 0.5})], [est], budgets=[5]).run(progress=False)


def test_resume_takes_the_stored_flags(tmp_path, capsys):
    folder = tmp_path / "o"
    suite = _suite()
    suite.estimators[0]._fn = _interrupting("cause")
    register_suite("lock-toy-resume", lambda: suite, "test only", replace=True)
    CALLS.clear()
    args = ["bench", "run", "--suite", "lock-toy-resume", "--out", str(folder), "--no-plots"]
    assert mcsa_main([*args, "--baseline", "mc", "--replicates", "2", "--budgets", "7"]) == 130
    register_suite("lock-toy-resume", _suite, "test only", replace=True)
    capsys.readouterr()
    assert mcsa_main([*args, "--resume"]) == 0  # no flags: the manifest's replicates, budgets, baseline
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["baseline"] == "mc"
    assert manifest["replicates"] == 2 and manifest["budgets"] == [7]
    doc = json.loads((folder / "results.json").read_text())
    assert set(doc["meta"]["baseline"].values()) == {"mc"} and {r["budget"] for r in doc["rows"]} == {7}
    assert {r["replicate"] for r in doc["rows"]} == {0, 1}
