"""Synthetic problems hit their entropy targets; the memory meter counts autograd bytes; the quick
suite runs and RDP beats Top-K where the paper says it should."""

import math

import pytest

torch = pytest.importorskip("torch")

import rdp  # noqa: E402
from rdp.estimators import RDPEstimator, split_budget  # noqa: E402
from rdp.memory import TorchMemoryMeter, measure, note_output  # noqa: E402
from rdp.problems import SyntheticChainProblem as ChainProblem  # noqa: E402
from rdp.problems import TreeCRFProblem as TreeProblem  # noqa: E402
from rdp.suites import rdp_quick_suite  # noqa: E402
from rdp.synthetic import describe, make_chain, make_tree  # noqa: E402
from samplers.harness import Study, load_suite  # noqa: E402

pytestmark = pytest.mark.torch


@pytest.mark.parametrize("regime,fraction", [("dense", 0.9), ("long-tail", 0.3), (0.5, 0.5)])
def test_synthetic_entropy_hits_target_and_is_reproducible(regime, fraction):
    a = make_chain(300, 6, regime, seed=4)
    b = make_chain(300, 6, regime, seed=4)
    assert torch.equal(a.emissions, b.emissions) and torch.equal(a.state_embeddings, b.state_embeddings)
    assert abs(a.emission_entropy - fraction * math.log(300)) < 1e-6
    t = make_tree(50, 4, regime, seed=1)
    assert abs(t.label_entropy - fraction * math.log(50)) < 1e-6
    assert "log N" in describe(a) and "log N" in describe(t)


def test_synthetic_rejects_bad_regimes():
    with pytest.raises(ValueError, match="regime"):
        make_chain(10, 3, "sparse")
    with pytest.raises(ValueError, match="regime"):
        make_chain(10, 3, 1.5)


def test_memory_meter_counts_saved_tensors_once_and_outputs():
    x = torch.randn(1000, dtype=torch.float32, requires_grad=True)
    with TorchMemoryMeter() as m:
        y = x.exp()  # saves its output: 4000 bytes
        z = (y * y).sum()  # saves y twice (same storage: counted once)
        note_output(z)
    assert m.peak_bytes == 4000 + 4
    with torch.no_grad():
        _, none = measure(lambda: x.exp().sum())
    assert none == 4  # only the output


def test_randomized_memory_is_far_below_exact():
    inst = make_chain(400, 10, "dense", seed=0)
    em = inst.emissions.clone().requires_grad_(True)
    # against the log-space exact recursion (a (B, N, N) tensor saved per step); the scaled exact path
    # saves O(N^2 + B T N) instead (tests/rdp/test_rdp_chain_fast.py)
    _, exact = measure(lambda: rdp.chain_log_partition(em, state_embeddings=inst.state_embeddings, method="log"))
    _, rand = measure(lambda: rdp.randomized_chain_log_partition(em, state_embeddings=inst.state_embeddings,
                                                                 k1=3, k2=1))
    assert rand * 50 < exact


def test_split_budget():
    assert split_budget(20, "k2=1") == (19, 1)
    assert split_budget(20, "k1=k2") == (10, 10)
    assert split_budget(20, "topk") == (20, 0)
    with pytest.raises(ValueError, match="split"):
        split_budget(20, "half")


def test_chain_proposal_option_and_log_partition_only():
    """``chain_proposal`` names the proposal (and the default name); at K = N every proposal is exact; a
    log-Z-only estimator skips the entropy DP but draws the same index sets (identical log Z, same seed)."""
    problem = ChainProblem(30, 6, "dense")
    exact = problem.exact()["log_partition"]
    assert RDPEstimator("k2=1").name == "rdp-k2=1"
    assert RDPEstimator("k2=1", chain_proposal="uniform").name == "rdp-k2=1 uniform"
    with pytest.raises(ValueError, match="chain_proposal"):
        RDPEstimator(chain_proposal="oracle")
    for proposal in ("uniform", "local", "global", "local+global"):
        est = RDPEstimator("k1=k2", chain_proposal=proposal).estimate(problem, 100, seed=3)
        assert abs(est["log_partition"] - exact) < 1e-9 * abs(exact)
    both = RDPEstimator("k2=1", chain_proposal="uniform").estimate(problem, 20, seed=5)
    only = RDPEstimator("k2=1", chain_proposal="uniform").only(["log_partition"]).estimate(problem, 20, seed=5)
    assert set(only) == {"log_partition", "evaluations"} and "entropy" in both
    assert only["log_partition"] == both["log_partition"] != pytest.approx(exact, rel=1e-6)


def test_rdp_beats_topk_on_a_dense_chain():
    """RDP at 10% of N has lower MSE than Top-K at 50% of N on a dense chain (Table 2's claim), over
    20 replicates; Top-K's error is pure bias (about -3.3 nats here), RDP's RMSE is well below 1."""
    problem = ChainProblem(200, 20, "dense")
    res = Study([problem], [RDPEstimator("k1=k2", "RDP (K1=K2)"), RDPEstimator("topk", "TopK")],
                {"RDP (K1=K2)": [10], "TopK": [50]}, replicates=20, seed=1).run(progress=False)
    mse = {(r["estimator"], r["target"]): r["mse"] for r in res.summary()}
    assert mse[("RDP (K1=K2)", "log_partition")] < mse[("TopK", "log_partition")]
    assert mse[("RDP (K1=K2)", "entropy")] < mse[("TopK", "entropy")]


def test_quick_suite_loads_and_runs_with_memory_column():
    suite = load_suite("rdp-quick")
    assert isinstance(suite.problems[0], ChainProblem) and isinstance(suite.problems[-1], TreeProblem)
    res = Study(suite.problems, suite.estimators, suite.budgets, replicates=2, seed=0).run(progress=False)
    rows = res.summary()
    assert {r["target"] for r in rows} == {"log_partition", "entropy"}
    assert all(r["memory_kind"] == "autograd-saved+outputs" and r["max_peak_bytes"] > 0 for r in rows)
    assert all(math.isfinite(r["mse"]) for r in rows)
    assert rdp_quick_suite().replicates == 10


def test_memory_meter_does_not_keep_graphs_alive():
    """Regression: a pack hook returning the saved output itself leaked every metered graph."""
    import weakref

    x = torch.randn(100, requires_grad=True)
    with TorchMemoryMeter():
        y = x.exp()  # exp saves its own output
        out = y.sum()
    ref = weakref.ref(y)
    out.backward()
    assert torch.allclose(x.grad, x.exp().detach())
    del y, out
    assert ref() is None
