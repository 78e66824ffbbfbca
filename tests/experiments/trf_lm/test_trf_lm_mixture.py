"""experiments.trf_lm.mixture: TRF + n-gram with the checked normalisers of `mcsa trf eval --json`."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

import trf
import trf.arpa
from samplers.cli import main
from trf.lm.check import log_prob_with_log_z
from trf.lm.corpus import encode_file
from trf.lm.ngram_cli import load_ngram
from trf.lm.rescore import interpolate_linear
from trf.ngram import perplexity

TEXT = "\n".join(["the cat sat", "the dog sat", "a cat ran", "the cat ran home", "a dog sat down", "the end"] * 8)
HELD = "\n".join(["the cat sat down", "a dog ran", "the dog ran home", "a cat sat"] * 3)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mix")
    train, held = folder / "train.txt", folder / "held.txt"
    train.write_text(TEXT + "\n")
    held.write_text(HELD + "\n")
    model, kn = folder / "trf.npz", folder / "kn.npz"
    assert main(["trf", "train", "--train", str(train), "--out", str(model), "--classes", "3", "--features", "w+c",
                 "--max-iterations", "30", "--samples", "20", "--t-c", "100", "--quiet"]) == 0
    assert main(["ngram", "train", "--train", str(train), "--out", str(kn), "--order", "3"]) == 0
    check = folder / "check.json"
    # exact_limit keeps V^j small enough here that the check is exact at every length: checked = exact
    assert main(["trf", "eval", "--model", str(model), "--test", str(held), "--json", str(check)]) == 0
    return folder, train, held, model, kn, check


def test_mixture_uses_the_checked_normalisers(run, capsys):
    from experiments.trf_lm.mixture import log_z_tables, read_eval_json
    from experiments.trf_lm.mixture import main as mixture

    folder, train, held, model, kn, check = run
    capsys.readouterr()
    assert mixture(["--model", str(model), "--ngram", str(kn), "--valid", str(held), "--test", str(held),
                    "--valid-check", str(check), "--test-check", str(check)]) == 0
    out = capsys.readouterr().out
    lm = trf.load(model)
    tables = log_z_tables(lm, read_eval_json(check))
    rows = json.loads(check.read_text())["normaliser_check"]["per_length"]
    assert {r["j"] for r in rows} == {3, 4}
    for r in rows:
        assert tables["checked"][r["j"] - 1] == pytest.approx(r["checked"])
        assert tables["low"][r["j"] - 1] <= tables["checked"][r["j"] - 1] <= tables["high"][r["j"] - 1]
    # recompute the printed TRF and mixture perplexities independently
    corpus = encode_file(held, lm.vocab)
    lp = log_prob_with_log_z(lm, corpus, tables["checked"])
    ngram, _ = load_ngram(kn)
    ng = ngram.log_prob(corpus)
    assert f"| TRF | checked | {perplexity(lp, corpus.n_predicted):.2f} |" in out
    assert f"{perplexity(ng, corpus.n_predicted):.2f} | - | 1.000 |" in out
    weight = float(out.split("TRF weight ")[1].split(" ")[0])
    mixed = perplexity(interpolate_linear(lp, ng, weight), corpus.n_predicted)
    assert f"| checked | {mixed:.2f} |" in out
    assert np.isfinite(mixed) and mixed >= 1.0


def test_bad_input_is_a_clear_error_naming_its_flag(run, tmp_path, capsys):
    """A missing, unreadable or mismatched input ends with exit status 2 and one `error:` line that names the flag
    and the file, no traceback; a test file in another encoding reads with --encoding."""
    from experiments.trf_lm.mixture import main as mixture

    folder, train, held, model, kn, check = run
    unchecked = tmp_path / "unchecked.json"
    assert main(["trf", "eval", "--model", str(model), "--test", str(held), "--no-check", "--json",
                 str(unchecked)]) == 0
    other = tmp_path / "other.txt"
    other.write_text("x y z\nz y x\n" * 5)
    kn2 = tmp_path / "kn2.npz"
    assert main(["ngram", "train", "--train", str(other), "--out", str(kn2), "--order", "2"]) == 0
    binary = tmp_path / "binary.json"
    binary.write_bytes(bytes(range(256)))
    latin = tmp_path / "latin.txt"
    latin.write_bytes(HELD.replace("cat", "caf\u00e9").encode("latin-1") + b"\n")
    good = {"--model": model, "--ngram": kn, "--valid": held, "--test": held, "--valid-check": check,
            "--test-check": check}

    def run_with(**changed) -> tuple[int, str]:
        flags = {**good, **{"--" + k.replace("_", "-"): v for k, v in changed.items() if k != "extra"}}
        capsys.readouterr()
        code = mixture([x for kv in flags.items() for x in (kv[0], str(kv[1]))] + changed.get("extra", []))
        return code, capsys.readouterr().err

    for changed, says in (({"valid_check": unchecked}, "--valid-check: " + str(unchecked) + ": no normaliser_check"),
                          ({"ngram": kn2}, "--ngram and --model have different vocabularies"),
                          ({"model": tmp_path / "missing.npz"}, "--model: file"),
                          ({"model": tmp_path}, "--model: '" + str(tmp_path) + "' is a directory"),
                          ({"ngram": binary}, "--ngram: "),
                          ({"test_check": binary}, "--test-check: " + str(binary) + ": not a readable"),
                          ({"valid": tmp_path / "missing.txt"}, "--valid: "),
                          ({"test": latin}, "--test: corpus file '" + str(latin) + "' line 1 is not valid utf-8"),
                          ({"breakdown": tmp_path / "missing.txt"}, "--breakdown: "),
                          ({"breakdown": tmp_path}, "--breakdown: "),
                          ({"breakdown": latin}, "--breakdown: corpus file '" + str(latin) + "' line 1 is not valid")):
        code, err = run_with(**changed)
        assert code == 2 and err.startswith("error: " + says) and "Traceback" not in err, (changed, err)
    assert run_with(test=latin, extra=["--encoding", "latin-1"])[0] == 0
    with pytest.raises(SystemExit) as stop:
        run_with(extra=["--encoding", "no-such-codec"])
    assert stop.value.code == 2 and "--encoding: unknown encoding 'no-such-codec'" in capsys.readouterr().err


def test_breakdown_splits_the_test_set_by_length_and_by_the_training_text(run, tmp_path, capsys):
    """``--breakdown TRAIN`` prints one row per group: the whole test set, its sentences that occur in TRAIN (after
    <unk> mapping) and the others, and each length group; every row's perplexities are those of its sentences alone
    (recomputed here), and the groups of each partition hold all the tokens and the whole log-likelihood."""
    from experiments.trf_lm.mixture import breakdown, log_z_tables, read_eval_json
    from experiments.trf_lm.mixture import main as mixture

    folder, train, held, model, kn, check = run
    test = tmp_path / "test.txt"
    test.write_text(HELD + "\nthe cat sat\nthe end\nthe dog\nthe zebra sat\n")   # 2 training sentences
    capsys.readouterr()
    assert mixture(["--model", str(model), "--ngram", str(kn), "--valid", str(held), "--test", str(test),
                    "--valid-check", str(check), "--test-check", str(check), "--breakdown", str(train)]) == 0
    out = capsys.readouterr().out
    table = {line.split(" | ")[0][2:]: line.split(" | ")[1:] for line in out.split("--test by group")[1].splitlines()
             if line.startswith("| ") and not line.startswith("| sentences")}
    assert list(table) == ["all", "in the training text", "not in the training text", "2 words", "3-4 words"]
    assert [int(table[g][0]) for g in table] == [16, 2, 14, 2, 14]

    lm, (ngram, _) = trf.load(model), load_ngram(kn)
    corpus = encode_file(test, lm.vocab)
    lp = log_prob_with_log_z(lm, corpus, log_z_tables(lm, read_eval_json(check))["checked"])
    ng = ngram.log_prob(corpus)
    known = np.array([i in (12, 13) for i in range(16)])           # "the cat sat", "the end"
    for group, mask in (("in the training text", known), ("not in the training text", ~known),
                        ("2 words", corpus.lengths == 2)):
        n = int((corpus.lengths[mask] + 1).sum())
        assert table[group][1] == str(n)
        assert table[group][2] == f"{perplexity(lp[mask], n):.2f}" and table[group][4] == f"{perplexity(ng[mask], n):.2f}"

    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 60, size=200)
    per = {"trf": {w: -rng.uniform(1, 5, 200) * (lengths + 1) for w in ("checked", "low", "high")},
           "ngram": -rng.uniform(1, 5, 200) * (lengths + 1)}
    per["mix"] = per["trf"]
    rows = {r["group"]: r for r in breakdown(per, lengths, {"in the training text": rng.random(200) < 0.3})}
    parts = ([rows["in the training text"], rows["not in the training text"]],
             [r for g, r in rows.items() if "word" in g])
    for part in parts:
        assert sum(r["sentences"] for r in part) == 200 and sum(r["tokens"] for r in part) == rows["all"]["tokens"]
        for side in (lambda r: r["ngram"], lambda r: r["trf"]["high"]):
            assert sum(r["tokens"] * np.log(side(r)) for r in part) == pytest.approx(
                rows["all"]["tokens"] * np.log(side(rows["all"])), rel=1e-12)
    with pytest.raises(ValueError, match="marks\\['short'\\] has 3 entries for 200 sentences"):
        breakdown(per, lengths, {"short": [True, False, True]})


def test_ctrl_c_is_one_line_not_a_traceback(run, monkeypatch, capsys):
    """Ctrl-C while the mixture is computed ends with status 130 and one line: nothing was written."""
    import experiments.trf_lm.mixture as mod

    folder, train, held, model, kn, check = run

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(mod, "mixture", interrupted)
    code = mod.main(["--model", str(model), "--ngram", str(kn), "--valid", str(held), "--test", str(held),
                     "--valid-check", str(check), "--test-check", str(check)])
    err = capsys.readouterr().err
    assert code == 130 and err.startswith("interrupted: nothing was written") and "Traceback" not in err


def test_mixture_takes_an_arpa_model_as_its_ngram_side(run, tmp_path, capsys):
    """The exported ARPA file, and the same file with its unigrams in another order (as another tool writes
    them: the n-gram then reads the text with its own ids), print the same table as the mcsa model file."""
    from experiments.trf_lm.mixture import main as mixture

    folder, train, held, model, kn, check = run
    arpa = tmp_path / "kn.arpa.gz"
    assert main(["ngram", "export", "--model", str(kn), "--arpa", str(arpa)]) == 0
    lines = gzip.open(arpa, "rt").read().splitlines()
    start, end = lines.index("\\1-grams:") + 1, lines.index("\\2-grams:") - 1
    shuffled = tmp_path / "shuffled.arpa"
    shuffled.write_text("\n".join(lines[:start] + lines[start:end][::-1] + lines[end:]) + "\n")
    assert trf.arpa.read_arpa(shuffled).words != trf.arpa.read_arpa(arpa).words
    capsys.readouterr()
    printed = []
    for ngram in (kn, arpa, shuffled):
        assert mixture(["--model", str(model), "--ngram", str(ngram), "--valid", str(held), "--test", str(held),
                        "--valid-check", str(check), "--test-check", str(check)]) == 0
        printed.append(capsys.readouterr().out)
    table = [line for line in printed[0].splitlines() if not line.startswith("| n-gram (")]
    for out in printed[1:]:
        assert [line for line in out.splitlines() if not line.startswith("| n-gram (")] == table
    assert "| n-gram (ArpaModel, order 3) |" in printed[1]
    assert f"file {held}: 12 sentences" in printed[1]


def test_an_inconclusive_check_shows_its_high_end_and_says_so(run, tmp_path, capsys):
    """As `mcsa trf eval` does, an inconclusive test check's rows headline the interval's high end (the midpoint
    beside it), with a warning naming the flagged lengths; a conclusive one gives none of that."""
    from experiments.trf_lm.mixture import inconclusive_reason, log_z_tables, read_eval_json
    from experiments.trf_lm.mixture import main as mixture

    folder, train, held, model, kn, check = run
    result = json.loads(check.read_text())
    result["normaliser_check"].update(inconclusive=True, smc_unsettled_lengths=[3])
    for row in result["normaliser_check"]["per_length"]:  # widen the interval so that the high end differs
        row["upper"] = row["checked"] + 0.5
    bad = tmp_path / "inconclusive.json"
    bad.write_text(json.dumps(result))
    assert inconclusive_reason(read_eval_json(check)) is None
    assert inconclusive_reason(read_eval_json(bad)) == "SMC unsettled at lengths [3]"
    capsys.readouterr()
    assert mixture(["--model", str(model), "--ngram", str(kn), "--valid", str(held), "--test", str(held),
                    "--valid-check", str(check), "--test-check", str(bad)]) == 0
    captured = capsys.readouterr()
    assert "warning: --test-check is inconclusive (SMC unsettled at lengths [3])" in captured.err
    assert "--valid-check" not in captured.err
    lm = trf.load(model)
    corpus = encode_file(held, lm.vocab)
    tables = log_z_tables(lm, read_eval_json(bad))
    high = perplexity(log_prob_with_log_z(lm, corpus, tables["high"]), corpus.n_predicted)
    mid = perplexity(log_prob_with_log_z(lm, corpus, tables["checked"]), corpus.n_predicted)
    assert high > mid
    assert f"| TRF | checked, inconclusive: high end (midpoint {mid:.2f}) | {high:.2f} |" in captured.out
