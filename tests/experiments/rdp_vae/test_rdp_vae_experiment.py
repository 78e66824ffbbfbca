"""The structured-VAE experiment: run-name mapping, harness suite on a tiny corpus, tables, figure, memory probe."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

import experiments.rdp_vae.model as V  # noqa: E402
from experiments.rdp_vae import data as D  # noqa: E402
from experiments.rdp_vae import memory as M  # noqa: E402
from experiments.rdp_vae import paired as P  # noqa: E402
from experiments.rdp_vae import run as R  # noqa: E402
from experiments.rdp_vae import suite as S  # noqa: E402
from experiments.rdp_vae import table as T  # noqa: E402

SENTENCES = [["a", "b", "c"], ["d", "a"], ["b"], ["c", "c", "d", "a"], ["a", "a"]]


def test_run_names_map_to_the_papers_budgets():
    assert R.variant_of("RDP-2000", 100, 2000, 0.2, 0.2) == (2000, V.Variant.rdp(200, 200))
    assert R.variant_of("TOPK-100", 100, 2000, 0.2, 0.2) == (100, V.Variant.topk(20))
    assert R.variant_of("RDP-100-99/1", 100, 2000, 0.2, 0.2) == (100, V.Variant.rdp(19, 1))
    assert R.variant_of("RDP-100-10/90", 100, 2000, 0.2, 0.2) == (100, V.Variant.rdp(2, 18))
    assert R.variant_of("FULL-100", 100, 2000, 0.2, 0.2) == (100, V.Variant.full())
    with pytest.raises(ValueError, match="run must be one of"):
        R.variant_of("BEAM-100", 100, 2000, 0.2, 0.2)


def test_sentence_filter_keeps_5_to_25_words():
    text = "One two three four. One two three four five! " + " ".join(["w"] * 26) + ". It cost 12 dollars today ok?"
    out = D.sentences_of(text)
    assert out == [["one", "two", "three", "four", "five"], ["it", "cost", "N", "dollars", "today", "ok"]]


@pytest.mark.torch
def test_vae_suite_runs_on_a_tiny_corpus():
    from samplers.harness import run_suite

    vocab = V.Vocabulary(["a", "b", "c", "d"])

    def corpus():
        return len(vocab), vocab.encode(SENTENCES), vocab.encode(SENTENCES[:3])

    suite = S.vae_suite(n_states=5, steps=(2,), replicates=2)
    suite.problems = [S.CorpusProblem(5, 3, 5, corpus=corpus)]
    for e in suite.estimators:
        e.sizes = {"state_dim": 4, "word_dim": 4, "hidden_size": 4, "encoder_hidden": 3}
        e.batch_size = 2
    results = run_suite(suite, seed=0, progress=False)
    assert not results.failures
    nll = [r for r in results.rows if r["target"] == "test_nll"]
    assert len(nll) == 6 and all(0 < float(r["estimate"]) < 100 for r in nll)


def fake_result(run, seed, nll, counts):
    return {"run": run, "seed": seed, "n_states": len(counts), "variant": run, "k1": 1, "k2": 1, "steps": 10,
            "dev": {"nll": nll, "se": 0.5, "per_word": nll / 10}, "test": {"nll": nll + 1, "se": 0.5,
                                                                            "per_word": (nll + 1) / 10},
            "state_counts": counts, "inactive_states": sum(c == 0 for c in counts)}


def test_tables_and_figure(tmp_path):
    res = tmp_path / "results"
    res.mkdir()
    for i, (run, seed, nll) in enumerate([("TOPK-100", 0, 40.0), ("TOPK-100", 1, 42.0), ("RDP-100", 0, 39.0)]):
        (res / f"{i}.json").write_text(json.dumps(fake_result(run, seed, nll, [5, 0, 3, 0])))
    runs = T.load(tmp_path)
    t5 = T.table5(runs)
    assert "| TOPK-100 | TOPK-100 | 2 | 10 | 41.00 ± 1.00 | 42.00 ± 1.00 |" in t5  # SE over two seeds
    assert "39.00 ± 0.50 [1 seed]" in t5 and "39.59 ± 0.10" in t5  # sentence SE, paper beside
    stats = T.posterior_stats([5, 0, 3, 0])
    assert stats["inactive"] == 2 and abs(stats["top10"] - 1.0) < 1e-12
    assert T.figure(runs, tmp_path / "fig.png").stat().st_size > 1000


@pytest.mark.torch
def test_memory_probe_full_log_space_holds_more_than_rdp():
    torch.manual_seed(0)
    model = V.StructuredVAE(20, 60, state_dim=4, word_dim=4, hidden_size=4, encoder_hidden=3)
    tokens = torch.randint(3, 20, (2, 6))
    lengths = torch.tensor([6, 4])
    full = M.measure_step(model, tokens, lengths, M.parse_variant("full:log"))
    rdp_small = M.measure_step(model, tokens, lengths, M.parse_variant("rdp:3:3"))
    # the log-space exact DP keeps (B, N, N) blocks per step, RDP (B, K, K): 100x fewer entries here
    assert full["autograd_bytes"] > 5 * rdp_small["autograd_bytes"]
    with pytest.raises(Exception, match="variants"):
        M.parse_variant("beam:3")


@pytest.mark.torch
def test_paired_script_loads_a_checkpoint_exactly(tmp_path):
    vocab = V.Vocabulary(["a", "b", "c", "d"])
    data = vocab.encode(SENTENCES)
    torch.manual_seed(0)
    model = V.StructuredVAE(len(vocab), 4, state_dim=3, word_dim=3, hidden_size=4)
    V.train_vae(model, data, V.Variant.rdp(1, 1), V.TrainConfig(steps=2, batch_size=2), checkpoint=tmp_path / "a.pt",
                progress=False)
    loaded = P.load_model(tmp_path / "a.pt")
    for (name, p), q in zip(model.state_dict().items(), loaded.state_dict().values()):
        assert torch.equal(p, q), name


def test_paired_differences_over_seeds():
    def result(run, seed, lls):
        return {"run": run, "seed": seed, "test": {"nll": -sum(lls) / len(lls), "log_likelihoods": lls}}

    # seed 0: A better by 1 nat on every sentence; seed 1: A better by 3 nats; B has an extra seed without A
    runs = {"RDP-100": [result("RDP-100", 0, [-10.0, -20.0, -30.0]), result("RDP-100", 1, [-7.0, -8.0, -9.0])],
            "TOPK-100": [result("TOPK-100", 0, [-11.0, -21.0, -31.0]), result("TOPK-100", 1, [-10.0, -11.0, -12.0]),
                         result("TOPK-100", 2, [-1.0, -1.0, -1.0])]}
    res = T.paired(runs, "RDP-100", "TOPK-100")
    assert res["seeds"] == 2 and [p["seed"] for p in res["per_seed"]] == [0, 1]
    assert abs(res["mean"] - (-2.0)) < 1e-12 and abs(res["se"] - 1.0) < 1e-12  # SE over the two seed means
    assert res["per_seed"][0]["favour_a"] == 3 and res["per_seed"][0]["se"] == 0.0
    # one seed: the paired SE over sentences
    one = T.paired({"RDP-100": runs["RDP-100"][:1], "TOPK-100": [result("TOPK-100", 0, [-11.0, -22.0, -30.0])]},
                   "RDP-100", "TOPK-100")
    assert one["seeds"] == 1 and abs(one["mean"] - (-1.0)) < 1e-12 and abs(one["se"] - (1 / 3) ** 0.5) < 1e-12
    assert T.paired(runs, "RDP-100", "FULL-100") is None
    assert "| RDP-100 - TOPK-100 | 2 | -2.000 ± 1.000 (over seeds)" in T.paired_table(runs)
    runs["TOPK-100"][0]["test"]["log_likelihoods"] = [-1.0]
    with pytest.raises(ValueError, match="different numbers of sentences"):
        T.paired(runs, "RDP-100", "TOPK-100")
