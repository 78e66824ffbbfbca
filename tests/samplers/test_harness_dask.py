"""Studies on a Dask cluster: ``Study.run(backend="dask")`` and ``mcsa bench run --dask ADDRESS`` give the
serial rows and stream into the same resumable store (LocalCluster, in-process workers), also when a worker
process is killed mid-study (LocalCluster with worker processes, one killed with SIGKILL)."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from samplers.cli import main as mcsa_main
from samplers.harness import FunctionEstimator, FunctionProblem, Study, Suite, register_suite

distributed = pytest.importorskip("distributed")
pytestmark = pytest.mark.dask


def _noisy(problem, budget, seed):
    rng = np.random.default_rng(seed)
    return {"mean": float(problem.payload + rng.normal(size=budget).mean())}


def _study() -> Study:
    problems = [FunctionProblem(f"gauss-{m}", lambda m=m: {"mean": m}, payload=m) for m in (0.5, 1.5)]
    return Study(problems, [FunctionEstimator("noisy", _noisy, warmup=False)], [10, 40], replicates=3, seed=4)


def _estimates(results) -> list:
    return [(r["problem"], r["estimator"], r["budget"], r["replicate"], r["estimate"]) for r in results.rows]


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=":0") as c:
        yield c


def test_study_run_backend_dask_equals_serial(cluster):
    serial = _study().run(progress=False)
    with distributed.Client(cluster):
        on_dask = _study().run(n_jobs=2, backend="dask", progress=False)
    assert _estimates(on_dask) == _estimates(serial)


def test_backend_dask_without_a_client_says_so():
    with pytest.raises(ValueError, match="Dask client"):
        _study().run(n_jobs=2, backend="dask", progress=False)


def test_dask_run_resumes_a_partial_store(cluster, tmp_path):
    """A study whose store holds only some runs (the rest lost with a worker) is completed on Dask with the
    serial rows, the stored runs not repeated."""
    serial = _study().run(progress=False)
    store = tmp_path / "runs.jsonl"
    _study().run(progress=False, store=store)
    lines = store.read_text().splitlines()
    kept = [ln for ln in lines if json.loads(ln).get("type") != "run"] + \
        [ln for ln in lines if json.loads(ln).get("type") == "run"][:5]
    store.write_text("\n".join(kept) + "\n")
    with distributed.Client(cluster):
        resumed = _study().run(n_jobs=2, backend="dask", progress=False, store=store)
    assert _estimates(resumed) == _estimates(serial)
    runs = [json.loads(ln) for ln in store.read_text().splitlines() if json.loads(ln).get("type") == "run"]
    assert len(runs) == len(serial.rows)  # 5 kept + the others once each


def test_cli_dask_flag(cluster, tmp_path, capsys):
    register_suite("dask-tiny-test", lambda: Suite(_study().problems, _study().estimators, [10, 40], replicates=3),
                   "test only", replace=True)
    serial_out, dask_out = tmp_path / "serial", tmp_path / "dask"
    assert mcsa_main(["bench", "run", "--suite", "dask-tiny-test", "--out", str(serial_out), "--no-plots",
                      "--no-progress"]) == 0
    assert mcsa_main(["bench", "run", "--suite", "dask-tiny-test", "--out", str(dask_out), "--no-plots",
                      "--no-progress", "--dask", cluster.scheduler_address]) == 0
    capsys.readouterr()

    def rows(folder):
        return sorted((r["problem"], r["budget"], r["replicate"], r["estimates"]["mean"])
                      for r in map(json.loads, (folder / "runs.jsonl").read_text().splitlines())
                      if r.get("type") == "run")

    assert rows(dask_out) == rows(serial_out)
    assert mcsa_main(["bench", "run", "--suite", "dask-tiny-test", "--out", str(tmp_path / "x"),
                      "--dask", "tcp://127.0.0.1:1"]) == 2
    assert "cannot reach the scheduler" in capsys.readouterr().err


def _stall_once(flag_dir: str, problem, budget, seed):
    """The noisy estimator, except that the first execution of a run of gauss-1.5 at budget 40 (whichever
    replicate a worker starts first) creates ``flag_dir/pid`` (exclusively: one run only), writes its
    worker's pid there and waits to be killed; every other execution, the retry of that run included,
    returns the serial estimate."""
    import os
    import time
    from pathlib import Path

    if problem.name == "gauss-1.5" and budget == 40:
        try:
            with open(Path(flag_dir) / "pid", "x") as fh:
                fh.write(str(os.getpid()))
        except FileExistsError:
            pass
        else:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:  # killed long before (the test fails if it is not)
                time.sleep(0.05)
            raise RuntimeError("the worker was not killed")
    return _noisy(problem, budget, seed)


def _kill_when_flagged(flag_dir, killed: list, stop) -> None:
    import os
    import signal
    import time
    from pathlib import Path

    flag = Path(flag_dir) / "pid"
    while not stop.is_set():
        if flag.exists() and flag.read_text():
            pid = int(flag.read_text())
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
            return
        time.sleep(0.02)


def test_dask_study_survives_a_killed_worker_process(tmp_path):
    """A worker process (LocalCluster, processes=True) is killed with SIGKILL while it runs a study's run:
    the scheduler reruns that run on a live worker, and the study completes with the rows of a serial run,
    each run stored once."""
    import functools
    import threading

    import cloudpickle

    serial = _study().run(progress=False)
    study = _study()
    study.estimators = [FunctionEstimator("noisy", functools.partial(_stall_once, str(tmp_path)), warmup=False)]
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import this test module
    killed: list[int] = []
    stop = threading.Event()
    watcher = threading.Thread(target=_kill_when_flagged, args=(tmp_path, killed, stop), daemon=True)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  worker_class=distributed.Nanny) as cluster, distributed.Client(cluster):
        watcher.start()
        try:
            on_dask = study.run(n_jobs=2, backend="dask", progress=False, store=tmp_path / "runs.jsonl")
        finally:
            stop.set()
            watcher.join()
    assert killed, "no worker was killed: the stalling run never started"
    assert _estimates(on_dask) == _estimates(serial)
    runs = [json.loads(ln) for ln in (tmp_path / "runs.jsonl").read_text().splitlines()]
    assert sum(r.get("type") == "run" for r in runs) == len(serial.rows)


def test_cli_dask_stops_when_a_worker_dies_and_resume_completes_it(tmp_path, capsys):
    """With no retries allowed (``distributed.scheduler.allowed-failures = 0``) the killed worker stops
    ``mcsa bench run --dask``: one error line naming the resume command, finished runs kept; ``--resume``
    (on the serial backend here) completes the study with the rows of a serial run."""
    import functools
    import threading

    import cloudpickle
    import dask

    stalling = [FunctionEstimator("noisy", functools.partial(_stall_once, str(tmp_path)), warmup=False)]
    register_suite("dask-kill-test", lambda: Suite(_study().problems, stalling, [10, 40], replicates=3),
                   "test only", replace=True)
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    out = tmp_path / "out"
    killed: list[int] = []
    stop = threading.Event()
    watcher = threading.Thread(target=_kill_when_flagged, args=(tmp_path, killed, stop), daemon=True)
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}), \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                     worker_class=distributed.Nanny) as cluster:
        watcher.start()
        try:
            code = mcsa_main(["bench", "run", "--suite", "dask-kill-test", "--out", str(out), "--seed", "4",
                              "--no-plots", "--no-progress", "--dask", cluster.scheduler_address])
        finally:
            stop.set()
            watcher.join()
    err = capsys.readouterr().err
    assert killed and code == 1
    assert "workers died" in err and err.strip().endswith("--resume") and "Traceback" not in err
    stored = [json.loads(ln) for ln in (out / "runs.jsonl").read_text().splitlines()]
    assert sum(r.get("type") == "run" for r in stored) < len(_study().runs())
    assert mcsa_main(["bench", "run", "--suite", "dask-kill-test", "--out", str(out), "--seed", "4", "--no-plots",
                      "--no-progress", "--resume"]) == 0  # the flag file exists now: the stalling run returns at once
    capsys.readouterr()
    serial = _study().run(progress=False)
    runs = [json.loads(ln) for ln in (out / "runs.jsonl").read_text().splitlines()]
    rows = sorted((r["problem"], r["budget"], r["replicate"], r["estimates"]["mean"]) for r in runs
                  if r.get("type") == "run" and r["status"] == "ok")
    assert rows == sorted((r["problem"], r["budget"], r["replicate"], r["estimate"]) for r in serial.rows)
