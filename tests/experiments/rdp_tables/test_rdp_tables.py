"""Tables 3 and 4 of the RDP paper as harness suites: estimators checked against the exact log Z, tables
built from a real tiny run, the paper's numbers printed beside ours."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from experiments.rdp_tables import suite as S  # noqa: E402
from experiments.rdp_tables import table as T  # noqa: E402


@pytest.mark.torch
@pytest.mark.parametrize("proposal", S.PROPOSALS)
def test_forward_estimator_is_exact_at_full_budget_and_topk_is_a_lower_bound(proposal):
    from rdp.problems import SyntheticChainProblem as ChainProblem

    problem = ChainProblem(30, 6, "dense")
    exact = problem.exact()["log_partition"]
    for split in ("k2=1", "k1=k2"):  # K = N: every state is enumerated, weight 1
        est = S.forward_estimator(proposal, split).estimate(problem, 100, seed=3)["log_partition"]
        assert abs(est - exact) < 1e-5 * abs(exact)
    topk = S.forward_estimator(proposal, "topk").estimate(problem, 50, seed=3)["log_partition"]
    assert topk < exact - 1e-3  # Top-K drops positive terms: strictly below on a dense chain


@pytest.mark.torch
def test_tables_from_tiny_runs(capsys):
    T.main(["--table", "3", "--n-states", "40", "--chain-length", "5", "--replicates", "3"])
    out3 = capsys.readouterr().out
    rows = [ln for ln in out3.splitlines() if ln.startswith("| ") and "estimator" not in ln]
    assert len(rows) == 8  # TopK 20/50, RDP (K2=1) 1/10/20, RDP (K1=K2) 1/10/20
    topk = [ln for ln in rows if ln.startswith("| TopK")]
    for ln in topk:  # Top-K is deterministic (variance 0) and biased downwards
        cells = [c.strip().split(" ")[0] for c in ln.strip("|").split("|")][2:]
        assert float(cells[0]) < 0 and abs(float(cells[1])) < 1e-12
    assert "(-1.968)" in out3  # paper values beside ours
    T.main(["--table", "4", "--n-states", "40", "--chain-length", "5", "--replicates", "3"])
    out4 = capsys.readouterr().out
    rows = [ln for ln in out4.splitlines() if ln.startswith("| ") and "estimator" not in ln]
    assert len(rows) == 8 and "(0.028)" in out4 and "(11.05)" in out4


def test_suites_are_registered():
    from experiments.registry import SUITES

    names = {name: factory for name, factory, _ in SUITES}
    assert names["rdp-bias-variance"] == "experiments.rdp_tables.suite:bias_variance_suite"
    assert names["rdp-proposals"] == "experiments.rdp_tables.suite:proposals_suite"
    with pytest.raises(ValueError, match="chain_proposal"):
        S.forward_estimator("oracle")
    with pytest.raises(ValueError, match="split"):
        S.forward_estimator(split="half")
