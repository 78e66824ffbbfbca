"""Studies on a Dask cluster: ``Study.run(backend="dask")`` and ``mcsa bench run --dask ADDRESS`` give the
serial rows and stream into the same resumable store (LocalCluster, in-process workers)."""

from __future__ import annotations

import json

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
