"""Tables 3 and 4 of Fu, Cunningham & Lapata (2022), measured with the harness, printed beside the paper's.

Reads the summary.csv of ``mcsa bench run --suite rdp-bias-variance|rdp-proposals --out DIR`` (or runs
the suite itself with ``--table 3|4``) and prints

* Table 3: bias and variance of the chain log Z estimate per estimator and budget, dense and
  long-tailed chains, "ours (paper)";
* Table 4: MSE of the chain log Z estimate per proposal (and split), dense / intermediate /
  long-tailed chains, "ours (paper)" (the paper states no split for Table 4; Sec. 5.1 uses K2 = 1).

    python -m experiments.rdp_tables.table --summary out-rdp-bias-variance/summary.csv
    python -m experiments.rdp_tables.table --table 4 --n-states 200 --chain-length 20 --replicates 10
"""

from __future__ import annotations

from .cli import run_summary, summary_rows, table_parser

# Table 3 of the paper: (estimator, K % of N) -> (bias D, variance D, bias L, variance L); N = 2000.
PAPER_T3 = {("TopK", 20): (-1.968, 0, -0.403, 0), ("TopK", 50): (-0.995, 0, -0.177, 0),
            ("RDP (K2=1)", 1): (-0.066, 0.141, -0.050, 0.074), ("RDP (K2=1)", 10): (-0.030, 0.066, -0.027, 0.054),
            ("RDP (K2=1)", 20): (-0.013, 0.046, -0.003, 0.026)}
# Table 4 of the paper: proposal -> MSE (dense, intermediate, long-tail).
PAPER_T4 = {"uniform": (0.655, 11.05, 0.160), "local": (2.908, 9.171, 0.481), "global": (0.453, 0.096, 0.100),
            "local+global": (0.028, 0.017, 0.022)}
REGIMES = ("dense", "intermediate", "long-tail")


def _regime(problem: str) -> str:
    return problem.split("-N")[0].split("-", 1)[1]


def _fmt(v: float | None) -> str:
    """3 significant digits; |v| < 1e-20 (the rounding noise of a deterministic estimator's variance) as 0."""
    if v is None:
        return "-"
    return "0" if abs(v) < 1e-20 else f"{v:.3g}"


def table3(rows: list[dict]) -> str:
    """Markdown Table 3 (bias and variance of log Z) from harness summary rows of ``rdp-bias-variance``."""
    cells, reps = {}, set()
    for r in rows:
        if r["target"] != "log_partition":
            continue
        cells[(r["estimator"], int(r["budget"]), _regime(r["problem"]))] = (float(r["bias"]), float(r["variance"]))
        reps.add(int(r["n"]))
    keys = sorted({(e, b) for e, b, _ in cells}, key=lambda k: (k[0] != "TopK", k[0], k[1]))
    lines = [f"replicates per cell: {sorted(reps)}; paper values (N = 2000) in parentheses", "",
             "| estimator | K % of N | bias D | variance D | bias L | variance L |", "|---|---|---|---|---|---|"]
    for est, budget in keys:
        paper = PAPER_T3.get((est, budget))
        out = []
        for i, regime in enumerate(("dense", "long-tail")):
            bias, var = cells.get((est, budget, regime), (None, None))
            for j, v in enumerate((bias, var)):
                out.append(_fmt(v) if paper is None else f"{_fmt(v)} ({paper[2 * i + j]:g})")
        lines.append(f"| {est} | {budget} | " + " | ".join(out) + " |")
    return "\n".join(lines)


def table4(rows: list[dict]) -> str:
    """Markdown Table 4 (MSE of log Z per proposal) from harness summary rows of ``rdp-proposals``."""
    cells, reps = {}, set()
    for r in rows:
        if r["target"] != "log_partition":
            continue
        cells[(r["estimator"], int(r["budget"]), _regime(r["problem"]))] = float(r["mse"])
        reps.add(int(r["n"]))
    keys = sorted({(e, b) for e, b, _ in cells})
    lines = [f"replicates per cell: {sorted(reps)}; paper values (N = 2000) in parentheses", "",
             "| estimator | proposal | K % of N | MSE D | MSE I | MSE L |", "|---|---|---|---|---|---|"]
    for est, budget in keys:
        split, _, proposal = est.partition(") ")
        split = split + ")" if proposal else est
        proposal = proposal or "local+global"
        paper = PAPER_T4.get(proposal)
        out = [_fmt(cells.get((est, budget, g))) + ("" if paper is None else f" ({paper[i]:g})")
               for i, g in enumerate(REGIMES)]
        lines.append(f"| {split} | {proposal} | {budget} | " + " | ".join(out) + " |")
    return "\n".join(lines)


def main(argv=None) -> None:
    p = table_parser(__doc__, "summary.csv of an earlier harness run (the table is chosen from its rows)")
    p.add_argument("--table", type=int, choices=(3, 4), help="run this table's suite here instead")
    args = p.parse_args(argv)
    if args.summary:
        rows = summary_rows(args.summary)
        is_t4 = any(r["estimator"].endswith(("uniform", "local", "global")) for r in rows)
        print(table4(rows) if is_t4 else table3(rows))
        return
    if args.table is None:
        p.error("give --summary or --table")
    from .suite import bias_variance_suite, proposals_suite

    make = bias_variance_suite if args.table == 3 else proposals_suite
    summary = run_summary(make(args.n_states, args.chain_length, args.replicates), args)
    print((table3 if args.table == 3 else table4)(summary))

if __name__ == "__main__":
    main()
