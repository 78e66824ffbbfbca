"""Table 2 of Fu, Cunningham & Lapata (2022), measured with the harness, printed next to the paper's.

Runs the ``rdp-table2`` suite (or reads the summary.csv of an earlier
``mcsa bench run --suite rdp-table2 --out DIR`` with ``--summary DIR/summary.csv``) and prints one
Markdown table per N: rows are estimators and budgets, columns the nine unit cases (linear-chain
log Z, tree log Z, linear-chain entropy on dense / intermediate / long-tail problems), each cell
"ours (paper)" MSE.

    python -m experiments.rdp_table2.table --summary /tmp/out-rdp-t2/summary.csv
    python -m experiments.rdp_table2.table --n-states 10000 --replicates 10 --no-tree --out /tmp/out-rdp-t2-10k
"""

from __future__ import annotations

from experiments.rdp_tables.cli import run_summary, summary_rows, table_parser

# The paper's Table 2 (MSE; D = dense, I = intermediate, L = long-tailed), keyed by
# (estimator, budget % of N) -> chain log Z D I L, tree log Z D I L, chain entropy D I L.
PAPER = {
    2000: {("TopK", 20): (3.874, 1.015, 0.162, 36.127, 27.435, 21.78, 443.7, 84.35, 8.011),
           ("TopK", 50): (0.990, 0.251, 0.031, 2.842, 2.404, 2.047, 131.8, 22.100, 1.816),
           ("RDP (K2=1)", 1): (0.146, 0.066, 0.076, 26.331, 37.669, 48.863, 5.925, 1.989, 0.691),
           ("RDP (K2=1)", 10): (0.067, 0.033, 0.055, 1.193, 1.530, 1.384, 2.116, 1.298, 0.316),
           ("RDP (K2=1)", 20): (0.046, 0.020, 0.026, 0.445, 0.544, 0.599, 1.326, 0.730, 0.207)},
    10000: {("TopK", 20): (6.395, 6.995, 6.381, 78.632, 63.762, 43.556, 227.36, 171.97, 141.91),
            ("TopK", 50): (2.134, 2.013, 1.647, 35.929, 26.677, 17.099, 85.063, 59.877, 46.853),
            ("RDP (K2=1)", 1): (0.078, 0.616, 0.734, 3.376, 5.012, 7.256, 6.450, 6.379, 4.150),
            ("RDP (K2=1)", 10): (0.024, 0.031, 0.024, 0.299, 0.447, 0.576, 0.513, 1.539, 0.275),
            ("RDP (K2=1)", 20): (0.004, 0.003, 0.003, 0.148, 0.246, 0.294, 0.144, 0.080, 0.068)},
}
COLUMNS = [(kind, target, regime) for kind, target in (("chain", "log_partition"), ("tree", "log_partition"),
                                                       ("chain", "entropy"))
           for regime in ("dense", "intermediate", "long-tail")]


def table(rows: list[dict], n_states: int) -> str:
    """Markdown table of MSEs, 'ours (paper)' per cell, from harness summary rows."""
    mse, reps = {}, set()
    for r in rows:
        kind, regime = r["problem"].split("-")[0], r["problem"].split("-N")[0].split("-", 1)[1]
        if f"-N{n_states}-" not in r["problem"]:
            continue
        mse[(r["estimator"], int(r["budget"]), kind, r["target"], regime)] = float(r["mse"])
        reps.add(int(r["n"]))
    keys = sorted({(e, b) for e, b, *_ in mse}, key=lambda k: (k[0] != "TopK", k[0], k[1]))
    head = ["estimator", "K % of N"] + [f"{k} {'log Z' if t == 'log_partition' else 'H'} {g[0].upper()}"
                                        for k, t, g in COLUMNS]
    lines = [f"N = {n_states}, replicates per cell: {sorted(reps)}", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for est, budget in keys:
        paper = PAPER.get(n_states, {}).get((est, budget))
        cells = []
        for i, (kind, target, regime) in enumerate(COLUMNS):
            v = mse.get((est, budget, kind, target, regime))
            ours = "-" if v is None else f"{v:.3g}"
            cells.append(ours if paper is None else f"{ours} ({paper[i]:g})")
        lines.append(f"| {est} | {budget} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> None:
    p = table_parser(__doc__, "summary.csv of an earlier run (skip running)")
    p.add_argument("--tree-length", type=int, default=20)
    p.add_argument("--no-tree", action="store_true", help="chains only")
    p.add_argument("--no-topk50", action="store_true", help="drop Top-K at 50%% (memory-heavy at N = 10000)")
    args = p.parse_args(argv)
    if args.summary:
        rows = summary_rows(args.summary)
        for n in sorted({int(r["problem"].split("-N")[1].split("-")[0]) for r in rows}):
            print(table(rows, n) + "\n")
        return
    from rdp.problems import TreeCRFProblem as TreeProblem
    from rdp.suites import rdp_table2_suite

    suite = rdp_table2_suite(args.n_states, args.chain_length, args.tree_length, args.replicates)
    if args.no_tree:
        suite.problems = [pr for pr in suite.problems if not isinstance(pr, TreeProblem)]
    if args.no_topk50:
        suite.budgets = {**suite.budgets, "TopK": [20]}
    print(table(run_summary(suite, args), args.n_states))

if __name__ == "__main__":
    main()
