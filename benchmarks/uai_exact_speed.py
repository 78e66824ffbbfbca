"""Exact inference on UAI 2014 instances: mcsa's junction tree against the published answers and
against pyGMs 0.4.1 (``pip install pyGMs==0.4.1``, the ``bench`` extra) on the same instances.

Run (instances are not part of the repository; see docs/uai.md for where they come from):

    NUMBA_CACHE_DIR=.numba_cache .venv/bin/python benchmarks/uai_exact_speed.py PR_DIR \\
        [--mar-dir MAR_DIR] [--instances Grids_11 CSP_11 ... | --all] [--no-peer] [--memory-cap 4G]

For every instance ``NAME`` (``PR_DIR/NAME.uai`` with ``NAME.uai.evid`` and ``NAME.uai.PR``):

* mcsa: condition on the evidence, plan (min-fill / weighted min-fill / min-degree / natural, least
  total work) and eliminate for ``log Z`` only; the time covers conditioning, planning and
  elimination (not reading the file), in CPU seconds of the process (the machine is shared: wall
  time depends on the other jobs), warm (Numba compiled before the first instance);
* ``log10 Z`` beside the published ``.PR`` value and their difference in units of its last printed
  digit (``ulp``: at most 0.5 means equal within its printed digits);
* the largest absolute marginal error against ``MAR_DIR/NAME.uai.MAR`` (with ``MAR_DIR``'s own model
  and evidence) when that file exists, and the time of that calibrated pass;
* pyGMs (a log-space ``GraphModel``, ``condition``, its ``minfill`` order, ``eliminate(order, "lse")``),
  timed the same way (CPU seconds) in a child process bounded by ``--peer-timeout`` (wall); its ``log10 Z`` difference
  from mcsa's is printed as the check; an instance whose pyGMs order needs more tables than
  ``--memory-cap`` is not run with pyGMs (the table says so).

One run per instance (exact inference is deterministic); the ratio of the two CPU times taken back
to back is the number to read.  A ``diff`` of "Z = 0 as written" marks a file whose constant
factors are 0 (the product is 0 whatever its published value says).
"""

from __future__ import annotations

import argparse
import math
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path

import numpy as np

from samplers.models import FactorGraph, TooWideError, read_evid, read_mar, read_uai
from samplers.models.elimination import default_memory_cap
from samplers.uai_cli import parse_memory

#: The 17 UAI 2014 PR instances of issue 28.
DEFAULT_INSTANCES = ("Grids_11", "Grids_13", "Grids_14", "Segmentation_12", "Segmentation_14", "DBN_11", "DBN_12",
                     "CSP_11", "CSP_12", "Pedigree_11", "Promedus_24", "Promedus_30", "Alchemy_11", "linkage_16",
                     "2bitcomp_5.cnf", "sat-grid-pbl-0010.cnf", "ObjectDetection_28")
LN10 = math.log(10)


def evidence_of(model_path: Path) -> dict:
    evid = Path(str(model_path) + ".evid")
    return read_evid(evid)[0] if evid.exists() else {}


def published_pr(model_path: Path) -> tuple[float, float] | None:
    """``(log10 Z, unit of its last printed digit)`` of ``NAME.uai.PR``, or None."""
    pr = Path(str(model_path) + ".PR")
    if not pr.exists():
        return None
    token = pr.read_text().split()[-1]
    mantissa = token.lower().split("e")[0]
    exponent = int(token.lower().split("e")[1]) if "e" in token.lower() else 0
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    return float(token), 10.0 ** (exponent - decimals)


def mcsa_log_z(graph: FactorGraph, evidence: dict, cap: int) -> tuple[float | None, object, float, float]:
    """``(log Z or None when refused, plan, CPU seconds, wall seconds)``: conditioning, planning and
    elimination."""
    wall, cpu = time.perf_counter(), time.process_time()
    cond = graph.condition(evidence)
    try:
        log_z = cond.graph.log_partition_exact(memory_cap=cap)
    except TooWideError:
        log_z = None
    return log_z, cond.graph.elimination_plan, time.process_time() - cpu, time.perf_counter() - wall


def mcsa_marginal_error(mar_dir: Path | None, name: str, cap: int) -> tuple[str, float | None] | None:
    if mar_dir is None or not (mar_dir / f"{name}.uai.MAR").exists():
        return None
    model = mar_dir / f"{name}.uai"
    graph, evidence = read_uai(model), evidence_of(model)
    start = time.process_time()
    cond = graph.condition(evidence)
    try:
        _, marg = cond.graph.solve(memory_cap=cap)
    except TooWideError:
        need = cond.graph.elimination_plan.bytes_needed(marginals=True)
        return f"refused (needs {need / 2**30:.3g} GiB)", None
    seconds = time.process_time() - start
    full = cond.expand_marginals(marg, graph.max_states)
    ref = read_mar(mar_dir / f"{name}.uai.MAR")
    return f"{max(float(np.abs(full[v, :r.size] - r).max()) for v, r in enumerate(ref)):.1e}", seconds


