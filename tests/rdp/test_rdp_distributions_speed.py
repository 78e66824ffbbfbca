"""benchmarks/rdp_distributions_speed.py runs at a tiny size and its checks hold (no timing asserts)."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_struct")

from benchmarks.rdp_distributions_speed import main, run  # noqa: E402

pytestmark = pytest.mark.torch


class _Args:
    batch, chain, tree, cfg, repeats, warmup, dtype = 3, (6, 4), (5, 3), (4, 2, 3), 1, 0, "float64"


@pytest.mark.parametrize("name", ["LinearChainCRF", "TreeCRF", "SentCFG"])
def test_rows_agree_with_torch_struct(name):
    rows = {r["method"].split(" K=")[0]: r for r in run(name, _Args())}
    assert set(rows) == {"torch-struct", "rdp exact", "rdp RDP"}
    peer, ours = rows["torch-struct"], rows["rdp exact"]
    assert torch.allclose(ours["log_z"], peer["log_z"], atol=1e-9, rtol=0)
    assert torch.allclose(ours["marginals"], peer["marginals"], atol=1e-9, rtol=0)
    assert peer["vs_struct"] == 1.0 and all(r["seconds"] > 0 for r in rows.values())


def test_main_prints_the_table(capsys):
    main(["--batch", "2", "--chain", "5", "3", "--tree", "4", "2", "--cfg", "3", "2", "2", "--repeats", "1",
          "--warmup", "0", "--structures", "TreeCRF"])
    out = capsys.readouterr().out
    assert "| TreeCRF | rdp exact |" in out and "x torch-struct" in out
