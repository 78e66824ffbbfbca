"""Table 5 and Fig. 2 analogues of the RDP paper from the results of ``experiments.rdp_vae.run``.

    python -m experiments.rdp_vae.table OUT [--figure docs/figures/rdp_vae_fig2.png]

Table 5: dev and test NLL (nats per sentence, ``</s>`` included) per run, "mean +- SE" where SE is the
standard error over seeds when there are at least two, otherwise the standard error over sentences of
the single seed (marked ``[1 seed]``); the paper's numbers (MSCOCO, GPT-2 encoder, 3 seeds) beside.
Paired comparisons: for each seed, the mean over test sentences of the per-sentence NLL difference of two
runs (same sentences, independent importance samples), then the mean and standard error of those per-seed
differences over seeds (or, for one seed, the paired standard error over sentences).
Fig. 2: the aggregated posterior (state frequencies of one posterior sample per training sentence)
of the runs with K1/K2 = 100/0, 99/1, 50/50, 10/90 (% of K), states sorted by frequency, with the
number of inactive states (frequency 0), the perplexity of the state frequencies (exp entropy) and
the share of the 10 most frequent states.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

PAPER_T5 = {"FULL-100": ("39.64 ± 0.06", "39.71 ± 0.07"), "TOPK-100": ("39.71 ± 0.13", "39.76 ± 0.11"),
            "RDP-100": ("39.59 ± 0.10", "39.59 ± 0.08"), "TOPK-2000": ("39.81 ± 0.30", "39.84 ± 0.31"),
            "RDP-2000": ("39.47 ± 0.11", "39.48 ± 0.14")}
FIG2 = (("TOPK-100", "A. K1/K2 = 100/0"), ("RDP-100-99/1", "B. 99/1"), ("RDP-100", "C. 50/50"),
        ("RDP-100-10/90", "D. 10/90"))


def load(out: "str | Path") -> dict[str, list[dict]]:
    """Results grouped by run name."""
    files = sorted(Path(out, "results").glob("*.json"))
    if not files:
        raise SystemExit(f"no results in {Path(out, 'results')}; run python -m experiments.rdp_vae.run first")
    runs: dict[str, list[dict]] = {}
    for f in files:
        r = json.loads(f.read_text())
        runs.setdefault(r["run"], []).append(r)
    return runs


def _cell(results: list[dict], split: str) -> str:
    vals = [r[split]["nll"] for r in results]
    if len(vals) >= 2:
        mean = sum(vals) / len(vals)
        se = math.sqrt(sum((v - mean) ** 2 for v in vals) / (len(vals) - 1) / len(vals))
        return f"{mean:.2f} ± {se:.2f}"
    return f"{vals[0]:.2f} ± {results[0][split]['se']:.2f} [1 seed]"


def table5(runs: dict[str, list[dict]]) -> str:
    lines = ["| run | variant | seeds | steps | dev NLL | test NLL | test NLL/word | paper dev | paper test |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name in ("FULL-100", "TOPK-100", "RDP-100", "RDP-100-99/1", "RDP-100-10/90", "TOPK-2000", "RDP-2000"):
        if name not in runs:
            continue
        rs = runs[name]
        per_word = sum(r["test"]["per_word"] for r in rs) / len(rs)
        paper = PAPER_T5.get(name, ("-", "-"))
        lines.append(f"| {name} | {rs[0]['variant']} | {len(rs)} | {rs[0]['steps']} | {_cell(rs, 'dev')} | "
                     f"{_cell(rs, 'test')} | {per_word:.3f} | {paper[0]} | {paper[1]} |")
    return "\n".join(lines)


PAIRS = (("RDP-100", "TOPK-100"), ("RDP-100", "FULL-100"), ("RDP-100-99/1", "RDP-100"),
         ("RDP-100-10/90", "RDP-100"), ("RDP-2000", "TOPK-2000"), ("RDP-2000", "RDP-100"))


def paired(runs: dict[str, list[dict]], a: str, b: str, split: str = "test") -> dict | None:
    """Per-seed paired NLL differences ``NLL(a) - NLL(b)`` on the same sentences, summarised over seeds.

    Returns ``None`` when the two runs share no seed with per-sentence log-likelihoods stored. ``per_seed`` holds, for every shared seed, the mean
    difference, its paired standard error over sentences and the number of sentences favouring ``a``.
    """
    by_seed_a = {r["seed"]: r for r in runs.get(a, [])}
    by_seed_b = {r["seed"]: r for r in runs.get(b, [])}
    seeds = sorted(seed for seed in set(by_seed_a) & set(by_seed_b)
                   if "log_likelihoods" in by_seed_a[seed][split] and "log_likelihoods" in by_seed_b[seed][split])
    if not seeds:
        return None
    per_seed = []
    for seed in seeds:
        la, lb = by_seed_a[seed][split]["log_likelihoods"], by_seed_b[seed][split]["log_likelihoods"]
        if len(la) != len(lb):
            raise ValueError(f"{a} and {b} (seed {seed}) were evaluated on different numbers of sentences")
        diffs = [y - x for x, y in zip(la, lb)]  # NLL(a) - NLL(b) = log p_b - log p_a
        n = len(diffs)
        mean = sum(diffs) / n
        se = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1) / n) if n > 1 else float("nan")
        per_seed.append({"seed": seed, "mean": mean, "se": se, "favour_a": sum(1 for d in diffs if d < 0), "n": n})
    means = [p["mean"] for p in per_seed]
    mean = sum(means) / len(means)
    if len(means) >= 2:
        se = math.sqrt(sum((m - mean) ** 2 for m in means) / (len(means) - 1) / len(means))
    else:
        se = per_seed[0]["se"]
    return {"a": a, "b": b, "mean": mean, "se": se, "seeds": len(seeds), "per_seed": per_seed}


def paired_table(runs: dict[str, list[dict]], split: str = "test") -> str:
    lines = ["| NLL(A) - NLL(B) | seeds | mean ± SE | per seed: mean ± paired SE (sentences favouring A) |",
             "|---|---|---|---|"]
    for a, b in PAIRS:
        res = paired(runs, a, b, split)
        if res is None:
            continue
        kind = "over seeds" if res["seeds"] >= 2 else "paired, 1 seed"
        cells = "; ".join(f"s{p['seed']}: {p['mean']:+.3f} ± {p['se']:.3f} ({p['favour_a']}/{p['n']})"
                          for p in res["per_seed"])
        lines.append(f"| {a} - {b} | {res['seeds']} | {res['mean']:+.3f} ± {res['se']:.3f} ({kind}) | {cells} |")
    return "\n".join(lines)


def posterior_stats(counts: list[int]) -> dict[str, float]:
    total = sum(counts)
    probs = sorted((c / total for c in counts), reverse=True)
    entropy = -sum(p * math.log(p) for p in probs if p > 0)
    return {"inactive": sum(1 for c in counts if c == 0), "perplexity": math.exp(entropy),
            "top10": sum(probs[:10])}


def fig2_table(runs: dict[str, list[dict]]) -> str:
    lines = ["| run | variant | N | inactive states | state perplexity | top-10 share |", "|---|---|---|---|---|---|"]
    for name in [n for n, _ in FIG2] + ["FULL-100", "TOPK-2000", "RDP-2000"]:
        for r in runs.get(name, []):
            s = posterior_stats(r["state_counts"])
            lines.append(f"| {name} (seed {r['seed']}) | {r['variant']} | {r['n_states']} | {s['inactive']} | "
                         f"{s['perplexity']:.1f} | {s['top10']:.2f} |")
    return "\n".join(lines)


def figure(runs: dict[str, list[dict]], path: "str | Path") -> Path:
    """Four panels of sorted state frequencies (first seed of each run), as in Fig. 2 of the paper, plus
    TOPK-2000 and RDP-2000 when they were run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = list(FIG2) + [(n, f"N = 2000, {n.split('-')[0]}") for n in ("TOPK-2000", "RDP-2000") if n in runs]
    fig, axes = plt.subplots(1, len(panels), figsize=(3.5 * len(panels), 3), sharey=True)
    for ax, (name, title) in zip(axes, panels):
        if name not in runs:
            ax.set_title(f"{title}: not run")
            continue
        r = runs[name][0]
        counts = sorted(r["state_counts"], reverse=True)
        total = sum(counts)
        ax.bar(range(len(counts)), [c / total for c in counts], width=1.0)
        s = posterior_stats(r["state_counts"])
        ax.set_title(f"{title} ({r['variant']})\ninactive {s['inactive']}/{len(counts)}", fontsize=9)
        ax.set_xlabel("state (sorted by frequency)")
    axes[0].set_ylabel("aggregated posterior frequency")
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", help="the --out folder of experiments.rdp_vae.run")
    p.add_argument("--figure", help="write the Fig. 2 analogue (PNG) here")
    args = p.parse_args(argv)
    runs = load(args.out)
    print("## Table 5 analogue (NLL in nats per sentence)\n")
    print(table5(runs))
    print("\n## Paired differences (test NLL, same sentences)\n")
    print(paired_table(runs))
    print("\n## Fig. 2 analogue (aggregated posterior)\n")
    print(fig2_table(runs))
    if args.figure:
        print(f"\nfigure: {figure(runs, args.figure)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
