"""The ``factor-graph`` kind (mcsa exact or published references), AIS on factor graphs, the
factor-graph estimators and the ``uai`` suite / ``--instances`` flag."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from samplers.ais import ais_factor_graph, smc_factor_graph
from samplers.cli import main as mcsa_main
from samplers.harness import Exact, estimators_for, run_suite
from samplers.models import FactorGraph, TooWideError, write_evid, write_mar, write_uai
from samplers.models.constructors import random_factor_graph
from samplers.problems import FACTOR_GRAPH, FactorGraphProblem
from samplers.problems.factor_graph import printed_half_unit
from samplers.suites import uai_suite
from samplers.uai_scores import competition_scores, hellinger


def random_graph(seed: int, n_vars: int = 6, n_factors: int = 7, zero_rate: float = 0.1, scale: float = 1.0):
    return random_factor_graph(n_vars, n_factors=n_factors, zero_rate=zero_rate, scale=scale, seed=seed)


def test_exact_from_mcsa_with_evidence_equals_enumeration():
    fg = random_graph(5, n_vars=6, zero_rate=0.1)
    p = FactorGraphProblem("g", fg, evidence={1: 1, 4: 0})
    assert p.kind == FACTOR_GRAPH and p.targets == ("log_partition", "marginals")
    cond = fg.condition({1: 1, 4: 0})
    ex = p.exact()
    assert ex["log_partition"] == pytest.approx(cond.graph.log_partition_enumerate(), abs=1e-10)
    marg = ex["marginals"]
    assert marg.shape == (6, fg.max_states) and marg[1, 1] == 1.0 and marg[4, 0] == 1.0
    np.testing.assert_allclose(marg, cond.expand_marginals(cond.graph.marginals_enumerate(), fg.max_states),
                               atol=1e-10)
    assert "mcsa variable elimination" in p.provenance


@pytest.mark.parametrize("text, half", [("-12.345", 5e-4), ("3", 0.5), ("1.25e-3", 5e-6), ("PR\n7.0\n", 0.05)])
def test_printed_half_unit(text, half):
    assert printed_half_unit(text) == pytest.approx(half)


def _instance(folder: Path, name: str, fg: FactorGraph, evidence: dict, log10_z: str | None) -> Path:
    path = folder / f"{name}.uai"
    write_uai(fg, path)
    write_evid(f"{path}.evid", evidence)
    if log10_z is not None:
        Path(f"{path}.PR").write_text(f"PR\n{log10_z}\n")
    return path


def test_published_reference_keeps_provenance_and_printed_precision(tmp_path):
    fg = random_graph(2, n_vars=5, zero_rate=0.0)
    truth = fg.condition({0: 1}).graph.log_partition_enumerate()
    printed = f"{truth / math.log(10):.4f}"
    p = FactorGraphProblem.from_uai(_instance(tmp_path, "inst", fg, {0: 1}, printed))
    assert p.targets == ("log_partition",)
    ref = p.exact()["log_partition"]
    assert isinstance(ref, Exact) and "inst.uai.PR" in ref.provenance
    assert ref.stderr == pytest.approx(5e-5 * math.log(10))
    assert abs(ref.value - truth) <= ref.stderr  # the published value within its printed digits
    assert p.compute_exact()["log_partition"] == pytest.approx(truth, abs=1e-10)  # mcsa's own, for `exact`


def test_an_instance_too_wide_for_mcsa_is_studied_against_its_published_answer():
    fg = random_graph(3, n_vars=8, n_factors=12, zero_rate=0.0)
    ref = Exact(1.5, 0.01, "published elsewhere")
    p = FactorGraphProblem("wide", fg, reference={"log_partition": ref}, targets=("log_partition",), memory_cap=64)
    assert p.exact()["log_partition"] is ref  # the constructor and exact() never ask mcsa's method
    with pytest.raises(TooWideError, match="width"):
        p.compute_exact()


@pytest.mark.parametrize("seed", [0, 3])
def test_ais_on_factor_graphs_within_standard_errors(seed):
    """AIS log Z within 4 reported standard errors (+ the Jensen bias stderr^2) of enumeration; zeros and
    evidence included."""
    fg = random_graph(seed, n_vars=6, zero_rate=0.1, scale=0.8)
    g = fg.condition({2: 0}).graph
    res, x = ais_factor_graph(g, n_temperatures=100, n_chains=400, seed=seed)
    exact = g.log_partition_enumerate()
    assert abs(res.log_partition - exact) <= 4 * res.stderr + res.stderr ** 2
    assert res.stderr < 0.2 and x.shape == (400, g.n_vars)


def test_ais_refuses_when_every_chain_meets_a_zero():
    same = np.array([[0.0, -np.inf], [-np.inf, 0.0]])
    fg = FactorGraph([2, 2], [(0, 1), (0, 1)], [same, same[::-1]])
    with pytest.raises(ValueError, match="weight zero"):
        ais_factor_graph(fg, n_temperatures=5, n_chains=10, seed=0)


def test_every_factor_graph_estimator_runs_and_is_close_on_a_small_graph():
    fg = random_graph(1, n_vars=6, zero_rate=0.05, scale=0.5)
    p = FactorGraphProblem("small", fg, evidence={3: 1})
    ex = p.exact()
    names = {e.name: e for e in estimators_for(p, families=("samplers",))}
    assert {"trivial", "exact-elimination", "loopy-bp", "gibbs-factor", "ais-factor", "smc-factor"} <= set(names)
    errors = {}
    for name, budget in [("trivial", 1), ("loopy-bp", 200), ("gibbs-factor", 2000), ("ais-factor", 200)]:
        out = names[name].estimate(p, budget, seed=0)
        assert out["marginals"].shape == ex["marginals"].shape and out["marginals"][3, 1] == 1.0
        errors[name] = np.abs(out["marginals"] - ex["marginals"]).max()
        if "log_partition" in out:
            errors[name + " log Z"] = abs(out["log_partition"] - ex["log_partition"])
    assert names["exact-elimination"].estimate(p, 1, 0)["log_partition"] == pytest.approx(ex["log_partition"])
    # every estimator beats the trivial baseline on this weakly coupled graph
    assert max(errors["loopy-bp"], errors["gibbs-factor"], errors["ais-factor"]) < errors["trivial"]
    assert max(errors["loopy-bp log Z"], errors["ais-factor log Z"]) < errors["trivial log Z"]


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "instances"
    folder.mkdir(parents=True)
    for seed in (0, 1):
        fg = random_graph(seed, n_vars=5, zero_rate=0.05)
        z = fg.condition({0: 0}).graph.log_partition_enumerate()
        _instance(folder, f"rand{seed}", fg, {0: 0}, f"{z / math.log(10):.6f}")
    return folder


def test_uai_suite_runs_every_applicable_estimator_against_published_answers(tmp_path):
    suite = uai_suite(instances=str(_folder(tmp_path)), replicates=2, scale="quick")
    assert [p.name for p in suite.problems] == ["rand0", "rand1"] and suite.baseline == "trivial"
    names = {e.name for e in suite.estimators}
    assert {"trivial", "exact-elimination", "loopy-bp", "ais-factor"} <= names and "gibbs-factor" not in names
    results = run_suite("uai", suite_options={"instances": str(_folder(tmp_path / "b")), "scale": "quick"},
                        replicates=2)
    cells = {(c["problem"], c["estimator"]): c for c in results.summary() if c["budget"] == max(
        c2["budget"] for c2 in results.summary() if c2["estimator"] == c["estimator"])}
    assert cells[("rand0", "exact-elimination")]["rmse"] < 1e-5  # mcsa exact vs the 6 printed decimals
    assert cells[("rand0", "trivial")]["score"] == 0.0


def test_cli_instances_flag_and_its_errors(tmp_path, capsys):
    out = tmp_path / "out"
    code = mcsa_main(["bench", "run", "--suite", "uai", "--instances", str(_folder(tmp_path)), "--suite-arg",
                      "scale=quick", "--replicates", "1", "--out", str(out), "--no-plots", "--no-progress"])
    assert code == 0 and (out / "summary.csv").is_file()
    assert "loopy-bp" in capsys.readouterr().out
    assert mcsa_main(["bench", "run", "--suite", "uai", "--out", str(tmp_path / "o2")]) == 2
    assert "--instances DIR" in capsys.readouterr().err
    assert mcsa_main(["bench", "run", "--suite", "uai", "--instances", str(tmp_path / "nope"),
                      "--out", str(tmp_path / "o3")]) == 2
    assert "is not a folder" in capsys.readouterr().err
    assert mcsa_main(["bench", "run", "--suite", "uai", "--suite-arg", "colour=red", "--out",
                      str(tmp_path / "o4")]) == 2
    assert "colour" in capsys.readouterr().err


def test_competition_scores_pr_and_mar(tmp_path, capsys):
    """PR = |log10 error|, MAR = mean Hellinger over unobserved variables; exact ~ 0, trivial marked worst."""
    folder = tmp_path / "inst"
    folder.mkdir()
    fg = random_graph(4, n_vars=5, zero_rate=0.05)
    cond = fg.condition({0: 1})
    z = cond.graph.log_partition_enumerate()
    path = _instance(folder, "m", fg, {0: 1}, f"{z / math.log(10):.9f}")
    marg = cond.expand_marginals(cond.graph.marginals_enumerate(), fg.max_states)
    write_mar(f"{path}.MAR", [marg[v, :k] for v, k in enumerate(fg.cards)], fg.cards)
    out = tmp_path / "out"
    assert mcsa_main(["bench", "run", "--suite", "uai", "--instances", str(folder), "--suite-arg", "scale=quick",
                      "--replicates", "2", "--out", str(out), "--no-plots", "--no-progress"]) == 0
    capsys.readouterr()
    rows = {(r["estimator"], r["target"]): r for r in competition_scores(out, folder)
            if r["budget"] == max(q["budget"] for q in competition_scores(out, folder)
                                  if q["estimator"] == r["estimator"])}
    assert rows[("exact-elimination", "log_partition")]["score"] < 1e-8
    assert rows[("exact-elimination", "marginals")]["score"] < 1e-6
    assert rows[("trivial", "marginals")]["score"] > rows[("loopy-bp", "marginals")]["score"]
    assert mcsa_main(["uai", "scores", str(out), "--instances", str(folder)]) == 0
    text = capsys.readouterr().out
    assert "### PR:" in text and "### MAR: mean Hellinger" in text and "gibbs-factor" in text
    p, q = np.array([[0.5, 0.5]]), np.array([[1.0, 0.0]])
    assert hellinger(p, q)[0] == pytest.approx(math.sqrt(0.5 * ((math.sqrt(0.5) - 1) ** 2 + 0.5)))
    capsys.readouterr()
    assert mcsa_main(["uai", "scores", str(tmp_path / "none")]) == 2
    assert f"{tmp_path / 'none'} does not exist" in capsys.readouterr().err
    before = competition_scores(out, folder)
    (out / "results.json").unlink()  # an unfinished study: scored from its runs with --instances only
    assert mcsa_main(["uai", "scores", str(out)]) == 2
    assert "--instances" in capsys.readouterr().err
    after = competition_scores(out, folder)  # the references read from the instances: the same scores
    assert [r["score"] for r in after] == pytest.approx([r["score"] for r in before], abs=1e-12)


@pytest.mark.parametrize("seed", [1, 4, 5])
def test_annealed_smc_on_factor_graphs_within_standard_errors(seed):  # seeds whose groups resample
    """SMC log Z within 4 group standard errors (+ the Jensen bias stderr^2) of enumeration (zeros, evidence);
    resampling happens."""
    fg = random_graph(seed, n_vars=6, zero_rate=0.1, scale=1.5)
    g = fg.condition({2: 0}).graph
    res = smc_factor_graph(g, n_temperatures=30, n_particles=200, seed=seed, n_groups=8)
    assert abs(res.log_partition - g.log_partition_enumerate()) <= 4 * res.stderr + res.stderr ** 2
    assert res.n_resamples > 0 and res.group_log_partitions.shape == (8,) and res.stderr < 0.3


def test_smc_refuses_bad_arguments_and_dead_groups():
    g = random_graph(0, n_vars=4)
    with pytest.raises(ValueError, match="n_groups"):
        smc_factor_graph(g, n_groups=1)
    same = np.array([[0.0, -np.inf], [-np.inf, 0.0]])
    with pytest.raises(ValueError, match="weight zero"):
        smc_factor_graph(FactorGraph([2, 2], [(0, 1), (0, 1)], [same, same[::-1]]), n_temperatures=5, seed=0)


def test_published_marginals_carry_their_printed_precision(tmp_path):
    """A .MAR reference's standard error is its rounding: half a unit of each entry's last significant digit,
    with the file's number of significant digits (``%g`` drops trailing zeros; a printed 0 is exact)."""
    fg = FactorGraph([2, 3], [(0, 1)], [np.log([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])])
    path = _instance(tmp_path, "m", fg, {}, None)
    Path(f"{path}.MAR").write_text("MAR\n2\n2 0.0125 0.9875\n3 0 1 0.42857\n")  # %g: 5 significant digits
    ref = FactorGraphProblem.from_uai(path, targets=("marginals",)).exact()["marginals"]
    np.testing.assert_allclose(ref.stderr, [[5e-7, 5e-6, 0.0], [0.0, 5e-5, 5e-6]])
    assert "printed to +-5e-05" in ref.provenance
