"""benchmarks/rdp_tree_speed.py runs at a tiny size and its non-timing numbers pass their checks (no timing asserts)."""

import math

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_struct")

from benchmarks.rdp_tree_speed import main, run_size  # noqa: E402

pytestmark = pytest.mark.torch


class _Args:
    regime, batch, repeats, warmup, mse_reps, dtype, device = "intermediate", 1, 2, 1, 4, "float64", "cpu"


def test_rows_and_their_checks():
    rows = {r["method"]: r for r in run_size(5, 40, _Args())}
    assert set(rows) >= {"torch-struct TreeCRF", "rdp exact", "RDP 1% (K=2) uniform", "RDP 10% (K=4) local"}
    assert rows["rdp exact"]["vs_exact"] == 1.0 and rows["torch-struct TreeCRF"]["vs_struct"] == 1.0
    for name, r in rows.items():
        assert r["seconds"] > 0 and r["mib"] > 0
        if "local" in name:     # the local proposal is proportional to each span's summands: zero variance
            assert r["mse"] < 1e-20 and abs(r["bias"]) < 1e-10
        elif "uniform" in name:  # a real estimate: positive error, log Z-hat low on average (Jensen)
            assert r["mse"] > 0 and r["bias"] < 0
        else:
            assert math.isnan(r["mse"])
    # RDP's autograd memory excludes the (B, T, T, N) potentials, the exact path's logsumexp saves them
    assert rows["RDP 1% (K=2) uniform"]["mib"] < rows["rdp exact"]["mib"]


def test_main_prints_the_table(capsys):
    main(["--sizes", "4x30", "--repeats", "2", "--warmup", "1", "--mse-reps", "3"])
    out = capsys.readouterr().out
    assert "torch-struct TreeCRF" in out and "RDP 10% (K=3) local" in out and out.count("\n") == 2 + 6