def _pygms_worker(path: str, evidence: dict, cap: int, queue) -> None:
    import warnings

    import pygms

    warnings.simplefilter("ignore")
    try:
        factors = pygms.readUai(path)
    except Exception as exc:  # pyGMs' own reader fails on some files
        queue.put(("failed", f"pygms.readUai: {type(exc).__name__}: {exc}"))
        return
    start = time.process_time()
    model = pygms.GraphModel([f.log() for f in factors], isLog=True)
    model.condition(evidence)
    order, score = pygms.eliminationOrder(model, "minfill")
    if 2 * score * 8 > cap:   # pyGMs' score is about half the entries of its cluster tables
        queue.put(("skipped", f"its minfill order needs about {2 * score * 8 / 2**30:.3g} GiB"))
        return
    model.eliminate(order, "lse")
    log_z = sum(float(np.sum(f.table)) for f in model.factors)
    queue.put(("ok", (log_z, time.process_time() - start)))


def pygms_log_z(path: Path, evidence: dict, cap: int, timeout: float):
    queue = mp.get_context("fork").Queue()
    proc = mp.get_context("fork").Process(target=_pygms_worker, args=(str(path), evidence, cap, queue))
    proc.start()
    proc.join(timeout)
    if proc.is_alive():
        proc.kill()
        proc.join()
        return "timeout", f"over {timeout:.0f} s"
    if queue.empty():
        return "failed", f"exit code {proc.exitcode}"
    return queue.get()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pr_dir", type=Path, help="folder of NAME.uai, NAME.uai.evid, NAME.uai.PR")
    parser.add_argument("--mar-dir", type=Path, default=None, help="folder of NAME.uai(.evid, .MAR) for marginals")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--instances", nargs="+", default=list(DEFAULT_INSTANCES))
    group.add_argument("--all", action="store_true", help="every .uai file of PR_DIR, smallest file first")
    parser.add_argument("--no-peer", action="store_true", help="skip pyGMs")
    parser.add_argument("--memory-cap", type=parse_memory, default=None,
                        help="bytes for either tool (default: a quarter of this machine's memory)")
    parser.add_argument("--peer-timeout", type=float, default=600.0, help="seconds per pyGMs instance")
    args = parser.parse_args(argv)
    cap = default_memory_cap() if args.memory_cap is None else args.memory_cap
    if args.all:
        names = [p.name[:-4] for p in sorted(args.pr_dir.glob("*.uai"), key=lambda p: p.stat().st_size)]
    else:
        names = args.instances
    missing = [n for n in names if not (args.pr_dir / f"{n}.uai").exists()]
    if missing:
        print(f"uai_exact_speed: no {args.pr_dir}/{missing[0]}.uai", file=sys.stderr)
        return 2
    FactorGraph([2, 2], [(0, 1)], [np.zeros((2, 2))]).log_partition_exact()   # compile the order kernel
    print(f"memory cap {cap / 2**30:.3g} GiB; {os.cpu_count()} CPUs; one run per instance")
    print("| instance | n | evid | width | table entries | log10 Z (mcsa) | published | diff (ulp) "
          "| max marg err | mcsa CPU s | mcsa MAR CPU s | pyGMs CPU s | pyGMs - mcsa (log10 Z) | pyGMs / mcsa |")
    print("|---" * 14 + "|")
    for name in names:
        path = args.pr_dir / f"{name}.uai"
        graph, evidence = read_uai(path), evidence_of(path)
        row = [name, str(graph.n_vars), str(len(evidence))]
        log_z, plan, seconds, wall = mcsa_log_z(graph, evidence, cap)
        if log_z is None:
            width = f"{'' if plan.complete else '>='}{plan.width}"
            bound = ">=" if plan.heuristic == "minor-min-width" else ""  # every order's largest is at least this
            row += [width, f"{bound}{plan.max_table_entries:.3g} (largest)", "refused", "", "", "",
                    f"{wall:.2f} wall (refusal)", "", "", "", ""]
            print("| " + " | ".join(row) + " |", flush=True)
            continue
        pub = published_pr(path)
        if log_z == -np.inf:
            diff = "Z = 0 as written" if graph.log_constant == -np.inf else "Z = 0"
        else:
            diff = "" if pub is None else f"{abs(log_z / LN10 - pub[0]) / pub[1]:.2f}"
        mar = mcsa_marginal_error(args.mar_dir, name, cap)
        row += [str(plan.width), f"{plan.total_table_entries:.3g}", f"{log_z / LN10:.6f}",
                "" if pub is None else f"{pub[0]:g}", diff,
                "" if mar is None else mar[0], f"{seconds:.3f}", "" if mar is None or mar[1] is None else f"{mar[1]:.3f}"]
        if args.no_peer:
            row += ["", "", ""]
        else:
            status, value = pygms_log_z(path, evidence, cap, args.peer_timeout)
            if status == "ok":
                row += [f"{value[1]:.3f}", f"{(value[0] - log_z) / LN10:.1e}", f"{value[1] / seconds:.1f}x"]
            else:
                row += [f"{status}: {value}", "", ""]
        print("| " + " | ".join(row) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
