"""benchmarks/rdp_roofline.py --quick runs, prints its tables, and its numbers pass their own checks."""

import math

import pytest

torch = pytest.importorskip("torch")

from benchmarks import rdp_roofline  # noqa: E402

pytestmark = pytest.mark.torch


def test_roofline_quick_mode_runs_and_reports(capsys):
    out = rdp_roofline.main(["--quick"])
    text = capsys.readouterr().out
    assert "measured limits" in text and "load average" in text and "MSE of log Z" in text
    assert out["bandwidth"] > 0 and out["rate"] > 0
    assert {(r["n"], r["b"]) for r in out["exact"]} == {(64, 1), (64, 4), (128, 1), (128, 4)}
    for row in out["exact"]:
        assert math.isfinite(row["seconds"]) and row["seconds"] > 0 and row["limit"] > 0
        if row["what"] != "torch-struct":
            assert row["bare"] > 0
        if row["what"] == "log Z + backward":
            assert 0 < row["saved"] <= row["bound"]  # the O(N^2 + B T N) memory claim, at small size
    mse = {r["method"]: r for r in out["mse"]}
    assert mse["exact, N x N matrix"]["mse"] < 1e-8  # float32 exact vs the float64 value
    rdp_rows = [r for name, r in mse.items() if name.startswith("RDP")]
    assert len(rdp_rows) == 4 and all(r["mse"] > 0 for r in rdp_rows)
    assert "|difference| = " in text
    assert [r["method"] for r in out["per_step"]][0] == "exact scaled, per-step"
    assert all(r["seconds"] > 0 and r["saved"] > 0 for r in out["per_step"])


def test_exact_limits_count_bytes_and_flops():
    fwd, both = rdp_roofline.exact_limits(1000, 1, 11, bw=1e9, rate=1e18)
    assert math.isclose(fwd, 4 * 1000 ** 2 * 10 / 1e9) and math.isclose(both, (2 * 4e7 + 4e6) / 1e9)
    fwd, both = rdp_roofline.exact_limits(1000, 32, 11, bw=1e18, rate=1e9)
    assert math.isclose(fwd, 2 * 32 * 1e6 * 10 / 1e9) and math.isclose(both, 3 * fwd)
