"""The UAI competitions' scores of a finished ``mcsa bench run --suite uai`` study.

* PR: ``|log10 Z - log10 Z-hat|`` (the absolute error of ``log_partition`` divided by ``ln 10``);
* MAR: the mean over the unobserved variables of the Hellinger distance
  ``sqrt(1/2 sum_k (sqrt p_k - sqrt q_k)^2)`` between the published and the estimated marginal.

Each cell is the mean over replicates at an estimator's largest budget that ran, printed beside
the estimator's budget (an unfinished study is scored from the runs stored so far, with
``--instances``); estimators whose score is no better than the trivial baseline's on an
instance are marked, and so are cells whose runs report that they did not converge (loopy BP
stopped by its iteration budget).  ``mcsa uai scores FOLDER [--instances DIR]`` (``--instances`` is needed for MAR
only: the published marginals are read again from ``DIR/NAME.uai.MAR``).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from samplers.harness.store import check_study_folder

BASELINE = "trivial"


def hellinger(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Hellinger distance between the rows of two ``(n, K)`` probability tables."""
    return np.sqrt(0.5 * np.sum((np.sqrt(np.clip(p, 0, None)) - np.sqrt(np.clip(q, 0, None))) ** 2, axis=-1))


def _runs(folder: Path) -> list[dict]:
    path = folder / "runs.jsonl"
    check_study_folder(folder, "`mcsa bench run --suite uai --out`")
    if not path.is_file():
        raise ValueError(f"{folder} holds no study (runs.jsonl); run `mcsa bench run --suite uai --instances DIR "
                         f"--out {folder}` first")
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            if rec.get("type") == "run" and rec.get("status") == "ok":
                out.append(rec)
    return out


def competition_scores(folder: str | Path, instances: str | Path | None = None) -> list[dict[str, Any]]:
    """Rows ``{problem, estimator, budget, target, score, n, unconverged}`` (see the module docstring;
    ``unconverged``: how many of the ``n`` runs report that they did not converge)."""
    from .problems import FactorGraphProblem

    folder = Path(folder)
    runs = _runs(folder)
    references: dict[str, dict] = {}

    def reference(problem: str) -> dict:  # the published (or mcsa) answers of one instance, read once
        if problem not in references:
            assert instances is not None  # the callers below read references only with instances
            p = FactorGraphProblem.from_uai(Path(instances) / f"{problem}.uai")
            ex = {t: getattr(v, "value", v) for t, v in p.exact().items()}
            references[problem] = {**ex, "kept": p.conditioned.kept}
        return references[problem]

    stored = {}
    if (folder / "results.json").is_file():
        stored = {r["problem"]: r["exact"] for r in json.loads((folder / "results.json").read_text())["rows"]
                  if r["target"] == "log_partition"}
    elif instances is None:
        raise ValueError(f"{folder} holds an unfinished study (no results.json): pass --instances DIR to score it")
    cells: dict[tuple, list[float]] = defaultdict(list)
    stopped: dict[tuple, int] = defaultdict(int)  # runs that report they did not converge
    for rec in runs:
        prob = rec["problem"]
        if (rec.get("diagnostics") or {}).get("converged") is False:
            stopped[(prob, rec["estimator"], int(rec["budget"]))] += 1
        for target, value in rec["estimates"].items():
            if target == "log_partition":
                truth = stored[prob] if prob in stored else reference(prob).get("log_partition")
                if truth is None:
                    continue
                score = abs(float(value) - float(truth)) / math.log(10)
            elif target == "marginals" and instances is not None:
                ref = reference(prob)
                truth, kept = ref.get("marginals"), ref["kept"]
                if truth is None:
                    continue
                score = float(hellinger(np.asarray(value)[kept], truth[kept]).mean()) if kept.size else 0.0
            else:
                continue
            cells[(prob, rec["estimator"], int(rec["budget"]), target)].append(score)
    return [{"problem": p, "estimator": e, "budget": b, "target": t, "score": float(np.mean(v)), "n": len(v),
             "unconverged": stopped[(p, e, b)]} for (p, e, b, t), v in sorted(cells.items())]


def competition_table(folder: str | Path, instances: str | Path | None = None) -> str:
    """Markdown tables (one per task) of :func:`competition_scores` at each estimator's largest budget."""
    scores = competition_scores(folder, instances)
    out = []
    for target, task, what in (("log_partition", "PR", "|log10 Z - log10 Z-hat|"),
                               ("marginals", "MAR", "mean Hellinger distance")):
        best: dict[tuple, dict] = {}
        for r in scores:
            if r["target"] != target:
                continue
            key = (r["problem"], r["estimator"])
            if key not in best or r["budget"] > best[key]["budget"]:
                best[key] = r
        if not best:
            continue
        problems = sorted({p for p, _ in best})
        estimators = sorted({e for _, e in best})
        out += [f"### {task}: {what} (mean over replicates, at the largest budget)", "",
                "| estimator | " + " | ".join(problems) + " |", "| --- | " + " | ".join("---" for _ in problems) + " |"]
        for est in estimators:
            line = []
            for prob in problems:
                cell = best.get((prob, est))
                if cell is None:
                    line.append("-")
                    continue
                base = best.get((prob, BASELINE))
                worse = " (<= trivial)" if est != BASELINE and base is not None and cell["score"] >= base["score"] else ""
                stop = f" (not converged in {cell['unconverged']}/{cell['n']} runs)" if cell["unconverged"] else ""
                line.append(f"{cell['score']:.3g}{worse}{stop} ({cell['budget']})")
            out.append(f"| {est} | " + " | ".join(line) + " |")
        out.append("")
    if not out:
        raise ValueError(f"the study in {folder} has no scored log_partition or marginals runs")
    return "\n".join(out)


def add_command(sub) -> None:
    """Add ``mcsa uai scores FOLDER [--instances DIR]`` to the ``uai`` sub-commands."""
    p = sub.add_parser("scores", help="the competition's PR / MAR scores of a finished `mcsa bench run --suite uai`",
                       description=__doc__.split("\n\n")[1].replace("\n", " "))
    p.add_argument("folder", type=Path, help="output folder of `mcsa bench run --suite uai`")
    p.add_argument("--instances", type=Path, default=None, metavar="DIR",
                   help="the folder of .uai files the study ran on (for the MAR score)")
    p.set_defaults(func=_cmd_scores)


def _cmd_scores(args) -> int:
    import sys

    try:
        print(competition_table(args.folder, args.instances))
    except (ValueError, OSError) as exc:
        print(f"mcsa: error: {exc}", file=sys.stderr)
        return 2
    return 0
