"""The structured-VAE experiment: run-name mapping, harness suite on a tiny corpus, tables, figure, memory probe."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

import rdp.vae as V  # noqa: E402
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
